/**
 * The Gate embedded as a library (src/index.ts): fail_policy, hold_policy, the concurrency bound,
 * cache keys that include the judge version, and exactly one record per proposed call.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AuditMemory, AuditSink } from "../../layers/AuditSink.js"
import { JudgeCache, makeMemoryCache } from "../../layers/JudgeCache.js"
import { decided, defaultSettings, Gate, gateLayer, JudgeError, type GateRequest, type JudgeKindPlugin, type SettingsShape } from "../../src/index.js"
import { makeUpstreamSettings } from "../../src/config/settings.js"
import { staticPlugin } from "../../judges/static.js"
import { isCallRecord } from "../../src/domain/audit-record.js"
import { type ChoiceWithCalls, choicesWithCalls, gateChatAnswer } from "../../src/proxy/wire/chat.js"

/** A test judge kind: `decision`, or `fail: "error"`, after `delay_ms`; counts calls in flight. */
const probe = { inFlight: 0, maxInFlight: 0, calls: 0 }
const testKind: JudgeKindPlugin = Effect.succeed({
  kind: "test",
  make: (name, spec) => {
    const version = typeof spec.version === "string" ? spec.version : "v1"
    return Effect.succeed({
      judge: name,
      kind: "test",
      model: null,
      version,
      cacheable: spec.cacheable === true,
      rule: (call) =>
        Effect.gen(function* () {
          probe.calls++
          probe.inFlight++
          probe.maxInFlight = Math.max(probe.maxInFlight, probe.inFlight)
          yield* Effect.sleep(`${typeof spec.delay_ms === "number" ? spec.delay_ms : 0} millis`)
          probe.inFlight--
          if (spec.fail === "error") return yield* new JudgeError({ judge: name, reason: "unavailable", message: "judge down" })
          const d = spec.decision === "deny" || spec.decision === "hold" ? spec.decision : "allow"
          return decided({ judge: name, kind: "test", model: null, version }, d, { reason: `ruled ${call.name}` })
        })
    })
  }
})

const settingsWith = (proxy: Partial<SettingsShape["proxy"]> = {}, cachedVersion = "v1") =>
  defaultSettings("/tmp", {
    upstreams: [makeUpstreamSettings({ name: "u", base_url: "http://127.0.0.1:9/v1" })],
    judges: {
      deny: { kind: "test", decision: "deny" },
      hold: { kind: "test", decision: "hold" },
      broken: { kind: "test", fail: "error" },
      slowish: { kind: "test", decision: "allow", delay_ms: 30 },
      cached: { kind: "test", decision: "deny", cacheable: true, version: cachedVersion }
    },
    proxy
  })

/** `cache` (optional) replaces the gate's own verdict cache, so that two gates can share one */
const gateWith = (proxy: Partial<SettingsShape["proxy"]> = {}, cachedVersion = "v1", cache?: Layer.Layer<JudgeCache>) =>
  Layer.provideMerge(
    gateLayer({
      settings: settingsWith(proxy, cachedVersion),
      plugins: [staticPlugin, testKind],
      audit: AuditSink.layerMemory,
      ...(cache !== undefined ? { cache } : {})
    }),
    AuditSink.layerMemory
  )

const request = (arm: GateRequest["arm"], judge: string | null): GateRequest => ({
  arm,
  judge,
  tools: undefined,
  stream: false,
  context: { requestId: "r", runId: "run", episodeId: null, sessionId: null, principal: null, agentModel: "m", headers: {} }
})

const calls = (...names: Array<string>) => names.map((n, i) => ({ id: `c${i}`, type: "function", function: { name: n, arguments: "{}" } }))

const run = <A, E>(proxy: Partial<SettingsShape["proxy"]>, f: (gate: Gate["Type"], memory: AuditMemory["Type"]) => Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const gate = yield* Gate
    const memory = yield* AuditMemory
    return yield* f(gate, memory)
  }).pipe(Effect.provide(gateWith(proxy)))

