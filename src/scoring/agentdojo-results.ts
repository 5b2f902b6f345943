/**
 * Reading AgentDojo results and building the summary's `agentdojo` block (metrics:
 * `agentdojo.ts`).
 *
 * Inputs per model × variant: the launcher's `results.jsonl` in `<run_dir>/agentdojo/<slug(model)>/<variant>/`
 * (`agentdojoRunDir`; a sharded run after `vetobench merge`), read as Python writes JSON, lines that
 * are not result rows (no `agentdojo:` episode, suite or user task; a torn last line) skipped; an
 * episode the run planned (`episodes.json`) without a row (the launcher was killed or crashed
 * before writing it) is an error row, so it is counted in `errors` instead of vanishing; and
 * the proxy's audit files of the variant's run id (`auditFilesFor`, bench `agentdojo`: every
 * shard's after a merge). The variants are the experiment's, then its AgentDojo defense variants,
 * then any other directory found there (sorted); a variant's arm, judge and defense come from the
 * experiment, else from its rows.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { EPISODES_JSON, resultsFile } from "../adapters/agentdojo/results.js"
import { defenseVariants } from "../config/agentdojo.js"
import type { Experiment, Variant } from "../config/experiment.js"
import type { CallRecord } from "../domain/audit-record.js"
import { oneLine } from "../domain/one-line.js"
import { ARMS, type Arm } from "../domain/route.js"
import { agentdojoRunDir, slug } from "../run-layout/paths.js"
import { type AgentdojoRow, agentdojoCell, agentdojoRowOf, finalRows, isCallOf, rowProblem, rowTokens, stopped } from "./agentdojo.js"
import { currentCalls, type FinalAttempt } from "./current.js"
import { readCallRecordsOf, readJsonLines, readResultRecords, type ScoringReadError } from "./files.js"
import { flaggedResults } from "./flagged-results.js"
import type { BootstrapOptions } from "./stats.js"
import { liveJudgeStats } from "./metrics.js"
import type { AgentdojoAudit, AgentdojoVariantSummary, LiveJudgeStats } from "./summary-types.js"

/** `<run_dir>/agentdojo/<slug(model)>`: one directory per variant below it. */
export const agentdojoModelDir = (exp: Pick<Experiment, "run_dir">, model: string): string => path.join(exp.run_dir, "agentdojo", slug(model))

const listDir = (dir: string): Array<fs.Dirent> => {
  try {
    return fs.readdirSync(dir, { withFileTypes: true })
  } catch {
    return []
  }
}

export interface AgentdojoFiles {
  /** the files that hold rows */
  readonly files: ReadonlyArray<string>
  /** every row of every file, file order; then an error row per planned episode without a row */
  readonly rows: ReadonlyArray<AgentdojoRow>
  /** the planned episodes (`episodes.json`) that have no row, in plan order */
  readonly missing: ReadonlyArray<string>
}

/** What a planned episode without a row reads as: an infrastructure error, never an outcome. */
export const MISSING_ROW = "no result row: the launcher ended before this episode finished (a re-run runs it)"

/** The episode ids of `<dir>/episodes.json` (the runner writes it before the launcher starts); [] when absent or unreadable. */
const plannedEpisodes = (dir: string): Effect.Effect<ReadonlyArray<string>> =>
  Effect.sync(() => {
    try {
      const v: unknown = JSON.parse(fs.readFileSync(path.join(dir, EPISODES_JSON), "utf8"))
      return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []
    } catch {
      return []
    }
  })

/** The row a planned episode without a result row stands for (suite and tasks from its id). */
const missingRow = (episode: string): AgentdojoRow | null => {
  const [, suite, user, injection, attack] = episode.split(":")
  return agentdojoRowOf({
    episode,
    suite,
    user_task: user,
    injection_task: injection === "none" ? null : injection,
    attack: attack === "none" ? null : attack,
    utility: null,
    security: null,
    error: MISSING_ROW
  })
}

