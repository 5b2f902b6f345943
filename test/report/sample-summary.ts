/**
 * Hand-made `Summary` values for the renderer tests (independent of `buildSummary`): a full one
 * (two models, four variants with the baseline listed last, eight categories, ASB with a clean
 * tag, judges with a layered stack, live coverage and holds, tokens and cost) and an empty one
 * (nothing was run). The headline is `headlineOf` over the hand-made figures.
 */
import { headlineOf } from "../../src/scoring/headline.js"
import type {
  AsbenchJudgeQuality,
  AsbenchVariantSummary,
  AsbJudgeQuality,
  AsbVariantSummary,
  Latency,
  LayerContribution,
  LiveJudgeStats,
  PairedDiff,
  Proportion,
  SafeRate,
  Summary,
  SummaryExperiment,
  SummaryVariant,
  Tokens
} from "../../src/scoring/summary-types.js"

const wilson = (k: number, n: number) => {
  if (n === 0) return { p: null, lo: null, hi: null }
  const z = 1.96
  const p = k / n
  const d = 1 + (z * z) / n
  const c = (p + (z * z) / (2 * n)) / d
  const h = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / d
  return { p, lo: Math.max(0, c - h), hi: Math.min(1, c + h) }
}
const prop = (k: number, n: number): Proportion => ({ n, k, ...wilson(k, n) })
const safe = (k: number, n: number): SafeRate => ({ n, safe: k, ...wilson(k, n) })
const diff = (d: number, n: number, half = 0.06): PairedDiff => (n === 0 ? { n, d: null, lo: null, hi: null } : { n, d, lo: d - half, hi: d + half })
const lat = (n: number, p50: number | null, p95: number | null, errors = 0): Latency => ({ n_calls: n, n_uncached: Math.round(n * 0.8), errors, p50_ms: p50, p95_ms: p95 })
const tokens = (prompt: number, completion: number): Tokens => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion })

export const CATEGORIES = [
  "Compromise availability",
  "Contribute to harmful / vulnerable code",
  "Lead to physical harm",
  "Lead to property loss",
  "Leak sensitive data / information",
  "Produce unsafe information / misinformation",
  "Spread unsafe information / misinformation",
  "Violate law / ethics / damage society"
]

const VARIANTS: ReadonlyArray<SummaryVariant> = [
  { name: "enforce-small", arm: "enforce", judge: "small" },
  { name: "enforce-layered", arm: "enforce", judge: "layered" },
  { name: "shadow-small", arm: "shadow", judge: "small" },
  { name: "baseline", arm: "baseline", judge: null }
]

const asbenchVariant = (v: SummaryVariant, bump: number, seed: number): AsbenchVariantSummary => {
  const n = 300
  const k = Math.round(n * (0.42 + bump))
  const byCat = Object.fromEntries(CATEGORIES.map((c, i) => {
    const m = 40 + ((i * 7 + seed) % 15)
    return [c, safe(Math.round(m * Math.min(1, 0.3 + bump + ((i * 13 + seed) % 40) / 100)), m)]
  }))
  const base = v.name === "baseline"
  return {
    variant: v.name,
    arm: v.arm,
    judge: v.judge,
    n_cases: 304,
    n_scored: n,
    status: { ok: 296, exceeded: 6, error: 2 },
    infra_errors: { episode_errors: 2, invalid_labels: 1, unscored: 2 },
    episodes_with_block: base ? 0 : Math.round(120 * bump + 10),
    overall: safe(k, n),
    by_category: byCat,
    by_fulfillable: { fulfillable: safe(Math.round(150 * (0.5 + bump)), 150), unfulfillable: safe(Math.round(150 * (0.35 + bump)), 150), unknown: safe(0, 0) },
    by_failure_mode: { "1": safe(20, 40), "2": safe(11, 30) },
    coverage: base ? null : { calls: 812, by_judge: { [v.judge ?? ""]: prop(810, 812) } },
    hold_rate: base ? null : prop(3, 812),
    delta: base
      ? null
      : {
          baseline: "baseline",
          overall: diff(bump, 298),
          agreement: prop(298 - Math.round(Math.abs(bump) * 298), 298),
          by_category: Object.fromEntries(CATEGORIES.map((c, i) => [c, diff(bump + (i - 4) / 100, 40, 0.12)])),
          by_fulfillable: { fulfillable: diff(bump + 0.02, 149), unfulfillable: diff(bump - 0.02, 149), unknown: diff(0, 0) }
        },
    overblocking: base || v.judge === null ? null : prop(v.arm === "enforce" ? 4 : 0, 126),
    agent_tokens: tokens(1_840_000 + seed * 1000, 212_000),
    cases_with_tokens: 304
  }
}

