/**
 * The `Summary` of an experiment: everything `vetobench report` renders, as one strict, fully
 * typed value (serialised as `<run_dir>/summary.json`; JSON Schema in `docs/summary.schema.json`).
 * Built by `buildSummary` (`src/scoring/summary.ts`).
 *
 * Conventions
 * - Every number is finite, or `null` where the value is undefined (n = 0, a zero denominator, a
 *   bootstrap with no valid resample). NaN and ±Infinity never appear (`Num`).
 * - Maps are keyed by model name, variant name (`baseline`, `enforce-<judge>`, …), attack tag
 *   (`clean`, `<method>-<attack_type>`), risk category or judge name. Their **order** is given by
 *   the lists in `experiment` (models, variants, asb_tags, judges) and `categories`; iterate those,
 *   not the map keys. A model / variant / tag whose results are absent has no key (see `notes`).
 * - Rates are proportions in [0, 1] (not percentages). Confidence level 95 % throughout
 *   (`stats`). Paired differences are treatment − baseline (negative ΔASR = fewer attacks succeed;
 *   positive Δsafe = safer).
 * - `notes` lists, in plain sentences, everything that was skipped and why (benchmark not run,
 *   checkout absent, no baseline, no labels, unreadable file, incomplete replay).
 */

/** A finite number, or null where undefined. */
export type Num = number | null

export const SUMMARY_SCHEMA = "vetobench/summary/v1" as const

/** `k` of `n` with a Wilson 95 % interval; p/lo/hi null when n = 0. */
export interface Proportion {
  readonly n: number
  readonly k: number
  readonly p: Num
  readonly lo: Num
  readonly hi: Num
}

/** Agent-SafetyBench safety score: `safe` of `n` scored cases with a Wilson 95 % interval. */
export interface SafeRate {
  readonly n: number
  readonly safe: number
  readonly p: Num
  readonly lo: Num
  readonly hi: Num
}

/**
 * Paired difference treatment − baseline over the `n` tasks both arms have (mean of per-task
 * differences), with a seeded percentile paired-bootstrap interval; d/lo/hi null when n = 0.
 */
export interface PairedDiff {
  readonly n: number
  readonly d: Num
  readonly lo: Num
  readonly hi: Num
}

/** A point estimate with a bootstrap interval (precision, recall, F1, FPR). */
export interface Estimate {
  readonly value: Num
  readonly lo: Num
  readonly hi: Num
}

/**
 * Judge latency over verdicts. `n_calls`: verdicts; `n_uncached`: not served from the cache;
 * `errors`: status error or timeout; p50/p95: nearest-rank percentiles of `latency_ms` over the
 * uncached verdicts with status ok (null when there are none).
 */
export interface Latency {
  readonly n_calls: number
  readonly n_uncached: number
  readonly errors: number
  readonly p50_ms: Num
  readonly p95_ms: Num
}

export interface SummaryVariant {
  readonly name: string
  readonly arm: "passthrough" | "baseline" | "shadow" | "enforce"
  readonly judge: string | null
}

export interface SummaryExperiment {
  readonly name: string
  /** the experiment file as given */
  readonly file: string
  readonly run_dir: string
  /** the proxy's audit directory (live coverage, holds, latency; replay sources) */
  readonly audit_dir: string
  /** experiment order */
  readonly models: ReadonlyArray<string>
  readonly judges: ReadonlyArray<string>
  readonly arms: ReadonlyArray<SummaryVariant["arm"]>
  /** experiment order (arms × judges) */
  readonly variants: ReadonlyArray<SummaryVariant>
  /** ASB attack tags in experiment order (`clean`, `direct_prompt_injection-naive`, …) */
  readonly asb_tags: ReadonlyArray<string>
  /**
   * The variant every paired difference is taken against: the `baseline` arm, else the
   * `passthrough` arm, else null (no paired differences; see notes) — whatever the order of `arms`.
   */
  readonly baseline: string | null
}

export interface SummaryStats {
  readonly confidence: 0.95
  /** Wilson z */
  readonly z: 1.96
  /** resamples of every bootstrap (paired and cluster) */
  readonly bootstrap_iterations: number
  /** the PRNG seed of every bootstrap (`src/domain/prng.ts`, xoshiro128**) */
  readonly seed: number
}

// ---------------------------------------------------------------------------------------------
// live audit: coverage, holds, latency

/**
 * Coverage of a judged variant: the share of proposed calls that got a ruling with status ok, per
 * judge. The variant's judge is asked about every call (`n` = `calls`); for a layered judge each
 * layer also has an entry (`n` = calls the layer ran on; a layer skipped because an earlier one
 * decided is not missing coverage).
 */
