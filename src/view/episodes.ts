/**
 * The episodes of one experiment × bench × model across its variants, as rows to filter and page:
 * Agent-SafetyBench cases from `gen_res.jsonl` (category = the case's risks, outcome = its
 * ShieldAgent label, or `error`), AgentDojo's from `results.jsonl` (category = the suite, outcome =
 * security with an injection, utility without), ASB's from its audit log (category = the session,
 * i.e. the attack tag; no outcome). "Changed by the gate": the episode's final attempt
 * has a blocked call, or its outcome flipped safe↔unsafe against the paired arm (the experiment's
 * baseline) on the same case.
 */
import { Effect } from "effect"
import type { ViewExperiment, ViewRun } from "./discover.js"
import type { ViewReadError } from "./lines.js"
import { type CaseEntry, episodeKey, type Outcome, type RunIndex, runIndex } from "./run-index.js"

export interface EpisodeRow {
  readonly episode: string
  readonly session: string | null
  readonly variant: string
  readonly categories: ReadonlyArray<string>
  /** null where the bench's files give no outcome the view can read (ASB) */
  readonly outcome: Outcome | null
  readonly calls: number
  readonly blocked: number
  /** `safe→unsafe` / `unsafe→safe` against the paired arm's outcome of the same case, else null */
  readonly flip: string | null
  readonly changed: boolean
}

export interface EpisodeFilter {
  readonly variant: string | null
  readonly category: string | null
  readonly outcome: string | null
  readonly changed: boolean
}

export const PAGE_SIZE = 50

const rowsOfCases = (variant: string, index: RunIndex, paired: ReadonlyMap<string, CaseEntry> | null): Array<EpisodeRow> =>
  [...index.cases.values()].map((c) => {
    const calls = index.calls.get(episodeKey(null, c.episode)) ?? []
    const blocked = calls.filter((r) => r.blocked).length
    const mine = c.outcome
    const theirs = paired?.get(c.episode)?.outcome ?? null
    const flip = theirs !== null && (mine === "safe" || mine === "unsafe") && (theirs === "safe" || theirs === "unsafe") && mine !== theirs ? `${theirs}→${mine}` : null
    return { episode: c.episode, session: null, variant, categories: c.categories, outcome: mine, calls: calls.length, blocked, flip, changed: blocked > 0 || flip !== null }
  })

const rowsOfAudit = (variant: string, index: RunIndex): Array<EpisodeRow> =>
  [...index.calls.values()].flatMap((calls) => {
    const first = calls[0]
    if (first === undefined || first.episode_id === null) return []
    const blocked = calls.filter((r) => r.blocked).length
    return [{ episode: first.episode_id, session: first.session_id, variant, categories: first.session_id === null ? [] : [first.session_id], outcome: null, calls: calls.length, blocked, flip: null, changed: blocked > 0 }]
  })

/** The runs of one bench × model, in the experiment's variant order. */
export const runsOf = (exp: ViewExperiment, bench: string, modelDir: string): Array<ViewRun> => {
  const runs = exp.runs.filter((r) => r.bench === bench && r.modelDir === modelDir)
  const order = exp.variants.map((v) => v.name)
  return runs.sort((a, b) => order.indexOf(a.variant) - order.indexOf(b.variant))
}

/** Every row of the bench × model (every variant), in variant order then file order. */
export const episodeRows = (exp: ViewExperiment, runs: ReadonlyArray<ViewRun>): Effect.Effect<Array<EpisodeRow>, ViewReadError> =>
  Effect.gen(function*() {
    const baselineRun = runs.find((r) => r.variant === exp.baseline)
    const paired = baselineRun === undefined ? null : (yield* runIndex(exp, baselineRun)).cases
    const rows: Array<EpisodeRow> = []
    for (const run of runs) {
      const index = yield* runIndex(exp, run)
      const pair = run.variant === exp.baseline ? null : paired
      rows.push(...(run.bench === "asb" ? rowsOfAudit(run.variant, index) : rowsOfCases(run.variant, index, pair)))
    }
    return rows
  })

export const matches = (row: EpisodeRow, f: EpisodeFilter): boolean =>
  (f.variant === null || row.variant === f.variant) &&
  (f.category === null || row.categories.includes(f.category)) &&
  (f.outcome === null || (row.outcome ?? "none") === f.outcome) &&
  (!f.changed || row.changed)

export interface EpisodePage {
  readonly rows: ReadonlyArray<EpisodeRow>
  readonly total: number
  readonly matching: number
  readonly page: number
  readonly pages: number
  readonly categories: ReadonlyArray<string>
  readonly outcomes: ReadonlyArray<string>
}

/** The rows that pass the filter, page `page` (from 1, clamped) of `PAGE_SIZE`. */
export const pageOf = (rows: ReadonlyArray<EpisodeRow>, f: EpisodeFilter, page: number): EpisodePage => {
  const hits = rows.filter((r) => matches(r, f))
  const pages = Math.max(1, Math.ceil(hits.length / PAGE_SIZE))
  const p = Math.min(Math.max(1, page), pages)
  return {
    rows: hits.slice((p - 1) * PAGE_SIZE, p * PAGE_SIZE),
    total: rows.length,
    matching: hits.length,
    page: p,
    pages,
    categories: [...new Set(rows.flatMap((r) => r.categories))].sort(),
    outcomes: [...new Set(rows.map((r) => r.outcome ?? "none"))].sort()
  }
}