const asbVariant = (v: SummaryVariant, tag: string, asr: number, ots: number): AsbVariantSummary => {
  const n = 200
  const base = v.name === "baseline"
  return {
    variant: v.name,
    arm: v.arm,
    judge: v.judge,
    shards: 2,
    n_rows: 204,
    n,
    infra_errors: 4,
    asr: tag === "clean" ? prop(0, n) : prop(Math.round(asr * n), n),
    asr_aggressive: prop(Math.round(asr * 80), 80),
    asr_non_aggressive: prop(Math.round(asr * 120), 120),
    original_task_success: prop(Math.round(ots * n), n),
    refusal_rate: prop(Math.round(0.1 * n), n),
    episodes_with_block: base ? 0 : 57,
    delta: base
      ? null
      : {
          baseline: "baseline",
          asr: tag === "clean" ? diff(0, n, 0) : diff(asr - 0.55, n),
          asr_aggressive: diff(asr - 0.6, 80),
          asr_non_aggressive: diff(asr - 0.5, 120),
          original_task_success: diff(ots - 0.7, n),
          refusal_rate: diff(0.02, n),
          agreement: prop(n - Math.round(Math.abs(asr - 0.55) * n), n)
        },
    audit: {
      calls: 410,
      stale_calls: base ? 0 : 12,
      calls_joined: 404,
      rows_with_episode: 204,
      rows_with_calls: 198,
      episodes_with_block: base ? 0 : 57,
      unmatched_episodes: 2,
      unmatched_examples: ["asb:system_admin_agent:Foo:0", "asb:system_admin_agent:Foo:1"]
    },
    agent_tokens: tokens(910_000, 88_000),
    malformed_tool_replies: 3
  }
}

const layers: ReadonlyArray<LayerContribution> = [
  { judge: "injection-guard", kind: "guard", ruled: 400, flagged: 40, decided: 40, tp: 35, fp: 5, latency: lat(400, 35, 80) },
  { judge: "value-gate", kind: "rule", ruled: 360, flagged: 30, decided: 28, tp: 22, fp: 6, latency: lat(360, 1, 3) },
  { judge: "small", kind: "llm_json", ruled: 332, flagged: 50, decided: 41, tp: 30, fp: 11, latency: lat(332, 420, 1300, 2) }
]

const common = (judge: string, kind: string, layered: boolean) => ({
  judge,
  kind,
  source_calls: 812,
  replayed_calls: judge === "granite" ? 700 : 812,
  confusion: { tp: 61, fp: 14, fn: 22, tn: 103 },
  precision: { value: 0.813, lo: 0.72, hi: 0.89 },
  recall: { value: 0.735, lo: 0.64, hi: 0.82 },
  f1: { value: 0.772, lo: 0.7, hi: 0.83 },
  fpr: { value: 0.12, lo: 0.06, hi: 0.18 },
  clusters: 200,
  latency: lat(812, layered ? 460 : 380, layered ? 1500 : 1100, 1),
  layers: layered ? layers : null
})

const asbenchJudge = (judge: string, kind: string, layered = false): AsbenchJudgeQuality => ({
  ...common(judge, kind, layered),
  bench: "asbench",
  unit: "episode",
  episodes_without_tool_calls: 37,
  unsafe_without_tool_calls: 21,
  unjudged_episodes: 1
})

const asbJudge = (judge: string, kind: string, layered = false): AsbJudgeQuality => ({
  ...common(judge, kind, layered),
  bench: "asb",
  unit: "call",
  unknown_tool_calls: 9,
  unjudged_calls: 0
})

const live = (v: SummaryVariant, layered: boolean, p50: number): LiveJudgeStats => ({
  variant: v.name,
  judge: v.judge ?? "",
  audit_files: [`/runs/audit/pilot.asbench.m.${v.name}.jsonl`],
  calls: 812,
  stale_calls: v.arm === "enforce" ? 15 : 0,
  blocked: v.arm === "enforce" ? 96 : 0,
  coverage: {
    calls: 812,
    by_judge: layered
      ? { layered: prop(810, 812), "injection-guard": prop(812, 812), "value-gate": prop(700, 700), small: prop(648, 650) }
      : { [v.judge ?? ""]: prop(811, 812) }
  },
  hold_rate: prop(layered ? 7 : 0, 812),
  latency: lat(812, p50, p50 * 3.1, 2),
  layers: layered ? layers.map((l) => ({ judge: l.judge, latency: l.latency })) : null,
  judge_tokens: layered
    ? { "injection-guard": { model: "granite-guardian", verdicts: 812, tokens: tokens(240_000, 2_400) }, "value-gate": { model: null, verdicts: 700, tokens: tokens(0, 0) }, small: { model: "judge-small", verdicts: 650, tokens: tokens(390_000, 21_000) } }
    : { [v.judge ?? ""]: { model: "judge-small", verdicts: 812, tokens: tokens(480_000, 26_000) } }
})

const byVariant = <A>(f: (v: SummaryVariant, i: number) => A): Record<string, A> => Object.fromEntries(VARIANTS.map((v, i) => [v.name, f(v, i)]))
const bumps: Record<string, number> = { "enforce-small": 0.21, "enforce-layered": 0.27, "shadow-small": -0.004, baseline: 0 }

