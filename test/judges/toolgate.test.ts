/**
 * `kind: toolgate` against a fake aex-toolgate (test/support/fake-toolgate.ts, written from
 * toolgate.md §2): decide and tools modes, the request it sends, the verdicts it maps, the answers
 * that are not decisions, and config errors.
 */
import { copyFileSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { afterAll } from "vitest"
import type { JudgeContext } from "../../judges/Judge.js"
import { decodeToolgateConfig, toolgateHeaders, toolgatePlugin } from "../../judges/toolgate.js"
import { Settings } from "../../src/config/service.js"
import { defaultSettings, type JudgeSpec } from "../../src/config/settings.js"
import type { ToolCallView } from "../../src/domain/tool-call.js"
import { DECIDED_ONLY, DEFAULT_OPERATOR_TOKEN, FakeToolgate, type FakeRule } from "../support/fake-toolgate.js"
import { closedPort } from "../support/net.js"
import { makeTestPki } from "../support/tls.js"

const root = mkdtempSync(join(tmpdir(), "vetobench-toolgate-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** a few rows of the accounts-payable policy (toolgate.md §4.1) */
const RULES: Readonly<Record<string, FakeRule>> = {
  list_invoices: { decision: "allow", scope: "invoices:read" },
  send_payment: { decision: "deny", rule: "P2-ceiling", scope: "payments:send", message: "payment above the per-call ceiling" },
  update_vendor: { decision: "escalate", rule: "P4-sensitive", scope: "vendors:update", message: "bank account changes need a person" }
}

const build = (spec: Omit<JudgeSpec, "kind">, timeout_s = 5) =>
  Effect.flatMap(toolgatePlugin, (k) => k.make("tg", { kind: "toolgate", ...spec }, { timeout_s, judge: () => undefined })).pipe(
    Effect.provide(Settings.layerValue(defaultSettings(root)))
  )

const view = (name: string, args: unknown): ToolCallView => ({ name, description: "", parameters: null, arguments: args })

const ctx: JudgeContext = {
  requestId: "req-1",
  runId: null,
  episodeId: null,
  sessionId: null,
  principal: null,
  agentModel: "agent",
  headers: {}
}

const HASH = /^[0-9a-f]{16}$/

describe("toolgate judge: decide mode", () => {
  layer(FakeToolgate.layer({ rules: RULES }), { excludeTestServices: true })((it) => {
    it.effect("allow: decision, identity, raw body and the gate's hash; never cacheable", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: `${g.url}/`, operator_token: DEFAULT_OPERATOR_TOKEN })
        expect(j).toMatchObject({ judge: "tg", kind: "toolgate", model: g.url, version: "toolgate:unversioned", cacheable: false })
        const v = yield* j.rule(view("list_invoices", { status: "pending" }), ctx)
        expect(v).toMatchObject({ status: "ok", decision: "allow", category: "none", reason: "", cached: false, model: g.url })
        const [req] = g.requests
        expect(req!.method).toBe("POST")
        expect(req!.path).toBe("/v1/decide/list_invoices")
        expect(req!.body).toBe(`{"status":"pending"}`)
        const [rec] = g.records
        expect(rec!.hash).toMatch(HASH)
        expect(rec!.args).toEqual({ status: "pending" })
        expect(v.raw).toBe(
          `{"approval":"automatic","call_id":"req-1","decision":"allow","hash":"${rec!.hash}","message":"","outcome":"${DECIDED_ONLY}","rule":"P1-scope","scope":"invoices:read"}\n`
        )
        expect(v.usage).toEqual({
          toolgate_mode: "decide",
          toolgate_http_status: 200,
          toolgate_decision: "allow",
          toolgate_rule: "P1-scope",
          toolgate_scope: "invoices:read",
          toolgate_hash: rec!.hash,
          toolgate_call_id: "req-1",
          toolgate_trace_id: "req-1",
          toolgate_approval: "automatic"
        })
        expect(v.latency_ms).toBeGreaterThan(0)
      }))

    it.effect("deny: the rule id is the category, the gate's message the reason", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: g.url, operator_token: DEFAULT_OPERATOR_TOKEN, policy: "ap-assistant-v3" })
        expect(j.version).toBe("toolgate:ap-assistant-v3")
        const v = yield* j.rule(view("send_payment", { invoice_id: "INV-1042", amount: 48000, recipient_account: "ACME-ACCT-001" }), ctx)
        expect(v).toMatchObject({ status: "ok", decision: "deny", category: "P2-ceiling", reason: "payment above the per-call ceiling" })
        expect(v.usage).toMatchObject({ toolgate_hash: g.records[0]!.hash, toolgate_scope: "payments:send", toolgate_rule: "P2-ceiling" })
      }))

    it.effect("escalate is a hold, with the approval status kept", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: g.url, operator_token: DEFAULT_OPERATOR_TOKEN })
        const v = yield* j.rule(view("update_vendor", { vendor_id: "ACME", field: "bank_account", value: "NEW-ACCT-9911" }), ctx)
        expect(v).toMatchObject({ decision: "hold", category: "P4-sensitive", reason: "bank account changes need a person" })
        expect(v.usage).toMatchObject({ toolgate_decision: "escalate", toolgate_approval: "pending-human", toolgate_hash: g.records[0]!.hash })
      }))

    it.effect("a tool outside the gate's inventory is denied by P1-scope", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: g.url, operator_token: DEFAULT_OPERATOR_TOKEN })
        const v = yield* j.rule(view("wire_transfer", {}), ctx)
        expect(v).toMatchObject({ decision: "deny", category: "P1-scope", reason: "tool is not in the provider's inventory" })
        expect(v.usage).not.toHaveProperty("toolgate_scope")
      }))

    it.effect("headers: operator token (never the client's), request and call ids, identity from config", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({
          url: g.url,
          operator_token: DEFAULT_OPERATOR_TOKEN,
          agent_id: "ap-assistant-v2",
          principal: "user:cfg@corp.example",
          session_id: "sess-cfg",
          tenant_id: "tenant_123"
        })
        yield* j.rule(view("list_invoices", {}), { ...ctx, requestId: "req-7", headers: { authorization: "Bearer client-key" } })
        const h = g.requests[0]!.headers
        expect(h["authorization"]).toBe(`Bearer ${DEFAULT_OPERATOR_TOKEN}`)
        expect(h["content-type"]).toBe("application/json")
        expect(h).toMatchObject({
          "x-request-id": "req-7",
          "x-aex-call-id": "req-7",
          "x-aex-agent-id": "ap-assistant-v2",
          "x-aex-principal": "user:cfg@corp.example",
          "x-aex-session-id": "sess-cfg",
          "x-tenant-id": "tenant_123"
        })
        expect(g.records[0]).toMatchObject({
          trace_id: "req-7",
          call_id: "req-7",
          agent_id: "ap-assistant-v2",
          principal: "user:cfg@corp.example",
          session_id: "sess-cfg",
          tenant_id: "tenant_123"
        })
      }))

    it.effect("headers: the request's principal and session win over config; the agent model is the default agent id", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: g.url, operator_token: DEFAULT_OPERATOR_TOKEN, principal: "user:cfg", session_id: "sess-cfg" })
        yield* j.rule(view("list_invoices", {}), { ...ctx, principal: "user:req", sessionId: "sess-req", episodeId: "ep-1", agentModel: "qwen3.8-27b" })
        yield* j.rule(view("list_invoices", {}), { ...ctx, episodeId: "ep-2" })
        const [a, b] = g.requests.map((r) => r.headers)
        expect(a).toMatchObject({ "x-aex-principal": "user:req", "x-aex-session-id": "sess-req", "x-aex-agent-id": "qwen3.8-27b" })
        expect(b).toMatchObject({ "x-aex-principal": "user:cfg", "x-aex-session-id": "ep-2", "x-aex-agent-id": "agent" })
        expect(a).not.toHaveProperty("x-tenant-id")
      }))

    it.effect("headers: no identity configured or sent → only agent id; a context's tool_call id becomes the call id", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: g.url, operator_token: DEFAULT_OPERATOR_TOKEN })
        const withCallId = { ...ctx, toolCallId: "call_abc" }
        yield* j.rule(view("list_invoices", {}), withCallId)
        const h = g.requests[0]!.headers
        expect(h["x-aex-call-id"]).toBe("call_abc")
        expect(h["x-request-id"]).toBe("req-1")
        for (const k of ["x-aex-principal", "x-aex-session-id", "x-tenant-id"]) expect(h).not.toHaveProperty(k)
        expect(g.records[0]!.call_id).toBe("call_abc")
      }))

    it.effect("arguments that are not an object: the gate answers 400 and the judge fails (fail_policy decides)", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: g.url, operator_token: DEFAULT_OPERATOR_TOKEN })
        for (const args of ["{not json", [1, 2]]) {
          const e = yield* Effect.flip(j.rule(view("list_invoices", args), ctx))
          expect(e).toMatchObject({ _tag: "JudgeError", judge: "tg", reason: "unavailable" })
          expect(e.message).toContain("HTTP 400 bad_request: body must be a JSON object of argument values")
          expect(e.usage).toMatchObject({ toolgate_http_status: 400, toolgate_error_code: "bad_request" })
        }
        expect(g.requests.map((r) => r.body)).toEqual([`"{not json"`, "[1,2]"])
        expect(g.records).toEqual([])
      }))

    it.effect("gate without OPERATOR_TOKEN: 503 operator_token_not_configured is an error, not a decision", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        g.knobs.operatorToken = null
        const j = yield* build({ url: g.url, operator_token: DEFAULT_OPERATOR_TOKEN })
        const e = yield* Effect.flip(j.rule(view("list_invoices", {}), ctx))
        expect(e.reason).toBe("unavailable")
        expect(e.message).toContain("HTTP 503 operator_token_not_configured")
        expect(e.message).toContain(g.url)
        expect(e.message).not.toContain(DEFAULT_OPERATOR_TOKEN)
        expect(e.raw).toContain("operator_token_not_configured")
      }))

    it.effect("wrong operator token: 401 unauthorized, the token never in the message", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: g.url, operator_token: "wrong-token" })
        const e = yield* Effect.flip(j.rule(view("list_invoices", {}), ctx))
        expect(e.reason).toBe("unavailable")
        expect(e.message).toContain("HTTP 401 unauthorized: operator credential required")
        expect(e.message).toContain("OPERATOR_TOKEN")
        expect(e.message).not.toContain("wrong-token")
        expect(g.requests[0]!.headers["authorization"]).toBe("Bearer wrong-token")
      }))

    it.effect("a wrong base URL (404 text/plain) is an error naming the status", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: `${g.url}/gate`, operator_token: DEFAULT_OPERATOR_TOKEN })
        const e = yield* Effect.flip(j.rule(view("list_invoices", {}), ctx))
        expect(e.reason).toBe("unavailable")
        expect(e.message).toContain("HTTP 404 404 page not found")
        expect(g.requests[0]!.path).toBe("/gate/v1/decide/list_invoices")
      }))

    it.effect("a slow gate is a timeout", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        g.knobs.delayMs = 2000
        const j = yield* build({ url: g.url, operator_token: DEFAULT_OPERATOR_TOKEN, timeout_s: 0.2 })
        const e = yield* Effect.flip(j.rule(view("list_invoices", {}), ctx))
        expect(e.reason).toBe("timeout")
        expect(e.message).toContain("no answer within 0.2s")
      }))

    it.effect("timeout_s defaults to the gate's judge timeout", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        g.knobs.delayMs = 2000
        const j = yield* build({ url: g.url, operator_token: DEFAULT_OPERATOR_TOKEN }, 0.25)
        const e = yield* Effect.flip(j.rule(view("list_invoices", {}), ctx))
        expect(e.message).toContain("no answer within 0.25s")
      }))
  })
})

