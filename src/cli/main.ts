#!/usr/bin/env node
console.log("vetobench")
