/**
 * veto-proxy with a `kind: toolgate` judge against the fake aex-toolgate: the gate's policy decides
 * through the proxy (enforce blocks, holds follow hold_policy, gate failures follow fail_policy),
 * the gate's rule and record hash reach the audit record, and verdicts are never cached.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { type FakeRule, FakeToolgate, serveFakeToolgate } from "../support/fake-toolgate.js"
import { call, Harness, harnessLayer, post, TEST_JUDGES } from "../support/harness.js"

const TOKEN = "proxy-test-operator-token"

const RULES: Readonly<Record<string, FakeRule>> = {
  list_dir: { decision: "allow", scope: "files:read" },
  delete_file: { decision: "deny", rule: "P9-protected-path", scope: "files:delete", message: "deleting / is not allowed" },
  update_vendor: { decision: "escalate", rule: "P4-sensitive", scope: "vendors:update", message: "bank account changes need a person" }
}

/** the fake gate first, then a harness whose judges point at it */
const toolgateHarness = (proxy: { readonly fail_policy?: "closed" | "open" } = {}) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const gate = yield* serveFakeToolgate({ operatorToken: TOKEN, rules: RULES })
      const harness = harnessLayer({
        settings: () => ({
          judges: {
            ...TEST_JUDGES,
            tg: { kind: "toolgate", url: gate.url, operator_token: TOKEN, policy: "test-policy" },
            "tg-tools": { kind: "toolgate", url: gate.url, mode: "tools" }
          },
          proxy
        })
      })
      return Layer.merge(harness, Layer.succeed(FakeToolgate, gate))
    })
  )

