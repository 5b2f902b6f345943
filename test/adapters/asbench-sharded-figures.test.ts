/**
 * A sharded Agent-SafetyBench run's replay and live latency figures equal the unsharded run's
 * (issue 20 §1): both read every shard's audit file that `vetobench merge` listed in `shards.json`.
 * The same experiment runs unsharded and as 2 shards (two experiment names: their own run ids,
 * directories and audit files), is merged, scored and replayed; the summaries then agree on the
 * live figures (calls, blocked, coverage, holds, latency counts) and on the judge quality from
 * replay. In process: the fake vLLM, a real veto-proxy, the real Python bridge on
 * `examples/agent-safetybench-mini`.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { PythonBridge } from "../../layers/PythonBridge.js"
import * as Upstreams from "../../layers/Upstreams.js"
import { defaultPlugins } from "../../judges/plugins.js"
import { runAsbench } from "../../src/adapters/agent-safetybench/run.js"
import { scoreShield } from "../../src/adapters/agent-safetybench/shieldagent.js"
import { type Experiment, loadExperiment, type Variant } from "../../src/config/experiment.js"
import { Settings } from "../../src/config/service.js"
import { mergeAsbench } from "../../src/experiment/merge.js"
import { Progress } from "../../src/run-layout/progress.js"
import { auditFilesFor, missingShardAuditFiles } from "../../src/run-layout/paths.js"
import { reportGaps } from "../../src/scoring/gaps.js"
import { replayBench, replayGateLayer } from "../../src/experiment/replay.js"
import { allShards } from "../../src/run-layout/shard.js"
import { buildSummary, type Summary } from "../../src/scoring/summary.js"
import { Harness, harnessLayer, type HarnessShape } from "../support/harness.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const FIXTURE = path.join(ROOT, "examples/agent-safetybench-mini")
const MODEL = "qwen3.8-27b"
const SHARDS = 2

const harness = harnessLayer({
  upstream: { models: [] },
  settings: () => ({ paths: { asbench_dir: FIXTURE }, scoring: { shieldagent_model: "shieldagent", concurrency: 4 } })
})
const bridge = PythonBridge.layer({ asbenchDir: FIXTURE, workers: 4 }).pipe(Layer.orDie)

const experiment = (h: HarnessShape, name: string) =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(h.settings.root, `${name}-`))
    const file = path.join(dir, "exp.yaml")
    fs.writeFileSync(
      file,
      [`name: ${name}`, `run_dir: ${path.join(dir, "run")}`, `proxy_url: ${h.url}`, `models: [${MODEL}]`, "judges: [allow-all]", "arms: [baseline, enforce]", "agent_safetybench:", "  workers: 3"].join("\n")
    )
    return yield* loadExperiment(file, h.settings)
  }).pipe(Effect.orDie)

/** Run (sharded or not), merge, score the baseline, replay, summarise. */
const pipeline = (h: HarnessShape, exp: Experiment, sharded: boolean) =>
  Effect.gen(function*() {
    for (const v of exp.variants) {
      if (!sharded) yield* runAsbench(exp, MODEL, v, { client: { baseDelayMs: 1 } })
      else {
        for (const shard of allShards(SHARDS)) yield* runAsbench(exp, MODEL, v, { client: { baseDelayMs: 1 }, shard })
        yield* mergeAsbench(exp, h.settings, MODEL, v, SHARDS, null)
      }
    }
    const baseline = exp.variants.find((v) => v.arm === "baseline") as Variant
    yield* scoreShield(exp, MODEL, baseline)
    const replay = yield* replayBench(exp, h.settings.proxy.audit_dir, "asbench", MODEL, ["allow-all", "deny-all"]).pipe(
      Effect.provide(replayGateLayer(h.settings, defaultPlugins))
    )
    const summary = yield* buildSummary(exp, h.settings, { iterations: 200 })
    return { replay, summary, runDir: exp.run_dir, sources: auditFilesFor(h.settings.proxy.audit_dir, exp, "asbench", MODEL, baseline) }
  }).pipe(Effect.provide(Layer.mergeAll(Progress.Test([]), Upstreams.layer).pipe(Layer.provideMerge(Settings.layerValue(h.settings)))), Effect.orDie)

