#!/usr/bin/env node
/**
 * The composition root of the `vetobench` executable: subcommands, platform layers, exit codes
 * (0 ok; 1 a command failed, with one line; 2 usage error; defects keep the runtime's report).
 */
import { CliConfig, Command, ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Layer } from "effect"
import { VERSION } from "../version.js"
import { auditCommand } from "./audit.js"
import { demoCommand } from "./demo.js"
import { fakeVllmCommand } from "./fake-vllm.js"
import { mergeCommand } from "./merge.js"
import { policyCommand } from "./policy.js"
import { proxyCommand } from "./proxy.js"
import { replayCommand } from "./replay.js"
import { reportCommand } from "./report.js"
import { runCommand } from "./run.js"
import { scoreCommand } from "./score.js"
import { scenariosCommand } from "./scenarios.js"
import { smokeCommand } from "./smoke.js"
import { splitCommand } from "./split.js"
import { verifyAuditCommand } from "./verify-audit.js"

const root = Command.make("vetobench").pipe(
  Command.withDescription("test bench for the tool-call trust boundary"),
  Command.withSubcommands([proxyCommand, smokeCommand, demoCommand, verifyAuditCommand, auditCommand, fakeVllmCommand, splitCommand, scenariosCommand, runCommand, mergeCommand, scoreCommand, replayCommand, reportCommand, policyCommand])
)

const cli = Command.run(root, { name: "vetobench", version: VERSION })

const exitWith = (code: number) => Effect.sync(() => {
  process.exitCode = code
})

cli(process.argv).pipe(
  Effect.catchIf(ValidationError.isValidationError, () => exitWith(2)),
  Effect.catchTag("CliFailure", (e) => Console.error(`vetobench: ${e.message}`).pipe(Effect.zipRight(exitWith(1)))),
  Effect.provide(Layer.mergeAll(NodeContext.layer, CliConfig.layer({ showBuiltIns: false }))),
  NodeRuntime.runMain
)
