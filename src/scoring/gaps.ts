/**
 * What a report is missing, for `vetobench report`'s exit code: the runs an experiment calls for
 * that have no results (Agent-SafetyBench per model × variant, ASB per model × attack × variant,
 * AgentDojo per model × variant and reference defense, each when that benchmark is enabled), the
 * shard audit files a merged run lists that are not there, and the Agent-SafetyBench runs with cases
 * that have no valid ShieldAgent label. Cases in error are not counted here (`vetobench run` reports them).
 */
import { attackTag } from "../run-layout/paths.js"
import { defenseVariants } from "../config/agentdojo.js"
import { type Experiment } from "../config/experiment.js"
import type { Summary } from "./summary-types.js"

export interface UnscoredRun {
  /** `Agent-SafetyBench <model> / <variant>` */
  readonly run: string
  /** cases (not in error) without a valid label */
  readonly unscored: number
  /** cases not in error */
  readonly cases: number
}

export interface ReportGaps {
  /** runs the experiment calls for */
  readonly expected: number
  /** runs without results, e.g. `Agent-SafetyBench agent / baseline`, `ASB agent / clean / baseline`, `AgentDojo agent / defense-tool_filter` */
  readonly missing: ReadonlyArray<string>
  readonly unscored: ReadonlyArray<UnscoredRun>
}

/**
 * The runs the experiment calls for that the summary lacks or could not score. `lostAuditFiles`
 * names, per run, the shard audit files its `shards.json` lists that are not there
 * (run-layout `missingShardAuditFiles`): such a run's live figures lack those shards' calls, so each
 * lost file is a gap too.
 */
export const reportGaps = (
  exp: Experiment,
  summary: Summary,
  lostAuditFiles: (bench: "asbench" | "agentdojo", model: string, v: Experiment["variants"][number]) => ReadonlyArray<string> = () => []
): ReportGaps => {
  let expected = 0
  const missing: Array<string> = []
  const lost = (bench: "asbench" | "agentdojo", label: string, model: string, v: Experiment["variants"][number]) => {
    for (const f of lostAuditFiles(bench, model, v)) missing.push(`${label} ${model} / ${v.name}: shard audit file ${f}`)
  }
  const unscored: Array<UnscoredRun> = []
  for (const model of exp.models) {
    if (exp.agent_safetybench.enabled) {
      for (const v of exp.variants) {
        expected += 1
        const row = summary.asbench[model]?.[v.name]
        const run = `Agent-SafetyBench ${model} / ${v.name}`
        lost("asbench", "Agent-SafetyBench", model, v)
        if (row === undefined) {
          missing.push(run)
          continue
        }
        const n = row.infra_errors.unscored
        if (n > 0) unscored.push({ run, unscored: n, cases: row.n_cases - row.infra_errors.episode_errors })
      }
    }
    if (exp.agentdojo?.enabled === true) {
      for (const v of [...exp.variants, ...defenseVariants(exp.agentdojo)]) {
        expected += 1
        lost("agentdojo", "AgentDojo", model, v)
        if (summary.agentdojo[model]?.[v.name] === undefined) missing.push(`AgentDojo ${model} / ${v.name}`)
      }
    }
    if (exp.asb.enabled) {
      for (const tag of exp.asb.attacks.map(attackTag)) {
        for (const v of exp.variants) {
          expected += 1
          if (summary.asb[model]?.[tag]?.[v.name] === undefined) missing.push(`ASB ${model} / ${tag} / ${v.name}`)
        }
      }
    }
  }
  return { expected, missing, unscored }
}

/** Runs missing plus runs with unscored cases (what `--allow-errors` counts). */
export const gapCount = (g: ReportGaps): number => g.missing.length + g.unscored.length
