/**
 * Each episode's calls from its final attempt. A killed and resumed run, a crashed bridge's retry
 * and a re-run ASB shard start episodes again; the proxy's audit log keeps every start's calls, so
 * counting them all counts an episode's calls twice. Records carry the start they belong to
 * (`attempt`, src/domain/attempt.ts), and the run directory says which start is final:
 *
 * - Agent-SafetyBench: the case's record in `gen_res.json` (`vetobench.attempt`); for a case with
 *   no record (never finished), the highest attempt its calls carry.
 * - ASB: the shard's last line in `<tag dir>/attempts.jsonl`, which lists the shard's attacker
 *   tools; an episode (`asb:<agent>:<tool>:<task>`) belongs to the shard of its tool. The CSV rows
 *   are that start's (a shard's CSV is rewritten on every start).
 *
 * Rules, per episode (session + episode id): when none of its records carries an attempt (logs
 * written before attempts were recorded), every record counts; otherwise only the records of the
 * final attempt (none, when the final start made no call). Records without an episode always count.
 */
import { Effect } from "effect"
import * as path from "node:path"
import { GEN_RES_JSON } from "../run-layout/files.js"
import { headerPart } from "../adapters/asb/episodes.js"
import { asbenchRunDir, asbRunDir, attackTag } from "../run-layout/paths.js"
import { type Experiment, type Variant } from "../config/experiment.js"
import { readAttempts } from "../run-layout/attempts.js"
import { readJson } from "./files.js"
import { type AsbenchCaseInfo, caseInfo } from "./metrics.js"

/** What the rule reads of a record. */
export interface AttemptedCall {
  readonly episode_id: string | null
  readonly session_id: string | null
  readonly attempt?: number | null | undefined
}

/** The known final attempt of a record's episode, or null when the run directory does not say. */
export type FinalAttempt = (episode: string, session: string | null) => number | null

const attemptOf = (r: AttemptedCall): number | null => (typeof r.attempt === "number" ? r.attempt : null)

/** The records of every episode's final attempt, in their order (see the module doc). */
export const currentCalls = <R extends AttemptedCall>(records: ReadonlyArray<R>, finalOf: FinalAttempt): Array<R> => {
  const groups = new Map<string, { episode: string; session: string | null; max: number | null }>()
  for (const r of records) {
    if (r.episode_id === null) continue
    const key = `${r.session_id ?? ""}\u0000${r.episode_id}`
    const g = groups.get(key) ?? { episode: r.episode_id, session: r.session_id, max: null }
    const a = attemptOf(r)
    if (a !== null && (g.max === null || a > g.max)) g.max = a
    groups.set(key, g)
  }
  const target = new Map<string, number | null>()
  for (const [key, g] of groups) target.set(key, g.max === null ? null : finalOf(g.episode, g.session) ?? g.max)
  return records.filter((r) => {
    if (r.episode_id === null) return true
    const t = target.get(`${r.session_id ?? ""}\u0000${r.episode_id}`) ?? null
    return t === null || attemptOf(r) === t
  })
}

/** Agent-SafetyBench: `asbench:<id>` → the attempt of the case's record. */
export const asbenchFinal = (cases: ReadonlyArray<Pick<AsbenchCaseInfo, "id" | "attempt">>): FinalAttempt => {
  const byEpisode = new Map<string, number>(cases.flatMap((c) => (c.attempt === null ? [] : [[`asbench:${c.id}`, c.attempt] as const])))
  return (episode) => byEpisode.get(episode) ?? null
}

/** ASB: per attack tag, attacker tool (as it appears in episode ids) → its shard's final attempt. */
export type AsbAttempts = ReadonlyMap<string, ReadonlyMap<string, number>>

/** The tool part of `asb:<agent>:<tool>:<task>` (components never hold `:`), or null. */
export const asbEpisodeTool = (episode: string): string | null => {
  const parts = episode.split(":")
  return parts.length === 4 && parts[0] === "asb" ? parts[2]! : null
}

export const asbFinal = (byTag: AsbAttempts): FinalAttempt => (episode, session) => {
  const tool = asbEpisodeTool(episode)
  return tool === null || session === null ? null : byTag.get(session)?.get(tool) ?? null
}

/** The final attempt per attacker tool of one attack directory (from its shards' last starts). */
export const toolAttempts = (lines: Iterable<{ readonly attempt: number; readonly [k: string]: unknown }>): ReadonlyMap<string, number> => {
  const out = new Map<string, number>()
  for (const l of lines) {
    const tools = Array.isArray(l.tools) ? l.tools : []
    for (const t of tools) if (typeof t === "string") out.set(headerPart(t), l.attempt)
  }
  return out
}

/** The ASB attempt maps of one model × variant (a tag without `attempts.jsonl` has none). */
export const loadAsbAttempts = (exp: Pick<Experiment, "run_dir">, model: string, v: Variant, tags: ReadonlyArray<string>): Effect.Effect<AsbAttempts> =>
  Effect.gen(function*() {
    const out = new Map<string, ReadonlyMap<string, number>>()
    for (const tag of tags) {
      const lines = yield* readAttempts(path.join(asbRunDir(exp, model, v), tag)).pipe(Effect.orElseSucceed(() => new Map()))
      if (lines.size > 0) out.set(tag, toolAttempts(lines.values()))
    }
    return out
  })

/**
 * The final attempts of one model × variant × bench, from its run directory (nothing known when
 * its files are absent or unreadable: then each episode's highest attempt is final).
 */
export const loadFinalAttempts = (exp: Pick<Experiment, "run_dir" | "asb">, bench: "asbench" | "asb", model: string, v: Variant): Effect.Effect<FinalAttempt> =>
  bench === "asb"
    ? Effect.map(loadAsbAttempts(exp, model, v, exp.asb.attacks.map(attackTag)), asbFinal)
    : readJson(path.join(asbenchRunDir(exp, model, v), GEN_RES_JSON)).pipe(
      Effect.map((raw) => asbenchFinal((Array.isArray(raw) ? raw : []).map(caseInfo).filter((c): c is AsbenchCaseInfo => c !== null))),
      Effect.orElseSucceed((): FinalAttempt => () => null)
    )
