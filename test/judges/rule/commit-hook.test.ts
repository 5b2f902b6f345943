/**
 * The gate's `Judge.commit` hook: called once per proposed call per judge — each layer of a
 * layered judge too, whether or not it ran — after the ruling, with `released` = the call went
 * back to the agent (enforce: not blocked; shadow: always). And the rule judge's trajectory state
 * through the gate: a layered stack in which a later layer blocks a call leaves the sum untouched.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AuditMemory, AuditSink } from "../../../layers/AuditSink.js"
import { layeredPlugin } from "../../../judges/layered.js"
import { rulePlugin } from "../../../judges/rule/kind.js"
import { staticPlugin } from "../../../judges/static.js"
import { makeUpstreamSettings } from "../../../src/config/settings.js"
import { decided, defaultSettings, Gate, gateLayer, type GateRequest, type JudgeKindPlugin, type SettingsShape } from "../../../src/index.js"
import { REFUNDS_POLICY_FILE } from "./support.js"

/** commits seen: `judge call released` */
const commits: Array<string> = []

const probeKind: JudgeKindPlugin = Effect.succeed({
  kind: "probe",
  make: (name, spec) =>
    Effect.succeed({
      judge: name,
      kind: "probe",
      model: null,
      version: "v1",
      cacheable: false,
      rule: () => Effect.succeed(decided({ judge: name, kind: "probe", model: null, version: "v1" }, spec.decision === "deny" ? "deny" : spec.decision === "hold" ? "hold" : "allow")),
      commit: (call, _ctx, released) => Effect.sync(() => void commits.push(`${name} ${call.name} ${released}`))
    })
})

const settingsWith = (proxy: Partial<SettingsShape["proxy"]> = {}) =>
  defaultSettings("/tmp", {
    upstreams: [makeUpstreamSettings({ name: "u", base_url: "http://127.0.0.1:9/v1" })],
    judges: {
      "p-allow": { kind: "probe", decision: "allow" },
      "p-deny": { kind: "probe", decision: "deny" },
      "p-hold": { kind: "probe", decision: "hold" },
      "allow-all": { kind: "static", decision: "allow" },
      "deny-all": { kind: "static", decision: "deny" },
      stack: { kind: "layered", layers: ["p-deny", "allow-all", "p-allow"] },
      refunds: { kind: "rule", policy: REFUNDS_POLICY_FILE },
      "refunds-then-deny": { kind: "layered", layers: ["refunds", "deny-all"] },
      "refunds-then-allow": { kind: "layered", layers: ["allow-all", "refunds"] }
    },
    proxy
  })

const gateWith = (proxy: Partial<SettingsShape["proxy"]> = {}) =>
  Layer.provideMerge(
    gateLayer({ settings: settingsWith(proxy), plugins: [staticPlugin, probeKind, layeredPlugin, rulePlugin], audit: AuditSink.layerMemory }),
    AuditSink.layerMemory
  )

const request = (arm: GateRequest["arm"], judge: string, episode: string | null = null): GateRequest => ({
  arm,
  judge,
  tools: undefined,
  stream: false,
  context: { requestId: "r", runId: "run", episodeId: episode, sessionId: null, principal: null, agentModel: "m", headers: {} }
})

const calls = (...cs: ReadonlyArray<readonly [string, Record<string, unknown>]>) =>
  cs.map(([name, args], i) => ({ id: `c${i}`, type: "function", function: { name, arguments: JSON.stringify(args) } }))

const run = <A, E>(proxy: Partial<SettingsShape["proxy"]>, f: (gate: Gate["Type"]) => Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const gate = yield* Gate
    yield* AuditMemory
    return yield* f(gate)
  }).pipe(Effect.provide(gateWith(proxy)))

describe("the commit hook", () => {
  it.live("once per call, released = not blocked in enforce; always released in shadow", () =>
    Effect.gen(function* () {
      commits.length = 0
      yield* run({}, (g) => g.ruleChoice(request("enforce", "p-allow"), 0, calls(["a", {}], ["b", {}])))
      yield* run({}, (g) => g.ruleChoice(request("enforce", "p-deny"), 0, calls(["c", {}])))
      yield* run({}, (g) => g.ruleChoice(request("shadow", "p-deny"), 0, calls(["d", {}])))
      yield* run({ hold_policy: "deny" }, (g) => g.ruleChoice(request("enforce", "p-hold"), 0, calls(["e", {}])))
      yield* run({ hold_policy: "allow" }, (g) => g.ruleChoice(request("enforce", "p-hold"), 0, calls(["f", {}])))
      expect(commits).toEqual(["p-allow a true", "p-allow b true", "p-deny c false", "p-deny d true", "p-hold e false", "p-hold f true"])
    }))

  it.live("a layered judge: every layer with the hook, including one that did not run", () =>
    Effect.gen(function* () {
      commits.length = 0
      const rulings = yield* run({}, (g) => g.ruleChoice(request("enforce", "stack"), 0, calls(["x", {}])))
      expect(rulings[0]!.blocked).toBe(true)
      expect(commits).toEqual(["p-deny x false", "p-allow x false"])
    }))

  it.live("the rule judge as a layer: a call a later layer blocks is not added; an allowed one is", () =>
    Effect.gen(function* () {
      const refund = (amount: number) => calls(["issue_refund", { order_id: "A-1", amount_usd: amount }])
      const [blockedLater, thenAllowed, thenOver] = yield* run({}, (g) =>
        Effect.all([
          // the refunds layer allows $40, deny-all blocks it: nothing is recorded for episode e1
          g.ruleChoice(request("enforce", "refunds-then-deny", "e1"), 0, refund(40)),
          // so $50 still fits; it goes through
          g.ruleChoice(request("enforce", "refunds-then-allow", "e1"), 0, refund(50)),
          // and now $1 more is over the ceiling
          g.ruleChoice(request("enforce", "refunds-then-allow", "e1"), 0, refund(1))
        ])
      )
      expect(blockedLater[0]!.verdict!.judge).toBe("refunds-then-deny")
      expect(blockedLater[0]!.blocked).toBe(true)
      expect(thenAllowed[0]!.blocked).toBe(false)
      expect(thenOver[0]!).toMatchObject({ blocked: true, verdict: { category: "VB-trajectory-ceiling:refund-split" } })
    }))

  it.live("two refunds in one response cannot split the ceiling between them", () =>
    Effect.gen(function* () {
      const rulings = yield* run({}, (g) =>
        g.ruleChoice(request("enforce", "refunds", "e2"), 0, calls(["issue_refund", { order_id: "A-1", amount_usd: 40 }], ["issue_refund", { order_id: "A-1", amount_usd: 40 }]))
      )
      expect(rulings.map((r) => [r.verdict!.decision, r.blocked])).toEqual([
        ["allow", false],
        ["deny", true]
      ])
    }))
})
