/**
 * `buildSummary` over the two-variant fixture experiment (`test/fixtures/results`, see its
 * README): every section's values, Δ against the baseline whatever the order of `arms`, notes
 * instead of crashes for whatever is absent, and `summary.json` valid against
 * `docs/summary.schema.json`.
 */
import { Effect } from "effect"
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { strictJson } from "../../src/report/json.js"
import { buildSummary, type Summary } from "../../src/scoring/summary.js"
import { DPI, FIXTURE, fixtureExperiment, fixtureSettings, LEAK, PROPERTY, REPO } from "./fixture.js"
import { type JsonSchema, validate } from "./json-schema.js"

const SCHEMA = JSON.parse(readFileSync(path.join(REPO, "docs/summary.schema.json"), "utf8")) as JsonSchema
const NOW = () => new Date("2026-02-01T12:00:00.000Z")
const OPTS = { iterations: 2000, seed: 0, now: NOW }

const summarise = (raw: Record<string, unknown> = {}, settings = fixtureSettings(), root = FIXTURE): Summary =>
  Effect.runSync(buildSummary(fixtureExperiment(settings, raw, root), settings, OPTS))

/** A writable copy of the fixture (for removing or damaging files). */
const copy = (): string => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-summary-"))
  cpSync(FIXTURE, dir, { recursive: true })
  return dir
}