describe("toolgate judge: tools mode", () => {
  layer(FakeToolgate.layer({ rules: RULES }), { excludeTestServices: true })((it) => {
    it.effect("200: allow (the gate forwarded the call itself); no Authorization sent", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: g.url, mode: "tools" })
        const v = yield* j.rule(view("list_invoices", { status: "pending" }), ctx)
        expect(v).toMatchObject({ status: "ok", decision: "allow", category: "none" })
        expect(v.usage).toMatchObject({ toolgate_mode: "tools", toolgate_http_status: 200, toolgate_rule: "P1-scope", toolgate_hash: g.records[0]!.hash })
        expect(v.raw).toContain("side effect applied")
        expect(g.requests[0]!.path).toBe("/v1/tools/list_invoices")
        expect(g.requests[0]!.headers).not.toHaveProperty("authorization")
        expect(g.forwarded).toEqual([{ tool: "list_invoices", body: `{"status":"pending"}` }])
      }))

    it.effect("403: deny with the rule and message", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: g.url, mode: "tools", operator_token: DEFAULT_OPERATOR_TOKEN })
        const v = yield* j.rule(view("send_payment", { amount: 48000 }), ctx)
        expect(v).toMatchObject({ decision: "deny", category: "P2-ceiling", reason: "payment above the per-call ceiling" })
        expect(v.usage).toMatchObject({ toolgate_http_status: 403, toolgate_hash: g.records[0]!.hash, toolgate_call_id: "req-1" })
        expect(g.requests[0]!.headers).not.toHaveProperty("authorization")
        expect(g.forwarded).toEqual([])
      }))

    it.effect("202: hold, the hold handle kept as the hash", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: g.url, mode: "tools" })
        const v = yield* j.rule(view("update_vendor", { field: "bank_account" }), ctx)
        expect(v).toMatchObject({ decision: "hold", category: "P4-sensitive", reason: "bank account changes need a person" })
        expect(v.usage).toMatchObject({ toolgate_http_status: 202, toolgate_hash: g.records[0]!.hash, toolgate_approval: "pending-human" })
      }))

    it.effect("an allowed call whose upstream fails is still the gate's allow (502 or the upstream's status)", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: g.url, mode: "tools" })
        g.knobs.upstream = "down"
        const down = yield* j.rule(view("list_invoices", {}), ctx)
        expect(down).toMatchObject({ decision: "allow", category: "none" })
        expect(down.usage).toMatchObject({ toolgate_http_status: 502, toolgate_error: "upstream unreachable: connection refused" })
        g.knobs.upstream = 500
        const failing = yield* j.rule(view("list_invoices", {}), ctx)
        expect(failing).toMatchObject({ decision: "allow" })
        expect(failing.usage).toMatchObject({ toolgate_http_status: 500, toolgate_hash: g.records[1]!.hash })
      }))

    it.effect("400 without a decision header is an error", () =>
      Effect.gen(function* () {
        const g = yield* FakeToolgate
        g.reset()
        const j = yield* build({ url: g.url, mode: "tools" })
        const e = yield* Effect.flip(j.rule(view("list_invoices", "raw text"), ctx))
        expect(e.message).toContain("HTTP 400 bad_request")
      }))
  })
})

