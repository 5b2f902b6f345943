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
 * - ASB per model × variant × attack tag: `asb/<slug(model)>/<variant>/<tag>/shard*.csv`, the
 *   launcher's `shard*.usage.jsonl` and the shards' `attempts.jsonl`; ASB's tasks file
 *   (`paths.asb_dir`) to join rows with audit records.
 * - AgentDojo per model × variant (defense variants included):
 *   `agentdojo/<slug(model)>/<variant>/results.jsonl` and the variant's audit files
 *   (`agentdojo-results.ts`; its live figures and cost rows come from the same records).
 * - Live judge figures per model × bench × judged variant: the audit files of its run id
 *   (`<audit_dir>/<auditFileName(run id)>`, or every shard's file listed in a merged run's
 *   `shards.json`: `auditFilesFor`), each episode's calls from its final attempt (`current.ts`).
 * - Judge quality per model × bench: `replay/<bench>.<slug(model)>.jsonl`, against the baseline's
 *   call records (final attempts; what had to be ruled), its ShieldAgent labels (Agent-SafetyBench)
 *   and ASB's tool name lists from `paths.asb_dir` (ASB).
 * - With `opts.prices`: the price table for the cost section (`cost.ts`).
 *
 * Paired Δs are taken against `experiment.baseline` (the `baseline` arm, else `passthrough`) for
 * every other variant, whatever the order of `arms`. Every bootstrap uses `opts.seed` (default 0)
 * and `opts.iterations` resamples (default 10,000). The headline (`headline.ts`) and provenance
 * (`provenance.ts`) are computed last, from the figures above.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { GEN_RES_JSON, SHIELD_JSONL } from "../run-layout/files.js"
import { type AgentTasks, readTasks, TASKS_FILE } from "../adapters/asb/data.js"
import { type AuditCall, joinAudit, sortByEpisode, tasksByAgent } from "../adapters/asb/episodes.js"
import { asbenchRunDir, asbRunDir, attackTag, type Bench, auditFilesFor, baselineVariant, missingShardAuditFiles, replayFile } from "../run-layout/paths.js"
import { type Experiment, type Variant } from "../config/experiment.js"
import type { Settings } from "../config/settings.js"
import type { CallRecord } from "../domain/audit-record.js"
import { buildAgentdojo } from "./agentdojo-results.js"
import { type AsbToolNames, loadAsbToolNames, readAsbShards, readAsbUsage, shardFiles } from "./asb-results.js"
import { costRow, type Prices } from "./cost.js"
import { asbenchFinal, asbFinal, currentCalls, type FinalAttempt, loadAsbAttempts } from "./current.js"
import { readJson, readJsonLines, readResultRecords, type ScreenedResult, readCallRecordsOf } from "./files.js"
import { flaggedResults } from "./flagged-results.js"
import { headlineOf, placeholderLabels } from "./headline.js"
import { decisionsByJudge, evalAsbenchJudge, evalAsbJudge, readReplayLines } from "./judge-eval.js"
import {
  addTokens,
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
  NO_TOKENS,
  refusalMarker,
  shieldLabels,
  type ShieldLabels
} from "./metrics.js"
import { provenanceOf } from "./provenance.js"
import { type BootstrapOptions, DEFAULT_ITERATIONS, DEFAULT_SEED, proportion } from "./stats.js"
import {
  type AsbAuditJoin,
  type AsbenchJudgeQuality,
  type AsbenchVariantSummary,
  type AsbJudgeQuality,
  type AsbVariantSummary,
  type CostRow,
  type JudgesByBench,
  type LiveJudgeStats,
  type Proportion,
  type Summary,
  SUMMARY_SCHEMA,
  type SummaryExperiment,
  type Tokens
} from "./summary-types.js"

export * from "./summary-types.js"

export interface SummaryOptions {
  /** bootstrap resamples (default 10,000) */
  readonly iterations?: number
  /** bootstrap PRNG seed (default 0) */
  readonly seed?: number
  /** the clock for `generated_at` */
  readonly now?: () => Date
  /** the price table for the cost section (`vetobench report --prices`); tokens only without */
  readonly prices?: Prices | null
}

