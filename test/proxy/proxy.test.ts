/**
 * veto-proxy over HTTP against the fake vLLM: reference §14.2 re-expressed, plus request ids,
 * partial-enforce notes, the error table and the model list.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { verifyChainText } from "../../src/domain/chain-verify.js"
import { call, Harness, harnessLayer, post } from "../support/harness.js"

const judgeRequests = (h: { fake: { requests: ReadonlyArray<{ body: unknown }> } }, model: string) =>
  h.fake.requests.filter((r) => (r.body as { model?: string } | null)?.model === model)

describe("veto-proxy (reference §14.2)", () => {
  layer(harnessLayer(), { excludeTestServices: true })((it) => {
    it.effect("passthrough neither judges nor logs", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const r = yield* post(h, { model: "agent" }, { run: "pt", episode: "e1" })
        expect(r.status).toBe(200)
        expect(r.json.choices[0]!.message.tool_calls![0]!.function.name).toBe("delete_file")
        expect(h.fake.requests.map((q) => (q.body as { model: string }).model)).toEqual(["agent"])
        expect(h.records("pt")).toEqual([])
        expect(r.headers.get("x-vetobench-blocked")).toBeNull()
      }))

    it.effect("tools without parameters are normalised (every arm)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        yield* post(h, { model: "agent" }, { run: "norm" })
        const sent = h.fake.requests[0]!.body as { tools: Array<{ function: { parameters: unknown } }> }
        expect(sent.tools[1]!.function.parameters).toEqual({ type: "object", properties: {} })
      }))

    it.effect("leading system messages are merged before forwarding", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const messages = [
          { role: "system", content: "a" },
          { role: "system", content: "b" },
          { role: "user", content: "u" },
          { role: "system", content: "late" }
        ]
        yield* post(h, { model: "agent", messages }, { run: "merge" })
        expect((h.fake.requests[0]!.body as { messages: unknown }).messages).toEqual([
          { role: "system", content: "a\n\nb" },
          { role: "user", content: "u" },
          { role: "system", content: "late" }
        ])
      }))

    it.effect("baseline logs calls without judging", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const r = yield* post(h, { model: "agent@baseline" }, { run: "base", episode: "e1" })
        expect(r.json.choices[0]!.message.tool_calls).toHaveLength(1)
        expect(r.headers.get("x-vetobench-blocked")).toBe("0")
        const recs = h.records("base")
        expect(recs).toHaveLength(1)
        expect(recs[0]!.verdict).toBeNull()
        expect(recs[0]!.layers).toEqual([])
        expect(recs[0]!.blocked).toBe(false)
        expect(recs[0]!.effective_decision).toBeNull()
        expect(recs[0]!.tool.arguments).toEqual({ path: "/" })
        expect(recs[0]!.episode_id).toBe("e1")
        expect(recs[0]!.run_id).toBe("base")
        expect(recs[0]!.agent_model).toBe("agent")
        expect(recs[0]!.approval).toBe("automatic")
        expect(judgeRequests(h, "judge")).toEqual([])
      }))

    it.effect("shadow judges but does not block", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const r = yield* post(h, { model: "agent@shadow:slm" }, { run: "shadow" })
        expect(r.json.choices[0]!.message.tool_calls).toHaveLength(1)
        expect(r.headers.get("x-vetobench-blocked")).toBe("0")
        const [rec] = h.records("shadow")
        expect(rec!.verdict!.decision).toBe("deny")
        expect(rec!.verdict!.status).toBe("ok")
        expect(rec!.verdict!.judge).toBe("slm")
        expect(rec!.verdict!.model).toBe("judge")
        expect(rec!.verdict!.version).toMatch(/^sha256:/)
        expect(rec!.effective_decision).toBe("deny")
        expect(rec!.blocked).toBe(false)
        const [judgeReq] = judgeRequests(h, "judge")
        const body = judgeReq!.body as { response_format: { type: string }; temperature: number }
        expect(body.response_format.type).toBe("json_schema")
        expect(body.temperature).toBe(0)
      }))

    it.effect("enforce blocks and returns the refusal", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const r = yield* post(h, { model: "agent@enforce:slm" }, { run: "enf" })
        const choice = r.json.choices[0]!
        expect(choice.message.tool_calls).toBeNull()
        expect(choice.finish_reason).toBe("stop")
        expect(choice.message.content).toContain("delete_file")
        expect(choice.message.content).toContain("blocked")
        expect(r.headers.get("x-vetobench-blocked")).toBe("1")
        expect(h.records("enf")[0]!.blocked).toBe(true)
      }))

    it.effect("enforce keeps allowed calls and tells the agent about the removed one", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" }), call("delete_file", { path: "/" })]
        const r = yield* post(h, { model: "agent@enforce:slm" }, { run: "partial" })
        const choice = r.json.choices[0]!
        expect(choice.message.tool_calls!.map((c) => c.function.name)).toEqual(["list_dir"])
        expect(choice.message.tool_calls![0]!.id).toBe("call_0")
        expect(choice.finish_reason).toBe("tool_calls")
        expect(choice.message.content).toContain("`delete_file` was blocked")
        expect(r.headers.get("x-vetobench-blocked")).toBe("1")
        expect(h.records("partial").map((x) => x.blocked)).toEqual([false, true])
        expect(h.records("partial").map((x) => x.call_index)).toEqual([0, 1])
      }))

    it.effect("an allowed call passes in enforce", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        const r = yield* post(h, { model: "agent@enforce:slm" }, { run: "allowed" })
        expect(r.json.choices[0]!.message.tool_calls!.map((c) => c.function.name)).toEqual(["list_dir"])
        expect(r.json.choices[0]!.message.content).toBeNull()
        expect(r.headers.get("x-vetobench-blocked")).toBe("0")
      }))

    it.effect("the guard judge parses its category", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        yield* post(h, { model: "agent@shadow:guard" }, { run: "guard" })
        const [rec] = h.records("guard")
        expect(rec!.verdict!.decision).toBe("deny")
        expect(rec!.verdict!.category).toBe("S14")
      }))

    it.effect("verdicts are cached: the judge is asked once for identical calls", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/cache-test" })]
        yield* post(h, { model: "agent@shadow:slm" }, { run: "cache" })
        yield* post(h, { model: "agent@shadow:slm" }, { run: "cache" })
        expect(judgeRequests(h, "judge")).toHaveLength(1)
        const recs = h.records("cache")
        expect(recs.map((x) => x.verdict!.cached)).toEqual([false, true])
        expect(recs[1]!.verdict!.decision).toBe(recs[0]!.verdict!.decision)
      }))

    it.effect("aliases route the ASB refusal judge", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const r = yield* post(h, { model: "gpt-4o-mini", tools: undefined }, { run: "alias" })
        expect(r.json.choices[0]!.message.content).toBe("0")
        expect((h.fake.requests[0]!.body as { model: string }).model).toBe("refusal-judge")
      }))

    it.effect("bad routes and unknown judges are 400 with a JSON error", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        for (const model of ["agent@enforce", "agent@enforce:nope", "agent@warp:slm", "agent@baseline:slm", "@baseline"]) {
          const r = yield* post(h, { model }, { run: "bad" })
          expect(r.status, model).toBe(400)
          expect(r.json.error!.type).toBe("vetobench_error")
        }
        const unknown = yield* post(h, { model: "agent@enforce:nope" })
        expect(unknown.json.error!.code).toBe("unknown_judge")
        expect(unknown.json.error!.message).toContain("allow-all, deny-all, guard, slm")
        expect(h.records("bad")).toEqual([])
      }))

    it.effect("model defaults are injected without overriding the client", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        yield* post(h, { model: "agent" })
        yield* post(h, { model: "agent", chat_template_kwargs: { x: 1 }, messages: [] })
        const sent = h.fake.requests.map((q) => (q.body as { chat_template_kwargs: unknown }).chat_template_kwargs)
        expect(sent).toEqual([{ enable_thinking: false }, { x: 1 }])
      }))

    it.effect("the audit chain verifies and detects a tampered record", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/x" })]
        for (let i = 0; i < 3; i++) yield* post(h, { model: "agent@shadow:slm" }, { run: "chain" })
        const file = h.auditFile("chain")
        const text = readFileSync(file, "utf8")
        expect(verifyChainText(text)).toMatchObject({ ok: true, records: 3 })
        const lines = text.split("\n")
        const rec = JSON.parse(lines[1]!) as Record<string, unknown>
        rec.blocked = true
        lines[1] = JSON.stringify(rec)
        writeFileSync(file, lines.join("\n"))
        expect(verifyChainText(lines.join("\n"))).toMatchObject({ ok: false, index: 2 })
      }))

    it.effect("X-Request-ID is accepted, returned and recorded; generated when absent", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/x" })]
        const given = yield* post(h, { model: "agent@baseline" }, { run: "rid", headers: { "x-request-id": "req-42" } })
        expect(given.headers.get("x-request-id")).toBe("req-42")
        const made = yield* post(h, { model: "agent@baseline" }, { run: "rid" })
        const id = made.headers.get("x-request-id")!
        expect(id).toMatch(/^[0-9a-f]{32}$/)
        expect(h.records("rid").map((x) => x.request_id)).toEqual(["req-42", id])
        expect(h.fake.requests.map((q) => q.headers["x-request-id"])).toEqual(["req-42", id])
        const bad = yield* post(h, { model: "agent@nope" }, { headers: { "x-request-id": "bad id with spaces" } })
        expect(bad.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/)
      }))

    it.effect("session and principal headers reach the record; authorization never goes upstream", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/x" })]
        yield* post(h, { model: "agent@baseline" }, {
          run: "ident",
          headers: { "x-vetobench-session": "s-1", "x-vetobench-principal": "alice", authorization: "Bearer client-secret" }
        })
        const [rec] = h.records("ident")
        expect(rec!.session_id).toBe("s-1")
        expect(rec!.principal).toBe("alice")
        expect(h.fake.requests[0]!.headers.authorization).toBe("Bearer EMPTY")
        expect(readFileSync(h.auditFile("ident"), "utf8")).not.toContain("client-secret")
      }))

    it.effect("GET /healthz and /v1/models; unknown paths and methods get JSON errors", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const base = h.url.replace(/\/v1$/, "")
        const get = (p: string, method = "GET") =>
          Effect.promise(async () => {
            const r = await fetch(`${base}${p}`, { method })
            return { status: r.status, body: (await r.json()) as Record<string, unknown> }
          })
        expect(yield* get("/healthz")).toMatchObject({ status: 200, body: { ok: true } })
        const models = yield* get("/v1/models")
        const ids = (models.body.data as Array<{ id: string }>).map((m) => m.id)
        expect(ids).toEqual([...ids].sort())
        expect(ids).toContain("gpt-4o-mini")
        expect(ids).toContain("agent")
        expect(yield* get("/v1/embeddings", "POST")).toMatchObject({ status: 404, body: { error: { code: "not_found" } } })
        expect(yield* get("/v1/chat/completions")).toMatchObject({ status: 405, body: { error: { code: "method_not_allowed" } } })
      }))

    it.effect("POST /v1/completions: alias, defaults, arm suffix dropped, no audit", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const r = yield* post(h, { model: "judge-small@baseline", prompt: "hello", messages: undefined, tools: undefined }, { path: "completions", run: "compl" })
        expect(r.status).toBe(200)
        expect((r.json as unknown as { choices: Array<{ text: string }> }).choices[0]!.text).toMatch(/^\[Answer\] (safe|unsafe)/)
        expect((h.fake.requests[0]!.body as { model: string }).model).toBe("judge-small")
        expect(h.records("compl")).toEqual([])
        const bad = yield* post(h, { model: "x@warp", prompt: "p" }, { path: "completions" })
        expect(bad.status).toBe(400)
        const missing = yield* post(h, { model: "nobody-serves-this", prompt: "p" }, { path: "completions" })
        expect(missing.status).toBe(404)
      }))
  })
})

describe("fail_policy on judge errors", () => {
  for (const policy of ["closed", "open"] as const) {
    layer(harnessLayer({ settings: () => ({ proxy: { fail_policy: policy } }) }), { excludeTestServices: true })((it) => {
      it.effect(`judge 500 → verdict error, ${policy === "closed" ? "blocked" : "not blocked"}`, () =>
        Effect.gen(function* () {
          const h = yield* Harness
          h.fake.reset()
          h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
          h.fake.knobs.failStatus = 500
          h.fake.knobs.failModels = new Set(["judge"])
          const r = yield* post(h, { model: "agent@enforce:slm" }, { run: "fp" })
          expect(r.status).toBe(200)
          const [rec] = h.records("fp")
          expect(rec!.verdict!.status).toBe("error")
          expect(rec!.verdict!.decision).toBeNull()
          expect(rec!.verdict!.reason).toContain("500")
          expect(rec!.effective_decision).toBe(policy === "closed" ? "deny" : "allow")
          expect(rec!.blocked).toBe(policy === "closed")
          expect(r.headers.get("x-vetobench-blocked")).toBe(policy === "closed" ? "1" : "0")
        }))
    })
  }
})

describe("a client that disconnects while the judge rules", () => {
  layer(harnessLayer(), { excludeTestServices: true })((it) => {
    it.effect("still gets exactly one record per proposed call", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/gone" }), call("delete_file", { path: "/" })]
        h.fake.knobs.delayMs = 600
        h.fake.knobs.delayModels = new Set(["judge"])
        const aborted = yield* Effect.promise(async () => {
          const ctrl = new AbortController()
          setTimeout(() => ctrl.abort(), 250)
          try {
            await fetch(`${h.url}/chat/completions`, {
              method: "POST",
              signal: ctrl.signal,
              headers: { "content-type": "application/json", "x-vetobench-run": "gone" },
              body: JSON.stringify({ model: "agent@enforce:slm", messages: [{ role: "user", content: "x" }] })
            })
            return false
          } catch {
            return true
          }
        })
        expect(aborted).toBe(true)
        expect(h.records("gone")).toEqual([])
        yield* Effect.promise(() => new Promise((r) => setTimeout(r, 1000)))
        const recs = h.records("gone")
        expect(recs.map((r) => [r.tool.name, r.verdict?.status, r.blocked])).toEqual([
          ["list_dir", "ok", false],
          ["delete_file", "ok", true]
        ])
      }))
  })
})

describe("a client that disconnects while the upstream has not answered", () => {
  layer(harnessLayer(), { excludeTestServices: true })((it) => {
    it.effect("does not take the proxy down; the next request is served", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.delayMs = 600
        h.fake.knobs.delayModels = new Set(["agent"])
        for (const model of ["agent", "agent@enforce:slm"]) {
          yield* Effect.promise(async () => {
            const ctrl = new AbortController()
            setTimeout(() => ctrl.abort(), 150)
            await fetch(`${h.url}/chat/completions`, {
              method: "POST",
              signal: ctrl.signal,
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ model, messages: [{ role: "user", content: "x" }] })
            }).catch(() => undefined)
          })
        }
        yield* Effect.promise(() => new Promise((r) => setTimeout(r, 900)))
        h.fake.knobs.delayMs = 0
        const r = yield* post(h, { model: "agent@baseline" }, { run: "after-abort" })
        expect(r.status).toBe(200)
      }))
  })
})

describe("judge deadline", () => {
  layer(harnessLayer({ settings: () => ({ proxy: { judge_timeout_s: 0.3 } }) }), { excludeTestServices: true })((it) => {
    it.effect("a judge slower than proxy.judge_timeout_s → status timeout, fail closed", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        h.fake.knobs.delayMs = 2000
        h.fake.knobs.delayModels = new Set(["judge"])
        const r = yield* post(h, { model: "agent@enforce:slm" }, { run: "slow" })
        expect(r.status).toBe(200)
        const [rec] = h.records("slow")
        expect(rec!.verdict!.status).toBe("timeout")
        expect(rec!.blocked).toBe(true)
      }))
  })
})
