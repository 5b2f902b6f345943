/**
 * `vetobench run --bench agentdojo`: every selected model × variant (the experiment's variants and
 * the `agentdojo.defenses` variants `defense-<name>` on the baseline arm) through the AgentDojo
 * runner (adapters/agentdojo/run.ts), one `== AgentDojo | <model> | <variant>` header and one result
 * line each. Episodes in error are tallied for the command's summary line (a re-run retries them);
 * a launcher that fails stops the run with its log path.
 */
import * as CommandExecutor from "@effect/platform/CommandExecutor"
import { Console, Effect } from "effect"
import * as path from "node:path"
import { agentdojoOf, type AgentdojoRunSummary, runAgentdojo } from "../adapters/agentdojo/run.js"
import { type AgentdojoVariant, defenseVariants } from "../config/agentdojo.js"
import type { Experiment, Variant } from "../config/experiment.js"
import { Settings } from "../config/service.js"
import type { Settings as SettingsShape } from "../config/settings.js"
import { auditFileName } from "../domain/run-id.js"
import { Progress } from "../run-layout/progress.js"
import { type Shard, shardName } from "../run-layout/shard.js"
import { oneLine } from "./failures.js"
import { CliFailure } from "./options.js"

/** The AgentDojo variants: the experiment's (already selected) plus the defense variants named in `--variant` (`all`: no `--variant`). */
export const agentdojoVariants = (
  exp: Experiment,
  root: string,
  selected: ReadonlyArray<Variant>,
  requested: ReadonlyArray<string> | "all"
): ReadonlyArray<AgentdojoVariant> => {
  const defenses = defenseVariants(agentdojoOf(exp, root))
  const own = selected.map((v): AgentdojoVariant => ({ ...v, defense: null }))
  return [...own, ...(requested === "all" ? defenses : defenses.filter((d) => requested.includes(d.name)))]
}

/** The defense variant names of an experiment (`defense-<name>`). */
export const defenseVariantNames = (exp: Experiment, root: string): ReadonlyArray<string> => defenseVariants(agentdojoOf(exp, root)).map((v) => v.name)

export interface AgentdojoTally {
  episodes: number
  failed: number
  first: { readonly run: AgentdojoRunSummary; readonly episode: string; readonly error: string } | null
}

export const agentdojoTally = (): AgentdojoTally => ({ episodes: 0, failed: 0, first: null })

/** `AgentDojo: 2 of 40 episodes failed (first: agentdojo:… of m@baseline: …); details in …/results.jsonl` */
export const agentdojoFailureLine = (t: AgentdojoTally): string => {
  const first = t.first === null ? "" : ` (first: ${t.first.episode} of ${t.first.run.route}: ${oneLine(t.first.error, 200)})`
  const where = t.first === null ? "" : `; details in ${t.first.run.results}`
  return `AgentDojo: ${t.failed} of ${t.episodes} episodes failed${first}${where}; a re-run retries them`
}

/** Run every model × AgentDojo variant; `outputs` gets the results files and audit logs written. */
export const runAgentdojoSelection = (
  settings: SettingsShape,
  exp: Experiment,
  models: ReadonlyArray<string>,
  variants: ReadonlyArray<AgentdojoVariant>,
  shard: Shard | undefined,
  tally: AgentdojoTally,
  outputs: { readonly files: Array<string>; readonly logs: Array<string> }
): Effect.Effect<void, CliFailure, Settings | Progress | CommandExecutor.CommandExecutor> =>
  Effect.gen(function*() {
    const oracle = agentdojoOf(exp, settings.root).oracle
    for (const model of models) {
      for (const variant of variants) {
        const where = shard === undefined ? "" : ` | shard ${shardName(shard)}`
        yield* Console.log(`== AgentDojo | ${model} | ${variant.name}${where}${oracle ? " | oracle agent" : ""}`)
        const s = yield* runAgentdojo(exp, model, variant, shard === undefined ? {} : { shard }).pipe(Effect.mapError((e) => new CliFailure({ message: e.message })))
        yield* Console.log(
          `[agentdojo] ${s.route}${variant.defense === null ? "" : ` (${variant.defense})`}: ${s.ran.ok} ok, ${s.ran.error} error` +
            ` (${s.skipped} of ${s.episodes} done before, ${s.benchmarkVersion}) → ${s.results}`
        )
        tally.episodes += s.episodes
        tally.failed += s.ran.error
        if (tally.first === null && s.firstError !== null) tally.first = { run: s, ...s.firstError }
        outputs.files.push(s.results)
        outputs.logs.push(path.join(settings.proxy.audit_dir, auditFileName(s.runId)))
      }
    }
  })
