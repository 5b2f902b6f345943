/**
 * Replay lines are appended in batches (src/experiment/replay.ts): a replay of more calls than one
 * batch holds writes every ruling exactly once, across batch boundaries, and a second replay finds
 * every pair done.
 */
import { Effect, Layer } from "effect"
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { defaultPlugins } from "../../judges/plugins.js"
import { Progress, type ProgressEvent } from "../../src/run-layout/progress.js"
import { replayBench, replayGateLayer } from "../../src/experiment/replay.js"
import { latestReplay, pairKey, readReplayLines } from "../../src/scoring/judge-eval.js"
import { fixtureExperiment, fixtureSettings } from "../scoring/fixture.js"

const CALLS = 2_345

/** a run dir whose baseline audit log holds CALLS calls, five per episode, alternating two tools */
const workspace = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-replay-batches-"))
  mkdirSync(path.join(dir, "audit"))
  const lines = Array.from({ length: CALLS }, (_, i) =>
    JSON.stringify({
      schema: "vetobench/v2",
      seq: i + 1,
      ts: "2026-01-01T00:00:00.000Z",
      type: "call",
      run_id: "fixture.asbench.agent.baseline",
      request_id: `req-${i}`,
      episode_id: `asbench:${Math.floor(i / 5)}`,
      session_id: null,
      principal: null,
      agent_model: "agent",
      arm: "baseline",
      judge: null,
      stream: false,
      choice_index: 0,
      call_index: 0,
      tool_call_id: `call_${i}`,
      tool: { name: i % 2 === 0 ? "read_file" : "send_email", description: "", parameters: null, arguments: { n: i } },
      verdict: null,
      layers: [],
      effective_decision: null,
      blocked: false,
      fail_policy: "closed",
      approval: "automatic",
      outcome: null,
      gate_ms: 0,
      prev_hash: "0".repeat(64),
      hash: `h${i}`
    })
  )
  writeFileSync(path.join(dir, "audit", "fixture.asbench.agent.baseline.jsonl"), `${lines.join("\n")}\n`)
  const settings = fixtureSettings({ judges: { guard: { kind: "static", decision: "deny" } } }, dir)
  return { settings, exp: fixtureExperiment(settings, {}, dir) }
}

describe("vetobench replay: batched appends", () => {
  it(`${CALLS} calls (three batches): every ruling written once; a second replay has nothing to do`, async () => {
    const w = workspace()
    const replay = () => {
      const events: Array<ProgressEvent> = []
      return Effect.runPromise(
        replayBench(w.exp, w.settings.proxy.audit_dir, "asbench", "agent", ["guard"]).pipe(
          Effect.provide(Layer.mergeAll(replayGateLayer(w.settings, defaultPlugins), Progress.Test(events)))
        )
      ).then((s) => ({ s, events }))
    }
    const first = await replay()
    expect(first.s).toMatchObject({ calls: CALLS, ruled: CALLS, skipped: 0, errors: 0 })
    expect(first.events.filter((e) => e.type === "advance")).toHaveLength(CALLS)
    const lines = Effect.runSync(readReplayLines(first.s!.file))
    expect(lines).toHaveLength(CALLS)
    const latest = latestReplay(lines)
    for (let i = 0; i < CALLS; i++) {
      const l = latest.get(pairKey("guard", `h${i}`))
      expect(l?.effective_decision).toBe("deny")
      expect(l?.tool.arguments).toEqual({ n: i })
    }
    const second = await replay()
    expect(second.s).toMatchObject({ calls: CALLS, ruled: 0, skipped: CALLS })
    expect(Effect.runSync(readReplayLines(first.s!.file))).toHaveLength(CALLS)
  }, 120_000)
})
