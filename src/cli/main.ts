#!/usr/bin/env node
/**
 * The composition root of the `vetobench` executable: the program (program.ts: the command tree,
 * help and usage errors, exit codes) on this process's command line, with Node's platform layers.
 * Exit codes: 0 ok; 1 a command failed, with one line; 2 usage error; 3 verify-audit partly
 * verified; defects keep the runtime's report.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect } from "effect"
import { runVetobench } from "./program.js"

runVetobench(process.argv).pipe(
  Effect.flatMap((code) => Effect.sync(() => void (process.exitCode = code))),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain
)