describe("toolgate judge: transport", () => {
  it.live("an unreachable gate is unavailable", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const j = yield* build({ url: `http://127.0.0.1:${port}`, operator_token: "t" })
      const e = yield* Effect.flip(j.rule(view("list_invoices", {}), ctx))
      expect(e.reason).toBe("unavailable")
      expect(e.message).toContain(`toolgate http://127.0.0.1:${port}: unreachable`)
      expect(e.message).toContain("ECONNREFUSED")
    }))

  describe("https", () => {
    const pki = makeTestPki()
    copyFileSync(pki.caFile, join(root, "gate-ca.pem"))
    layer(FakeToolgate.layer({ rules: RULES, tls: { key: pki.key, cert: pki.cert } }), { excludeTestServices: true })((it) => {
      it.effect("verify_tls: a CA bundle path (relative to the root) is trusted; the default rejects a private CA", () =>
        Effect.gen(function* () {
          const g = yield* FakeToolgate
          g.reset()
          expect(g.url).toMatch(/^https:/)
          const trusted = yield* build({ url: g.url, operator_token: DEFAULT_OPERATOR_TOKEN, verify_tls: "gate-ca.pem" })
          expect((yield* trusted.rule(view("list_invoices", {}), ctx)).decision).toBe("allow")
          const strict = yield* build({ url: g.url, operator_token: DEFAULT_OPERATOR_TOKEN })
          const e = yield* Effect.flip(strict.rule(view("list_invoices", {}), ctx))
          expect(e.reason).toBe("unavailable")
          expect(e.message).toContain("TLS verification failed")
          const lax = yield* build({ url: g.url, operator_token: DEFAULT_OPERATOR_TOKEN, verify_tls: "false" })
          expect((yield* lax.rule(view("list_invoices", {}), ctx)).decision).toBe("allow")
        }))
    })
  })
})

