/**
 * Counts after a killed and resumed Agent-SafetyBench run (issue 20 §1): the run is interrupted
 * while cases are in flight — their first calls already in the proxy's audit log, their records not
 * yet written — and resumed; the report's live figures (calls, blocked, coverage, holds, latency
 * counts) then equal those of an uninterrupted run of the same cases, because each episode counts
 * from its final attempt. In process: the fake vLLM and a real veto-proxy (test harness), the real
 * Python bridge on `examples/agent-safetybench-mini`, the run driver and `buildSummary`.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { PythonBridge } from "../../layers/PythonBridge.js"
import { runAsbench } from "../../src/adapters/agent-safetybench/run.js"
import { asbenchRunDir, runIdFor } from "../../src/run-layout/paths.js"
import { type Experiment, loadExperiment, type Variant } from "../../src/config/experiment.js"
import { Settings } from "../../src/config/service.js"
import { attemptsFile } from "../../src/run-layout/attempts.js"
import { Progress } from "../../src/run-layout/progress.js"
import { buildSummary } from "../../src/scoring/summary.js"
import { Harness, harnessLayer, type HarnessShape } from "../support/harness.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const FIXTURE = path.join(ROOT, "examples/agent-safetybench-mini")
const MODEL = "qwen3.8-27b"

const harness = harnessLayer({
  upstream: { models: [] },
  settings: () => ({ paths: { asbench_dir: FIXTURE } })
})
const bridge = PythonBridge.layer({ asbenchDir: FIXTURE, workers: 4 }).pipe(Layer.orDie)

const experiment = (h: HarnessShape, name: string) =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(h.settings.root, `${name}-`))
    const file = path.join(dir, "exp.yaml")
    fs.writeFileSync(
      file,
      [`name: ${name}`, `run_dir: ${path.join(dir, "run")}`, `proxy_url: ${h.url}`, `models: [${MODEL}]`, "judges: [allow-all]", "arms: [baseline, enforce]", "agent_safetybench:", "  workers: 4"].join("\n")
    )
    return yield* loadExperiment(file, h.settings)
  }).pipe(Effect.orDie)

const enforce = (exp: Experiment): Variant => exp.variants.find((v) => v.name === "enforce-allow-all")!

const run = (h: HarnessShape, exp: Experiment) =>
  runAsbench(exp, MODEL, enforce(exp), { client: { baseDelayMs: 1 } }).pipe(
    Effect.provide(Layer.mergeAll(Progress.Test([]), Settings.layerValue(h.settings))),
    Effect.orDie
  )

const finishedIds = (exp: Experiment): Set<number> => {
  const file = path.join(asbenchRunDir(exp, MODEL, enforce(exp)), "gen_res.jsonl")
  if (!fs.existsSync(file)) return new Set()
  return new Set(fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => (JSON.parse(l) as { id: number }).id))
}

const live = (h: HarnessShape, exp: Experiment) =>
  Effect.map(buildSummary(exp, h.settings, { iterations: 200 }), (s) => s.live[MODEL]!.asbench["enforce-allow-all"]!)

layer(Layer.mergeAll(harness, bridge), { excludeTestServices: true, timeout: 120_000 })("a killed and resumed run", (it) => {
  it.effect("cases in flight at the kill: their calls are logged twice, counted once; the figures equal an uninterrupted run's", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const clean = yield* experiment(h, "counts-clean")
      yield* run(h, clean)
      const whole = yield* live(h, clean)
      expect(whole.calls).toBeGreaterThan(0)
      expect(whole.stale_calls).toBe(0)

      // the same cases, killed while some are in flight: every agent request waits, so a case that
      // proposed a call (logged by the proxy) is still running when the kill comes
      const killed = yield* experiment(h, "counts-killed")
      const runId = runIdFor(killed, "asbench", MODEL, enforce(killed))
      h.fake.knobs.delayMs = 300
      h.fake.knobs.delayModels = new Set([MODEL])
      const fiber = yield* Effect.fork(run(h, killed))
      let inFlight: ReadonlyArray<string> = []
      for (let i = 0; i < 2000 && inFlight.length === 0; i++) {
        yield* Effect.sleep("20 millis")
        const done = finishedIds(killed)
        inFlight = [...new Set(h.records(runId).map((r) => r.episode_id ?? ""))].filter((e) => e !== "" && !done.has(Number(e.replace("asbench:", ""))))
      }
      yield* Fiber.interrupt(fiber)
      h.fake.reset()
      expect(inFlight.length).toBeGreaterThan(0)
      const loggedBefore = h.records(runId).length

      yield* run(h, killed)
      const records = h.records(runId)
      // the resumed cases' calls are in the log twice, told apart by their attempt
      expect(records.length).toBeGreaterThan(whole.calls)
      expect(records.length).toBeGreaterThan(loggedBefore)
      for (const episode of inFlight) {
        const attempts = new Set(records.filter((r) => r.episode_id === episode).map((r) => r.attempt))
        expect([...attempts].sort()).toEqual([1, 2])
      }
      const log = fs.readFileSync(attemptsFile(asbenchRunDir(killed, MODEL, enforce(killed))), "utf8")
      for (const episode of inFlight) expect(log).toContain(`{"key":"${episode.replace("asbench:", "")}","attempt":2}`)

      const resumed = yield* live(h, killed)
      expect(resumed.stale_calls).toBe(records.length - whole.calls)
      expect(resumed.calls).toBe(whole.calls)
      expect(resumed.blocked).toBe(whole.blocked)
      expect(resumed.coverage).toEqual(whole.coverage)
      expect(resumed.hold_rate).toEqual(whole.hold_rate)
      expect([resumed.latency.n_calls, resumed.latency.n_uncached, resumed.latency.errors]).toEqual([
        whole.latency.n_calls,
        whole.latency.n_uncached,
        whole.latency.errors
      ])
      expect(resumed.judge_tokens).toEqual(whole.judge_tokens)
    }), 240_000)
})
