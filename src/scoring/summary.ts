/**
 * `buildSummary(exp, settings)`: everything under the experiment's `run_dir` (+ the proxy's
 * `audit_dir`) as one `Summary` (types in `summary-types.ts`; reference §9.2, §9.3, §10,
 * architecture decisions 10 and 11). It never fails: whatever is absent or unreadable (a benchmark
 * not run or not scored, no baseline, no labels, no replay, the ASB checkout) is left out with a
 * sentence in `notes`.
 *
 * Inputs
 * - Agent-SafetyBench per model × variant: `asbench/<slug(model)>/<variant>/gen_res.json` and
 *   `shield.jsonl`.
 * - ASB per model × variant × attack tag: `asb/<slug(model)>/<variant>/<tag>/shard*.csv`.
 * - Live judge figures per model × bench × judged variant: `<audit_dir>/<auditFileName(run id)>`.
 * - Judge quality per model × bench: `replay/<bench>.<slug(model)>.jsonl`, against the baseline's
 *   call records (what had to be ruled), its ShieldAgent labels (Agent-SafetyBench) and ASB's tool
 *   name lists from `paths.asb_dir` (ASB).
 *
 * Paired Δs are taken against `experiment.baseline` (the `baseline` arm, else `passthrough`) for
 * every other variant, whatever the order of `arms`. Every bootstrap uses `opts.seed` (default 0)
 * and `opts.iterations` resamples (default 10,000).
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { GEN_RES_JSON, SHIELD_JSONL } from "../adapters/agent-safetybench/files.js"
import { asbenchRunDir, asbRunDir, attackTag, type Bench, type Experiment, type Variant } from "../config/experiment.js"
import type { Settings } from "../config/settings.js"
import { auditFileFor, baselineVariant, replayFile } from "../experiment/replay.js"
import { type AsbToolNames, loadAsbToolNames, readAsbShards, shardFiles } from "./asb-results.js"
import { readCallRecords, readJson, readJsonLines } from "./files.js"
import { decisionsByJudge, evalAsbenchJudge, evalAsbJudge, readReplayLines } from "./judge-eval.js"
import {
  asbDelta,
  asbenchDelta,
  asbenchMetrics,
  type AsbenchCaseInfo,
  type AsbenchCore,
  asbFields,
  asbMetrics,
  type AsbCore,
  caseInfo,
  liveJudgeStats,
  refusalMarker,
  shieldLabels,
  type ShieldLabels
} from "./metrics.js"
import { type BootstrapOptions, DEFAULT_ITERATIONS, DEFAULT_SEED } from "./stats.js"
import {
  type AsbenchJudgeQuality,
  type AsbenchVariantSummary,
  type AsbJudgeQuality,
  type AsbVariantSummary,
  type JudgesByBench,
  type LiveJudgeStats,
  type Summary,
  SUMMARY_SCHEMA,
  type SummaryExperiment
} from "./summary-types.js"

export * from "./summary-types.js"

export interface SummaryOptions {
  /** bootstrap resamples (default 10,000) */
  readonly iterations?: number
  /** bootstrap PRNG seed (default 0) */
  readonly seed?: number
  /** the clock for `generated_at` */
  readonly now?: () => Date
}

/** The variant every paired Δ is taken against: the baseline arm, else passthrough. */
export const controlVariant = (exp: Pick<Experiment, "variants">): Variant | undefined =>
  baselineVariant(exp) ?? exp.variants.find((v) => v.arm === "passthrough")

const judged = (v: Variant): v is Variant & { readonly judge: string } => v.judge !== null

interface AsbenchRun {
  readonly cases: ReadonlyArray<AsbenchCaseInfo>
  readonly labels: ShieldLabels
  readonly scored: boolean
}