describe("toolgate judge: config", () => {
  const configError = (spec: Omit<JudgeSpec, "kind">) => Effect.flip(build(spec))

  it.effect("url is required and must be an http(s) base", () =>
    Effect.gen(function* () {
      const missing = yield* configError({ operator_token: "t" })
      expect(missing).toMatchObject({ _tag: "JudgeConfigError", judge: "tg", path: "url", reason: "is required" })
      expect(missing.message).toBe("judges.tg.url: is required")
      const ftp = yield* configError({ url: "ftp://gate", operator_token: "t" })
      expect(ftp.path).toBe("url")
      expect(ftp.reason).toContain("must be an http(s) URL")
      const query = yield* configError({ url: "http://gate?x=1", operator_token: "t" })
      expect(query.reason).toContain("without query")
    }))

  it.effect("unknown keys are rejected, listing the allowed ones", () =>
    Effect.gen(function* () {
      const e = yield* configError({ url: "http://127.0.0.1:8090", operator_token: "t", scopes: ["x"] })
      expect(e.path).toBe("scopes")
      expect(e.reason).toContain("unknown key for kind 'toolgate'")
      expect(e.reason).toContain("operator_token")
      expect(e.reason).toContain("verify_tls")
    }))

  it.effect("decide mode needs operator_token (blank counts as missing); tools mode does not", () =>
    Effect.gen(function* () {
      for (const spec of [{ url: "http://127.0.0.1:8090" }, { url: "http://127.0.0.1:8090", mode: "decide", operator_token: "  " }]) {
        const e = yield* configError(spec)
        expect(e.path).toBe("operator_token")
        expect(e.reason).toContain("is required when mode is decide")
      }
      const j = yield* build({ url: "http://127.0.0.1:8090", mode: "tools" })
      expect(j.kind).toBe("toolgate")
    }))

  it.effect("bad values name their key", () =>
    Effect.gen(function* () {
      expect((yield* configError({ url: "http://g", operator_token: "t", mode: "enforce" })).path).toBe("mode")
      expect((yield* configError({ url: "http://g", operator_token: "t", timeout_s: 0 })).reason).toBe("must be a positive number")
      expect((yield* configError({ url: "http://g", operator_token: "t", principal: "a\nb" })).reason).toContain("printable ASCII")
      expect((yield* configError({ url: "http://g", operator_token: "t", verify_tls: 3 })).reason).toBe("must be true, false or the path of a CA bundle")
      const ca = yield* configError({ url: "https://g", operator_token: "t", verify_tls: "nope/ca.pem" })
      expect(ca.path).toBe("verify_tls")
      expect(ca.reason).toBe(`CA bundle not found: ${join(root, "nope/ca.pem")}`)
    }))

  it.effect("decoded config: defaults, expanded strings, blanks as none, the token redacted", () =>
    Effect.gen(function* () {
      const c = yield* decodeToolgateConfig(
        "tg",
        { kind: "toolgate", url: "http://127.0.0.1:8090//", operator_token: " s3cret ", timeout_s: "2.5", verify_tls: "false", principal: "", session_id: null },
        { timeout_s: 60 },
        root
      )
      expect(c).toMatchObject({ url: "http://127.0.0.1:8090", mode: "decide", timeout_s: 2.5, verify_tls: false, principal: null, session_id: null, policy: null })
      expect(Redacted.value(c.operator_token!)).toBe("s3cret")
      expect(String(c.operator_token)).not.toContain("s3cret")
      expect(toolgateHeaders(c, ctx)).toEqual({
        "content-type": "application/json",
        accept: "application/json",
        authorization: "Bearer s3cret",
        "x-request-id": "req-1",
        "x-aex-call-id": "req-1",
        "x-aex-agent-id": "agent"
      })
      const d = yield* decodeToolgateConfig("tg", { kind: "toolgate", url: "http://g", mode: "tools" }, { timeout_s: 60 }, root)
      expect(d).toMatchObject({ timeout_s: 60, verify_tls: true, operator_token: null, ca: null })
      expect(toolgateHeaders(d, ctx)).not.toHaveProperty("authorization")
    }))
})
