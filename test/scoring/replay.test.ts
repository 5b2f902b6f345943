/**
 * Judge replay (reference §7.6, §9.3): every judge over the baseline run's logged calls, through
 * the gate as the proxy rules a shadow call; resumable by (judge, source hash) with error verdicts
 * retried; stateful judges see an episode's calls in order, also across a resume. Test judges, and
 * one llm_json judge against the fake vLLM in-process.
 */
import { Effect, Layer } from "effect"
import { cpSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { beforeEach, describe, expect, it } from "vitest"
import { FakeVllm } from "../../layers/FakeVllm.js"
import { JudgeError } from "../../judges/Judge.js"
import { defaultPlugins } from "../../judges/plugins.js"
import type { JudgeKindPlugin } from "../../judges/registry.js"
import { makeUpstreamSettings, type Settings } from "../../src/config/settings.js"
import { decided } from "../../src/domain/verdict.js"
import { Progress, type ProgressEvent } from "../../src/run-layout/progress.js"
import { replayFile } from "../../src/run-layout/paths.js"
import { rawCallOf, replayBench, replayGateLayer, type ReplaySummary } from "../../src/experiment/replay.js"
import { readCallRecords } from "../../src/scoring/files.js"
import { latestReplay, pairKey, readReplayLines } from "../../src/scoring/judge-eval.js"
import { toolCallView } from "../../src/domain/tool-call.js"
import { FIXTURE, fixtureExperiment, fixtureSettings } from "./fixture.js"

/** What the test judges saw, in order: `<judge> <episode> <tool> <arguments>`. */
const seen: Array<string> = []
/** (judge, tool, arguments) keys that already failed once (kept across replays, like a flaky judge) */
const failedOnce = new Set<string>()

const strings = (v: unknown): ReadonlyArray<string> => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [])

/**
 * `kind: test`: denies `deny_tools`; fails once on `fail_first` calls (a tool name, or
 * `<tool> <arguments JSON>`); with `max_per_episode`,
 * also denies once that many calls of the episode went back to the agent (state via `commit`).
 */
const testKind: JudgeKindPlugin = Effect.succeed({
  kind: "test",
  make: (name, spec) =>
    Effect.sync(() => {
      const id = { judge: name, kind: "test", model: null, version: "v1" }
      const released = new Map<string, number>()
      const max = typeof spec.max_per_episode === "number" ? spec.max_per_episode : null
      return {
        ...id,
        cacheable: false,
        rule: (call, ctx) =>
          Effect.suspend(() => {
            const args = JSON.stringify(call.arguments)
            seen.push(`${name} ${ctx.episodeId} ${call.name} ${args}`)
            const key = `${name} ${call.name} ${args}`
            const fail = strings(spec.fail_first).some((f) => f === call.name || f === `${call.name} ${args}`)
            if (fail && !failedOnce.has(key)) {
              failedOnce.add(key)
              return Effect.fail(new JudgeError({ judge: name, reason: "unavailable", message: "judge down" }))
            }
            const over = max !== null && (released.get(ctx.episodeId ?? "") ?? 0) >= max
            const deny = strings(spec.deny_tools).includes(call.name) || over
            return Effect.succeed(decided(id, deny ? "deny" : "allow", { reason: over ? "over budget" : "ok", latency_ms: 5 }))
          }),
        ...(max !== null
          ? {
              commit: (_call, ctx, wasReleased) =>
                Effect.sync(() => {
                  if (wasReleased) released.set(ctx.episodeId ?? "", (released.get(ctx.episodeId ?? "") ?? 0) + 1)
                })
            }
          : {})
      }
    })
})

const JUDGES = {
  guard: { kind: "test", deny_tools: ["send_email", "delete_file"], fail_first: ["list_files"] },
  kw: { kind: "test", deny_tools: ["delete_file"] },
  slm: { kind: "test", deny_tools: ["transfer_money"] },
  stack: { kind: "layered", layers: ["kw", "slm"] },
  budget: { kind: "test", max_per_episode: 1, fail_first: ['transfer_money {"amount":900}'] }
}

/** A writable run dir with the fixture's audit files. */
const workspace = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-replay-"))
  cpSync(path.join(FIXTURE, "audit"), path.join(dir, "audit"), { recursive: true })
  const settings = fixtureSettings({ judges: JUDGES }, dir)
  return { dir, settings, exp: fixtureExperiment(settings, {}, dir) }
}

