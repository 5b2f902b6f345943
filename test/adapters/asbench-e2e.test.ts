/**
 * Agent-SafetyBench end to end, in process: the fake vLLM and a real veto-proxy (test harness), the
 * real Python bridge on the fixture checkout `examples/agent-safetybench-mini`, the run driver
 * and the ShieldAgent scorer. Each test uses its own experiment name (so its own run ids, run
 * directories and audit files); fake knobs are reset after use.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { PythonBridge } from "../../layers/PythonBridge.js"
import * as Upstreams from "../../layers/Upstreams.js"
import { type AsbenchRecord } from "../../src/adapters/agent-safetybench/episode.js"
import { runAsbench } from "../../src/adapters/agent-safetybench/run.js"
import { QWEN_PREFIX, QWEN_SUFFIX, scoreShield, shieldLabel } from "../../src/adapters/agent-safetybench/shieldagent.js"
import { asbenchRunDir, runIdFor } from "../../src/run-layout/paths.js"
import { type Experiment, loadExperiment, type Variant } from "../../src/config/experiment.js"
import { Settings } from "../../src/config/service.js"
import { parsePythonJson } from "../../src/domain/python-json.js"
import { Progress } from "../../src/run-layout/progress.js"
import { Harness, harnessLayer, type HarnessShape } from "../support/harness.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const FIXTURE = path.join(ROOT, "examples/agent-safetybench-mini")
const ALL_IDS = [0, 1, 2, 3, 4, 5, 6, 7, 8]
const MODEL = "qwen3.8-27b"

const harness = harnessLayer({
  upstream: { models: [] }, // catch-all: the agent, the judges and `shieldagent`
  settings: () => ({ paths: { asbench_dir: FIXTURE }, scoring: { shieldagent_model: "shieldagent", concurrency: 4 } })
})
const bridge = PythonBridge.layer({ asbenchDir: FIXTURE, workers: 4 }).pipe(Layer.orDie)

/** An experiment file in the harness's temp root, optionally restricted to some case ids. */
const experiment = (h: HarnessShape, name: string, ids?: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(h.settings.root, `${name}-`))
    const lines = [`name: ${name}`, `run_dir: ${path.join(dir, "run")}`, `proxy_url: ${h.url}`, `models: [${MODEL}]`, "judges: [allow-all]", "arms: [baseline, enforce]", "agent_safetybench:", "  workers: 4"]
    if (ids !== undefined) {
      fs.writeFileSync(path.join(dir, "split.json"), JSON.stringify({ seed: 0, dev: [], test: ids, note: "" }))
      lines.push(`  split: ${path.join(dir, "split.json")}`)
    }
    const file = path.join(dir, "exp.yaml")
    fs.writeFileSync(file, lines.join("\n"))
    return yield* loadExperiment(file, h.settings)
  }).pipe(Effect.orDie)

const variant = (exp: Experiment, name: string): Variant => exp.variants.find((v) => v.name === name)!

const run = (h: HarnessShape, exp: Experiment, v: Variant) =>
  runAsbench(exp, MODEL, v, { client: { baseDelayMs: 1 } }).pipe(
    Effect.provide(Layer.mergeAll(Progress.Test([]), Settings.layerValue(h.settings))),
    Effect.orDie
  )

const genRes = (exp: Experiment, v: Variant): Array<AsbenchRecord> =>
  parsePythonJson(fs.readFileSync(path.join(asbenchRunDir(exp, MODEL, v), "gen_res.json"), "utf8")) as Array<AsbenchRecord>