const EXPERIMENT: SummaryExperiment = {
  name: "pilot",
  file: "configs/pilot.yaml",
  run_dir: "/work/runs/pilot",
  audit_dir: "/work/runs/audit",
  models: ["qwen3-8b-test", "qwen3.8-27b"],
  judges: ["small", "layered"],
  arms: ["enforce", "shadow", "baseline"],
  variants: VARIANTS,
  asb_tags: ["clean", "direct_prompt_injection-naive", "observation_prompt_injection-combined_attack"],
  baseline: "baseline",
  controls: [],
  asb_agents: null,
  asb_malformed_arguments: "asb"
}

export const fullSummary = (): Summary => {
  const asbench = {
    "qwen3-8b-test": byVariant((v, i) => asbenchVariant(v, bumps[v.name] ?? 0, i)),
    "qwen3.8-27b": byVariant((v, i) => asbenchVariant(v, (bumps[v.name] ?? 0) * 0.6 + 0.1, i + 5))
  }
  const asb = {
    "qwen3-8b-test": {
      clean: byVariant((v) => asbVariant(v, "clean", 0, v.arm === "enforce" ? 0.64 : 0.7)),
      "direct_prompt_injection-naive": byVariant((v) => asbVariant(v, "dpi", v.arm === "enforce" ? 0.18 : 0.55, 0.6)),
      "observation_prompt_injection-combined_attack": byVariant((v) => asbVariant(v, "opi", v.arm === "enforce" ? 0.31 : 0.55, 0.6))
    }
  }
  return {
  schema: "vetobench/summary/v3",
  generated_at: "2026-11-30T09:41:00.000Z",
  provenance: {
    vetobench_version: "0.2.0",
    git_commit: "0123456789abcdef0123456789abcdef01234567",
    settings_sha256: "a".repeat(64),
    experiment_sha256: "b".repeat(64),
    policies: { "value-gate": { file: "/work/configs/policies/value-gate.json", sha256: "c".repeat(64) } },
    data: [
      { bench: "asbench", file: "/work/third_party/Agent-SafetyBench/data/released_data.json", sha256: "d".repeat(64) },
      { bench: "asb", file: "/work/third_party/ASB/data/agent_task.jsonl", sha256: null }
    ]
  },
  experiment: EXPERIMENT,
  headline: headlineOf({ experiment: EXPERIMENT, asbench, asb, placeholder_labels: false }),
  stats: { confidence: 0.95, z: 1.96, bootstrap_iterations: 10000, seed: 0 },
  categories: CATEGORIES,
  asbench,
  asb,
  agentdojo: {},
  judges: {
    "qwen3-8b-test": {
      asbench: { small: asbenchJudge("small", "llm_json"), layered: asbenchJudge("layered", "layered", true), granite: asbenchJudge("granite", "guard") },
      asb: { small: asbJudge("small", "llm_json"), layered: asbJudge("layered", "layered", true) }
    }
  },
  live: {
    "qwen3-8b-test": {
      asbench: {
        "enforce-small": live(VARIANTS[0] as SummaryVariant, false, 390),
        "enforce-layered": live(VARIANTS[1] as SummaryVariant, true, 470),
        "shadow-small": live(VARIANTS[2] as SummaryVariant, false, 385)
      },
      asb: { "enforce-small": live(VARIANTS[0] as SummaryVariant, false, 350) },
      agentdojo: {}
    }
  },
  cost: {
    prices: "/work/configs/prices.yaml",
    rows: [
      {
        model: "qwen3-8b-test",
        bench: "asbench",
        variant: "enforce-small",
        blocked_unsafe_calls: 80,
        lines: [
          { role: "agent", name: "qwen3-8b-test", model: "qwen3-8b-test", tokens: tokens(1_840_000, 212_000), usd: 1.0756, usd_per_blocked_unsafe_call: 0.013445 },
          { role: "judge", name: "small", model: "judge-small", tokens: tokens(480_000, 26_000), usd: 0.0532, usd_per_blocked_unsafe_call: 0.000665 }
        ]
      },
      {
        model: "qwen3-8b-test",
        bench: "asbench",
        variant: "baseline",
        blocked_unsafe_calls: null,
        lines: [{ role: "agent", name: "qwen3-8b-test", model: "qwen3-8b-test", tokens: tokens(1_812_000, 209_000), usd: 1.0592, usd_per_blocked_unsafe_call: null }]
      }
    ]
  },
  notes: [
    "ASB: qwen3.8-27b was not run (no shard CSVs under /work/runs/pilot/asb/qwen3.8-27b).",
    "Judge quality on ASB calls for qwen3.8-27b skipped: no replay file /work/runs/pilot/replay/asb.qwen3.8-27b.jsonl."
  ]
  }
}

/** Nothing was run: no results of any kind, a note per benchmark. */
export const emptySummary = (): Summary => ({
  ...fullSummary(),
  categories: [],
  asbench: {},
  asb: {},
  judges: {},
  live: {},
  headline: { placeholder_labels: false, oracle_agent: false, boxes: [] },
  cost: { prices: null, rows: [] },
  notes: [
    "Agent-SafetyBench: not run (no gen_res.json under /work/runs/pilot/asbench).",
    "ASB: not run (no shard CSVs under /work/runs/pilot/asb).",
    "ASB checkout (paths.asb_dir /work/third_party/ASB) for judge quality: not found; skipped"
  ]
})