describe("veto-proxy with a toolgate judge", () => {
  layer(toolgateHarness(), { excludeTestServices: true })((it) => {
    it.effect("enforce blocks the gate's deny: the rule in the refusal and in the audit verdict", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const gate = yield* FakeToolgate
        h.fake.reset()
        gate.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const r = yield* post(
          h,
          { model: "agent@enforce:tg" },
          {
            run: "tg-deny",
            headers: { authorization: "Bearer client-key", "x-request-id": "req-tg-1", "x-vetobench-principal": "user:alice", "x-vetobench-session": "sess-9" }
          }
        )
        const choice = r.json.choices[0]!
        expect(choice.message.tool_calls).toBeNull()
        expect(choice.message.content).toContain("`delete_file` was blocked")
        expect(choice.message.content).toContain("(P9-protected-path): deleting / is not allowed")
        expect(r.headers.get("x-vetobench-blocked")).toBe("1")

        const [rec] = h.records("tg-deny")
        expect(rec).toMatchObject({ blocked: true, effective_decision: "deny", approval: "automatic", request_id: "req-tg-1" })
        expect(rec!.verdict).toMatchObject({
          judge: "tg",
          kind: "toolgate",
          model: gate.url,
          version: "toolgate:test-policy",
          status: "ok",
          decision: "deny",
          category: "P9-protected-path",
          reason: "deleting / is not allowed",
          cached: false
        })
        expect(rec!.verdict!.usage).toMatchObject({ toolgate_hash: gate.records[0]!.hash, toolgate_scope: "files:delete", toolgate_call_id: "req-tg-1" })

        const [sent] = gate.requests
        expect(sent!.path).toBe("/v1/decide/delete_file")
        expect(JSON.parse(sent!.body)).toEqual({ path: "/" })
        expect(sent!.headers).toMatchObject({
          authorization: `Bearer ${TOKEN}`,
          "x-request-id": "req-tg-1",
          "x-aex-call-id": "req-tg-1",
          "x-aex-agent-id": "agent",
          "x-aex-principal": "user:alice",
          "x-aex-session-id": "sess-9"
        })
      }))

    it.effect("partial enforce keeps the call the gate allows", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const gate = yield* FakeToolgate
        h.fake.reset()
        gate.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" }), call("delete_file", { path: "/" })]
        const r = yield* post(h, { model: "agent@enforce:tg" }, { run: "tg-partial", episode: "ep-3" })
        const choice = r.json.choices[0]!
        expect(choice.message.tool_calls!.map((c) => c.function.name)).toEqual(["list_dir"])
        expect(choice.message.content).toContain("`delete_file` was blocked")
        const recs = h.records("tg-partial")
        expect(recs.map((x) => [x.verdict!.decision, x.verdict!.category, x.blocked])).toEqual([
          ["allow", "none", false],
          ["deny", "P9-protected-path", true]
        ])
        // no x-vetobench-session: the episode id is the gate's session
        expect(gate.requests.map((q) => q.headers["x-aex-session-id"])).toEqual(["ep-3", "ep-3"])
      }))

    it.effect("escalate is a hold: blocked in enforce under hold_policy deny, approval held", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const gate = yield* FakeToolgate
        h.fake.reset()
        gate.reset()
        h.fake.knobs.nextCalls = [call("update_vendor", { vendor_id: "ACME", field: "bank_account", value: "NEW-ACCT-9911" })]
        const r = yield* post(h, { model: "agent@enforce:tg" }, { run: "tg-hold" })
        expect(r.json.choices[0]!.message.tool_calls).toBeNull()
        expect(r.json.choices[0]!.message.content).toContain("(P4-sensitive): bank account changes need a person")
        const [rec] = h.records("tg-hold")
        expect(rec).toMatchObject({ blocked: true, effective_decision: "hold", approval: "held" })
        expect(rec!.verdict).toMatchObject({ decision: "hold", category: "P4-sensitive" })
        expect(rec!.verdict!.usage).toMatchObject({ toolgate_approval: "pending-human", toolgate_hash: gate.records[0]!.hash })
      }))

    it.effect("shadow records the gate's decision without blocking", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const gate = yield* FakeToolgate
        h.fake.reset()
        gate.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const r = yield* post(h, { model: "agent@shadow:tg" }, { run: "tg-shadow" })
        expect(r.json.choices[0]!.message.tool_calls).toHaveLength(1)
        const [rec] = h.records("tg-shadow")
        expect(rec).toMatchObject({ blocked: false, effective_decision: "deny" })
      }))

    it.effect("verdicts are never cached: identical requests ask the gate every time", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const gate = yield* FakeToolgate
        h.fake.reset()
        gate.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/cache-test" })]
        yield* post(h, { model: "agent@enforce:tg" }, { run: "tg-cache" })
        yield* post(h, { model: "agent@enforce:tg" }, { run: "tg-cache" })
        expect(gate.requests).toHaveLength(2)
        const recs = h.records("tg-cache")
        expect(recs.map((x) => x.verdict!.cached)).toEqual([false, false])
        expect(recs.map((x) => x.verdict!.usage.toolgate_hash)).toEqual(gate.records.map((x) => x.hash))
        expect(gate.records[1]!.prev_hash).toBe(gate.records[0]!.hash)
      }))

    it.effect("tools mode: the 403 blocks, the allowed call was forwarded by the gate", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const gate = yield* FakeToolgate
        h.fake.reset()
        gate.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" }), call("delete_file", { path: "/" })]
        const r = yield* post(h, { model: "agent@enforce:tg-tools" }, { run: "tg-tools" })
        expect(r.json.choices[0]!.message.tool_calls!.map((c) => c.function.name)).toEqual(["list_dir"])
        expect(h.records("tg-tools").map((x) => x.verdict!.category)).toEqual(["none", "P9-protected-path"])
        expect(gate.forwarded.map((f) => f.tool)).toEqual(["list_dir"])
        for (const q of gate.requests) expect(q.headers).not.toHaveProperty("authorization")
      }))

    it.effect("gate without OPERATOR_TOKEN (503) and fail_policy closed: blocked, recorded as an error", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const gate = yield* FakeToolgate
        h.fake.reset()
        gate.reset()
        gate.knobs.operatorToken = null
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        const r = yield* post(h, { model: "agent@enforce:tg" }, { run: "tg-503" })
        expect(r.status).toBe(200)
        expect(r.json.choices[0]!.message.tool_calls).toBeNull()
        expect(r.headers.get("x-vetobench-blocked")).toBe("1")
        const [rec] = h.records("tg-503")
        expect(rec).toMatchObject({ blocked: true, effective_decision: "deny", fail_policy: "closed" })
        expect(rec!.verdict).toMatchObject({ status: "error", decision: null })
        expect(rec!.verdict!.reason).toContain("HTTP 503 operator_token_not_configured")
        expect(JSON.stringify(rec)).not.toContain(TOKEN)
        expect(gate.records).toEqual([])
      }))
  })

  layer(toolgateHarness({ fail_policy: "open" }), { excludeTestServices: true })((it) => {
    it.effect("the same failure under fail_policy open lets the call through, still recorded as an error", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const gate = yield* FakeToolgate
        h.fake.reset()
        gate.reset()
        gate.knobs.operatorToken = null
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const r = yield* post(h, { model: "agent@enforce:tg" }, { run: "tg-open" })
        expect(r.json.choices[0]!.message.tool_calls).toHaveLength(1)
        const [rec] = h.records("tg-open")
        expect(rec).toMatchObject({ blocked: false, effective_decision: "allow", fail_policy: "open" })
        expect(rec!.verdict!.status).toBe("error")
      }))
  })
})