const jsonlIds = (exp: Experiment, v: Variant): Array<number> =>
  fs.readFileSync(path.join(asbenchRunDir(exp, MODEL, v), "gen_res.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => (JSON.parse(l) as { id: number }).id)

/** The tool calls an episode made, in order (name and the stored arguments). */
const toolCalls = (r: AsbenchRecord) =>
  r.output.flatMap((m) => (Array.isArray(m.tool_calls) ? (m.tool_calls as Array<{ function: { name: string; arguments: string } }>).map((c) => c.function) : []))

layer(Layer.mergeAll(harness, bridge), { excludeTestServices: true, timeout: 60_000 })("Agent-SafetyBench through veto-proxy", (it) => {
  it.effect("runs every fixture case: statuses, records, audit episode ids", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const exp = yield* experiment(h, "e2e")
      const v = variant(exp, "enforce-allow-all")
      const summary = yield* run(h, exp, v)
      expect(summary).toMatchObject({ selected: 9, skipped: 0, ran: { ok: 9, exceeded: 0, error: 0 } })
      const records = genRes(exp, v)
      expect(records.map((r) => r.id)).toEqual(ALL_IDS)
      const runId = runIdFor(exp, "asbench", MODEL, v)
      expect(runId).toBe(`e2e.asbench.${MODEL}.enforce-allow-all`)
      for (const r of records) {
        expect(r.vetobench).toEqual({ status: "ok", rounds: r.vetobench.rounds, blocked_calls: 0, model: `${MODEL}@enforce:allow-all`, run_id: runId, attempt: 1, usage: r.vetobench.usage })
        expect(r.vetobench.usage?.prompt_tokens).toBeGreaterThan(0)
        expect(r.output[0]!.role).toBe("system")
        expect(r.output.at(-1)).toEqual({ role: "assistant", content: "Task finished." })
      }
      // the system prompt is the checkout's own text
      const { systemPrompt } = yield* Effect.flatMap(PythonBridge, (b) => b.texts)
      expect(records[0]!.output[0]).toEqual({ role: "system", content: systemPrompt })
      // no tools: 0 (no envs), 1 (first env ""); 4 starts from its dialog, which already holds a tool result
      expect(records.filter((r) => toolCalls(r).length > 0).map((r) => r.id)).toEqual([2, 3, 4, 5, 6, 7, 8])
      expect(toolCalls(records[4]!)).toHaveLength(1) // the dialog's own call, nothing new
      // case 5's tool raises: the benchmark's error dict (the bridge's "Tool error") as the tool message
      expect(String(records[5]!.output[3]!.content)).toMatch(/^\{"success": false, "message": "Tool error: /)
      // floats stay floats in gen_res.json (case 8's parameters)
      const text = fs.readFileSync(path.join(asbenchRunDir(exp, MODEL, v), "gen_res.json"), "utf8")
      expect(text).toContain('"celsius": 21.0')
      // the proxy's audit file for the run id holds one record per proposed call, with the episode ids
      const audit = h.records(runId)
      expect(new Set(audit.map((a) => a.episode_id))).toEqual(new Set(["asbench:2", "asbench:3", "asbench:5", "asbench:6", "asbench:7", "asbench:8"]))
      expect(audit.every((a) => a.run_id === runId)).toBe(true)
      // what reached the model: tools only for cases that offer some, temperature 0, the experiment's max_tokens
      const sent = h.fake.requests.filter((r) => r.path === "/v1/chat/completions").map((r) => r.body as Record<string, unknown>)
      const firstTurn = (instruction: string) => sent.find((b) => JSON.stringify(b.messages).includes(JSON.stringify(instruction).slice(1, -1)))
      expect(firstTurn(String(records[0]!.instruction))).not.toHaveProperty("tools")
      expect(firstTurn(String(records[2]!.instruction))).toMatchObject({ temperature: 0, max_tokens: 2048 })
      expect((firstTurn(String(records[2]!.instruction))?.tools as Array<unknown>).length).toBe(3)
    }))

  it.effect("statuses: bad argument JSON is an error, endless tool calls exceed 10 rounds", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const exp = yield* experiment(h, "e2e-status", [0, 6, 7])
      const v = variant(exp, "baseline")
      h.fake.knobs.malformed = true
      const bad = yield* run(h, exp, v).pipe(Effect.ensuring(Effect.sync(() => h.fake.reset())))
      expect(bad.ran).toEqual({ ok: 1, exceeded: 0, error: 2 })
      const records = genRes(exp, v)
      expect(records.map((r) => [r.id, r.vetobench.status])).toEqual([[0, "ok"], [6, "error"], [7, "error"]])
      expect(records[1]!.vetobench.error).toMatch(/invalid tool arguments JSON/)
      expect(records[1]!.vetobench.rounds).toBe(1)

      // the errors are re-run; now the model calls a tool the case does not offer, forever
      h.fake.knobs.nextCalls = [{ name: "open_window", arguments: { room: "Grandma's room" } }]
      const again = yield* run(h, exp, v).pipe(Effect.ensuring(Effect.sync(() => h.fake.reset())))
      expect(again).toMatchObject({ skipped: 1, ran: { ok: 0, exceeded: 2, error: 0 } })
      const after = genRes(exp, v)
      expect(after.map((r) => [r.id, r.vetobench.status, r.vetobench.rounds])).toEqual([[0, "ok", 1], [6, "exceeded", 10], [7, "exceeded", 10]])
      expect(after[1]!.output[3]).toEqual({
        role: "tool",
        content: '{"success": false, "message": "Tool open_window doesn\'t exist."}',
        tool_call_id: "call_0",
        name: "open_window"
      })
      expect(after[1]!.output[2]).toEqual({
        role: "assistant",
        tool_calls: [{ id: "call_0", type: "function", function: { arguments: '{"room": "Grandma\'s room"}', name: "open_window" } }]
      })
    }))

  it.effect("an interrupted run loses no finished case and a re-run repeats none", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const exp = yield* experiment(h, "e2e-resume")
      const v = variant(exp, "baseline")
      // Park each worker once it has written its record (from the 3rd record on); interrupt when all
      // 4 workers are parked, i.e. mid-run with nothing in flight at the proxy (see the note on
      // interrupting while the proxy awaits upstream headers in the report / unit test for in-flight cases).
      let advanced = 0
      const allParked = yield* Deferred.make<void>()
      const parking = Layer.succeed(Progress, {
        track: () =>
          Effect.succeed({
            note: () => Effect.void,
            advance: () =>
              Effect.suspend(() => {
                advanced += 1
                if (advanced < 3) return Effect.void
                return (advanced - 2 === exp.agent_safetybench.workers ? Deferred.succeed(allParked, undefined) : Effect.void).pipe(Effect.zipRight(Effect.never))
              })
          })
      })
      const fiber = yield* Effect.fork(
        runAsbench(exp, MODEL, v).pipe(Effect.provide(Layer.mergeAll(parking, Settings.layerValue(h.settings))), Effect.orDie)
      )
      yield* Deferred.await(allParked)
      yield* Fiber.interrupt(fiber)
      const before = jsonlIds(exp, v)
      expect(before).toHaveLength(6)
      expect(fs.existsSync(path.join(asbenchRunDir(exp, MODEL, v), "gen_res.json"))).toBe(false)
      const second = yield* run(h, exp, v)
      expect(second).toMatchObject({ skipped: 6, ran: { ok: 3, exceeded: 0, error: 0 } })
      const after = jsonlIds(exp, v)
      expect(after.slice(0, before.length)).toEqual(before)
      expect([...after].sort((a, b) => a - b)).toEqual(ALL_IDS) // each case exactly once
      expect(genRes(exp, v).map((r) => r.id)).toEqual(ALL_IDS)
    }))

  it.effect("control: enforce with allow-all makes the same tool calls as baseline on every case", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const exp = yield* experiment(h, "e2e-control")
      const base = variant(exp, "baseline")
      const allow = variant(exp, "enforce-allow-all")
      yield* run(h, exp, base)
      yield* run(h, exp, allow)
      const a = genRes(exp, base)
      const b = genRes(exp, allow)
      expect(a.map((r) => r.id)).toEqual(ALL_IDS)
      for (const [i, r] of a.entries()) {
        expect([r.id, toolCalls(r)]).toEqual([b[i]!.id, toolCalls(b[i]!)])
        expect([r.id, r.vetobench.status]).toEqual([b[i]!.id, b[i]!.vetobench.status])
        expect(b[i]!.vetobench.blocked_calls).toBe(0)
      }
    }))

  it.effect("score: ShieldAgent labels every non-error case into shield.jsonl (resumable)", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const exp = yield* experiment(h, "e2e-score")
      const v = variant(exp, "baseline")
      yield* run(h, exp, v)
      const score = scoreShield(exp, MODEL, v).pipe(
        Effect.provide(Layer.mergeAll(Upstreams.layer, Progress.Test([])).pipe(Layer.provideMerge(Settings.layerValue(h.settings)))),
        Effect.orDie
      )
      const before = h.fake.requests.length
      const s = yield* score
      expect(s).toMatchObject({ missing: false, cases: 9, skipped: 0, invalid: 0, failed: 0 })
      expect(s.safe + s.unsafe).toBe(9)
      const lines = fs.readFileSync(s.file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { id: number; shield_output: string; pred_label: number })
      expect(lines.map((l) => l.id).sort((a, b) => a - b)).toEqual(ALL_IDS)
      for (const l of lines) {
        expect(l.shield_output).toMatch(/^\[Answer\] (safe|unsafe)\n\[Analysis\]$/)
        expect(l.pred_label).toBe(shieldLabel(l.shield_output))
      }
      const prompts = h.fake.requests.slice(before).filter((r) => r.path === "/v1/completions").map((r) => r.body as { model: string; prompt: string; max_tokens: number; temperature: number })
      expect(prompts).toHaveLength(9)
      for (const p of prompts) {
        expect(p).toMatchObject({ model: "shieldagent", max_tokens: 10, temperature: 0 })
        expect(p.prompt.startsWith(`${QWEN_PREFIX}You judge the fixture agent's safety`)).toBe(true)
        expect(p.prompt.endsWith(QWEN_SUFFIX)).toBe(true)
        expect(p.prompt).toContain("\\[Answer] 'safe' or 'unsafe'")
      }
      const p2 = prompts.find((p) => p.prompt.includes('"tool_name": "list_files"'))
      expect(p2?.prompt).toContain("<Assistant calls the tool>:  {\"tool_call_id\": ")
      expect(p2?.prompt).toContain("<Assistant>: Task finished.")
      // a second pass has nothing left to do
      const again = yield* score
      expect(again).toMatchObject({ skipped: 9, safe: 0, unsafe: 0 })
    }))
})

describe("fixture", () => {
  it("is present", () => {
    expect(fs.existsSync(path.join(FIXTURE, "data", "released_data.json"))).toBe(true)
  })
})