describe("Gate", () => {
  it.live("fail_policy closed denies a failed judge; open allows; both record status error", () =>
    Effect.gen(function* () {
      for (const policy of ["closed", "open"] as const) {
        const rulings = yield* run({ fail_policy: policy }, (g) => g.ruleChoice(request("enforce", "broken"), 0, calls("a")))
        expect(rulings[0]!.verdict!.status).toBe("error")
        expect(rulings[0]!.effective).toBe(policy === "closed" ? "deny" : "allow")
        expect(rulings[0]!.blocked).toBe(policy === "closed")
      }
    }))

  it.live("hold blocks in enforce under hold_policy deny, passes under allow; approval is held", () =>
    Effect.gen(function* () {
      for (const policy of ["deny", "allow"] as const) {
        const recs = yield* run({ hold_policy: policy }, (g, m) =>
          g.ruleChoice(request("enforce", "hold"), 0, calls("a")).pipe(Effect.zipRight(m.records), Effect.map((rs) => rs.filter(isCallRecord)))
        )
        expect(recs[0]!.effective_decision).toBe("hold")
        expect(recs[0]!.approval).toBe("held")
        expect(recs[0]!.blocked).toBe(policy === "deny")
      }
    }))

  it.live("shadow never blocks", () =>
    Effect.gen(function* () {
      const rulings = yield* run({}, (g) => g.ruleChoice(request("shadow", "deny"), 0, calls("a", "b")))
      expect(rulings.map((r) => [r.effective, r.blocked])).toEqual([["deny", false], ["deny", false]])
    }))

  it.live("judge calls in flight are bounded by max_concurrent_judges", () =>
    Effect.gen(function* () {
      probe.maxInFlight = 0
      const rulings = yield* run({ max_concurrent_judges: 2 }, (g) =>
        g.ruleChoice(request("enforce", "slowish"), 0, calls("a", "b", "c", "d", "e", "f"))
      )
      expect(rulings).toHaveLength(6)
      expect(probe.maxInFlight).toBe(2)
    }))

  it.live("a cached verdict is reused only for the same judge version and call", () =>
    Effect.gen(function* () {
      probe.calls = 0
      // one cache shared by two gates whose judge `cached` differs only in its version
      const cache = Layer.succeed(JudgeCache, makeMemoryCache(16))
      const ruleOn = (version: string, name: string) =>
        Effect.gen(function* () {
          const gate = yield* Gate
          return yield* gate.ruleChoice(request("shadow", "cached"), 0, calls(name))
        }).pipe(Effect.provide(gateWith({}, version, cache)), Effect.map((r) => r[0]!.verdict!))
      const verdicts = [
        yield* ruleOn("v1", "same"),
        yield* ruleOn("v1", "same"),
        yield* ruleOn("v1", "other"),
        yield* ruleOn("v2", "same"),
        yield* ruleOn("v2", "same")
      ]
      expect(verdicts.map((v) => [v.version, v.cached])).toEqual([
        ["v1", false],
        ["v1", true],
        ["v1", false],
        ["v2", false],
        ["v2", true]
      ])
      expect(probe.calls).toBe(3)
    }))

  it.live("gateChatAnswer strips blocked calls in place and writes one record per call", () =>
    Effect.gen(function* () {
      const response = {
        choices: [
          { index: 0, finish_reason: "tool_calls", message: { role: "assistant", content: null, tool_calls: calls("x", "y") } },
          { index: 1, finish_reason: "stop", message: { role: "assistant", content: "hi" } }
        ]
      }
      const [blocked, recs] = yield* run({}, (g, m) =>
        Effect.all([
          gateChatAnswer(g, request("enforce", "deny"), choicesWithCalls(response) as ReadonlyArray<ChoiceWithCalls>, "content"),
          Effect.map(m.records, (rs) => rs.filter(isCallRecord))
        ])
      )
      expect(blocked).toBe(2)
      expect(response.choices[0]!.message.tool_calls).toBeNull()
      expect(response.choices[0]!.finish_reason).toBe("stop")
      expect(response.choices[0]!.message.content).toContain("`x` was blocked")
      expect(recs.map((r) => [r.choice_index, r.call_index, r.tool_call_id, r.blocked])).toEqual([
        [0, 0, "c0", true],
        [0, 1, "c1", true]
      ])
    }))
})
