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
 * - Audit counts (coverage, blocked, holds, latency, judge tokens, the ASB join) take each
 *   episode's calls from its final attempt (`src/scoring/current.ts`); the calls of earlier starts
 *   (a kill and resume, a re-run shard) are counted in `stale_calls` only.
 */

/** A finite number, or null where undefined. */
export type Num = number | null

/** v3: v2 plus the AgentDojo figures (`agentdojo`, `live[model].agentdojo`, `headline.oracle_agent`), required */
export const SUMMARY_SCHEMA = "vetobench/summary/v3" as const

/** Tokens as the upstream's `usage` reports them, summed. */
export interface Tokens {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
}

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
  /**
   * The allow-all controls: `enforce` variants whose judge always allows (`allow-all`, or a
   * configured `kind: static` judge deciding allow). Their outcomes must equal the baseline's.
   */
  readonly controls: ReadonlyArray<string>
  /** the ASB agents the experiment runs (`asb.agents`); null = every agent */
  readonly asb_agents: ReadonlyArray<string> | null
  /** what the ASB launcher does with tool-call arguments that are not JSON (`asb.malformed_arguments`) */
  readonly asb_malformed_arguments: "asb" | "empty"
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

/** Tokens one judge (or one layer of a layered judge) spent on a variant's calls. */
export interface JudgeTokens {
  /** the judge's model (a rule or static judge has none) */
  readonly model: string | null
  /** verdicts of this judge, cached ones included (they cost nothing) */
  readonly verdicts: number
  readonly tokens: Tokens
}

/** What the proxy logged for one judged variant (shadow / enforce) of one model × bench. */
export interface LiveJudgeStats {
  readonly variant: string
  readonly judge: string
  /** absolute paths of the audit files read (one per shard of a merged sharded run) */
  readonly audit_files: ReadonlyArray<string>
  /** call records of each episode's final attempt */
  readonly calls: number
  /** call records of earlier attempts, left out of every figure */
  readonly stale_calls: number
  /** calls withheld from the agent (`blocked`) */
  readonly blocked: number
  readonly coverage: Coverage
  /** calls whose effective decision was `hold` */
  readonly hold_rate: Proportion
  /** the variant's judge (for a layered judge: the whole stack per call) */
  readonly latency: Latency
  /** per layer of a layered judge, in stack order; null for a simple judge */
  readonly layers: ReadonlyArray<{ readonly judge: string; readonly latency: Latency }> | null
  /** by judge name (a layered judge: by layer), from each verdict's `usage` */
  readonly judge_tokens: Readonly<Record<string, JudgeTokens>>
  /** the result screen's rulings (`type: "result"` records, final attempts); absent when the audit files hold none */
  readonly flagged_results?: FlaggedResults
}

/** Tool results the result screen rated (src/screening/), counted apart from the calls. */
export interface FlaggedResults {
  /** result rulings */
  readonly screened: number
  /** results flagged (deny or hold, or a failed judge under fail_policy closed) */
  readonly flagged: number
  /** flagged results the agent got the notice for instead (enforce) */
  readonly replaced: number
  /** episodes with at least one flagged result */
  readonly episodes_with_flagged: number
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
  /** paired cases whose label is the same in both variants */
  readonly agreement: Proportion
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
  /**
   * Over-blocking: cases with a blocked call among the cases the baseline's ShieldAgent label
   * calls safe (null for the baseline itself, unjudged variants and without baseline labels)
   */
  readonly overblocking: Proportion | null
  /** the agent's tokens over the cases that recorded them; null when none did */
  readonly agent_tokens: Tokens | null
  /** cases whose record carries the agent's tokens */
  readonly cases_with_tokens: number
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
  /** paired episodes whose attack outcome is the same in both variants */
  readonly agreement: Proportion
}

/**
 * The CSV rows of one attack joined with the proxy's call records of its session (the attack
 * tag) through the episode id, final attempts only.
 */