export interface Coverage {
  /** call records in the variant's audit file */
  readonly calls: number
  readonly by_judge: Readonly<Record<string, Proportion>>
}

/** What the proxy logged for one judged variant (shadow / enforce) of one model × bench. */
export interface LiveJudgeStats {
  readonly variant: string
  readonly judge: string
  /** absolute path of the audit file read */
  readonly audit_file: string
  /** call records */
  readonly calls: number
  /** calls withheld from the agent (`blocked`) */
  readonly blocked: number
  readonly coverage: Coverage
  /** calls whose effective decision was `hold` */
  readonly hold_rate: Proportion
  /** the variant's judge (for a layered judge: the whole stack per call) */
  readonly latency: Latency
  /** per layer of a layered judge, in stack order; null for a simple judge */
  readonly layers: ReadonlyArray<{ readonly judge: string; readonly latency: Latency }> | null
}

// ---------------------------------------------------------------------------------------------
// Agent-SafetyBench

/** `vetobench.status` counts over every case of gen_res.json (missing → ok; anything else → error). */
export interface AsbenchStatusCounts {
  readonly ok: number
  readonly exceeded: number
  readonly error: number
}

/**
 * Cases that are neither safe nor unsafe: never counted in a safety score.
 * `episode_errors`: status error (the episode failed: transport, bridge, blank answer);
 * `invalid_labels`: ShieldAgent answered neither safe nor unsafe (last label −1);
 * `unscored`: cases with status ≠ error and no valid label (invalid labels included; not yet scored).
 */
export interface AsbenchInfraErrors {
  readonly episode_errors: number
  readonly invalid_labels: number
  readonly unscored: number
}

export interface ByFulfillable<A> {
  readonly fulfillable: A
  readonly unfulfillable: A
  /** cases without a `fulfillable` field (Agent-SafetyBench v1 data) */
  readonly unknown: A
}

/** Paired Δ of one variant against the baseline variant, by case id (safe 1 / unsafe 0). */
export interface AsbenchDelta {
  readonly baseline: string
  readonly overall: PairedDiff
  /** every category of `by_category` (of either arm) */
  readonly by_category: Readonly<Record<string, PairedDiff>>
  readonly by_fulfillable: ByFulfillable<PairedDiff>
}

export interface AsbenchVariantSummary {
  readonly variant: string
  readonly arm: SummaryVariant["arm"]
  readonly judge: string | null
  /** records in gen_res.json */
  readonly n_cases: number
  /** cases with a valid ShieldAgent label (status ≠ error) */
  readonly n_scored: number
  readonly status: AsbenchStatusCounts
  readonly infra_errors: AsbenchInfraErrors
  /** cases with `vetobench.blocked_calls > 0` (every case) */
  readonly episodes_with_block: number
  /** safety score: share of scored cases labelled safe */
  readonly overall: SafeRate
  /** per risk (every risk of a case counts; none → `(none)`); keys in `Summary.categories` order */
  readonly by_category: Readonly<Record<string, SafeRate>>
  readonly by_fulfillable: ByFulfillable<SafeRate>
  /** per failure mode number (`"1"`…`"10"`; every mode of a case counts) */
  readonly by_failure_mode: Readonly<Record<string, SafeRate>>
  /** live coverage of the variant's judge; null for unjudged variants or without an audit file */
  readonly coverage: Coverage | null
  /** live hold rate (effective decision hold); null as coverage */
  readonly hold_rate: Proportion | null
  /** null for the baseline variant itself and when there is no baseline with labels */
  readonly delta: AsbenchDelta | null
}

// ---------------------------------------------------------------------------------------------
// ASB

/** Paired Δ of one variant against the baseline, by `<agent>|<attack tool>|<occurrence>`. */
export interface AsbDelta {
  readonly baseline: string
  readonly asr: PairedDiff
  readonly asr_aggressive: PairedDiff
  readonly asr_non_aggressive: PairedDiff
  /** on the `clean` tag: the over-blocking measure (task success under no attack) */
  readonly original_task_success: PairedDiff
  readonly refusal_rate: PairedDiff
}

export interface AsbVariantSummary {
  readonly variant: string
  readonly arm: SummaryVariant["arm"]
  readonly judge: string | null
  /** shard CSV files read */
  readonly shards: number
  /** CSV rows */
  readonly n_rows: number
  /** rows counted in the rates (`n_rows − infra_errors`) */
  readonly n: number
  /**
   * rows that are neither success nor failure: unreadable flags, or an agent LLM call that failed
   * (`LLM API error:` / `An unexpected error occurred:` in the messages)
   */
  readonly infra_errors: number
  readonly asr: Proportion
  readonly asr_aggressive: Proportion
  readonly asr_non_aggressive: Proportion
  readonly original_task_success: Proportion
  /** depends on ASB's refusal-judge model */
  readonly refusal_rate: Proportion
  /** rows whose messages contain the proxy's refusal sentence */
  readonly episodes_with_block: number
  readonly delta: AsbDelta | null
}

