/**
 * The `vetobench` command tree: the root command with every subcommand, and the same tree as
 * `--help` lists it (src/cli/help.ts: help, unknown commands and options). main.ts runs it.
 */
import { Command } from "@effect/cli"
import { auditCommand, auditSubcommands } from "./audit.js"
import { demoCommand } from "./demo.js"
import { fakeVllmCommand } from "./fake-vllm.js"
import { cliTree, type HasDescriptor } from "./help.js"
import { mcpCommand, mcpSubcommands } from "./mcp.js"
import { mergeCommand } from "./merge.js"
import { policyCommand, policySubcommands } from "./policy.js"
import { proxyCommand } from "./proxy.js"
import { replayCommand } from "./replay.js"
import { reportCommand } from "./report.js"
import { runCommand } from "./run.js"
import { scenariosCommand, scenariosSubcommands } from "./scenarios.js"
import { scoreCommand } from "./score.js"
import { smokeCommand } from "./smoke.js"
import { splitCommand } from "./split.js"
import { verifyAuditCommand } from "./verify-audit.js"
import { verifyResultsCommand } from "./verify-results.js"
import { viewCommand } from "./view.js"

const subcommands = [proxyCommand, smokeCommand, demoCommand, verifyAuditCommand, verifyResultsCommand, auditCommand, fakeVllmCommand, splitCommand, scenariosCommand, runCommand, mergeCommand, scoreCommand, replayCommand, reportCommand, viewCommand, policyCommand, mcpCommand] as const

export const root = Command.make("vetobench").pipe(
  Command.withDescription("test bench for the tool-call trust boundary"),
  Command.withSubcommands(subcommands)
)

/** The subcommands of each group, in the order help lists them. */
const groups = new Map<unknown, ReadonlyArray<HasDescriptor>>([
  [auditCommand, auditSubcommands],
  [scenariosCommand, scenariosSubcommands],
  [policyCommand, policySubcommands],
  [mcpCommand, mcpSubcommands]
])

export const tree = cliTree(root, subcommands.map((c) => cliTree(c, (groups.get(c) ?? []).map((s) => cliTree(s)))))