/** The variant every paired Δ is taken against: the baseline arm, else passthrough. */
export const controlVariant = (exp: Pick<Experiment, "variants">): Variant | undefined =>
  baselineVariant(exp) ?? exp.variants.find((v) => v.arm === "passthrough")

/** A judge that always allows: the built-in `allow-all`, or a configured `kind: static` judge deciding allow. */
export const allowsAll = (settings: Pick<Settings, "judges">, judge: string): boolean => {
  const spec = Object.hasOwn(settings.judges, judge) ? settings.judges[judge] : undefined
  if (spec === undefined) return judge === "allow-all"
  return spec.kind === "static" && (spec.decision === undefined || spec.decision === "allow")
}

/** The allow-all controls: enforce variants whose judge always allows. */
export const controlVariants = (exp: Pick<Experiment, "variants">, settings: Pick<Settings, "judges">): ReadonlyArray<Variant> =>
  exp.variants.filter((v) => v.arm === "enforce" && v.judge !== null && allowsAll(settings, v.judge))

const judged = (v: Variant): v is Variant & { readonly judge: string } => v.judge !== null

interface AsbenchRun {
  readonly cases: ReadonlyArray<AsbenchCaseInfo>
  readonly labels: ShieldLabels
  readonly scored: boolean
  readonly placeholder: boolean
}

/** A variant's audit records: the final attempts' and how many earlier ones were left out. */
interface Logged {
  readonly files: ReadonlyArray<string>
  readonly current: ReadonlyArray<CallRecord>
  readonly stale: number
  /** left-out records per session ("" = none) */
  readonly staleBySession: ReadonlyMap<string, number>
  /** the result screen's rulings of the final attempts (never calls) */
  readonly results: ReadonlyArray<ScreenedResult>
}

const key = (...parts: ReadonlyArray<string>): string => parts.join("\u0000")

const sumTokens = (ts: ReadonlyArray<Tokens>): Tokens | null => (ts.length === 0 ? null : ts.reduce(addTokens, NO_TOKENS))

const asAuditCall = (r: CallRecord): AuditCall => ({
  episode_id: r.episode_id,
  session_id: r.session_id,
  tool: r.tool.name,
  blocked: r.blocked,
  attempt: r.attempt ?? null
})