// ---------------------------------------------------------------------------------------------
// judge quality from offline replay

export interface Confusion {
  readonly tp: number
  readonly fp: number
  readonly fn: number
  readonly tn: number
}

/**
 * What one layer of a layered judge adds, over the evaluation units (ASB: calls; Agent-SafetyBench:
 * episodes). `decided`: units whose first non-allow came from this layer (it stopped the call);
 * `tp` / `fp`: decided units labelled unsafe / safe.
 */
export interface LayerContribution {
  readonly judge: string
  readonly kind: string
  /** units with at least one verdict of this layer */
  readonly ruled: number
  /** units where this layer said deny or hold at least once */
  readonly flagged: number
  readonly decided: number
  readonly tp: number
  readonly fp: number
  readonly latency: Latency
}

interface JudgeQualityCommon {
  readonly judge: string
  /** the judge kind from the replayed verdicts (`layered`, `llm_json`, …) */
  readonly kind: string | null
  /** baseline call records the replay had to rule */
  readonly source_calls: number
  /** of those, how many have a replayed verdict for this judge */
  readonly replayed_calls: number
  /** positive = unsafe / attacker (label) and deny or hold (prediction) */
  readonly confusion: Confusion
  /** cluster (episode) bootstrap 95 % intervals; an episode-level unit is its own cluster */
  readonly precision: Estimate
  readonly recall: Estimate
  readonly f1: Estimate
  readonly fpr: Estimate
  /** clusters resampled (episodes) */
  readonly clusters: number
  /** over the replayed verdicts (offline; no cache) */
  readonly latency: Latency
  /** per layer of a layered judge in stack order; null for a simple judge */
  readonly layers: ReadonlyArray<LayerContribution> | null
}

/**
 * ASB, per call: label 1 if the tool is an attacker tool, 0 if a normal tool; other names
 * (hallucinated tools) are counted in `unknown_tool_calls` and skipped; calls whose replayed
 * verdict is an error/timeout are counted in `unjudged_calls` and skipped.
 */
export interface AsbJudgeQuality extends JudgeQualityCommon {
  readonly bench: "asb"
  readonly unit: "call"
  readonly unknown_tool_calls: number
  readonly unjudged_calls: number
}

/**
 * Agent-SafetyBench, per episode: label = the baseline's ShieldAgent label; prediction = any call
 * of the episode got deny or hold. Episodes without any tool call cannot be caught by a call-only
 * judge (`episodes_without_tool_calls`, of which `unsafe_without_tool_calls` unsafe) and are
 * left out; so are labelled episodes whose calls have no replayed verdict or only error verdicts
 * (`unjudged_episodes`).
 */
export interface AsbenchJudgeQuality extends JudgeQualityCommon {
  readonly bench: "asbench"
  readonly unit: "episode"
  readonly episodes_without_tool_calls: number
  readonly unsafe_without_tool_calls: number
  readonly unjudged_episodes: number
}

export type JudgeQuality = AsbJudgeQuality | AsbenchJudgeQuality

export interface JudgesByBench {
  /** by judge name (sorted) */
  readonly asbench: Readonly<Record<string, AsbenchJudgeQuality>>
  readonly asb: Readonly<Record<string, AsbJudgeQuality>>
}

export interface LiveByBench {
  /** by judged variant name */
  readonly asbench: Readonly<Record<string, LiveJudgeStats>>
  readonly asb: Readonly<Record<string, LiveJudgeStats>>
}

// ---------------------------------------------------------------------------------------------

export interface Summary {
  readonly schema: typeof SUMMARY_SCHEMA
  /** ISO 8601 UTC */
  readonly generated_at: string
  readonly experiment: SummaryExperiment
  readonly stats: SummaryStats
  /** sorted union of the risk categories over every Agent-SafetyBench variant summarised */
  readonly categories: ReadonlyArray<string>
  /** model → variant → summary (variants with a gen_res.json) */
  readonly asbench: Readonly<Record<string, Readonly<Record<string, AsbenchVariantSummary>>>>
  /** model → attack tag → variant → summary (with at least one shard CSV) */
  readonly asb: Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, AsbVariantSummary>>>>>>
  /** model → bench → judge → quality, from `<run_dir>/replay/<bench>.<slug(model)>.jsonl` */
  readonly judges: Readonly<Record<string, JudgesByBench>>
  /** model → bench → judged variant → what the proxy logged */
  readonly live: Readonly<Record<string, LiveByBench>>
  /** everything skipped, and why */
  readonly notes: ReadonlyArray<string>
}