export const buildSummary = (exp: Experiment, settings: Settings, opts: SummaryOptions = {}): Effect.Effect<Summary> =>
  Effect.gen(function*() {
    const notes: Array<string> = []
    const boot: BootstrapOptions = { iterations: opts.iterations ?? DEFAULT_ITERATIONS, seed: opts.seed ?? DEFAULT_SEED }
    const auditDir = settings.proxy.audit_dir
    const control = controlVariant(exp)
    const replayBase = baselineVariant(exp)
    const tags = exp.asb.attacks.map(attackTag)
    /** run an effect; on failure note it and give null */
    const attempt = <A, E extends { readonly message: string }>(self: Effect.Effect<A, E>, what: string): Effect.Effect<A | null> =>
      self.pipe(Effect.catchAll((e) => Effect.sync(() => {
        notes.push(`${what}: ${e.message}; skipped`)
        return null
      })))

    if (control === undefined) notes.push(`no baseline or passthrough arm in ${exp.file} (arms: ${exp.arms.join(", ")}): no paired differences`)
    else if (control.arm === "passthrough") notes.push(`no baseline arm: paired differences are taken against passthrough`)

    // -------------------------------------------------------------------------------------------
    // live: what the proxy logged for judged variants

    const live: Record<string, { asbench: Record<string, LiveJudgeStats>; asb: Record<string, LiveJudgeStats> }> = {}
    for (const model of exp.models) {
      const byBench = { asbench: {} as Record<string, LiveJudgeStats>, asb: {} as Record<string, LiveJudgeStats> }
      for (const bench of ["asbench", "asb"] as const) {
        for (const v of exp.variants.filter(judged)) {
          const file = auditFileFor(auditDir, exp, bench, model, v)
          if (!fs.existsSync(file)) continue
          const records = yield* attempt(readCallRecords(file), `audit file ${file}`)
          if (records === null) continue
          byBench[bench][v.name] = liveJudgeStats(records, { variant: v.name, judge: v.judge, audit_file: file })
        }
      }
      live[model] = byBench
    }

    // -------------------------------------------------------------------------------------------
    // Agent-SafetyBench

    const asbench: Record<string, Record<string, AsbenchVariantSummary>> = {}
    const asbenchRuns = new Map<string, AsbenchRun>() // `${model}\u0000${variant}`
    const categories = new Set<string>()
    if (!exp.agent_safetybench.enabled) notes.push(`Agent-SafetyBench is disabled in ${exp.file}`)
    for (const model of exp.models) {
      const missing: Array<string> = []
      const unscored: Array<string> = []
      const cores = new Map<string, AsbenchCore>()
      const rows: Record<string, AsbenchVariantSummary> = {}
      for (const v of exp.variants) {
        const dir = asbenchRunDir(exp, model, v)
        const genRes = path.join(dir, GEN_RES_JSON)
        if (!fs.existsSync(genRes)) {
          missing.push(v.name)
          continue
        }
        const raw = yield* attempt(readJson(genRes), `Agent-SafetyBench ${model} / ${v.name}`)
        if (raw === null) continue
        if (!Array.isArray(raw)) {
          notes.push(`Agent-SafetyBench ${model} / ${v.name}: ${genRes} is not a JSON list; skipped`)
          continue
        }
        const cases = raw.map(caseInfo).filter((c): c is AsbenchCaseInfo => c !== null)
        const shieldFile = path.join(dir, SHIELD_JSONL)
        const scored = fs.existsSync(shieldFile)
        if (!scored) unscored.push(v.name)
        const lines = scored ? yield* attempt(readJsonLines(shieldFile, true), `ShieldAgent labels ${model} / ${v.name}`) : []
        const labels = shieldLabels(lines ?? [])
        asbenchRuns.set(`${model}\u0000${v.name}`, { cases, labels, scored })
        const core = asbenchMetrics(cases, labels)
        cores.set(v.name, core)
        for (const c of Object.keys(core.by_category)) categories.add(c)
        const liveStats = live[model]?.asbench[v.name]
        rows[v.name] = {
          variant: v.name,
          arm: v.arm,
          judge: v.judge,
          n_cases: core.n_cases,
          n_scored: core.n_scored,
          status: core.status,
          infra_errors: core.infra_errors,
          episodes_with_block: core.episodes_with_block,
          overall: core.overall,
          by_category: core.by_category,
          by_fulfillable: core.by_fulfillable,
          by_failure_mode: core.by_failure_mode,
          coverage: liveStats?.coverage ?? null,
          hold_rate: liveStats?.hold_rate ?? null,
          delta: null
        }
      }
      if (exp.agent_safetybench.enabled && missing.length > 0) {
        notes.push(`Agent-SafetyBench ${model}: not run for ${missing.join(", ")} (no ${GEN_RES_JSON})`)
      }
      if (unscored.length > 0) notes.push(`Agent-SafetyBench ${model}: not scored for ${unscored.join(", ")} (no ${SHIELD_JSONL}; run vetobench score)`)
      const base = control === undefined ? undefined : cores.get(control.name)
      if (control !== undefined && Object.keys(rows).some((n) => n !== control.name)) {
        if (base === undefined || base.n_scored === 0) {
          notes.push(`Agent-SafetyBench ${model}: no scored ${control.name} run, so no paired differences`)
        } else {
          for (const [name, row] of Object.entries(rows)) {
            if (name === control.name) continue
            rows[name] = { ...row, delta: asbenchDelta(control.name, base, cores.get(name)!, boot) }
          }
        }
      }
      if (Object.keys(rows).length > 0) asbench[model] = rows
    }

    // -------------------------------------------------------------------------------------------
    // ASB

    const asb: Record<string, Record<string, Record<string, AsbVariantSummary>>> = {}
    const marker = refusalMarker(settings.proxy.refusal_template)
    if (!exp.asb.enabled) notes.push(`ASB is disabled in ${exp.file}`)
    else if (tags.length === 0) notes.push(`ASB: no attacks listed in ${exp.file}`)
    let anyCsv = false
    for (const model of exp.models) {
      const byTag: Record<string, Record<string, AsbVariantSummary>> = {}
      for (const tag of tags) {
        const cores = new Map<string, AsbCore>()
        const rows: Record<string, AsbVariantSummary> = {}
        for (const v of exp.variants) {
          const dir = path.join(asbRunDir(exp, model, v), tag)
          if (shardFiles(dir).length === 0) continue
          anyCsv = true
          const shards = yield* attempt(readAsbShards(dir), `ASB ${model} / ${tag} / ${v.name}`)
          if (shards === null) continue
          const core = asbMetrics(shards.rows, marker)
          cores.set(v.name, core)
          rows[v.name] = { variant: v.name, arm: v.arm, judge: v.judge, shards: shards.files.length, ...asbFields(core), delta: null }
        }
        const base = control === undefined ? undefined : cores.get(control.name)
        if (control !== undefined && Object.keys(rows).some((n) => n !== control.name)) {
          if (base === undefined) notes.push(`ASB ${model} / ${tag}: no ${control.name} results, so no paired differences`)
          else {
            for (const [name, row] of Object.entries(rows)) {
              if (name !== control.name) rows[name] = { ...row, delta: asbDelta(control.name, base, cores.get(name)!, boot) }
            }
          }
        }
        if (Object.keys(rows).length > 0) byTag[tag] = rows
      }
      if (Object.keys(byTag).length > 0) asb[model] = byTag
    }
    if (exp.asb.enabled && tags.length > 0 && !anyCsv) notes.push(`ASB: no shard CSVs under ${path.join(exp.run_dir, "asb")} (not run); ASB results skipped`)

    // -------------------------------------------------------------------------------------------
    // judge quality from replay

    const judges: Record<string, JudgesByBench> = {}
    let asbNames: AsbToolNames | null | undefined
    const anyReplay = exp.models.some((m) => fs.existsSync(replayFile(exp, "asbench", m)) || fs.existsSync(replayFile(exp, "asb", m)))
    if (replayBase === undefined && anyReplay) notes.push(`judge quality: no baseline arm in ${exp.file} (replay rules the baseline's calls); replay files ignored`)
    const toJudge = replayBase === undefined ? [] : exp.models.map((m) => [m, replayBase] as const)
    for (const [model, rb] of toJudge) {
      const asbenchQ: Record<string, AsbenchJudgeQuality> = {}
      const asbQ: Record<string, AsbJudgeQuality> = {}
      for (const bench of ["asbench", "asb"] as const satisfies ReadonlyArray<Bench>) {
        const file = replayFile(exp, bench, model)
        const source = auditFileFor(auditDir, exp, bench, model, rb)
        if (!fs.existsSync(file)) {
          if (fs.existsSync(source)) notes.push(`judge quality ${bench} / ${model}: no replay yet (run vetobench replay)`)
          continue
        }
        const lines = yield* attempt(readReplayLines(file), `replay ${file}`)
        if (lines === null || lines.length === 0) continue
        const sourceRecords = fs.existsSync(source) ? yield* attempt(readCallRecords(source), `baseline audit ${source}`) : null
        const sources = sourceRecords === null
          ? null
          : sourceRecords.filter((r) => r.arm === "baseline").map((r) => ({ hash: r.hash, episode_id: r.episode_id, session_id: r.session_id, tool: r.tool.name }))
        if (sources === null) notes.push(`judge quality ${bench} / ${model}: baseline audit file not found; every replayed line counts`)
        const byJudge = decisionsByJudge(lines, sources)
        if (bench === "asbench") {
          const run = asbenchRuns.get(`${model}\u0000${rb.name}`)
          if (run === undefined || !run.scored || run.labels.valid.size === 0) {
            notes.push(`judge quality asbench / ${model}: the baseline has no ShieldAgent labels (${SHIELD_JSONL}); skipped`)
            continue
          }
          for (const [judge, input] of byJudge) asbenchQ[judge] = evalAsbenchJudge(judge, input, run.cases, run.labels, boot)
        } else {
          if (asbNames === undefined) {
            asbNames = yield* attempt(loadAsbToolNames(settings.paths.asb_dir), `ASB checkout (paths.asb_dir ${settings.paths.asb_dir}) for judge quality`)
          }
          if (asbNames === null) continue
          for (const [judge, input] of byJudge) asbQ[judge] = evalAsbJudge(judge, input, asbNames, boot)
        }
        for (const [judge, input] of byJudge) {
          if (input.decisions.length < input.source_calls) {
            notes.push(`judge quality ${bench} / ${model} / ${judge}: replay incomplete (${input.decisions.length} of ${input.source_calls} baseline calls)`)
          }
        }
      }
      if (Object.keys(asbenchQ).length > 0 || Object.keys(asbQ).length > 0) judges[model] = { asbench: asbenchQ, asb: asbQ }
    }

    const experiment: SummaryExperiment = {
      name: exp.name,
      file: exp.file,
      run_dir: exp.run_dir,
      audit_dir: auditDir,
      models: exp.models,
      judges: exp.judges,
      arms: exp.arms,
      variants: exp.variants.map((v) => ({ name: v.name, arm: v.arm, judge: v.judge })),
      asb_tags: tags,
      baseline: control?.name ?? null
    }
    const liveOut: Summary["live"] = Object.fromEntries(
      Object.entries(live).filter(([, b]) => Object.keys(b.asbench).length > 0 || Object.keys(b.asb).length > 0)
    )
    return {
      schema: SUMMARY_SCHEMA,
      generated_at: (opts.now?.() ?? new Date()).toISOString(),
      experiment,
      stats: { confidence: 0.95, z: 1.96, bootstrap_iterations: boot.iterations!, seed: boot.seed! },
      categories: [...categories].sort(),
      asbench,
      asb,
      judges,
      live: liveOut,
      notes
    } satisfies Summary
  })