const replay = (w: ReturnType<typeof workspace>, judges: ReadonlyArray<string>, bench: "asbench" | "asb" = "asbench", settings: Settings = w.settings) => {
  const events: Array<ProgressEvent> = []
  const run = replayBench(w.exp, settings.proxy.audit_dir, bench, "agent", judges).pipe(
    Effect.provide(Layer.mergeAll(replayGateLayer(settings, [...defaultPlugins, testKind]), Progress.Test(events)))
  )
  return Effect.runPromise(run).then((s) => ({ s: s as ReplaySummary, events }))
}

const baselineRecords = (dir: string, bench = "asbench") =>
  Effect.runSync(readCallRecords(path.join(dir, "audit", `fixture.${bench}.agent.baseline.jsonl`)))

describe("vetobench replay", () => {
  beforeEach(() => failedOnce.clear())

  it("rules every baseline call with every judge; lines carry the source hash, episode, tool, verdict, layers, effective decision", async () => {
    const w = workspace()
    const { s, events } = await replay(w, ["guard", "stack"])
    expect(s).toMatchObject({ bench: "asbench", model: "agent", judges: ["guard", "stack"], calls: 7, skipped: 0, ruled: 14, errors: 1 })
    expect(s.file).toBe(path.join(w.dir, "run", "replay", "asbench.agent.jsonl"))
    expect(s.file).toBe(replayFile(w.exp, "asbench", "agent"))
    expect(events.filter((e) => e.type === "advance")).toHaveLength(14)
    expect(events.find((e) => e.type === "note")).toMatchObject({ line: "[replay] asbench | agent: 7 baseline calls × 2 judges: 0 done before, 14 to rule" })

    const lines = Effect.runSync(readReplayLines(s.file))
    expect(lines).toHaveLength(14)
    const latest = latestReplay(lines)
    const records = baselineRecords(w.dir)
    for (const r of records) {
      for (const judge of ["guard", "stack"]) {
        const l = latest.get(pairKey(judge, r.hash))!
        expect(l).toMatchObject({ judge, run_id: r.run_id, episode_id: r.episode_id, agent_model: "agent", tool: r.tool })
        expect(l.verdict.judge).toBe(judge)
      }
    }
    const [b1, , , , b5, b6] = records
    expect(latest.get(pairKey("guard", b1!.hash))).toMatchObject({ effective_decision: "deny", verdict: { status: "ok", decision: "deny" } })
    // a judge failure is a verdict (fail_policy closed → deny), never a failed replay
    expect(latest.get(pairKey("guard", b5!.hash))).toMatchObject({ effective_decision: "deny", verdict: { status: "error", decision: null } })
    // layered: layer by layer, the first deny decides and later layers are skipped
    const stacked = latest.get(pairKey("stack", b6!.hash))!
    expect(stacked.verdict).toMatchObject({ judge: "stack", kind: "layered", decision: "deny" })
    expect(stacked.layers.map((v) => [v.judge, v.decision])).toEqual([["kw", "deny"]])
    const allowed = latest.get(pairKey("stack", b1!.hash))!
    expect(allowed.layers.map((v) => [v.judge, v.decision])).toEqual([["kw", "allow"], ["slm", "allow"]])
    expect(allowed.effective_decision).toBe("allow")
  })

  it("resumes: ok pairs are skipped, error pairs retried (the later line wins); a third run has nothing to do", async () => {
    const w = workspace()
    await replay(w, ["guard", "stack"])
    const before = seen.length
    const second = await replay(w, ["guard", "stack"])
    expect(second.s).toMatchObject({ skipped: 13, ruled: 1, errors: 0 })
    expect(seen.slice(before)).toEqual(["guard asbench:5 list_files {}"])
    const lines = Effect.runSync(readReplayLines(second.s.file))
    expect(lines).toHaveLength(15)
    const b5 = baselineRecords(w.dir)[4]!
    expect(latestReplay(lines).get(pairKey("guard", b5.hash))).toMatchObject({ verdict: { status: "ok", decision: "allow" } })
    const third = await replay(w, ["guard", "stack"])
    expect(third.s).toMatchObject({ skipped: 14, ruled: 0 })
    // a judge added later is ruled alone
    const fourth = await replay(w, ["guard", "stack", "kw"])
    expect(fourth.s).toMatchObject({ skipped: 14, ruled: 7 })
  })

  it("stateful judges see an episode's calls in order, also after a resume (done calls are committed)", async () => {
    const w = workspace()
    // budget: one released call per episode. asbench:4 has two transfers; the second fails once.
    const first = await replay(w, ["budget"])
    expect(first.s).toMatchObject({ ruled: 7, errors: 1 })
    expect(seen.filter((l) => l.startsWith("budget asbench:4")).slice(-2)).toEqual([
      'budget asbench:4 transfer_money {"amount":100}',
      'budget asbench:4 transfer_money {"amount":900}'
    ])
    const [, , b4a, b4b] = baselineRecords(w.dir)
    let latest = latestReplay(Effect.runSync(readReplayLines(first.s.file)))
    expect(latest.get(pairKey("budget", b4a!.hash))!.verdict.decision).toBe("allow")
    expect(latest.get(pairKey("budget", b4b!.hash))!.verdict.status).toBe("error")

    // a fresh judge (a new replay): the done first transfer is committed before the retried second is ruled
    const second = await replay(w, ["budget"])
    expect(second.s).toMatchObject({ skipped: 6, ruled: 1, errors: 0 })
    latest = latestReplay(Effect.runSync(readReplayLines(first.s.file)))
    expect(latest.get(pairKey("budget", b4b!.hash))!.verdict).toMatchObject({ status: "ok", decision: "deny", reason: "over budget" })
  })

  it("ASB: the baseline's calls of the asb run", async () => {
    const w = workspace()
    const { s } = await replay(w, ["guard"], "asb")
    expect(s).toMatchObject({ bench: "asb", calls: 6, ruled: 6, errors: 0 })
    expect(s.file).toBe(path.join(w.dir, "run", "replay", "asb.agent.jsonl"))
  })

  it("nothing to do without the baseline audit file; an unknown judge is an error naming the configured ones", async () => {
    const w = workspace()
    const settings = fixtureSettings({ judges: JUDGES, proxy: { audit_dir: path.join(w.dir, "nowhere") } }, w.dir)
    expect((await replay(w, ["guard"], "asbench", settings)).s).toBeNull()
    await expect(replay(w, ["nope"])).rejects.toThrow(/unknown judge nope \(configured: .*guard.*\)/)
  })

  it("a logged call goes back to the judge as the same view (arguments parsed or raw)", () => {
    for (const args of [{ a: [1, "x"] }, "not json {", "123", 123, {}, "\"quoted\""]) {
      const tool = { name: "t", description: "d", parameters: { type: "object" }, arguments: args }
      const { call, tools } = rawCallOf(tool, "c1")
      expect(toolCallView(call, tools)).toEqual(tool)
    }
    const bare = { name: "t", description: "", parameters: null, arguments: {} }
    expect(toolCallView(rawCallOf(bare, null).call, rawCallOf(bare, null).tools)).toEqual(bare)
  })

  it("an llm_json judge against the fake vLLM (in-process): the destructive call is denied", async () => {
    const w = workspace()
    const program = Effect.gen(function*() {
      const fake = yield* FakeVllm
      const settings = fixtureSettings(
        {
          upstreams: [makeUpstreamSettings({ name: "cluster", base_url: fake.url, models: ["judge"] })],
          judges: { guard: { kind: "llm_json", model: "judge", guided_json: true } }
        },
        w.dir
      )
      const s = yield* replayBench(w.exp, settings.proxy.audit_dir, "asbench", "agent", ["guard"]).pipe(
        Effect.provide(Layer.mergeAll(replayGateLayer(settings, defaultPlugins), Progress.Test([])))
      )
      return { s: s!, judgeRequests: fake.requests.filter((r) => r.path.endsWith("/chat/completions")).length }
    })
    const { s, judgeRequests } = await Effect.runPromise(Effect.scoped(program.pipe(Effect.provide(FakeVllm.layer()))))
    expect(s).toMatchObject({ ruled: 7, errors: 0 })
    expect(judgeRequests).toBe(7) // cache off: every call reaches the judge model
    const lines = Effect.runSync(readReplayLines(s.file))
    const byTool = lines.map((l) => [l.tool.name, JSON.stringify(l.tool.arguments), l.verdict.decision])
    expect(byTool).toContainEqual(["delete_file", '{"path":"/"}', "deny"])
    expect(byTool.filter(([, , d]) => d === "allow").length).toBeGreaterThan(0)
    expect(lines.every((l) => l.verdict.kind === "llm_json" && l.verdict.cached === false)).toBe(true)
    expect(readFileSync(s.file, "utf8").endsWith("\n")).toBe(true)
  })
})
