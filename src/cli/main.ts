#!/usr/bin/env node
/**
 * The composition root of the `vetobench` executable: the command tree (commands.ts), help and
 * usage errors (help.ts), platform layers, exit codes
 * (0 ok; 1 a command failed, with one line; 2 usage error; 3 verify-audit partly verified; defects keep
 * the runtime's report).
 */
import { CliConfig, Command, ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Layer } from "effect"
import { VERSION } from "../version.js"
import { root, tree } from "./commands.js"
import { helpCliConfig, withHelp } from "./help.js"

const cli = Command.run(root, { name: "vetobench", version: VERSION })

const exitWith = (code: number) => Effect.sync(() => {
  process.exitCode = code
})

withHelp(tree, { version: VERSION }, process.argv, cli(process.argv)).pipe(
  Effect.catchIf(ValidationError.isValidationError, () => exitWith(2)),
  Effect.catchTag("CliFailure", (e) => Console.error(`vetobench: ${e.message}`).pipe(Effect.zipRight(exitWith(1)))),
  Effect.provide(Layer.mergeAll(NodeContext.layer, Layer.succeed(CliConfig.CliConfig, helpCliConfig))),
  NodeRuntime.runMain
)
