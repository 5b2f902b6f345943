/**
 * The index of one run (model × variant × bench), built by streaming its files once and kept while
 * the files are unchanged (size and mtime): per episode, where its line is in `gen_res.jsonl`
 * (Agent-SafetyBench) or `results.jsonl` (AgentDojo) — the last line of an episode wins, as a
 * resumed run appends — its categories, outcome and attempt; and where its call records are in the audit logs, with the
 * approval records by the call they decide. Counts take each episode's calls from its final
 * attempt (`currentCalls`, as the report does). Nothing but offsets and a few fields is kept.
 */
import { Effect } from "effect"
import * as path from "node:path"
import { RESULTS_JSONL } from "../adapters/agentdojo/results.js"
import { isObject } from "../domain/is-object.js"
import { parsePythonJson } from "../domain/python-json.js"
import { GEN_RES_JSONL, SHIELD_JSONL } from "../run-layout/files.js"
import { auditFilesFor } from "../run-layout/paths.js"
import { asbFinal, currentCalls, type FinalAttempt, loadAsbAttempts } from "../scoring/current.js"
import { caseInfo } from "../scoring/metrics.js"
import type { ViewExperiment, ViewRun } from "./discover.js"
import { fileStamp, forEachLine, type ViewReadError } from "./lines.js"

/**
 * An episode's outcome: Agent-SafetyBench's ShieldAgent label (`safe`, `unsafe`, `unscored`);
 * AgentDojo's security with an injection (`unsafe`: the injection task succeeded, else `safe`) and
 * its utility without one (`useful`, `not useful`); `error` when the episode ended in error.
 */
export type Outcome = "safe" | "unsafe" | "unscored" | "error" | "useful" | "not useful"

/** Where a line is. */
export interface LineRef {
  readonly file: string
  readonly offset: number
  readonly bytes: number
}

/** An episode of the run's own result file (Agent-SafetyBench `gen_res.jsonl`, AgentDojo `results.jsonl`). */
export interface CaseEntry {
  /** `asbench:<id>`, `agentdojo:<suite>:<user task>:<injection task>:<attack>` */
  readonly episode: string
  readonly line: LineRef
  /** Agent-SafetyBench: the case's risks; AgentDojo: the suite */
  readonly categories: ReadonlyArray<string>
  readonly attempt: number | null
  readonly outcome: Outcome
}

export interface CallRef {
  readonly line: LineRef
  readonly episode_id: string | null
  readonly session_id: string | null
  readonly attempt?: number
  readonly hash: string
  readonly blocked: boolean
}

export interface RunIndex {
  /** the episodes of the run's result file by id (Agent-SafetyBench, AgentDojo; empty for ASB, whose episodes come from the audit log) */
  readonly cases: ReadonlyMap<string, CaseEntry>
  readonly auditFiles: ReadonlyArray<string>
  /** each episode's call records of its final attempt, in log order (key: session + episode) */
  readonly calls: ReadonlyMap<string, ReadonlyArray<CallRef>>
  /** calls of earlier attempts, left out of everything shown */
  readonly staleCalls: number
  /** approval records (`type: approval`) by the hash of the call they decide */
  readonly approvals: ReadonlyMap<string, LineRef>
}

/** The key of an episode's calls: its session (ASB: the attack tag) and its id. */
export const episodeKey = (session: string | null, episode: string): string => `${session ?? ""}\u0000${episode}`

const asbenchOutcome = (status: "ok" | "exceeded" | "error", label: 0 | 1 | undefined): Outcome =>
  status === "error" ? "error" : label === 0 ? "safe" : label === 1 ? "unsafe" : "unscored"

const agentdojoOutcome = (row: Record<string, unknown>): Outcome =>
  typeof row.error === "string"
    ? "error"
    : row.security === true
    ? "unsafe"
    : row.security === false
    ? "safe"
    : row.utility === true
    ? "useful"
    : row.utility === false
    ? "not useful"
    : "unscored"

const parseLine = (text: string, python: boolean): unknown => {
  try {
    return python ? parsePythonJson(text) : JSON.parse(text)
  } catch {
    return null
  }
}

const readCases = (dir: string) =>
  Effect.gen(function*() {
    const file = path.join(dir, GEN_RES_JSONL)
    const labels = new Map<number, 0 | 1>()
    yield* forEachLine(path.join(dir, SHIELD_JSONL), (l) => {
      const v = parseLine(l.text, true)
      if (isObject(v) && typeof v.id === "number" && (v.pred_label === 0 || v.pred_label === 1)) labels.set(v.id, v.pred_label)
    })
    const cases = new Map<string, CaseEntry>()
    yield* forEachLine(file, (l) => {
      const info = caseInfo(parseLine(l.text, true))
      if (info === null) return
      const episode = `asbench:${info.id}`
      cases.delete(episode) // the last line of a case wins, and takes its place in the order
      cases.set(episode, {
        episode,
        line: { file, offset: l.offset, bytes: l.bytes },
        categories: info.risks,
        attempt: info.attempt,
        outcome: asbenchOutcome(info.status, labels.get(info.id))
      })
    })
    return cases
  })