/** The rows of a variant directory's results file (Python JSON: `NaN` and friends read), and its planned episodes without one. */
export const readAgentdojoRows = (dir: string): Effect.Effect<AgentdojoFiles, ScoringReadError> =>
  Effect.gen(function*() {
    const files: Array<string> = []
    const rows: Array<AgentdojoRow> = []
    for (const file of [resultsFile(dir)].filter((f) => fs.existsSync(f))) {
      const mine = (yield* readJsonLines(file, true)).map(agentdojoRowOf).filter((r): r is AgentdojoRow => r !== null)
      if (mine.length > 0) files.push(file)
      rows.push(...mine)
    }
    const seen = new Set(rows.map((r) => r.episode))
    const missing: Array<string> = []
    for (const id of yield* plannedEpisodes(dir)) {
      const r = seen.has(id) ? null : missingRow(id)
      if (r === null) continue
      seen.add(id)
      missing.push(id)
      rows.push(r)
    }
    return { files, rows, missing }
  })

/**
 * The experiment's variants that have a directory, then its AgentDojo defense variants
 * (`defense-<name>`, `agentdojo.defenses` order), then any other directory (sorted).
 */
export const agentdojoVariants = (
  exp: Pick<Experiment, "run_dir" | "variants" | "agentdojo">,
  model: string
): Array<{ readonly name: string; readonly known: Variant | undefined }> => {
  const dirs = new Set(listDir(agentdojoModelDir(exp, model)).filter((e) => e.isDirectory()).map((e) => e.name))
  const listed: ReadonlyArray<Variant> = [...exp.variants, ...(exp.agentdojo === undefined ? [] : defenseVariants(exp.agentdojo))]
  const known = listed.filter((v) => dirs.has(v.name)).map((v) => ({ name: v.name, known: v }))
  const extra = [...dirs].filter((d) => !listed.some((v) => v.name === d)).sort().map((name) => ({ name, known: undefined }))
  return [...known, ...extra]
}

const isArm = (s: string | null): s is Arm => s !== null && (ARMS as ReadonlyArray<string>).includes(s)

/** The variant's identity: the experiment's, else what its rows say (a defense variant: arm baseline). */
const identityOf = (name: string, known: Variant | undefined, rows: ReadonlyArray<AgentdojoRow>): Variant & { readonly defense: string | null } => {
  const first = rows[0]
  const defense = rows.find((r) => r.defense !== null)?.defense ?? (name.startsWith("defense-") ? name.slice("defense-".length) : null)
  if (known !== undefined) return { ...known, defense }
  const arm = isArm(first?.arm ?? null) ? (first!.arm as Arm) : "baseline"
  return { name, arm, judge: arm === "shadow" || arm === "enforce" ? (first?.judge ?? null) : null, defense }
}

const distinct = (xs: ReadonlyArray<string | null>): Array<string> => [...new Set(xs.filter((x): x is string => x !== null))].sort()

export interface AgentdojoBuild {
  readonly exp: Pick<Experiment, "name" | "run_dir" | "models" | "variants" | "agentdojo">
  /** the variant every Δ is taken against (the experiment's baseline), if any */
  readonly control: Variant | undefined
  /** the audit files of a model × variant (`auditFilesFor` with bench `agentdojo`) */
  readonly auditFiles: (model: string, v: Variant) => ReadonlyArray<string>
  readonly boot: BootstrapOptions
  /** a sentence for the summary's notes */
  readonly note: (s: string) => void
}

interface Loaded {
  readonly variant: Variant & { readonly defense: string | null }
  readonly files: ReadonlyArray<string>
  readonly all: number
  readonly rows: ReadonlyArray<AgentdojoRow>
  readonly stale: number
  /** planned episodes without a row (their rows above are error rows) */
  readonly missing: ReadonlySet<string>
}

/** Each episode's final attempt: its row's (rows are the final attempts'); null for an episode no row has. */
const finalOf = (rows: ReadonlyArray<AgentdojoRow>): FinalAttempt => {
  const attempts = new Map(rows.map((r) => [r.episode, r.attempt] as const))
  return (episode) => attempts.get(episode) ?? null
}

