/**
 * The gate's path for judges that answer in process (`Judge.inProcess`: kinds `static`, `rule`): no
 * slot, deadline timer or fiber of their own, and still total — a judge so declared that throws,
 * dies, overflows the stack, interrupts itself or answers no verdict gets a ruling through
 * `fail_policy` and exactly one record per call, for one call and for several, alone and as layers
 * of a composite. Holds under `hold_policy: wait` still wait for a person.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { AuditMemory, AuditSink } from "../../layers/AuditSink.js"
import { layeredPlugin } from "../../judges/layered.js"
import { staticPlugin } from "../../judges/static.js"
import type { JudgeKindPlugin } from "../../judges/registry.js"
import { defaultSettings, Gate, gateLayer, type GateRequest, type SettingsShape } from "../../src/index.js"
import { makeUpstreamSettings } from "../../src/config/settings.js"
import { type CallRecord, isCallRecord } from "../../src/domain/audit-record.js"
import { Holds } from "../../src/gate/Holds.js"
import { expectFailedRulings, misbehaving } from "../support/misbehaving-judge.js"
import { decided } from "../../src/domain/verdict.js"

/** the misbehaving kind, each judge declared in-process (what a buggy synchronous plugin would claim) */
const inProcessMisbehaving: JudgeKindPlugin = Effect.map(misbehaving, (kind) => ({
  ...kind,
  kind: "misbehaving-in-process",
  make: (name, spec, ...rest) => Effect.map(kind.make(name, spec, ...rest), (j) => ({ ...j, inProcess: true }))
}))

/** every way but hanging (a judge that can hang is not in process by definition) */
const MODES = ["throws", "dies-in-sync", "overflows", "interrupts", "not-a-verdict", "bigint-usage"] as const

const settingsWith = (proxy: Partial<SettingsShape["proxy"]>) =>
  defaultSettings("/tmp", {
    upstreams: [makeUpstreamSettings({ name: "u", base_url: "http://127.0.0.1:9/v1" })],
    judges: {
      ...Object.fromEntries(MODES.map((m) => [m, { kind: "misbehaving-in-process", how: m }])),
      allow: { kind: "static", decision: "allow" },
      hold: { kind: "static", decision: "hold" },
      "stack-throws": { kind: "layered", layers: ["allow", "throws"] }
    },
    proxy: { judge_timeout_s: 30, ...proxy }
  })

const request = (judge: string): GateRequest => ({
  arm: "enforce",
  judge,
  tools: undefined,
  stream: false,
  context: { requestId: "r", runId: "run", episodeId: null, sessionId: null, principal: null, agentModel: "m", headers: {} }
})

const call = (name: string, id: string) => ({ id, type: "function", function: { name, arguments: "{}" } })

const gateWith = (proxy: Partial<SettingsShape["proxy"]>) =>
  Layer.provideMerge(
    gateLayer({ settings: settingsWith(proxy), plugins: [staticPlugin, layeredPlugin, inProcessMisbehaving], audit: AuditSink.layerMemory }),
    AuditSink.layerMemory
  )

const ruleWith = (proxy: Partial<SettingsShape["proxy"]>, judge: string, calls: ReadonlyArray<unknown>) =>
  Effect.gen(function* () {
    const gate = yield* Gate
    const memory = yield* AuditMemory
    const rulings = yield* gate.ruleChoice(request(judge), 0, calls)
    const records = (yield* memory.records).filter(isCallRecord)
    return { rulings, records }
  }).pipe(Effect.provide(gateWith(proxy)))

const expectFailed = (records: ReadonlyArray<CallRecord>, policy: "open" | "closed", ids: ReadonlyArray<string>) => {
  expect(records.map((r) => r.tool_call_id)).toEqual(ids)
  expectFailedRulings(records, policy, "error")
}