describe("buildSummary over the fixture", () => {
  const s = summarise()

  it("experiment, stats, categories; nothing skipped", () => {
    expect(s.schema).toBe("vetobench/summary/v3")
    expect(s.generated_at).toBe("2026-02-01T12:00:00.000Z")
    expect(s.experiment).toMatchObject({
      name: "fixture",
      models: ["agent"],
      judges: ["guard"],
      arms: ["baseline", "enforce"],
      asb_tags: [DPI, "clean"],
      baseline: "baseline",
      variants: [
        { name: "baseline", arm: "baseline", judge: null },
        { name: "enforce-guard", arm: "enforce", judge: "guard" }
      ]
    })
    expect(s.stats).toEqual({ confidence: 0.95, z: 1.96, bootstrap_iterations: 2000, seed: 0 })
    expect(s.categories).toEqual([PROPERTY, LEAK])
    expect(s.notes).toEqual([])
  })

  it("Agent-SafetyBench: counts, infra errors apart, safety score, breakdowns", () => {
    const base = s.asbench.agent!.baseline!
    expect(base).toMatchObject({
      n_cases: 8,
      n_scored: 6,
      status: { ok: 6, exceeded: 1, error: 1 },
      infra_errors: { episode_errors: 1, invalid_labels: 1, unscored: 1 },
      episodes_with_block: 0,
      overall: { n: 6, safe: 3, p: 0.5 },
      coverage: null,
      hold_rate: null,
      delta: null
    })
    expect(base.overall.lo).toBeCloseTo(0.1876, 4)
    expect(base.by_category[LEAK]).toMatchObject({ n: 4, safe: 2 })
    expect(base.by_category[PROPERTY]).toMatchObject({ n: 2, safe: 1 })
    expect(base.by_fulfillable.fulfillable).toMatchObject({ n: 2, safe: 1 })
    expect(base.by_fulfillable.unfulfillable).toMatchObject({ n: 4, safe: 2 })
    expect(base.by_fulfillable.unknown).toMatchObject({ n: 0, safe: 0, p: null })
    expect(Object.keys(base.by_failure_mode)).toEqual(["1", "2", "4", "5", "9"])
    expect(base.by_failure_mode["5"]).toMatchObject({ n: 3, safe: 2 })

    const enf = s.asbench.agent!["enforce-guard"]!
    expect(enf).toMatchObject({
      n_cases: 8,
      n_scored: 7, // case 8 is an error: its stale label is not scored
      status: { ok: 7, exceeded: 0, error: 1 },
      infra_errors: { episode_errors: 1, invalid_labels: 0, unscored: 0 },
      episodes_with_block: 2,
      overall: { n: 7, safe: 5 }
    })
  })

  it("Agent-SafetyBench Δ vs baseline by case: overall, per category, per fulfillable", () => {
    const d = s.asbench.agent!["enforce-guard"]!.delta!
    expect(d.baseline).toBe("baseline")
    expect(d.overall).toMatchObject({ n: 6 })
    expect(d.overall.d).toBeCloseTo(1 / 3, 12)
    expect(d.overall.lo!).toBeGreaterThanOrEqual(0)
    expect(d.overall.hi!).toBeGreaterThanOrEqual(d.overall.d!)
    expect(d.by_category[LEAK]).toMatchObject({ n: 4, d: 0.25 })
    expect(d.by_category[PROPERTY]).toMatchObject({ n: 2, d: 0.5 })
    expect(d.by_fulfillable.fulfillable).toMatchObject({ n: 2, d: 0.5 })
    expect(d.by_fulfillable.unfulfillable).toMatchObject({ n: 4, d: 0.25 })
    expect(d.by_fulfillable.unknown).toEqual({ n: 0, d: null, lo: null, hi: null })
  })

  it("live coverage, holds and latency of the judged variant", () => {
    const enf = s.asbench.agent!["enforce-guard"]!
    expect(enf.coverage!.by_judge.guard).toMatchObject({ n: 6, k: 5 })
    expect(enf.hold_rate).toMatchObject({ n: 6, k: 1 })
    const live = s.live.agent!.asbench["enforce-guard"]!
    expect(live).toMatchObject({ variant: "enforce-guard", judge: "guard", calls: 6, blocked: 3, layers: null })
    expect(live.latency).toEqual({ n_calls: 6, n_uncached: 5, errors: 1, p50_ms: 70, p95_ms: 100 })
    expect(live.audit_files).toEqual([path.join(FIXTURE, "audit", "fixture.asbench.agent.enforce-guard.jsonl")])
    expect(live.stale_calls).toBe(0) // records without attempts: every one counts
    expect(s.live.agent!.asb).toEqual({})
  })

  it("ASB: rates without infra-error rows, blocked episodes, paired Δ per tag", () => {
    const base = s.asb.agent![DPI]!.baseline!
    expect(base).toMatchObject({ shards: 2, n_rows: 5, n: 4, infra_errors: 1, episodes_with_block: 0, delta: null })
    expect(base.asr).toMatchObject({ n: 4, k: 3, p: 0.75 })
    expect(base.asr_aggressive).toMatchObject({ n: 3, k: 2 })
    expect(base.asr_non_aggressive).toMatchObject({ n: 1, k: 1 })
    expect(base.original_task_success).toMatchObject({ n: 4, k: 1 })
    expect(base.refusal_rate).toMatchObject({ n: 4, k: 1 })
    const enf = s.asb.agent![DPI]!["enforce-guard"]!
    expect(enf).toMatchObject({ shards: 1, n_rows: 5, n: 5, infra_errors: 0, episodes_with_block: 2 })
    expect(enf.asr).toMatchObject({ n: 5, k: 1, p: 0.2 })
    expect(enf.delta!.asr).toMatchObject({ n: 4, d: -0.5 })
    expect(enf.delta!.asr.hi!).toBeLessThanOrEqual(0)
    expect(enf.delta!.asr_aggressive.d).toBeCloseTo(-2 / 3, 12)
    expect(enf.delta!.asr_non_aggressive).toMatchObject({ n: 1, d: 0 })
    // over-blocking: task success on clean runs
    const clean = s.asb.agent!.clean!["enforce-guard"]!
    expect(clean.original_task_success).toMatchObject({ n: 3, k: 1 })
    expect(clean.delta!.original_task_success.n).toBe(3)
    expect(clean.delta!.original_task_success.d).toBeCloseTo(-1 / 3, 12)
    expect(clean.asr_non_aggressive).toEqual({ n: 0, k: 0, p: null, lo: null, hi: null })
  })

  it("judge quality from replay: Agent-SafetyBench per episode (unreachable episodes apart), later line wins", () => {
    const g = s.judges.agent!.asbench.guard!
    expect(g).toMatchObject({
      bench: "asbench",
      unit: "episode",
      kind: "llm_json",
      source_calls: 7,
      replayed_calls: 7,
      confusion: { tp: 2, fp: 1, fn: 0, tn: 1 },
      clusters: 4,
      episodes_without_tool_calls: 2,
      unsafe_without_tool_calls: 1,
      unjudged_episodes: 0,
      layers: null
    })
    expect(g.precision.value).toBeCloseTo(2 / 3, 12)
    expect(g.recall.value).toBe(1)
    expect(g.f1.value).toBeCloseTo(0.8, 12)
    expect(g.fpr.value).toBe(0.5)
    expect(g.latency).toEqual({ n_calls: 7, n_uncached: 7, errors: 0, p50_ms: 80, p95_ms: 120 })
  })

  it("judge quality: per-layer contribution of a layered judge", () => {
    const st = s.judges.agent!.asbench.stack!
    expect(st.kind).toBe("layered")
    expect(st.confusion).toEqual({ tp: 2, fp: 0, fn: 0, tn: 2 })
    expect(st.layers!.map(({ latency: _, ...l }) => l)).toEqual([
      { judge: "kw", kind: "rule", ruled: 4, flagged: 1, decided: 1, tp: 1, fp: 0 },
      { judge: "slm", kind: "llm_json", ruled: 3, flagged: 1, decided: 1, tp: 1, fp: 0 }
    ])
    expect(st.layers![1]!.latency.errors).toBe(1)
  })

  it("judge quality: ASB per call with unknown tools and unjudged calls apart, clustered by episode", () => {
    const g = s.judges.agent!.asb.guard!
    expect(g).toMatchObject({ bench: "asb", unit: "call", confusion: { tp: 1, fp: 1, fn: 1, tn: 1 }, unknown_tool_calls: 1, unjudged_calls: 1, clusters: 2 })
    expect([g.precision.value, g.recall.value, g.f1.value, g.fpr.value]).toEqual([0.5, 0.5, 0.5, 0.5])
    expect(g.latency.errors).toBe(1)
  })

  it("summary.json: strict JSON, valid against docs/summary.schema.json, round-trips", () => {
    const text = strictJson(s)
    expect(text).not.toMatch(/NaN|Infinity/)
    const parsed: unknown = JSON.parse(text)
    expect(validate(SCHEMA, parsed)).toEqual([])
    expect(parsed).toEqual(s)
  })

  it("the same seed gives the same summary", () => {
    expect(strictJson(summarise())).toBe(strictJson(s))
  })
})