const liveOf = (s: Summary) => s.live[MODEL]!.asbench["enforce-allow-all"]!

layer(Layer.mergeAll(harness, bridge), { excludeTestServices: true, timeout: 120_000 })("a sharded run's replay and latency", (it) => {
  it.effect("equal the unsharded run's: every shard's audit file is read", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const whole = yield* pipeline(h, yield* experiment(h, "figures-whole"), false)
      const parts = yield* pipeline(h, yield* experiment(h, "figures-sharded"), true)

      // the sharded baseline's calls are in one audit file per shard
      expect(whole.sources).toHaveLength(1)
      expect(parts.sources).toHaveLength(SHARDS)
      expect(parts.sources.every((f) => /\.shard-\d-of-2\.jsonl$/.test(f))).toBe(true)

      // replay found and ruled the same baseline calls
      expect(whole.replay?.calls).toBeGreaterThan(0)
      expect(parts.replay?.calls).toBe(whole.replay?.calls)
      expect(parts.replay?.sources).toEqual(parts.sources)

      // live figures of the judged variant
      const a = liveOf(whole.summary)
      const b = liveOf(parts.summary)
      expect(b.audit_files).toHaveLength(SHARDS)
      expect([b.calls, b.blocked, b.stale_calls]).toEqual([a.calls, a.blocked, a.stale_calls])
      expect(b.coverage).toEqual(a.coverage)
      expect(b.hold_rate).toEqual(a.hold_rate)
      expect([b.latency.n_calls, b.latency.n_uncached, b.latency.errors]).toEqual([a.latency.n_calls, a.latency.n_uncached, a.latency.errors])
      expect(b.latency.p50_ms).not.toBeNull()

      // judge quality from replay: same confusion, same calls ruled
      for (const judge of ["allow-all", "deny-all"]) {
        const qa = whole.summary.judges[MODEL]!.asbench[judge]!
        const qb = parts.summary.judges[MODEL]!.asbench[judge]!
        expect([qb.source_calls, qb.replayed_calls, qb.confusion, qb.clusters]).toEqual([qa.source_calls, qa.replayed_calls, qa.confusion, qa.clusters])
        expect(qb.latency.n_calls).toBe(qa.latency.n_calls)
      }
      expect(parts.summary.notes.filter((n) => /judge quality|audit/.test(n))).toEqual([])

      // a shard's audit file lost after the merge: never a silently smaller figure
      const lostFile = parts.sources[1]!
      fs.renameSync(lostFile, `${lostFile}.moved`)
      const exp = yield* loadExperiment(path.join(path.dirname(parts.runDir), "exp.yaml"), h.settings).pipe(Effect.orDie)
      const replayed = yield* replayBench(exp, h.settings.proxy.audit_dir, "asbench", MODEL, ["allow-all"]).pipe(
        Effect.provide(Layer.mergeAll(replayGateLayer(h.settings, defaultPlugins), Progress.Test([]))),
        Effect.flip
      )
      expect(replayed.message).toContain(lostFile)
      expect(replayed.message).toContain("re-run those shards and merge again")
      const summary = yield* buildSummary(exp, h.settings, { iterations: 50 }).pipe(
        Effect.provide(Layer.mergeAll(Progress.Test([]), Upstreams.layer).pipe(Layer.provideMerge(Settings.layerValue(h.settings)))),
        Effect.orDie
      )
      expect(summary.notes.some((n) => n.includes(lostFile) && n.includes("lack those shards' calls"))).toBe(true)
      const gaps = reportGaps(exp, summary, (bench, model, v) => missingShardAuditFiles(exp, bench, model, v))
      expect(gaps.missing).toContain(`Agent-SafetyBench ${MODEL} / baseline: shard audit file ${lostFile}`)
    }), 300_000)
})