describe("the gate's in-process path is total", () => {
  for (const mode of MODES) {
    for (const policy of ["closed", "open"] as const) {
      it.live(`an in-process judge that ${mode}, one call: ruled through fail_policy ${policy}, one record`, () =>
        Effect.gen(function* () {
          const { rulings, records } = yield* ruleWith({ fail_policy: policy }, mode, [call("a", "c0")])
          expect(rulings.map((r) => r.blocked)).toEqual([policy === "closed"])
          expectFailed(records, policy, ["c0"])
        }))

      it.live(`an in-process judge that ${mode}, three calls: each ruled through fail_policy ${policy}, one record each`, () =>
        Effect.gen(function* () {
          const { rulings, records } = yield* ruleWith({ fail_policy: policy }, mode, [call("a", "c0"), call("b", "c1"), call("c", "c2")])
          expect(rulings.map((r) => r.callIndex)).toEqual([0, 1, 2])
          expectFailed(records, policy, ["c0", "c1", "c2"])
        }))
    }
  }

  it.live("a composite of in-process layers whose second throws: the failure decides under fail_policy closed, both layers recorded", () =>
    Effect.gen(function* () {
      const { rulings, records } = yield* ruleWith({ fail_policy: "closed" }, "stack-throws", [call("a", "c0")])
      expect(rulings.map((r) => r.blocked)).toEqual([true])
      expect(records).toHaveLength(1)
      expect(records[0]!.layers.map((v) => [v.judge, v.status])).toEqual([["allow", "ok"], ["throws", "error"]])
      expect(records[0]!.verdict?.reason).toContain("plugin bug on a")
    }))

  it.live("an in-process judge's ruling: the verdict and record as before (static allow, one call and two)", () =>
    Effect.gen(function* () {
      const one = yield* ruleWith({}, "allow", [call("a", "c0")])
      expect(one.rulings.map((r) => [r.blocked, r.effective])).toEqual([[false, "allow"]])
      expect(one.records.map((r) => [r.tool_call_id, r.verdict?.status, r.verdict?.decision])).toEqual([["c0", "ok", "allow"]])
      const two = yield* ruleWith({}, "allow", [call("a", "c0"), call("b", "c1")])
      expect(two.records.map((r) => [r.tool_call_id, r.call_index, r.effective_decision])).toEqual([["c0", 0, "allow"], ["c1", 1, "allow"]])
    }))

  it.live("hold_policy wait with an in-process judge: the held call waits for a person, then is released as decided", () =>
    Effect.gen(function* () {
      const gate = yield* Gate
      const holds = yield* Holds
      const memory = yield* AuditMemory
      const ruling = yield* Effect.fork(gate.ruleChoice(request("hold"), 0, [call("a", "c0")]))
      // the record is written before the wait; find the pending hold and approve it
      let pending = yield* holds.pending
      while (pending.length === 0) {
        yield* Effect.sleep("10 millis")
        pending = yield* holds.pending
      }
      expect(yield* holds.decide(pending[0]!.id, true, "tester", null)).toBe(true)
      const rulings = yield* Fiber.join(ruling)
      expect(rulings.map((r) => r.blocked)).toEqual([false])
      const records = yield* memory.records
      expect(records.map((r) => r.type)).toEqual(["call", "approval"])
    }).pipe(Effect.provide(gateWith({ hold_policy: "wait", hold_timeout_s: 60 })), Effect.timeout("60 seconds")))
})

describe("a judge that queues its own work (Judge.ownQueue, kind llama_cpp)", () => {
  /** `queued`: rulings wait on a latch the test opens (a model busy with earlier rulings); `quick`: answers at once, not in process */
  const latched = (latch: Deferred.Deferred<void>, waiting: Deferred.Deferred<void>): JudgeKindPlugin =>
    Effect.succeed({
      kind: "latched",
      make: (name: string, spec: Readonly<Record<string, unknown>>) =>
        Effect.succeed({
          judge: name,
          kind: "latched",
          model: null,
          version: null,
          cacheable: false,
          ...(spec.own_queue === true ? { ownQueue: true } : {}),
          rule: () =>
            Effect.gen(function* () {
              if (spec.wait === true) {
                yield* Deferred.succeed(waiting, undefined)
                yield* Deferred.await(latch)
              } else yield* Effect.yieldNow()
              return decided({ judge: name, kind: "latched", model: null, version: null }, "allow")
            })
        })
    })

  const gateFor = (latch: Deferred.Deferred<void>, waiting: Deferred.Deferred<void>) =>
    Layer.provideMerge(
      gateLayer({
        settings: defaultSettings("/tmp", {
          upstreams: [makeUpstreamSettings({ name: "u", base_url: "http://127.0.0.1:9/v1" })],
          judges: { queued: { kind: "latched", wait: true, own_queue: true }, quick: { kind: "latched", wait: false } },
          proxy: { judge_timeout_s: 600, max_concurrent_judges: 1 }
        }),
        plugins: [staticPlugin, latched(latch, waiting)],
        audit: AuditSink.layerMemory
      }),
      AuditSink.layerMemory
    )

  it.live("rulings waiting for the model hold no gate slot: another judge's ruling goes through meanwhile", () =>
    Effect.gen(function* () {
      const latch = yield* Deferred.make<void>()
      const inQueue = yield* Deferred.make<void>()
      yield* Effect.gen(function* () {
        const gate = yield* Gate
        const waiting = yield* Effect.fork(gate.ruleChoice(request("queued"), 0, [call("a", "q1"), call("b", "q2")]))
        yield* Deferred.await(inQueue) // a queued ruling is waiting for the model
        // with one slot held by a waiting ruling this would never finish (the hang guard would fail the test)
        const quick = yield* gate.ruleChoice(request("quick"), 0, [call("c", "k1")])
        expect(quick.map((r) => r.effective)).toEqual(["allow"])
        yield* Deferred.succeed(latch, undefined)
        const queued = yield* Fiber.join(waiting)
        expect(queued.map((r) => r.effective)).toEqual(["allow", "allow"])
      }).pipe(Effect.provide(gateFor(latch, inQueue)), Effect.timeoutFail({ duration: "100 seconds", onTimeout: () => new Error("hang guard: the quick judge waited for a slot") }))
    }))
})