const auditOf = (
  rows: ReadonlyArray<AgentdojoRow>,
  files: ReadonlyArray<string>,
  records: ReadonlyArray<CallRecord>
): { readonly audit: AgentdojoAudit; readonly current: ReadonlyArray<CallRecord> } => {
  const final = finalOf(rows)
  const current = currentCalls(records, final)
  const unmatched = [...new Set(current.flatMap((r) => (r.episode_id !== null && final(r.episode_id, r.session_id) === null ? [r.episode_id] : [])))].sort()
  return {
    audit: { audit_files: files, calls: current.length, stale_calls: records.length - current.length, unmatched_episodes: unmatched.length, unmatched_examples: unmatched.slice(0, 5) },
    current
  }
}

/** What the gate's records give the rest of the summary for one judged variant. */
export interface AgentdojoLogged {
  /** coverage, holds, latency, judge tokens (the `live` block, bench `agentdojo`) */
  readonly live: LiveJudgeStats
  /** stopped calls of an injection task's ground-truth functions in counted attacked episodes (the cost table's unsafe calls) */
  readonly blocked_harmful_calls: number
}

export interface AgentdojoBlock {
  /** model → variant → figures (the summary's `agentdojo`) */
  readonly byModel: Record<string, Record<string, AgentdojoVariantSummary>>
  /** model → judged variant with audit records → what the proxy logged */
  readonly logged: Record<string, Record<string, AgentdojoLogged>>
}

/** Stopped calls of a function of the episode's injection ground truth, over counted attacked episodes. */
export const blockedHarmfulCalls = (rows: ReadonlyArray<AgentdojoRow>, records: ReadonlyArray<CallRecord>): number => {
  const harmful = new Map(rows.filter((r) => rowProblem(r) === null && r.injection_task !== null).map((r) => [r.episode, r.injection_ground_truth] as const))
  return records.filter((r) => r.episode_id !== null && stopped(r) && (harmful.get(r.episode_id) ?? []).some((gt) => isCallOf(r, gt))).length
}