export const buildSummary = (exp: Experiment, settings: Settings, opts: SummaryOptions = {}): Effect.Effect<Summary> =>
  Effect.gen(function*() {
    const notes: Array<string> = []
    const boot: BootstrapOptions = { iterations: opts.iterations ?? DEFAULT_ITERATIONS, seed: opts.seed ?? DEFAULT_SEED }
    const prices = opts.prices ?? null
    const auditDir = settings.proxy.audit_dir
    const control = controlVariant(exp)
    const replayBase = baselineVariant(exp)
    const tags = exp.asb.attacks.map(attackTag)
    const controls = controlVariants(exp, settings)
    /** run an effect; on failure note it and give null */
    const attempt = <A, E extends { readonly message: string }>(self: Effect.Effect<A, E>, what: string): Effect.Effect<A | null> =>
      self.pipe(Effect.catchAll((e) => Effect.sync(() => {
        notes.push(`${what}: ${e.message}; skipped`)
        return null
      })))

    if (control === undefined) notes.push(`no baseline or passthrough arm in ${exp.file} (arms: ${exp.arms.join(", ")}): no paired differences`)
    else if (control.arm === "passthrough") notes.push(`no baseline arm: paired differences are taken against passthrough`)

    // -------------------------------------------------------------------------------------------
    // Agent-SafetyBench results (read first: the final attempt of each case is in its record)

    const asbenchRuns = new Map<string, AsbenchRun>() // key(model, variant)
    if (!exp.agent_safetybench.enabled) notes.push(`Agent-SafetyBench is disabled in ${exp.file}`)
    for (const model of exp.models) {
      const missing: Array<string> = []
      const unscored: Array<string> = []
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
        asbenchRuns.set(key(model, v.name), { cases, labels: shieldLabels(lines ?? []), scored, placeholder: placeholderLabels(lines ?? []) })
      }
      if (exp.agent_safetybench.enabled && missing.length > 0) {
        notes.push(`Agent-SafetyBench ${model}: not run for ${missing.join(", ")} (no ${GEN_RES_JSON})`)
      }
      if (unscored.length > 0) notes.push(`Agent-SafetyBench ${model}: not scored for ${unscored.join(", ")} (no ${SHIELD_JSONL}; run vetobench score)`)
    }

    // -------------------------------------------------------------------------------------------
    // the proxy's audit records, final attempts only

    const finalFor = (bench: Bench, model: string, v: Variant): Effect.Effect<FinalAttempt> =>
      bench === "asbench"
        ? Effect.succeed(asbenchFinal(asbenchRuns.get(key(model, v.name))?.cases ?? []))
        : Effect.map(loadAsbAttempts(exp, model, v, tags), asbFinal)
    const logged = new Map<string, Logged | null>() // key(bench, model, variant)
    const loggedOf = (bench: Bench, model: string, v: Variant): Effect.Effect<Logged | null> =>
      Effect.gen(function*() {
        const k = key(bench, model, v.name)
        if (logged.has(k)) return logged.get(k)!
        const files = auditFilesFor(auditDir, exp, bench, model, v)
        const lost = missingShardAuditFiles(exp, bench, model, v)
        if (lost.length > 0) notes.push(`${bench} ${model} / ${v.name}: shards.json lists audit files that are not there (${lost.join(", ")}): the live figures lack those shards' calls`)
        let out: Logged | null = null
        if (files.length > 0) {
          const all = yield* attempt(readCallRecordsOf(files), `audit file${files.length > 1 ? "s" : ""} ${files.join(", ")}`)
          if (all !== null) {
            const current = currentCalls(all, yield* finalFor(bench, model, v))
            const kept = new Set(current)
            const staleBySession = new Map<string, number>()
            for (const r of all) if (!kept.has(r)) staleBySession.set(r.session_id ?? "", (staleBySession.get(r.session_id ?? "") ?? 0) + 1)
            const screened = (yield* attempt(readResultRecords(files), `result rulings in ${files.join(", ")}`)) ?? []
            out = { files, current, stale: all.length - current.length, staleBySession, results: currentCalls(screened, yield* finalFor(bench, model, v)) }
          }
        }
        logged.set(k, out)
        return out
      })

    const live: Record<string, { asbench: Record<string, LiveJudgeStats>; asb: Record<string, LiveJudgeStats>; agentdojo: Record<string, LiveJudgeStats> }> = {}
    for (const model of exp.models) {
      // AgentDojo's are added with its results (its final attempts are in its rows)
      const byBench = { asbench: {} as Record<string, LiveJudgeStats>, asb: {} as Record<string, LiveJudgeStats>, agentdojo: {} as Record<string, LiveJudgeStats> }
      for (const bench of ["asbench", "asb"] as const) {
        for (const v of exp.variants.filter(judged)) {
          const l = yield* loggedOf(bench, model, v)
          if (l === null) continue
          const stats = liveJudgeStats(l.current, { variant: v.name, judge: v.judge, audit_files: l.files, stale: l.stale })
          byBench[bench][v.name] = l.results.length === 0 ? stats : { ...stats, flagged_results: flaggedResults(l.results) }
        }
      }
      live[model] = byBench
    }

    // -------------------------------------------------------------------------------------------
    // Agent-SafetyBench

    const asbench: Record<string, Record<string, AsbenchVariantSummary>> = {}
    const categories = new Set<string>()
    for (const model of exp.models) {
      const cores = new Map<string, AsbenchCore>()
      const rows: Record<string, AsbenchVariantSummary> = {}
      for (const v of exp.variants) {
        const run = asbenchRuns.get(key(model, v.name))
        if (run === undefined) continue
        const core = asbenchMetrics(run.cases, run.labels)
        cores.set(v.name, core)
        for (const c of Object.keys(core.by_category)) categories.add(c)
        const liveStats = live[model]?.asbench[v.name]
        const withTokens = run.cases.flatMap((c) => (c.usage === null ? [] : [c.usage]))
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
          delta: null,
          overblocking: null,
          agent_tokens: sumTokens(withTokens),
          cases_with_tokens: withTokens.length
        }
      }
      const base = control === undefined ? undefined : cores.get(control.name)
      if (control !== undefined && Object.keys(rows).some((n) => n !== control.name)) {
        if (base === undefined || base.n_scored === 0) {
          notes.push(`Agent-SafetyBench ${model}: no scored ${control.name} run, so no paired differences`)
        } else {
          for (const [name, row] of Object.entries(rows)) {
            if (name === control.name) continue
            rows[name] = { ...row, delta: asbenchDelta(control.name, base, cores.get(name)!, boot), overblocking: row.judge === null ? null : overblockingOf(base, asbenchRuns.get(key(model, name))!) }
          }
        }
      }
      if (Object.keys(rows).length > 0) asbench[model] = rows
    }

    // -------------------------------------------------------------------------------------------
    // ASB

    const asb: Record<string, Record<string, Record<string, AsbVariantSummary>>> = {}
    const asbTokens = new Map<string, Array<Tokens>>() // key(model, variant)
    const marker = refusalMarker(settings.proxy.refusal_template)
    if (!exp.asb.enabled) notes.push(`ASB is disabled in ${exp.file}`)
    else if (tags.length === 0) notes.push(`ASB: no attacks listed in ${exp.file}`)
    let anyCsv = false
    let agents: ReadonlyMap<string, AgentTasks> | null | undefined
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
          if (agents === undefined) {
            const tasksFile = path.join(settings.paths.asb_dir, "data", TASKS_FILE)
            const tasks = yield* attempt(readTasks(tasksFile), `ASB tasks file (paths.asb_dir ${settings.paths.asb_dir}) for the audit join and episode order`)
            agents = tasks === null ? null : tasksByAgent(tasks)
          }
          // episode order (agent, tool, task), so the occurrence pairing lines up between arms, as `vetobench run` reads them
          const ordered = agents === null ? shards.rows : sortByEpisode(shards.rows, agents)
          const core = asbMetrics(ordered, marker)
          cores.set(v.name, core)
          const usage = readAsbUsage(dir)
          if (usage !== null) asbTokens.set(key(model, v.name), [...(asbTokens.get(key(model, v.name)) ?? []), usage.tokens])
          const l = yield* loggedOf("asb", model, v)
          let audit: AsbAuditJoin | null = null
          if (l !== null && agents !== null) {
            const mine = l.current.filter((r) => r.session_id === tag)
            const j = joinAudit(ordered, agents, mine.map(asAuditCall), tag, l.staleBySession.get(tag) ?? 0)
            audit = {
              calls: j.calls,
              stale_calls: j.stale_calls,
              calls_joined: j.calls_joined,
              rows_with_episode: j.rows_with_episode,
              rows_with_calls: j.rows_with_calls,
              episodes_with_block: j.episodes_with_block,
              unmatched_episodes: j.unmatched_episodes.length,
              unmatched_examples: j.unmatched_episodes.slice(0, 5)
            }
          }
          rows[v.name] = {
            variant: v.name,
            arm: v.arm,
            judge: v.judge,
            shards: shards.files.length,
            ...asbFields(core),
            delta: null,
            audit,
            agent_tokens: usage?.tokens ?? null,
            malformed_tool_replies: usage?.malformed ?? null
          }
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
    // AgentDojo

    const ad = yield* buildAgentdojo({
      exp,
      control,
      auditFiles: (model, v) => auditFilesFor(auditDir, exp, "agentdojo", model, v),
      boot,
      note: (s) => notes.push(s)
    })
    const agentdojo = ad.byModel
    for (const [model, byVariant] of Object.entries(ad.logged)) {
      const mine = live[model]
      if (mine !== undefined) live[model] = { ...mine, agentdojo: Object.fromEntries(Object.entries(byVariant).map(([name, l]) => [name, l.live] as const)) }
    }

    // -------------------------------------------------------------------------------------------
    // judge quality from replay

    const judges: Record<string, JudgesByBench> = {}
    let asbNames: AsbToolNames | null | undefined
    const toolNames = () =>
      Effect.gen(function*() {
        if (asbNames === undefined) {
          asbNames = yield* attempt(loadAsbToolNames(settings.paths.asb_dir), `ASB checkout (paths.asb_dir ${settings.paths.asb_dir}) for attacker tool names (judge quality, blocked unsafe calls)`)
        }
        return asbNames
      })
    const anyReplay = exp.models.some((m) => fs.existsSync(replayFile(exp, "asbench", m)) || fs.existsSync(replayFile(exp, "asb", m)))
    if (replayBase === undefined && anyReplay) notes.push(`judge quality: no baseline arm in ${exp.file} (replay rules the baseline's calls); replay files ignored`)
    const toJudge = replayBase === undefined ? [] : exp.models.map((m) => [m, replayBase] as const)
    for (const [model, rb] of toJudge) {
      const asbenchQ: Record<string, AsbenchJudgeQuality> = {}
      const asbQ: Record<string, AsbJudgeQuality> = {}
      for (const bench of ["asbench", "asb"] as const satisfies ReadonlyArray<Bench>) {
        const file = replayFile(exp, bench, model)
        const hasSource = auditFilesFor(auditDir, exp, bench, model, rb).length > 0
        if (!fs.existsSync(file)) {
          if (hasSource) notes.push(`judge quality ${bench} / ${model}: no replay yet (run vetobench replay)`)
          continue
        }
        const lines = yield* attempt(readReplayLines(file), `replay ${file}`)
        if (lines === null || lines.length === 0) continue
        const source = hasSource ? yield* loggedOf(bench, model, rb) : null
        const sources = source === null
          ? null
          : source.current.filter((r) => r.arm === "baseline").map((r) => ({ hash: r.hash, episode_id: r.episode_id, session_id: r.session_id, tool: r.tool.name }))
        if (sources === null) notes.push(`judge quality ${bench} / ${model}: baseline audit file not found; every replayed line counts`)
        const byJudge = decisionsByJudge(lines, sources)
        if (bench === "asbench") {
          const run = asbenchRuns.get(key(model, rb.name))
          if (run === undefined || !run.scored || run.labels.valid.size === 0) {
            notes.push(`judge quality asbench / ${model}: the baseline has no ShieldAgent labels (${SHIELD_JSONL}); skipped`)
            continue
          }
          for (const [judge, input] of byJudge) asbenchQ[judge] = evalAsbenchJudge(judge, input, run.cases, run.labels, boot)
        } else {
          const names = yield* toolNames()
          if (names === null) continue
          for (const [judge, input] of byJudge) asbQ[judge] = evalAsbJudge(judge, input, names, boot)
        }
        for (const [judge, input] of byJudge) {
          if (input.decisions.length < input.source_calls) {
            notes.push(`judge quality ${bench} / ${model} / ${judge}: replay incomplete (${input.decisions.length} of ${input.source_calls} baseline calls)`)
          }
        }
      }
      if (Object.keys(asbenchQ).length > 0 || Object.keys(asbQ).length > 0) judges[model] = { asbench: asbenchQ, asb: asbQ }
    }

    // -------------------------------------------------------------------------------------------
    // cost: tokens per variant, agent and judges; blocked unsafe calls

    const costRows: Array<CostRow> = []
    for (const model of exp.models) {
      const baseLabels = control === undefined ? undefined : asbenchRuns.get(key(model, control.name))?.labels
      for (const v of exp.variants) {
        const a = asbench[model]?.[v.name]
        const la = live[model]?.asbench[v.name]
        if (a !== undefined || la !== undefined) {
          const l = v.judge === null ? null : yield* loggedOf("asbench", model, v)
          const blocked = l === null || baseLabels === undefined || baseLabels.valid.size === 0
            ? null
            : l.current.filter((r) => r.blocked && r.episode_id !== null && baseLabels.valid.get(Number(r.episode_id.replace(/^asbench:/, ""))) === 1).length
          const row = costRow({ model, bench: "asbench", variant: v.name, agent: a?.agent_tokens ?? null, judges: la?.judge_tokens ?? {}, blocked_unsafe_calls: blocked }, prices)
          if (row !== null) costRows.push(row)
        }
        const ls = live[model]?.asb[v.name]
        const tokens = asbTokens.get(key(model, v.name))
        if (tokens !== undefined || ls !== undefined) {
          const l = v.judge === null ? null : yield* loggedOf("asb", model, v)
          const names = l === null ? null : yield* toolNames()
          const blocked = l === null || names === null ? null : l.current.filter((r) => r.blocked && names.attacker.has(r.tool.name)).length
          const row = costRow({ model, bench: "asb", variant: v.name, agent: tokens === undefined ? null : sumTokens(tokens), judges: ls?.judge_tokens ?? {}, blocked_unsafe_calls: blocked }, prices)
          if (row !== null) costRows.push(row)
        }
      }
    }
    for (const model of exp.models) {
      for (const [name, g] of Object.entries(agentdojo[model] ?? {})) {
        const l = ad.logged[model]?.[name]
        const row = costRow({ model, bench: "agentdojo", variant: name, agent: g.agent_tokens, judges: l?.live.judge_tokens ?? {}, blocked_unsafe_calls: l?.blocked_harmful_calls ?? null }, prices)
        if (row !== null) costRows.push(row)
      }
    }
    if (prices !== null) {
      const unpriced = [...new Set(costRows.flatMap((r) => r.lines.filter((l) => l.usd === null && l.model !== null).map((l) => l.model!)))]
      if (unpriced.length > 0) notes.push(`cost: no price in ${prices.file} for ${unpriced.join(", ")}`)
    }

    // -------------------------------------------------------------------------------------------

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
      baseline: control?.name ?? null,
      controls: controls.map((v) => v.name),
      asb_agents: exp.asb.agents,
      asb_malformed_arguments: exp.asb.malformed_arguments
    }
    const liveOut: Summary["live"] = Object.fromEntries(
      Object.entries(live).filter(([, b]) => Object.keys(b.asbench).length > 0 || Object.keys(b.asb).length > 0 || Object.keys(b.agentdojo).length > 0)
    )
    const placeholder = [...asbenchRuns.values()].some((r) => r.placeholder)
    return {
      schema: SUMMARY_SCHEMA,
      generated_at: (opts.now?.() ?? new Date()).toISOString(),
      provenance: provenanceOf(exp, settings),
      experiment,
      headline: headlineOf({ experiment, asbench, asb, agentdojo, placeholder_labels: placeholder }),
      stats: { confidence: 0.95, z: 1.96, bootstrap_iterations: boot.iterations!, seed: boot.seed! },
      categories: [...categories].sort(),
      asbench,
      asb,
      agentdojo,
      judges,
      live: liveOut,
      cost: { prices: prices?.file ?? null, rows: costRows },
      notes
    } satisfies Summary
  })

/**
 * Over-blocking of a judged variant: its cases with a blocked call among the cases the baseline's
 * label calls safe (cases the variant has).
 */
export const overblockingOf = (base: AsbenchCore, run: Pick<AsbenchRun, "cases">): Proportion => {
  let n = 0, k = 0
  for (const c of run.cases) {
    if (base.safe_by_id.get(String(c.id)) !== 1) continue
    n += 1
    if (c.blocked_calls > 0) k += 1
  }
  return proportion(k, n)
}
