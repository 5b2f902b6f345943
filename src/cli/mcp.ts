/**
 * `vetobench mcp stdio --server NAME --arm ARM [-c FILE] [--run ID] [--episode ID] [--principal P] [--holds-port N]`:
 * the MCP gate as a stdio MCP server (src/mcp-stdio/stdio.ts). Point an MCP host at this command instead
 * of the server's own: every `tools/call` is ruled by the arm's judge and recorded (docs/mcp.md).
 * stdout carries only MCP messages; warnings and log lines go to stderr.
 */
import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Effect, Logger, Option } from "effect"
import { defaultPlugins } from "../../judges/plugins.js"
import { gateLayer } from "../gate/live.js"
import { runIdProblem } from "../domain/run-id.js"
import { parseArm, ARM_USAGE } from "../mcp/arm.js"
import { serveStdio } from "../mcp-stdio/stdio.js"
import { CliFailure, configOption, settingsFrom, unknownJudges } from "./options.js"

const server = Options.text("server").pipe(Options.withPseudoName("NAME"), Options.withDescription("the MCP server to front: a name under mcp.servers of the settings"))
const arm = Options.text("arm").pipe(
  Options.withPseudoName("ARM"),
  Options.withDescription(`the arm: ${ARM_USAGE}`),
  Options.mapEffect((spec) => {
    const parsed = parseArm(spec)
    return "_tag" in parsed ? Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--arm: ${parsed.message}`))) : Effect.succeed(parsed)
  })
)
const run = Options.text("run").pipe(Options.withPseudoName("ID"), Options.optional, Options.withDescription("run id the records are filed under (default: none, the audit file of unlabelled traffic)"))
const episode = Options.text("episode").pipe(Options.withPseudoName("ID"), Options.optional, Options.withDescription("episode id of the records (default: the MCP session, mcp-<uuid>)"))
const principal = Options.text("principal").pipe(Options.withPseudoName("P"), Options.optional, Options.withDescription("principal of the records (default: none)"))

const holdsPort = Options.integer("holds-port").pipe(
  Options.withPseudoName("N"),
  Options.optional,
  Options.withDescription("serve the hold API (GET /v1/holds, POST /v1/holds/{id}; operator token proxy.operator_token) on 127.0.0.1:N, 0 a free port, its URL printed to stderr, so hold_policy wait can be approved (default: off)")
)

const stdio = Command.make("stdio", { config: configOption, server, arm, run, episode, principal, holdsPort }, (o) =>
  Effect.gen(function* () {
    const settings = yield* settingsFrom(o.config)
    const runId = Option.getOrNull(o.run)
    const problem = runId === null ? null : runIdProblem(runId)
    if (problem !== null) return yield* Effect.fail(new CliFailure({ message: `--run: ${problem}` }))
    const port = Option.getOrNull(o.holdsPort)
    if (port !== null && (port < 0 || port > 65535)) return yield* Effect.fail(new CliFailure({ message: `--holds-port: ${port} is not a port (0-65535; 0: a free one)` }))
    if (o.arm.judge !== null) {
      const unknown = unknownJudges([o.arm.judge], settings.judges)
      if (unknown !== null) return yield* Effect.fail(unknown)
    }
    yield* serveStdio({ settings, server: o.server, arm: o.arm, runId, episodeId: Option.getOrNull(o.episode), principal: Option.getOrNull(o.principal), holdsPort: port }).pipe(
      Effect.provide(gateLayer({ settings, plugins: defaultPlugins })),
      Effect.catchTags({
        McpStartError: (e) => Effect.fail(new CliFailure({ message: e.message })),
        McpServerLost: (e) => Effect.fail(new CliFailure({ message: e.message })),
        JudgeConfigError: (e) => Effect.fail(new CliFailure({ message: `${settings.file}: ${e.message}` })),
        AuditWriteError: (e) => Effect.fail(new CliFailure({ message: `audit: ${e.file}: ${e.reason}` }))
      })
    )
  }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))))
).pipe(Command.withDescription("serve the MCP gate over stdio: an MCP server that spawns or reaches the real one and rules every tools/call"))

export const mcpSubcommands = [stdio] as const

export const mcpCommand = Command.make("mcp").pipe(
  Command.withDescription("the MCP gate: every tools/call to an MCP server ruled and recorded"),
  Command.withSubcommands(mcpSubcommands)
)