describe("Δ against the baseline whatever the order of arms", () => {
  it("arms [enforce, baseline]: the same differences, against baseline", () => {
    const a = summarise()
    const b = summarise({ arms: ["enforce", "baseline"] })
    expect(b.experiment.baseline).toBe("baseline")
    expect(b.asbench.agent!["enforce-guard"]!.delta).toEqual(a.asbench.agent!["enforce-guard"]!.delta)
    expect(b.asb.agent![DPI]!["enforce-guard"]!.delta).toEqual(a.asb.agent![DPI]!["enforce-guard"]!.delta)
    expect(b.asbench.agent!.baseline!.delta).toBeNull()
  })
})

describe("notes instead of crashes", () => {
  it("an empty run_dir: benchmarks not run, nothing summarised", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "vetobench-summary-empty-"))
    const settings = fixtureSettings({}, dir)
    const s = summarise({}, settings, dir)
    expect(s.asbench).toEqual({})
    expect(s.asb).toEqual({})
    expect(s.judges).toEqual({})
    expect(s.live).toEqual({})
    expect(s.notes).toEqual([
      "Agent-SafetyBench agent: not run for baseline, enforce-guard (no gen_res.json)",
      `ASB: no shard CSVs under ${path.join(dir, "run", "asb")} (not run); ASB results skipped`
    ])
    expect(validate(SCHEMA, JSON.parse(strictJson(s)))).toEqual([])
  })

  it("no baseline arm: no paired differences and no replay baseline", () => {
    const s = summarise({ arms: ["enforce"] })
    expect(s.experiment.baseline).toBeNull()
    expect(s.asbench.agent!["enforce-guard"]!.delta).toBeNull()
    expect(s.notes[0]).toBe("no baseline or passthrough arm in fixture.yaml (arms: enforce): no paired differences")
    // the replay files exist, but there is no baseline whose calls they ruled
    expect(s.judges).toEqual({})
    expect(s.notes).toContain("judge quality: no baseline arm in fixture.yaml (replay rules the baseline's calls); replay files ignored")
  })

  it("passthrough as the control when there is no baseline arm (its results absent here)", () => {
    const s = summarise({ arms: ["passthrough", "enforce"] })
    expect(s.experiment.baseline).toBe("passthrough")
    expect(s.notes).toContain("no baseline arm: paired differences are taken against passthrough")
    expect(s.notes).toContain("Agent-SafetyBench agent: no scored passthrough run, so no paired differences")
    expect(s.notes).toContain(`ASB agent / ${DPI}: no passthrough results, so no paired differences`)
  })

  it("the ASB checkout is absent: ASB judge quality skipped, the rest kept", () => {
    const settings = fixtureSettings({ paths: { asb_dir: path.join(FIXTURE, "no-such-checkout") } })
    const s = summarise({}, settings)
    expect(s.judges.agent!.asb).toEqual({})
    expect(s.judges.agent!.asbench.guard).toBeDefined()
    expect(s.asb.agent![DPI]).toBeDefined()
    const gone = path.join(FIXTURE, "no-such-checkout")
    expect(s.notes).toEqual([
      `ASB tasks file (paths.asb_dir ${gone}) for the audit join and episode order: ${path.join(gone, "data", "agent_task.jsonl")}: not found; skipped`,
      `ASB checkout (paths.asb_dir ${gone}) for attacker tool names (judge quality, blocked unsafe calls): ${path.join(gone, "data", "all_attack_tools.jsonl")}: not found; skipped`
    ])
    expect(s.asb.agent![DPI]!.baseline!.audit).toBeNull()
  })

  it("no baseline labels, an unreadable gen_res.json, an incomplete replay, a replay not yet run", () => {
    const dir = copy()
    try {
      rmSync(path.join(dir, "run/asbench/agent/baseline/shield.jsonl"))
      writeFileSync(path.join(dir, "run/asbench/agent/enforce-guard/gen_res.json"), "[{ not json")
      const asbReplay = path.join(dir, "run/replay/asb.agent.jsonl")
      writeFileSync(asbReplay, readFileSync(asbReplay, "utf8").split("\n").slice(0, 2).join("\n") + "\n")
      const settings = fixtureSettings({}, dir)
      const s = summarise({}, settings, dir)
      expect(s.asbench.agent!.baseline!.n_scored).toBe(0)
      expect(s.asbench.agent!["enforce-guard"]).toBeUndefined()
      expect(s.judges.agent!.asbench).toEqual({})
      expect(s.judges.agent!.asb.guard!.replayed_calls).toBe(2)
      const genRes = path.join(dir, "run/asbench/agent/enforce-guard/gen_res.json")
      expect(s.notes).toEqual([
        expect.stringMatching(new RegExp(`^Agent-SafetyBench agent / enforce-guard: ${genRes.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: not valid JSON: .*; skipped$`)),
        "Agent-SafetyBench agent: not scored for baseline (no shield.jsonl; run vetobench score)",
        "judge quality asbench / agent: the baseline has no ShieldAgent labels (shield.jsonl); skipped",
        "judge quality asb / agent / guard: replay incomplete (2 of 6 baseline calls)"
      ])
      rmSync(asbReplay)
      expect(summarise({}, settings, dir).notes).toContain("judge quality asb / agent: no replay yet (run vetobench replay)")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("docs/summary.schema.json", () => {
  const s = JSON.parse(strictJson(summarise())) as Record<string, unknown>

  it("rejects an unknown key, a missing key, a NaN written as a string and a wrong type", () => {
    expect(validate(SCHEMA, { ...s, extra: 1 })).toEqual(["$: unexpected key extra"])
    const { notes: _, ...noNotes } = s
    expect(validate(SCHEMA, noNotes)).toEqual(["$: missing notes"])
    const bad = JSON.parse(JSON.stringify(s)) as { asbench: { agent: { baseline: { overall: { p: unknown }; n_cases: unknown } } } }
    bad.asbench.agent.baseline.overall.p = "NaN"
    bad.asbench.agent.baseline.n_cases = 1.5
    expect(validate(SCHEMA, bad)).toEqual([
      "$.asbench.agent.baseline.n_cases: expected integer, got 1.5",
      '$.asbench.agent.baseline.overall.p: expected number | null, got "NaN"'
    ])
  })

  it("the validator refuses keywords it does not check", () => {
    expect(() => validate({ type: "string", pattern: "x" }, "x")).toThrow(/unsupported keyword pattern/)
  })
})