/** AgentDojo's rows (`results.jsonl`): the last row of an episode wins, as a re-run appends. */
const readAgentdojoRows = (dir: string) =>
  Effect.gen(function*() {
    const file = path.join(dir, RESULTS_JSONL)
    const cases = new Map<string, CaseEntry>()
    yield* forEachLine(file, (l) => {
      const row = parseLine(l.text, false)
      if (!isObject(row) || typeof row.episode !== "string" || typeof row.suite !== "string") return
      const attempt = typeof row.attempt === "number" && Number.isSafeInteger(row.attempt) && row.attempt > 0 ? row.attempt : null
      cases.delete(row.episode)
      cases.set(row.episode, { episode: row.episode, line: { file, offset: l.offset, bytes: l.bytes }, categories: [row.suite], attempt, outcome: agentdojoOutcome(row) })
    })
    return cases
  })

/** The final attempt of each episode its result file names (the others: their highest attempt). */
const finalFromCases = (cases: ReadonlyMap<string, CaseEntry>): FinalAttempt => (episode) => cases.get(episode)?.attempt ?? null

const readCalls = (files: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const calls: Array<CallRef> = []
    const approvals = new Map<string, LineRef>()
    for (const file of files) {
      yield* forEachLine(file, (l) => {
        const v = parseLine(l.text, false)
        if (!isObject(v)) return
        const line = { file, offset: l.offset, bytes: l.bytes }
        if (v.type === "approval" && isObject(v.ref) && typeof v.ref.hash === "string") approvals.set(v.ref.hash, line)
        if (v.type !== "call" || typeof v.hash !== "string") return
        const attempt = typeof v.attempt === "number" && Number.isSafeInteger(v.attempt) && v.attempt > 0 ? v.attempt : undefined
        calls.push({
          line,
          episode_id: typeof v.episode_id === "string" ? v.episode_id : null,
          session_id: typeof v.session_id === "string" ? v.session_id : null,
          ...(attempt === undefined ? {} : { attempt }),
          hash: v.hash,
          blocked: v.blocked === true
        })
      })
    }
    return { calls, approvals }
  })

const finalAttempts = (exp: ViewExperiment, run: ViewRun, cases: ReadonlyMap<string, CaseEntry>): Effect.Effect<FinalAttempt> =>
  run.bench === "asb"
    ? Effect.map(loadAsbAttempts({ run_dir: exp.dir }, run.modelDir, { name: run.variant, arm: "baseline", judge: null }, run.tags), asbFinal)
    : Effect.succeed(finalFromCases(cases))

const build = (exp: ViewExperiment, run: ViewRun, auditFiles: ReadonlyArray<string>): Effect.Effect<RunIndex, ViewReadError> =>
  Effect.gen(function*() {
    const cases = run.bench === "asbench" ? yield* readCases(run.dir) : run.bench === "agentdojo" ? yield* readAgentdojoRows(run.dir) : new Map<string, CaseEntry>()
    const { approvals, calls } = yield* readCalls(auditFiles)
    const current = currentCalls(calls, yield* finalAttempts(exp, run, cases))
    const byEpisode = new Map<string, Array<CallRef>>()
    for (const c of current) {
      if (c.episode_id === null) continue
      const k = episodeKey(c.session_id, c.episode_id)
      const list = byEpisode.get(k) ?? []
      list.push(c)
      byEpisode.set(k, list)
    }
    return { cases, auditFiles, calls: byEpisode, staleCalls: calls.length - current.length, approvals }
  })

/** The audit files of a run: those `auditFilesFor` names (shards included), in the experiment's audit folder. */
export const runAuditFiles = (exp: ViewExperiment, run: ViewRun): ReadonlyArray<string> =>
  exp.auditDir === null ? [] : auditFilesFor(exp.auditDir, { name: exp.name, run_dir: exp.dir }, run.bench, run.modelDir, { name: run.variant })

/** A run's index as built (or being built) for one state of its files: every request for that state shares the one build. */
const cache = new Map<string, { readonly stamp: string; readonly index: Effect.Effect<RunIndex, ViewReadError> }>()
/** At most this many run indexes are kept (the least recently built go first). */
const CACHE_RUNS = 64
let builds = 0

/** How many run indexes this process has built (a diagnostic: concurrent requests share a build). */
export const indexBuilds = (): number => builds

/** The run's index, rebuilt when one of its files changed since it was built; requests that come while it is built wait for that build. */
export const runIndex = (exp: ViewExperiment, run: ViewRun): Effect.Effect<RunIndex, ViewReadError> =>
  Effect.suspend(() => {
    const auditFiles = runAuditFiles(exp, run)
    const watched = [path.join(run.dir, GEN_RES_JSONL), path.join(run.dir, SHIELD_JSONL), path.join(run.dir, RESULTS_JSONL), ...run.tags.map((t) => path.join(run.dir, t, "attempts.jsonl")), ...auditFiles]
    const stamp = watched.map((f) => `${f}=${fileStamp(f) ?? "-"}`).join("|")
    const hit = cache.get(run.dir)
    if (hit !== undefined && hit.stamp === stamp) return hit.index
    return Effect.flatMap(
      Effect.cached(Effect.suspend(() => {
        builds++
        return build(exp, run, auditFiles)
      })),
      (once) => {
        const entry: { readonly stamp: string; readonly index: Effect.Effect<RunIndex, ViewReadError> } = {
          stamp,
          // a failed build is not kept: the next request tries again
          index: Effect.tapError(once, (): Effect.Effect<void> =>
            Effect.sync(() => {
              if (cache.get(run.dir) === entry) cache.delete(run.dir)
            }))
        }
        cache.delete(run.dir)
        cache.set(run.dir, entry)
        if (cache.size > CACHE_RUNS) cache.delete(cache.keys().next().value!)
        return entry.index
      }
    )
  })
