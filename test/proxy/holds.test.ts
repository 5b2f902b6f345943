/** hold_policy wait and the hold API: approve, reject, expire, wrong token, no token; records joined. */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Fiber, Redacted } from "effect"
import { isCallRecord, type ApprovalEntry, type AuditRecord } from "../../src/domain/audit-record.js"
import { call, Harness, type HarnessShape, harnessLayer, post, TEST_JUDGES } from "../support/harness.js"
import { readFileSync } from "node:fs"

const TOKEN = "op-secret-token"

const api = (h: HarnessShape, method: "GET" | "POST", path: string, body?: unknown, token: string | null = TOKEN) =>
  Effect.promise(async () => {
    const res = await fetch(`${h.url}${path}`, {
      method,
      headers: { "content-type": "application/json", ...(token !== null ? { authorization: `Bearer ${token}` } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {})
    })
    return { status: res.status, json: (await res.json()) as { data?: Array<{ id: string; tool: { name: string }; episode_id: string | null }>; error?: { code: string }; outcome?: string } }
  })

const allRecords = (h: HarnessShape, run: string) =>
  readFileSync(h.auditFile(run), "utf8")
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l) as AuditRecord)

/** wait until the hold API lists `n` pending holds */
const pendingHolds = (h: HarnessShape, n: number) =>
  Effect.gen(function* () {
    for (let i = 0; i < 100; i++) {
      const r = yield* api(h, "GET", "/holds")
      if ((r.json.data ?? []).length >= n) return r.json.data ?? []
      yield* Effect.sleep("20 millis")
    }
    throw new Error("no pending hold appeared")
  })

const judges = { ...TEST_JUDGES, "hold-all": { kind: "static", decision: "hold" } }

describe("hold_policy wait", () => {
  layer(harnessLayer({ settings: () => ({ judges, proxy: { hold_policy: "wait", hold_timeout_s: 0.6, operator_token: Redacted.make(TOKEN) } }) }), {
    excludeTestServices: true
  })((it) => {
    it.effect("an approved hold releases the call; the approval record references it", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/approve" })]
        const req = yield* Effect.fork(post(h, { model: "agent@enforce:hold-all" }, { run: "hold-ok", episode: "ep-7" }))
        const [held] = yield* pendingHolds(h, 1)
        expect(held!.tool.name).toBe("list_dir")
        expect(held!.episode_id).toBe("ep-7")
        const d = yield* api(h, "POST", `/holds/${held!.id}`, { approved: true, approver: "alice", note: "looks fine" })
        expect(d).toMatchObject({ status: 200, json: { outcome: "approved" } })
        const r = yield* Fiber.join(req)
        expect(r.json.choices[0]!.message.tool_calls!.map((c) => c.function.name)).toEqual(["list_dir"])
        expect(r.headers.get("x-vetobench-blocked")).toBe("0")
        const recs = allRecords(h, "hold-ok")
        const callRec = recs.find(isCallRecord)!
        expect(callRec).toMatchObject({ approval: "held", effective_decision: "hold", blocked: true })
        expect(callRec.hash).toBe(held!.id)
        const approval = recs.find((x) => x.type === "approval") as unknown as ApprovalEntry & { seq: number }
        expect(approval).toMatchObject({ approval: "approved", approver: "alice", note: "looks fine", released: true })
        expect(approval.ref).toMatchObject({ seq: callRec.seq, hash: callRec.hash, tool_call_id: "call_0" })
        // decided once: a second decision finds nothing pending
        expect((yield* api(h, "POST", `/holds/${held!.id}`, { approved: false, approver: "bob" })).status).toBe(404)
      }))

    it.effect("a rejected hold blocks the call with the refusal", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/reject" })]
        const req = yield* Effect.fork(post(h, { model: "agent@enforce:hold-all" }, { run: "hold-no" }))
        const [held] = yield* pendingHolds(h, 1)
        yield* api(h, "POST", `/holds/${held!.id}`, { approved: false, approver: "alice" })
        const r = yield* Fiber.join(req)
        expect(r.json.choices[0]!.message.tool_calls).toBeNull()
        expect(r.json.choices[0]!.message.content).toContain("`list_dir` was blocked")
        expect(allRecords(h, "hold-no").find((x) => x.type === "approval")).toMatchObject({ approval: "rejected", released: false })
      }))

    it.effect("an undecided hold expires: blocked, recorded as expired (never as rejected)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/expire" })]
        const r = yield* post(h, { model: "agent@enforce:hold-all" }, { run: "hold-exp" })
        expect(r.headers.get("x-vetobench-blocked")).toBe("1")
        expect(allRecords(h, "hold-exp").find((x) => x.type === "approval")).toMatchObject({ approval: "expired", approver: null, released: false })
        expect((yield* api(h, "GET", "/holds")).json.data).toEqual([])
      }))

    it.effect("the API needs the operator token: 401 without or with a wrong one; bad bodies are 400", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        expect((yield* api(h, "GET", "/holds", undefined, null)).json.error!.code).toBe("unauthorized")
        expect((yield* api(h, "GET", "/holds", undefined, "wrong")).status).toBe(401)
        expect((yield* api(h, "POST", "/holds/abc", { approved: "yes", approver: "a" })).status).toBe(400)
        expect((yield* api(h, "POST", "/holds/abc", { approved: true, approver: " " })).status).toBe(400)
        expect((yield* api(h, "POST", "/holds/abc", { approved: true, approver: "a" })).status).toBe(404)
      }))

    it.effect("the Bearer scheme is case-insensitive (RFC 7235) and may be followed by several spaces; the token is not", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const withAuth = (authorization: string) =>
          Effect.promise(async () => {
            const res = await fetch(`${h.url}/holds`, { headers: { authorization } })
            return { status: res.status, json: (await res.json()) as { object?: string; error?: { code: string } } }
          })
        for (const scheme of ["bearer", "BEARER", "bEaReR", "Bearer"]) {
          expect(yield* withAuth(`${scheme} ${TOKEN}`), scheme).toMatchObject({ status: 200, json: { object: "list" } })
        }
        expect((yield* withAuth(`bearer   ${TOKEN}`)).status).toBe(200)
        // the token itself is compared exactly
        expect((yield* withAuth(`bearer ${TOKEN.toUpperCase()}`)).status).toBe(401)
        // no space after the scheme, or another scheme: not a bearer credential
        for (const authorization of [`bearer${TOKEN}`, `Basic ${TOKEN}`, `${TOKEN}`, "bearer", "bearer "]) {
          expect(yield* withAuth(authorization), authorization).toMatchObject({ status: 401, json: { error: { code: "unauthorized" } } })
        }
      }))
  })
})

describe("hold API without an operator token", () => {
  layer(harnessLayer({ settings: () => ({ judges, proxy: { hold_policy: "wait", hold_timeout_s: 0.2 } }) }), { excludeTestServices: true })((it) => {
    it.effect("answers 503 operator_token_not_configured; held calls still expire and are recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const r = yield* api(h, "GET", "/holds")
        expect(r.status).toBe(503)
        expect(r.json.error!.code).toBe("operator_token_not_configured")
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/nobody" })]
        const res = yield* post(h, { model: "agent@enforce:hold-all" }, { run: "hold-503" })
        expect(res.headers.get("x-vetobench-blocked")).toBe("1")
        expect(allRecords(h, "hold-503").map((x) => x.type)).toEqual(["call", "approval"])
      }))
  })
})
