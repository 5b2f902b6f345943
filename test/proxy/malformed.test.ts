/**
 * Bad input on both sides of the proxy. From the client: the run-id grammar, request fields of the
 * wrong type, bodies nested too deep — a 400 naming what was wrong, with the request id, never a
 * 5xx; a bounded fuzz of malformed requests leaves the proxy healthy and its chains verifying. From
 * the upstream: a 200 that is not a JSON object, a shape the gate cannot read, an answer nested too
 * deep (502), a non-SSE answer to a streaming request and a stream without `[DONE]` (an error event,
 * with every call seen recorded), tool arguments nested too deep (ruled and recorded, fail_policy).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { verifyChainText } from "../../src/domain/chain-verify.js"
import { MAX_JSON_DEPTH } from "../../src/domain/json-depth.js"
import { RUN_ID_MAX_LENGTH } from "../../src/domain/run-id.js"
import { Harness, type HarnessShape, harnessLayer, post, type PostResult, TOOLS } from "../support/harness.js"
import { startHostileUpstream } from "../support/hostile-upstream.js"
import { sseEvents } from "../support/readers.js"

const hostile = await startHostileUpstream()
afterAll(() => hostile.close())

const JUDGES = { "deny-all": { kind: "static", decision: "deny" }, "allow-all": { kind: "static", decision: "allow" } } as const

/** a proxy-generated error: status, code, and the request id in the body */
const expectError = (r: PostResult, status: number, code: string, mentions?: string) => {
  expect(r.status, r.text).toBe(status)
  const body = JSON.parse(r.text) as { error: { type: string; code: string; message: string; request_id: string } }
  expect(body.error).toMatchObject({ type: "vetobench_error", code })
  expect(body.error.request_id).toBe(r.headers.get("x-request-id"))
  if (mentions !== undefined) expect(body.error.message).toContain(mentions)
  return body.error
}

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`

/** the audit files of a harness, every chain verified */
const expectChainsVerify = (h: HarnessShape) => {
  const dir = h.settings.proxy.audit_dir
  if (!existsSync(dir)) return 0
  const files = readdirSync(dir).filter((f) => f.endsWith(".jsonl") && !f.endsWith(".anchor.jsonl"))
  for (const f of files) {
    const v = verifyChainText(readFileSync(path.join(dir, f), "utf8"))
    expect(v.ok, `${f}: ${JSON.stringify(v)}`).toBe(true)
  }
  return files.length
}

describe("client mistakes are 400s with the request id", () => {
  layer(harnessLayer({ settings: () => ({ judges: JUDGES }) }), { excludeTestServices: true })((it) => {
    it.effect("the run-id grammar: valid ids record, anything else is a 400 naming x-vetobench-run and creates no file", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const valid = ["pilot-2025.01_a", "exp.asbench.qwen3.8-27b.enforce-rules.shard-1-of-4", "a".repeat(RUN_ID_MAX_LENGTH), "9"]
        const invalid = [".x", "..", "-x", "a/b", "a b", "a".repeat(RUN_ID_MAX_LENGTH + 1), "a".repeat(245), "victim.anchor", "x.jsonl", "x.lock", "x.torn-1", "a\\b", "a:b"]
        for (const run of valid) {
          const r = yield* post(h, { model: "agent@baseline" }, { run })
          expect(r.status, `${run}: ${r.text}`).toBe(200)
          expect(existsSync(h.auditFile(run))).toBe(true)
        }
        const before = readdirSync(h.settings.proxy.audit_dir).sort()
        for (const run of invalid) {
          const r = yield* post(h, { model: "agent@enforce:deny-all" }, { run })
          expectError(r, 400, "invalid_request", "x-vetobench-run")
        }
        expect(readdirSync(h.settings.proxy.audit_dir).sort()).toEqual(before)
      }))

    it.effect("request fields of the wrong type are a 400 naming the field, never forwarded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
          [{ messages: "hello" }, "`messages`"],
          [{ messages: { role: "user" } }, "`messages`"],
          [{ messages: [null] }, "`messages[0]`"],
          [{ messages: [{ role: "user", content: "x" }], tools: { type: "function" } }, "`tools`"],
          [{ messages: [{ role: "user", content: "x" }], tools: ["x"] }, "`tools[0]`"],
          [{ messages: [{ role: "user", content: "x" }], stream: "true" }, "`stream`"],
          [{ messages: [{ role: "user", content: "x" }], model: 7 }, "`model`"],
          [{ messages: [{ role: "user", content: "x" }], temperature: "1e400" }, "too large"]
        ]
        for (const [body, field] of cases) {
          const r = yield* Effect.promise(() =>
            fetch(`${h.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "agent@enforce:deny-all", ...body }).replace(`"1e400"`, "1e400") })
          ).pipe(Effect.flatMap((res) => Effect.promise(async () => ({ status: res.status, headers: res.headers, text: await res.text(), json: { choices: [] } }))))
          expectError(r as PostResult, 400, "invalid_request", field)
        }
        expect(h.fake.requests.filter((q) => q.path.endsWith("/chat/completions"))).toHaveLength(0)
      }))

    it.effect(`a client body nested deeper than ${MAX_JSON_DEPTH} is a 400 (also 5,000 deep, on every JSON route); at the limit it is served`, () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const send = (route: string, model: string, depth: number) =>
          Effect.promise(async (): Promise<PostResult> => {
            // written by hand: JSON.stringify itself overflows on 5,000 levels
            const body = `{"model":${JSON.stringify(model)},"prompt":"x","messages":[{"role":"user","content":"go"}],"extra":${nested(depth)}}`
            const res = await fetch(`${h.url}/${route}`, { method: "POST", headers: { "content-type": "application/json" }, body })
            return { status: res.status, headers: res.headers, text: await res.text(), json: { choices: [] } }
          })
        for (const [route, model] of [["chat/completions", "agent@enforce:deny-all"], ["completions", "agent"]] as const) {
          for (const depth of [MAX_JSON_DEPTH, 5000, 100_000]) {
            expectError(yield* send(route, model, depth), 400, "invalid_request", `nested deeper than ${MAX_JSON_DEPTH}`)
          }
          // the body object itself is a level: `extra` may hold the limit minus one
          const ok = yield* send(route, model.replace("enforce:deny-all", "baseline"), MAX_JSON_DEPTH - 1)
          expect(ok.status, ok.text).toBe(200)
        }
      }))

    it.effect("every proxy error body carries the request id (400, 404, 405, 413-free routes)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        expectError(yield* post(h, { model: "agent@nonsense" }), 400, "invalid_route")
        expectError(yield* post(h, { model: "agent@enforce:nobody" }), 400, "unknown_judge")
        expectError(yield* post(h, { model: "no-such-model" }), 404, "no_upstream")
        expectError(yield* post(h, { model: "agent" }, { path: "nowhere" }), 404, "not_found")
        const bad = yield* Effect.promise(async () => {
          const res = await fetch(`${h.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json", "x-request-id": "mine-1" }, body: "{" })
          return { status: res.status, headers: res.headers, text: await res.text(), json: { choices: [] } } as PostResult
        })
        expect(expectError(bad, 400, "invalid_json").request_id).toBe("mine-1")
      }))

    it.effect("requests Node's HTTP parser refuses, and models named like Object's own properties, get JSON errors with a request id", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const { port, hostname } = new URL(h.url)
        const raw = (text: string) =>
          Effect.promise(
            () =>
              new Promise<string>((resolve) => {
                const socket = net.connect(Number(port), hostname, () => socket.write(text))
                let got = ""
                socket.on("data", (d) => (got += d.toString("utf8")))
                socket.on("close", () => resolve(got))
                socket.on("error", () => resolve(got))
              })
          )
        const parse = (response: string) => {
          const [head = "", body = ""] = response.split("\r\n\r\n")
          return { status: Number(head.split(" ")[1]), id: /x-request-id: (\w+)/i.exec(head)?.[1], body: JSON.parse(body) as { error: { code: string; request_id: string } } }
        }
        const chunked = parse(
          yield* raw(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`)
        )
        expect(chunked.status).toBe(400)
        expect(chunked.body.error).toMatchObject({ code: "invalid_request", request_id: chunked.id })
        const expectation = parse(yield* raw(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nexpect: foo\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`))
        expect(expectation.status).toBe(417)
        expect(expectation.body.error.request_id).toBe(expectation.id)
        for (const model of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
          const r = yield* post(h, { model })
          expect(expectError(r, 404, "no_upstream").message).toContain(`'${model}'`)
        }
      }))

    it.effect("a bounded fuzz of 2,000 malformed requests: no 5xx, the proxy healthy after, every chain verifies", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const base = h.url.replace(/\/v1$/, "")
        const model = fc.oneof(
          fc.constantFrom("agent", "agent@baseline", "agent@shadow:deny-all", "agent@enforce:deny-all", "agent@enforce:allow-all", "agent@enforce:slm"),
          fc.constantFrom("agent@", "@", "agent@enforce", "agent@enforce:", "agent@shadow:nobody", "agent@passthrough", "", "agent@@enforce:deny-all", "x@enforce:deny-all"),
          fc.string({ maxLength: 20 })
        )
        const value = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant(JSON.parse(nested(200)) as unknown))
        const body = fc.oneof(
          // a chat request with some fields wrong
          fc.record(
            { model: fc.oneof(model, value), messages: fc.oneof(fc.constant([{ role: "user", content: "go" }]), value), tools: fc.oneof(fc.constant(TOOLS), value), stream: fc.oneof(fc.boolean(), value) },
            { requiredKeys: [] }
          ).map((b) => JSON.stringify(b)),
          // not JSON, or not an object
          fc.oneof(fc.string({ maxLength: 50 }), fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)), fc.constant(nested(5000)), fc.constant("\uFEFF{}"))
        )
        const header = fc.string({ unit: fc.constantFrom("a", "Z", "0", ".", "-", "_", "/", " ", ":", "é", "\u00ff"), maxLength: 300 })
        const route = fc.constantFrom("/v1/chat/completions", "/v1/chat/completions", "/v1/completions", "/v1/holds", "/v1/models", "/v1/unknown", "/healthz")
        const method = fc.constantFrom("POST", "POST", "POST", "GET", "PUT", "DELETE")
        const statuses = new Map<number, number>()
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(method, route, body, fc.option(header, { nil: undefined }), fc.option(header, { nil: undefined }), async (m, r, b, run, rid) => {
              const headers: Record<string, string> = { "content-type": "application/json" }
              if (run !== undefined) headers["x-vetobench-run"] = run
              if (rid !== undefined) headers["x-request-id"] = rid
              const res = await fetch(`${base}${r}`, { method: m, headers, ...(m === "GET" ? {} : { body: b }) })
              const text = await res.text()
              statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
              // the hold API answers 503 while no operator token is configured: the service, not the request, is missing
              if (!text.includes('"operator_token_not_configured"')) expect(res.status, `${m} ${r} ${b.slice(0, 200)} → ${text.slice(0, 300)}`).toBeLessThan(500)
              expect(res.headers.get("x-request-id")).not.toBeNull()
              if (res.status >= 400 && res.headers.get("content-type")?.includes("json") === true && !text.includes('"upstream_error"')) {
                const e = JSON.parse(text) as { error: { request_id?: string } }
                if (typeof e.error === "object" && e.error !== null && "type" in e.error) expect(e.error.request_id).toBe(res.headers.get("x-request-id"))
              }
            }),
            { numRuns: 2000 }
          )
        )
        // not vacuous: some requests were served, many refused
        expect(statuses.get(200) ?? 0).toBeGreaterThan(20)
        expect(statuses.get(400) ?? 0).toBeGreaterThan(200)
        const health = yield* Effect.promise(() => fetch(`${base}/healthz`).then((x) => x.json() as Promise<{ ok: boolean }>))
        expect(health.ok).toBe(true)
        expect(expectChainsVerify(h)).toBeGreaterThan(0)
      }), 300_000) // bounded by its 2,000 requests; the timeout only has to allow a busy 2-core machine
  })
})

describe("upstream answers the gate cannot read", () => {
  layer(harnessLayer({ upstream: { base_url: hostile.url }, settings: () => ({ judges: JUDGES, proxy: { fail_policy: "closed", max_answer_bytes: 65536 } }) }), { excludeTestServices: true })((it) => {
    const CALL = { id: "call_1", type: "function", function: { name: "delete_file", arguments: '{"path":"/"}' } }
    const answer = (message: unknown) => JSON.stringify({ id: "x", object: "chat.completion", choices: [{ index: 0, message, finish_reason: "tool_calls" }] })

    it.effect("a 200 that is not a JSON object, or not of a shape the gate reads, is a 502 in every logged arm; passthrough relays it", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const bodies: ReadonlyArray<readonly [string, string]> = [
          ["not json at all", "not JSON"],
          ['[{"tool_calls": []}]', "not a JSON object"],
          ['{"choices": {"0": {"message": {"tool_calls": []}}}}', "choices is not an array"],
          ['{"choices": ["x"]}', "choices[0] is not an object"],
          [answer("hello"), "choices[0].message is not an object"],
          [answer({ role: "assistant", tool_calls: { 0: CALL } }), "tool_calls is not an array"],
          [answer({ role: "assistant", function_call: "rm -rf /" }), "function_call is not an object"],
          [`{"choices":${nested(MAX_JSON_DEPTH)}}`, `nested deeper than ${MAX_JSON_DEPTH}`],
          [`{"choices":${nested(5000)}}`, `nested deeper than ${MAX_JSON_DEPTH}`]
        ]
        for (const [body, mention] of bodies) {
          hostile.answer = { body }
          for (const model of ["agent@baseline", "agent@shadow:allow-all", "agent@enforce:deny-all"]) {
            const r = yield* post(h, { model }, { run: "unreadable" })
            expectError(r, 502, "upstream_invalid_response", mention)
          }
          const pass = yield* post(h, { model: "agent" }, { run: "unreadable" })
          expect(pass.status).toBe(200)
        }
        expect(h.records("unreadable")).toEqual([])
      }))

    it.effect("answers larger than proxy.max_answer_bytes: a buffered one is a 502, one streamed event ends the stream; many small events are fine", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const big = "x".repeat(100_000)
        hostile.answer = { body: answer({ role: "assistant", content: big }) }
        const r = yield* post(h, { model: "agent@enforce:deny-all" }, { run: "big" })
        expect(r.status).toBe(502)
        expect(r.text).toContain("proxy.max_answer_bytes")
        const chunk = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`
        hostile.answer = { contentType: "text/event-stream", body: [chunk("hi"), chunk(big).slice(0, 40_000), chunk(big).slice(40_000), "data: [DONE]\n\n"] }
        const s = yield* post(h, { model: "agent@enforce:deny-all", stream: true }, { run: "big" })
        const events = sseEvents(s.text)
        expect(JSON.parse(events[events.length - 1]!)).toMatchObject({ error: { code: "upstream_invalid_response" } })
        expect(events[events.length - 1]).toContain("proxy.max_answer_bytes")
        // an event that never ends is cut when the text held for it passes the limit
        hostile.answer = { contentType: "text/event-stream", body: [chunk("hi"), `data: ${big}`, big] }
        const endless = sseEvents((yield* post(h, { model: "agent@enforce:deny-all", stream: true }, { run: "big" })).text)
        expect(endless.at(-1)).toContain("proxy.max_answer_bytes")
        hostile.answer = { contentType: "text/event-stream", body: [...Array.from({ length: 30 }, () => chunk("y".repeat(5000))), "data: [DONE]\n\n"] }
        const many = yield* post(h, { model: "agent@enforce:deny-all", stream: true }, { run: "big" })
        expect(sseEvents(many.text).at(-1)).toBe("[DONE]")
      }))

    it.effect("the legacy function_call is ruled like a tool call: denied → removed with a note; allowed → kept; both recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        hostile.answer = { body: answer({ role: "assistant", content: null, function_call: { name: "delete_file", arguments: '{"path":"/"}' } }) }
        const denied = yield* post(h, { model: "agent@enforce:deny-all" }, { run: "legacy-fc" })
        expect(denied.status).toBe(200)
        const m = denied.json.choices[0]!
        expect(m.finish_reason).toBe("stop")
        expect((m.message as Record<string, unknown>).function_call).toBeUndefined()
        expect(m.message.content).toContain("`delete_file` was blocked")
        const allowed = yield* post(h, { model: "agent@enforce:allow-all" }, { run: "legacy-fc" })
        expect((allowed.json.choices[0]!.message as Record<string, unknown>).function_call).toEqual({ name: "delete_file", arguments: '{"path":"/"}' })
        expect(h.records("legacy-fc").map((r) => [r.tool.name, r.blocked, r.tool_call_id])).toEqual([
          ["delete_file", true, null],
          ["delete_file", false, null]
        ])
      }))

    it.effect("tool arguments nested too deep: the call is ruled (fail_policy closed: denied) and recorded with its text", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const args = JSON.stringify({ a: JSON.parse(nested(MAX_JSON_DEPTH + 5)) as unknown })
        hostile.answer = { body: answer({ role: "assistant", content: null, tool_calls: [{ ...CALL, function: { name: "delete_file", arguments: args } }] }) }
        const r = yield* post(h, { model: "agent@enforce:allow-all" }, { run: "deep-args" })
        expect(r.status, r.text).toBe(200)
        expect(r.json.choices[0]!.message.tool_calls).toBeNull()
        const [rec] = h.records("deep-args")
        expect(rec!.verdict?.status).toBe("error")
        expect(rec!.verdict?.reason).toContain(`nested deeper than ${MAX_JSON_DEPTH}`)
        expect(rec!.blocked).toBe(true)
        expect(rec!.tool.arguments).toBe(args)
      }))

    it.effect("arguments readers would read differently (a key twice, an integer beyond 2^53, 1e400) are ruled as unreadable: fail_policy closed denies", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const cases = ['{"cmd":"rm -rf /","cmd":"ls"}', '{"amount":10000000000000001}', '{"x":1e400}', '{"a":{"k":1,"\\u006b":2}}']
        for (const [i, args] of cases.entries()) {
          hostile.answer = { body: answer({ role: "assistant", content: null, tool_calls: [{ ...CALL, function: { name: "run", arguments: args } }] }) }
          const r = yield* post(h, { model: "agent@enforce:allow-all" }, { run: `ambiguous-${i}` })
          expect(r.status, r.text).toBe(200)
          expect(r.json.choices[0]!.message.tool_calls).toBeNull()
          const [rec] = h.records(`ambiguous-${i}`)
          expect(rec!.verdict?.status).toBe("error")
          expect(rec!.verdict?.reason).toContain("ambiguous")
          expect(rec!.tool.arguments).toBe(args)
        }
        // a plain big float, and an integer within the safe range, are not ambiguous
        hostile.answer = { body: answer({ role: "assistant", content: null, tool_calls: [{ ...CALL, function: { name: "run", arguments: '{"a":9007199254740991,"b":1.5e300}' } }] }) }
        const fine = yield* post(h, { model: "agent@enforce:allow-all" }, { run: "ambiguous-ok" })
        expect(fine.json.choices[0]!.message.tool_calls).toHaveLength(1)
      }))

    it.effect("custom tool calls are ruled on their name and input; a call of an unknown type is unreadable", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const custom = { id: "c1", type: "custom", custom: { name: "run", input: "rm -rf /" } }
        hostile.answer = { body: answer({ role: "assistant", content: null, tool_calls: [custom, { id: "c2", type: "mystery", mystery: { x: 1 } }] }) }
        const denied = yield* post(h, { model: "agent@enforce:deny-all" }, { run: "custom-deny" })
        expect(denied.json.choices[0]!.message.tool_calls).toBeNull()
        const allowed = yield* post(h, { model: "agent@enforce:allow-all" }, { run: "custom-allow" })
        // the custom call is ruled (allowed); the unknown type is unreadable (fail_policy closed: removed)
        expect(allowed.json.choices[0]!.message.tool_calls).toEqual([custom])
        expect(h.records("custom-allow").map((r) => [r.tool.name, r.tool.arguments, r.verdict?.status, r.blocked])).toEqual([
          ["run", "rm -rf /", "ok", false],
          ["", "", "error", true]
        ])
        // streamed: custom deltas are assembled and re-emitted in the custom shape
        const chunk = (delta: unknown, finish: string | null = null) => `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
        hostile.answer = {
          contentType: "text/event-stream",
          body: [chunk({ tool_calls: [{ index: 0, id: "c1", type: "custom", custom: { name: "run", input: "rm -" } }] }), chunk({ tool_calls: [{ index: 0, custom: { input: "rf /" } }] }), chunk({}, "tool_calls"), "data: [DONE]\n\n"]
        }
        const s = yield* post(h, { model: "agent@enforce:allow-all", stream: true }, { run: "custom-stream" })
        expect(s.text).toContain('"custom":{"name":"run","input":"rm -rf /"}')
        expect(h.records("custom-stream").map((r) => [r.tool.name, r.tool.arguments])).toEqual([["run", "rm -rf /"]])
      }))

    it.effect("a non-SSE answer to a streaming request ends with an error event, not a made-up finish", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        hostile.answer = { body: answer({ role: "assistant", content: null, tool_calls: [CALL] }) }
        const r = yield* post(h, { model: "agent@enforce:allow-all", stream: true }, { run: "not-sse", headers: { "x-request-id": "not-sse-1" } })
        expect(r.status).toBe(200)
        const events = sseEvents(r.text)
        expect(events).toHaveLength(1)
        expect(JSON.parse(events[0]!)).toMatchObject({ error: { code: "upstream_invalid_response", request_id: "not-sse-1" } })
        expect(r.text).not.toContain("delete_file")
      }))

    it.effect("a stream that ends before [DONE]: an error event, no finish chunk, no call released, every call seen recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const chunk = (delta: unknown, finish: string | null = null) =>
          `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
        for (const [run, tail] of [
          ["cut-mid-call", []],
          ["cut-after-finish-no-done", [chunk({}, "tool_calls")]]
        ] as const) {
          hostile.answer = {
            contentType: "text/event-stream",
            body: [chunk({ role: "assistant", content: "Deleting." }), chunk({ tool_calls: [{ index: 0, ...CALL, function: { name: "delete_file", arguments: '{"pa' } }] }), chunk({ tool_calls: [{ index: 0, function: { arguments: 'th":"/"}' } }] }), ...tail]
          }
          const r = yield* post(h, { model: "agent@enforce:allow-all", stream: true }, { run })
          const events = sseEvents(r.text)
          const last = JSON.parse(events[events.length - 1]!) as { error?: { code: string; message: string } }
          expect(last.error?.code).toBe("upstream_invalid_response")
          expect(events).not.toContain("[DONE]")
          // a call finished by the upstream is released (it was complete); one cut off mid-stream is not
          const released = events.filter((e) => e.includes('"tool_calls"'))
          if (run === "cut-mid-call") {
            expect(released).toEqual([])
            expect(last.error?.message).toContain("ended before [DONE]")
          }
          expect(events.some((e) => /"finish_reason":"(stop|tool_calls)"/.test(e) && run === "cut-mid-call")).toBe(false)
          expect(h.records(run).map((x) => [x.tool.name, x.tool.arguments])).toEqual([["delete_file", { path: "/" }]])
        }
      }))

    it.effect("an event the gate cannot read ends the stream with an error event; what was held is recorded, nothing after it passes", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const good = `data: ${JSON.stringify({ id: "x", choices: [{ index: 0, delta: { tool_calls: [{ index: 0, ...CALL }] }, finish_reason: null }] })}\n\n`
        for (const [run, bad] of [
          ["nan-event", 'data: {"x": NaN, "choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"rm","arguments":"{}"}}]}}]}\n\n'],
          ["bad-index", 'data: {"choices":[{"index":-1,"delta":{"tool_calls":[]}}]}\n\n'],
          ["huge-index", 'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1e300,"function":{"name":"rm"}}]}}]}\n\n'],
          ["message-in-chunk", `data: ${JSON.stringify({ choices: [{ index: 0, message: { tool_calls: [CALL] } }] })}\n\n`],
          // calls after the choice finished: a client would join them to the calls already released (by index)
          ["calls-after-finish", `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] })}\n\ndata: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { name: "rm", arguments: "{}" } }] } }] })}\n\n`]
        ] as const) {
          hostile.answer = { contentType: "text/event-stream", body: [good, bad, `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 2, function: { name: "after", arguments: "{}" } }] } }] })}\n\n`, "data: [DONE]\n\n"] }
          const r = yield* post(h, { model: "agent@enforce:allow-all", stream: true }, { run })
          const events = sseEvents(r.text)
          expect(JSON.parse(events[events.length - 1]!)).toMatchObject({ error: { code: "upstream_invalid_response" } })
          expect(r.text).not.toContain('"rm"')
          expect(r.text).not.toContain(`"after"`)
          expect(h.records(run).map((x) => x.tool.name)).toEqual(["delete_file"])
        }
      }))
  })
})
