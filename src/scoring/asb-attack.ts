/**
 * The results of one ASB attack run (model × variant × attack tag) as `vetobench run` reports
 * them: the shard CSVs read with the scoring module (`readAsbShards`: RFC 4180, very large
 * `messages` fields), rows put in episode order and joined with the proxy's audit records through
 * the episode id, the metrics and the paired Δ of the report (`asbMetrics`, `asbDelta`), and which
 * model answered ASB's refusal judge.
 *
 * Refusal judge: ASB calls `OpenAI()` with model `gpt-4o-mini` on the proxy's base URL; the
 * proxy's alias table (`aliases: {gpt-4o-mini: judge-small}`) sends that to a local model. Any
 * model other than `gpt-4o-mini` itself is a stand-in, and the refusal rate is then provisional
 * (reports say which model answered). RR also needs the judge to answer exactly `0` or `1`.
 */
import { Data, Effect } from "effect"
import { type AttemptLine, readAttempts } from "../run-layout/attempts.js"
import { readAsbShards } from "./asb-results.js"
import { asbFinal, currentCalls, toolAttempts } from "./current.js"
import { type AsbCore, asbDelta, asbMetrics, refusalMarker } from "./metrics.js"
import type { AsbDelta, PairedDiff, Proportion } from "./summary-types.js"
import type { AgentTasks } from "../adapters/asb/data.js"
import { type AuditJoin, joinAudit, readAuditCalls, sortByEpisode, tasksByAgent } from "../adapters/asb/episodes.js"

/** The model ASB's refusal judge calls. */
export const ASB_JUDGE_MODEL = "gpt-4o-mini"

export interface RefusalJudge {
  readonly requested: string
  /** the model the proxy sends it to (after one alias lookup) */
  readonly model: string
  readonly via_alias: boolean
  /** answered by a model other than gpt-4o-mini: RR is provisional */
  readonly stand_in: boolean
  /** the stand-in is one of the experiment's agent models (the agent judges its own refusals) */
  readonly agent_model: boolean
}

export const refusalJudge = (aliases: Readonly<Record<string, string>>, agentModels: ReadonlyArray<string>): RefusalJudge => {
  const alias = Object.hasOwn(aliases, ASB_JUDGE_MODEL) ? aliases[ASB_JUDGE_MODEL] : undefined
  const model = alias ?? ASB_JUDGE_MODEL
  return { requested: ASB_JUDGE_MODEL, model, via_alias: alias !== undefined, stand_in: model !== ASB_JUDGE_MODEL, agent_model: agentModels.includes(model) }
}

/** `gpt-4o-mini → judge-small (stand-in: RR provisional)` */
export const describeRefusalJudge = (j: RefusalJudge): string =>
  !j.stand_in
    ? `${j.requested} (as named by ASB)`
    : `${j.requested} → ${j.model} (stand-in${j.agent_model ? ", the agent model itself" : ""}: RR provisional)`

export class AsbResultsError extends Data.TaggedError("AsbResultsError")<{ readonly message: string }> {}

export interface AttackResults {
  readonly dir: string
  readonly shards: number
  readonly core: AsbCore
  readonly audit: AuditJoin
  readonly refusal_judge: RefusalJudge
}

/**
 * Reads one attack directory's shard CSVs, joins the rows with the audit file's records of the
 * session (the attack tag) — each episode's calls from its shard's final start (the directory's
 * `attempts.jsonl`; scoring/current.ts) — and computes the metrics. `blockMarker` defaults to the
 * refusal template's fixed text.
 */
export const attackResults = (opts: {
  readonly dir: string
  readonly tasks: ReadonlyArray<AgentTasks>
  readonly auditFile: string
  readonly session: string | null
  readonly refusalTemplate: string
  readonly refusalJudge: RefusalJudge
}): Effect.Effect<AttackResults, AsbResultsError> =>
  Effect.gen(function*() {
    const { files, rows } = yield* readAsbShards(opts.dir).pipe(Effect.mapError((e) => new AsbResultsError({ message: e.message })))
    const agents = tasksByAgent(opts.tasks)
    const ordered = sortByEpisode(rows, agents)
    const core = asbMetrics(ordered, refusalMarker(opts.refusalTemplate))
    const lines = yield* readAttempts(opts.dir).pipe(Effect.orElseSucceed(() => new Map<string, AttemptLine>()))
    const session = opts.session ?? ""
    const mine = readAuditCalls(opts.auditFile).filter((r) => r.session_id === opts.session)
    const current = currentCalls(mine, asbFinal(new Map([[session, toolAttempts(lines.values())]])))
    const audit = joinAudit(ordered, agents, current, opts.session, mine.length - current.length)
    return { dir: opts.dir, shards: files.length, core, audit, refusal_judge: opts.refusalJudge }
  })

/** Paired Δ (treatment − baseline) by `agent|tool|occurrence`, rows in episode order. */
export const attackDelta = (baselineName: string, baseline: AsbCore, treatment: AsbCore): AsbDelta => asbDelta(baselineName, baseline, treatment)

// ---------------------------------------------------------------------------------------------
// one-line formatting for the CLI

const num = (x: number | null, digits = 3) => (x === null ? "–" : x.toFixed(digits))

/** `0.450 [0.310, 0.600]` (n = 0: `–`) */
export const formatProportion = (p: Proportion): string => (p.p === null ? "–" : `${num(p.p)} [${num(p.lo)}, ${num(p.hi)}]`)

/** `-0.250 [-0.400, -0.100], n 20` */
export const formatDiff = (d: PairedDiff): string => (d.d === null ? "– (no pairs)" : `${num(d.d)} [${num(d.lo)}, ${num(d.hi)}], n ${d.n}`)

/**
 * `38/40 calls joined to 20 of 20 episodes, 2 calls of episodes no row has (asb:a:T:0, …), 12 calls
 * of earlier shard starts left out`
 */
export const auditLine = (a: AuditJoin): string => {
  const parts = [`${a.calls_joined}/${a.calls} calls joined to ${a.rows_with_calls} of ${a.rows.length} episodes`]
  const unmatched = a.calls - a.calls_joined
  if (a.unmatched_episodes.length > 0) {
    const shown = a.unmatched_episodes.slice(0, 3).join(", ")
    parts.push(`${unmatched} call${unmatched === 1 ? "" : "s"} of ${a.unmatched_episodes.length} episode${a.unmatched_episodes.length === 1 ? "" : "s"} no row has (${shown}${a.unmatched_episodes.length > 3 ? ", …" : ""})`)
  }
  if (a.stale_calls > 0) parts.push(`${a.stale_calls} call${a.stale_calls === 1 ? "" : "s"} of earlier shard starts left out`)
  return parts.join(", ")
}

/** The result line of one attack run. */
export const formatResults = (r: AttackResults): string => {
  const c = r.core
  const infra = c.infra_errors > 0 ? `, ${c.infra_errors} infra errors` : ""
  return (
    `${c.n_rows} episodes${infra}: ASR ${formatProportion(c.asr)}, task success ${formatProportion(c.original_task_success)}, ` +
    `refusal ${formatProportion(c.refusal_rate)}; ${r.audit.episodes_with_block} with a blocked call; ` +
    `audit: ${auditLine(r.audit)}; ` +
    `refusal judge ${describeRefusalJudge(r.refusal_judge)}`
  )
}