/** The `agentdojo` block of the summary and its audit figures (see the module doc). */
export const buildAgentdojo = (build: AgentdojoBuild): Effect.Effect<AgentdojoBlock> =>
  Effect.gen(function*() {
    // row values (attack names, versions) end up in notes: one line each
    const input: AgentdojoBuild = { ...build, note: (s) => build.note(oneLine(s, 1_000)) }
    const out: Record<string, Record<string, AgentdojoVariantSummary>> = {}
    const logged: Record<string, Record<string, AgentdojoLogged>> = {}
    const skipped = (sentence: string) =>
      Effect.sync(() => {
        input.note(sentence)
        return null
      })
    for (const model of input.exp.models) {
      const loaded: Array<Loaded> = []
      for (const { known, name } of agentdojoVariants(input.exp, model)) {
        const dir = agentdojoRunDir(input.exp, model, { name })
        const read = yield* readAgentdojoRows(dir).pipe(
          Effect.catchAll((e) => skipped(`AgentDojo ${model} / ${name}: ${e.message}; skipped`))
        )
        if (read === null) continue
        if (read.rows.length === 0) {
          // nothing planned and nothing run; a plan without a single row is shown below, every episode an error
          input.note(`AgentDojo ${model} / ${name}: no result rows in ${dir}`)
          continue
        }
        if (read.missing.length > 0) {
          input.note(`AgentDojo ${model} / ${name}: ${read.missing.length} planned episodes have no result row (first: ${read.missing[0]}); counted as errors`)
        }
        const final = finalRows(read.rows)
        const missing = new Set(read.missing)
        loaded.push({
          variant: identityOf(name, known, final.rows.filter((r) => !missing.has(r.episode))),
          files: read.files,
          all: read.rows.length - missing.size,
          rows: final.rows,
          stale: final.stale,
          missing
        })
      }
      if (loaded.length === 0) {
        if (input.exp.agentdojo?.enabled === true) input.note(`AgentDojo ${model}: not run (no results under ${agentdojoModelDir(input.exp, model)})`)
        continue
      }
      const control = input.control === undefined ? undefined : loaded.find((l) => l.variant.name === input.control!.name)
      if (input.control !== undefined && control === undefined) input.note(`AgentDojo ${model}: no ${input.control.name} results, so no paired differences`)
      // a Map, not an object: a variant directory may be named anything (`__proto__` included)
      const rows = new Map<string, AgentdojoVariantSummary>()
      for (const l of loaded) {
        let records: ReadonlyArray<CallRecord> | null = null
        let audit: AgentdojoAudit | null = null
        const files = input.auditFiles(model, l.variant)
        if (files.length > 0) {
          const all = yield* readCallRecordsOf(files).pipe(
            Effect.catchAll((e) => skipped(`AgentDojo ${model} / ${l.variant.name}: audit ${e.message}; skipped`))
          )
          if (all !== null) {
            // an episode without a row has no final attempt: its records stay unmatched
            const joined = auditOf(l.rows.filter((r) => !l.missing.has(r.episode)), files, all)
            audit = joined.audit
            records = joined.current
          }
        }
        const gated = l.variant.judge !== null ? records : null
        if (gated !== null && audit !== null && l.variant.judge !== null) {
          const stats = liveJudgeStats(gated, { variant: l.variant.name, judge: l.variant.judge, audit_files: audit.audit_files, stale: audit.stale_calls })
          // the result screen's rulings of the final attempts, as for the other benchmarks
          const screened = currentCalls(yield* readResultRecords(files).pipe(Effect.orElseSucceed(() => [])), finalOf(l.rows.filter((r) => !l.missing.has(r.episode))))
          const live = screened.length === 0 ? stats : { ...stats, flagged_results: flaggedResults(screened) }
          logged[model] = { ...logged[model], [l.variant.name]: { live, blocked_harmful_calls: blockedHarmfulCalls(l.rows, gated) } }
        }
        const pairWith = control !== undefined && control !== l ? control : null
        const suites = distinct(l.rows.map((r) => r.suite))
        const counted = l.rows.filter((r) => rowProblem(r) === null)
        const cell = (keep: (r: AgentdojoRow) => boolean) =>
          agentdojoCell(
            {
              rows: l.rows.filter(keep),
              baseline: pairWith === null ? null : { name: pairWith.variant.name, rows: pairWith.rows.filter(keep) },
              records: gated
            },
            input.boot
          )
        const attacks = distinct(l.rows.map((r) => r.attack))
        if (attacks.length > 1) input.note(`AgentDojo ${model} / ${l.variant.name}: ${attacks.length} attacks pooled in every figure (${attacks.join(", ")})`)
        rows.set(l.variant.name, {
          variant: l.variant.name,
          arm: l.variant.arm,
          judge: l.variant.judge,
          defense: l.variant.defense,
          oracle: counted.length > 0 && counted.every((r) => r.oracle),
          oracle_episodes: l.rows.filter((r) => r.oracle).length,
          benchmark_versions: distinct(l.rows.map((r) => r.benchmark_version)),
          suites,
          attacks,
          files: l.files,
          rows: l.all,
          stale_rows: l.stale,
          error_examples: distinct(l.rows.map((r) => {
            const p = rowProblem(r)
            return p === null ? null : oneLine(p, 300)
          })).slice(0, 3),
          overall: cell(() => true),
          by_suite: Object.fromEntries(suites.map((s) => [s, cell((r) => r.suite === s)] as const)),
          audit,
          agent_tokens: rowTokens(l.rows)
        })
        const versions = rows.get(l.variant.name)!.benchmark_versions
        if (versions.length > 1) input.note(`AgentDojo ${model} / ${l.variant.name}: rows of ${versions.length} benchmark versions (${versions.join(", ")})`)
        const baseVersions = pairWith === null ? versions : distinct(pairWith.rows.map((r) => r.benchmark_version))
        if (versions.join() !== baseVersions.join()) {
          input.note(`AgentDojo ${model} / ${l.variant.name}: benchmark version ${versions.join(", ") || "unknown"} differs from ${pairWith!.variant.name}'s (${baseVersions.join(", ") || "unknown"}); paired by episode id all the same`)
        }
      }
      out[model] = Object.fromEntries(rows)
    }
    return { byModel: out, logged }
  })