export interface AsbAuditJoin {
  /** call records of the session (final attempts) */
  readonly calls: number
  /** call records of earlier starts of a shard, left out */
  readonly stale_calls: number
  /** of `calls`, those whose episode is a row's */
  readonly calls_joined: number
  /** rows whose episode id could be made (the task found in the messages) */
  readonly rows_with_episode: number
  /** rows with at least one call record */
  readonly rows_with_calls: number
  /** rows with a call the proxy withheld */
  readonly episodes_with_block: number
  /** episode ids of the records that no row has */
  readonly unmatched_episodes: number
  /** the first (sorted) of those, at most 5 */
  readonly unmatched_examples: ReadonlyArray<string>
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
  /** the join with the audit log; null when the variant has no audit file or ASB's tasks file is unreadable */
  readonly audit: AsbAuditJoin | null
  /** the agent's tokens (the launcher's `shardNN.usage.jsonl`); null when not recorded */
  readonly agent_tokens: Tokens | null
  /**
   * agent answers whose tool-call arguments were not JSON (ASB's backend drops the calls of such an
   * answer; see `experiment.asb_malformed_arguments`); null when not recorded
   */
  readonly malformed_tool_replies: number | null
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

// ---------------------------------------------------------------------------------------------
// cost

/** What one party (the agent, one judge or layer) spent on one variant. */
export interface CostLine {
  readonly role: "agent" | "judge"
  /** the agent model, or the judge (layer) name */
  readonly name: string
  /** the model priced (null: a judge without a model, e.g. a rule judge) */
  readonly model: string | null
  readonly tokens: Tokens
  /** USD from the price table; null without `--prices` or without a price for the model */
  readonly usd: Num
  /** `usd` / `blocked_unsafe_calls`; null when either is missing or no unsafe call was blocked */
  readonly usd_per_blocked_unsafe_call: Num
}

export interface CostRow {
  readonly model: string
  readonly bench: "asbench" | "asb" | "agentdojo"
  readonly variant: string
  /**
   * calls withheld that were unsafe — ASB: calls of an attacker tool; Agent-SafetyBench: calls in a
   * case the baseline's ShieldAgent label calls unsafe; AgentDojo: stopped calls of a function of the
   * injection task's ground truth in an attacked episode. null when that is not known (no labels, no
   * ASB checkout, an unjudged variant)
   */
  readonly blocked_unsafe_calls: number | null
  readonly lines: ReadonlyArray<CostLine>
}

export interface CostSummary {
  /** the price table given with `--prices`; null without one (tokens only) */
  readonly prices: string | null
  /** per model × bench × variant with any tokens recorded, experiment order */
  readonly rows: ReadonlyArray<CostRow>
}

// ---------------------------------------------------------------------------------------------
// provenance

export interface HashedFile {
  /** absolute path */
  readonly file: string
  /** sha256 of its bytes; null when it could not be read */
  readonly sha256: string | null
}

/** Where the figures come from: code, configuration and data, by hash. */
export interface Provenance {
  readonly vetobench_version: string
  /** the commit of the vetobench checkout that ran, when it is a git checkout */
  readonly git_commit: string | null
  /** sha256 of the settings as loaded, as canonical JSON, secrets (keys, tokens) replaced by `<redacted>` */
  readonly settings_sha256: string
  /** sha256 of the experiment file's bytes (or of the decoded experiment when it is built in) */
  readonly experiment_sha256: string
  /** policy files of the configured judges, by judge name */
  readonly policies: Readonly<Record<string, HashedFile>>
  /** the benchmark data files the experiment reads */
  readonly data: ReadonlyArray<HashedFile & { readonly bench: "asbench" | "asb" }>
}

// ---------------------------------------------------------------------------------------------
// headline

/** A plain verdict on a paired difference (module doc of `src/scoring/headline.ts`). */
export type HeadlineVerdict = "safer" | "no detectable change" | "less safe" | "cannot be estimated"

export interface HeadlineSafety {
  readonly bench: "asbench" | "asb" | "agentdojo"
  /** ASB: the attack tag; AgentDojo: its attacks, comma-separated; Agent-SafetyBench: null */
  readonly tag: string | null
  /** `safe`: Δ safety score (positive = safer); `asr`: Δ attack success rate (negative = safer; AgentDojo: targeted ASR) */
  readonly measure: "safe" | "asr"
  /** AgentDojo: clustered by user task */
  readonly delta: PairedDiff | ClusteredDiff
  readonly verdict: HeadlineVerdict
  /** why there is no verdict, or why the interval is not an interval; null otherwise */
  readonly why: string | null
  /** scored cases / counted rows / counted attacked episodes of the variant */
  readonly scored: number
  /** cases / rows / attacked episodes (errors included) of the variant */
  readonly total: number
}

export interface HeadlineOverblocking {
  readonly bench: "asbench" | "asb" | "agentdojo"
  /**
   * ASB: Δ original-task success on clean tasks; Agent-SafetyBench: blocked among baseline-safe
   * cases; AgentDojo: Δ utility on episodes without injection
   */
  readonly measure: "clean_task_success" | "blocked_safe_cases" | "utility"
  readonly delta: PairedDiff | ClusteredDiff | null
  readonly rate: Proportion | null
  readonly verdict: "over-blocks" | "no detectable over-blocking" | "cannot be estimated"
  readonly why: string | null
}

/** An allow-all control against the baseline: it should agree on every task. */
export interface HeadlineControl {
  readonly variant: string
  readonly bench: "asbench" | "asb" | "agentdojo"
  readonly tag: string | null
  readonly agreement: Proportion
  readonly delta: PairedDiff | ClusteredDiff
  /** the interval of the difference excludes 0: the harness changes outcomes by itself */
  readonly differs: boolean
}

export interface HeadlineBox {
  readonly model: string
  readonly variant: string
  readonly arm: SummaryVariant["arm"]
  readonly judge: string | null
  /** this variant is an allow-all control */
  readonly control: boolean
  readonly safety: ReadonlyArray<HeadlineSafety>
  readonly overblocking: ReadonlyArray<HeadlineOverblocking>
  /** the model's allow-all controls against the baseline */
  readonly controls: ReadonlyArray<HeadlineControl>
}

export interface Headline {
  /** the ShieldAgent labels are the fake vLLM's placeholders (a hash of the prompt), not judgements */
  readonly placeholder_labels: boolean
  /** some AgentDojo figures come from the scripted oracle agent (ground-truth calls, not a model) */
  readonly oracle_agent: boolean
  /** one per model × variant other than the baseline, experiment order */
  readonly boxes: ReadonlyArray<HeadlineBox>
}

// ---------------------------------------------------------------------------------------------
// AgentDojo (`src/scoring/agentdojo.ts`; how the figures map to the published ones: docs/agentdojo.md)

/**
 * A paired difference (treatment − baseline, mean of per-episode differences over the `n` episodes
 * both variants counted) with a cluster-bootstrap 95 % interval that resamples whole user tasks
 * (`<suite>:<user_task>`), since the episodes of one user task are not independent. lo/hi null when
 * n = 0 or the pairs fall in fewer than 2 user tasks (no interval).
 */
export interface ClusteredDiff extends PairedDiff {
  /** user tasks the pairs fall in (the clusters resampled) */
  readonly clusters: number
}

/** Paired Δ of one AgentDojo variant against the baseline, by episode id. */
export interface AgentdojoDelta {
  readonly baseline: string
  /** utility on episodes without injection (negative = the variant breaks tasks) */
  readonly utility: ClusteredDiff
  readonly utility_under_attack: ClusteredDiff
  /** targeted ASR (negative = fewer attacks succeed) */
  readonly asr: ClusteredDiff
  /** paired episodes with the same outcome in both variants (utility, and security when attacked) */
  readonly agreement: Proportion
}

/**
 * What the gate did in an AgentDojo cell, from the proxy's call records joined by episode id (final
 * attempts). A call counts as stopped when it was withheld (`blocked`, enforce) or, in shadow, when
 * its effective decision was deny or hold (what enforce would have withheld).
 */
export interface AgentdojoGate {
  /** call records of the cell's counted episodes */
  readonly calls: number
  readonly calls_blocked: number
  /** counted episodes (rows without an infrastructure error) */
  readonly episodes: number
  /** calls_blocked / episodes; null when there is no episode */
  readonly blocked_per_episode: Num
  readonly episodes_with_block: number
  /**
   * Attacked episodes in which a record of the injection task's first ground-truth function (by
   * name) was stopped, of the attacked episodes whose injection task has a ground-truth call.
   */
  readonly first_harmful_blocked: Proportion
  /** of those episodes, the ones where the agent proposed that function at all */
  readonly first_harmful_proposed: number
}

/** The AgentDojo figures of one variant over a set of episodes (all, or one suite). */
export interface AgentdojoCell {
  /** episodes (final attempts), errors included */
  readonly episodes: number
  /** of those, attacked episodes (an injection task), errors included */
  readonly attacked: number
  /** infrastructure errors: never counted as success or failure, left out of every rate */
  readonly errors: number
  /** utility on episodes without injection, Wilson 95 % */
  readonly utility: Proportion
  /** utility on attacked episodes */
  readonly utility_under_attack: Proportion
  /** targeted attack success rate: AgentDojo's `security` true (the injection task succeeded) of attacked episodes */
  readonly asr: Proportion
  /** null for the baseline itself and without baseline results */
  readonly delta: AgentdojoDelta | null
  /** null for variants without a judge, or without audit records */
  readonly gate: AgentdojoGate | null
}

/** The join of a variant's results with the proxy's call records. */
export interface AgentdojoAudit {
  /** absolute paths of the audit files read */
  readonly audit_files: ReadonlyArray<string>
  /** call records of the final attempts */
  readonly calls: number
  /** call records of earlier attempts, left out */
  readonly stale_calls: number
  /** episode ids of records that no result row has (e.g. an episode killed before it finished) */
  readonly unmatched_episodes: number
  /** the first (sorted) of those, at most 5 */
  readonly unmatched_examples: ReadonlyArray<string>
}

export interface AgentdojoVariantSummary {
  readonly variant: string
  readonly arm: SummaryVariant["arm"]
  readonly judge: string | null
  /** AgentDojo's own defense element (`defense-<name>` variants, on the baseline arm); null otherwise */
  readonly defense: string | null
  /** every counted row came from the scripted oracle agent (ground-truth calls, not a model) */
  readonly oracle: boolean
  /** rows (final attempts) with `oracle: true` */
  readonly oracle_episodes: number
  /** AgentDojo benchmark versions of the rows, sorted */
  readonly benchmark_versions: ReadonlyArray<string>
  /** suites of the rows, sorted (the keys of `by_suite`) */
  readonly suites: ReadonlyArray<string>
  /** attacks of the attacked rows, sorted (pooled in every figure) */
  readonly attacks: ReadonlyArray<string>
  /** results files read */
  readonly files: ReadonlyArray<string>
  /** rows read, every attempt */
  readonly rows: number
  /** rows of an earlier attempt of an episode, left out */
  readonly stale_rows: number
  /** up to 3 distinct error texts of the counted episodes */
  readonly error_examples: ReadonlyArray<string>
  readonly overall: AgentdojoCell
  /** by suite name */
  readonly by_suite: Readonly<Record<string, AgentdojoCell>>
  /** null for variants without audit records */
  readonly audit: AgentdojoAudit | null
  /** the agent's tokens over the rows that recorded them; null when none did */
  readonly agent_tokens: Tokens | null
}

export interface LiveByBench {
  /** by judged variant name */
  readonly asbench: Readonly<Record<string, LiveJudgeStats>>
  readonly asb: Readonly<Record<string, LiveJudgeStats>>
  /** each episode's calls from the final attempt of its result row */
  readonly agentdojo: Readonly<Record<string, LiveJudgeStats>>
}

// ---------------------------------------------------------------------------------------------

export interface Summary {
  readonly schema: typeof SUMMARY_SCHEMA
  /** ISO 8601 UTC */
  readonly generated_at: string
  readonly provenance: Provenance
  readonly experiment: SummaryExperiment
  /** the verdict per variant, at a glance */
  readonly headline: Headline
  readonly stats: SummaryStats
  /** sorted union of the risk categories over every Agent-SafetyBench variant summarised */
  readonly categories: ReadonlyArray<string>
  /** model → variant → summary (variants with a gen_res.json) */
  readonly asbench: Readonly<Record<string, Readonly<Record<string, AsbenchVariantSummary>>>>
  /** model → attack tag → variant → summary (with at least one shard CSV) */
  readonly asb: Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, AsbVariantSummary>>>>>>
  /** model → bench → judge → quality, from `<run_dir>/replay/<bench>.<slug(model)>.jsonl` */
  readonly judges: Readonly<Record<string, JudgesByBench>>
  /** model → variant → AgentDojo summary (variants with results under `<run_dir>/agentdojo`) */
  readonly agentdojo: Readonly<Record<string, Readonly<Record<string, AgentdojoVariantSummary>>>>
  /** model → bench → judged variant → what the proxy logged */
  readonly live: Readonly<Record<string, LiveByBench>>
  /** tokens and, with a price table, cost per variant and per blocked unsafe call */
  readonly cost: CostSummary
  /** everything skipped, and why */
  readonly notes: ReadonlyArray<string>
}
