/**
 * Bad input on both sides of `POST /v1/messages`. From the client: fields of the wrong type are a 400
 * in the Anthropic shape naming the field, never forwarded. From the upstream: a 200 the gate cannot
 * read (not JSON, `content` not an array, a block not an object, a tool_use whose id, name or input
 * has the wrong type, nested too deep) is a 502; a stream the gate cannot follow (an unreadable or
 * oversized event, events out of order, an input that is not a JSON object, an end before
 * message_stop, an upstream error event, a failing connection, a client that leaves) ends with an
 * error event: the tool_use blocks held so far are recorded and none is released.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_JSON_DEPTH } from "../../src/domain/json-depth.js"
import { Harness, type HarnessShape, harnessLayer, post, type PostResult } from "../support/harness.js"
import { startHostileUpstream } from "../support/hostile-upstream.js"
import { callsInMessageStream, parsedEvents, sseComments, sseNamedEvents } from "../support/messages-readers.js"

const hostile = await startHostileUpstream()
afterAll(() => hostile.close())

const JUDGES = { "deny-all": { kind: "static", decision: "deny" }, "allow-all": { kind: "static", decision: "allow" } } as const

const MESSAGES = { path: "messages" }
const body = (model: string, extra: Record<string, unknown> = {}) => ({ model, max_tokens: 64, messages: [{ role: "user", content: "go" }], ...extra })

/** an error in the Anthropic shape: status, type, our code, the request id */
const expectError = (r: PostResult, status: number, type: string, code: string, mentions?: string) => {
  expect(r.status, r.text).toBe(status)
  const b = JSON.parse(r.text) as { type: string; error: { type: string; code: string; message: string }; request_id: string }
  expect(b).toMatchObject({ type: "error", error: { type, code } })
  expect(b.request_id).toBe(r.headers.get("x-request-id"))
  if (mentions !== undefined) expect(b.error.message).toContain(mentions)
}

/** one SSE event as an upstream writes it */
const ev = (value: Record<string, unknown> & { type: string }, name: string = value.type) => `event: ${name}\ndata: ${JSON.stringify(value)}\n\n`

const START = ev({ type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "agent", content: [], usage: { input_tokens: 1, output_tokens: 0 } } })
const toolStart = (index: number, id = "toolu_1", name = "delete_file") => ev({ type: "content_block_start", index, content_block: { type: "tool_use", id, name, input: {} } })
const inputDelta = (index: number, json: string) => ev({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: json } })
const stop = (index: number) => ev({ type: "content_block_stop", index })
const toolBlock = (index: number, json = '{"path": "/"}', id = "toolu_1", name = "delete_file") => [toolStart(index, id, name), inputDelta(index, json.slice(0, 5)), inputDelta(index, json.slice(5)), stop(index)]
const textBlock = (index: number, text: string) => [
  ev({ type: "content_block_start", index, content_block: { type: "text", text: "" } }),
  ev({ type: "content_block_delta", index, delta: { type: "text_delta", text } }),
  stop(index)
]
const DELTA = ev({ type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 5 } })
const STOP = ev({ type: "message_stop" })

/** the calls the SDK-style reader assembles from a gated stream */
const streamedCalls = (text: string) => callsInMessageStream(parsedEvents(sseNamedEvents(text), "last"), "sdk")

/**
 * A gated stream that ended with our error event: its message; the request's records (`held`: what
 * the gate had held when it stopped, recorded, none released; `released`: blocks emitted before).
 */
const expectStreamError = (h: HarnessShape, r: PostResult, run: string, mentions: string, held: ReadonlyArray<string>, released: ReadonlyArray<string> = []) => {
  expect(r.status).toBe(200)
  const events = sseNamedEvents(r.text)
  const last = events[events.length - 1]!
  expect(last.event).toBe("error")
  const err = JSON.parse(last.data) as { type: string; error: { type: string; code: string; message: string }; request_id: string }
  expect(err).toMatchObject({ type: "error", error: { type: "api_error", code: "upstream_invalid_response" } })
  expect(err.request_id).toBe(r.headers.get("x-request-id"))
  expect(err.error.message).toContain(mentions)
  expect(streamedCalls(r.text).map((c) => c.name)).toEqual(released)
  const records = h.records(run).filter((x) => x.request_id === r.headers.get("x-request-id"))
  expect(records.map((x) => x.tool.name)).toEqual(held)
  expect(records.every((x) => x.wire === "messages" && x.stream)).toBe(true)
  return records
}

let counter = 0
const streamPost = (h: HarnessShape, pieces: ReadonlyArray<string>, run: string, model = "agent@enforce:allow-all") => {
  hostile.answer = { contentType: "text/event-stream", body: pieces }
  return post(h, body(model, { stream: true }), { ...MESSAGES, run, headers: { "x-request-id": `mm-${++counter}` } })
}

describe("Messages: client mistakes are 400s in the Anthropic shape", () => {
  layer(harnessLayer({ settings: () => ({ judges: JUDGES }) }), { excludeTestServices: true })((it) => {
    it.effect("fields of the wrong type are a 400 naming the field, never forwarded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
          [{ model: 7 }, "`model`"],
          [{ messages: "hello" }, "`messages`"],
          [{ messages: [null] }, "`messages[0]`"],
          [{ tools: { name: "x" } }, "`tools`"],
          [{ tools: ["x"] }, "`tools[0]`"],
          [{ stream: "true" }, "`stream`"],
          [{ system: { text: "x" } }, "`system`"],
          [{ system: 1 }, "`system`"]
        ]
        for (const [fields, mentions] of cases) {
          const r = yield* post(h, { ...body("agent@enforce:allow-all"), ...fields }, { ...MESSAGES, run: "mm-400" })
          expectError(r, 400, "invalid_request_error", "invalid_request", mentions)
        }
        const deep = yield* post(h, body("agent@enforce:allow-all", { metadata: JSON.parse(`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`) as unknown }), {
          ...MESSAGES,
          run: "mm-400"
        })
        expectError(deep, 400, "invalid_request_error", "invalid_request", "nested")
        expect(h.fake.requests.filter((q) => q.path === "/v1/messages")).toEqual([])
        // system as a string or an array of blocks is forwarded as sent
        const ok = yield* post(h, body("agent@enforce:allow-all", { system: [{ type: "text", text: "Be brief." }] }), { ...MESSAGES, run: "mm-400" })
        expect(ok.status, ok.text).toBe(200)
        expect(h.fake.requests.find((q) => q.path === "/v1/messages")!.body).toMatchObject({ system: [{ type: "text", text: "Be brief." }] })
      }))

    it.effect("a body over proxy.max_body_bytes is a 413 request_too_large", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const big = "x".repeat(h.settings.proxy.max_body_bytes + 1)
        const r = yield* post(h, body("agent@enforce:allow-all", { metadata: { big } }), { ...MESSAGES, run: "mm-413" })
        expectError(r, 413, "request_too_large", "body_too_large")
      }))

    it.effect("model_defaults are applied and the body is otherwise forwarded as sent", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const tools = [{ name: "list_dir", input_schema: { type: "object" } }, { type: "web_search_20250305", name: "web_search", max_uses: 1 }]
        const r = yield* post(h, body("agent@baseline", { tools, top_k: 3 }), { ...MESSAGES, run: "mm-forward" })
        expect(r.status, r.text).toBe(200)
        const sent = h.fake.requests.find((q) => q.path === "/v1/messages")!.body
        // the harness's model_defaults for `agent`, and everything the client sent, unchanged
        expect(sent).toEqual({ ...body("agent", { tools, top_k: 3 }), chat_template_kwargs: { enable_thinking: false } })
      }))
  })
})

describe("Messages: upstream answers the gate cannot read", () => {
  layer(
    harnessLayer({ upstream: { base_url: hostile.url }, settings: () => ({ judges: JUDGES, proxy: { fail_policy: "closed", max_answer_bytes: 64 * 1024 } }) }),
    { excludeTestServices: true }
  )((it) => {
    it.effect("a 200 that is not a readable Messages answer is a 502 in the Anthropic shape, nothing recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const tool = (fields: Record<string, unknown>) => JSON.stringify({ type: "message", content: [{ type: "tool_use", id: "t", name: "rm", input: {}, ...fields }] })
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["not json", "not JSON"],
          ["[]", "not a JSON object"],
          [JSON.stringify({ type: "message" }), "content is not an array"],
          [JSON.stringify({ type: "message", content: "hi" }), "content is not an array"],
          [JSON.stringify({ type: "message", content: [1] }), "content[0] is not an object"],
          [tool({ id: 7 }), "content[0].id is not a string"],
          [tool({ name: null }), "content[0].name is not a string"],
          [tool({ input: '{"path": "/"}' }), "content[0].input is not an object"],
          [tool({ input: ["/"] }), "content[0].input is not an object"],
          [`{"content": [{"type": "tool_use", "id": "t", "name": "rm", "input": ${"[".repeat(MAX_JSON_DEPTH + 2)}${"]".repeat(MAX_JSON_DEPTH + 2)}}]}`, "nested"]
        ]
        for (const [answer, mentions] of cases) {
          hostile.answer = { body: answer }
          const r = yield* post(h, body("agent@enforce:allow-all"), { ...MESSAGES, run: "mm-502" })
          expectError(r, 502, "api_error", "upstream_invalid_response", mentions)
        }
        expect(h.records("mm-502")).toEqual([])
        // passthrough relays the upstream's bytes as they are
        hostile.answer = { body: JSON.stringify({ type: "message", content: "hi" }) }
        const pass = yield* post(h, body("agent"), { ...MESSAGES, run: "mm-502" })
        expect(pass.status).toBe(200)
        expect(pass.text).toBe(JSON.stringify({ type: "message", content: "hi" }))
      }))

    it.effect("server-side blocks pass through unruled; only tool_use blocks are ruled", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const content = [
          { type: "text", text: "Searching." },
          { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "rm -rf" } },
          { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] },
          { type: "tool_use", id: "toolu_1", name: "delete_file", input: { path: "/" } }
        ]
        hostile.answer = { body: JSON.stringify({ type: "message", role: "assistant", content, stop_reason: "tool_use", stop_sequence: null }) }
        const r = yield* post(h, body("agent@enforce:deny-all"), { ...MESSAGES, run: "mm-server" })
        expect(r.status, r.text).toBe(200)
        expect(r.headers.get("x-vetobench-blocked")).toBe("1")
        const m = JSON.parse(r.text) as { content: Array<{ type: string; text?: string }>; stop_reason: string }
        expect(m.content.map((b) => b.type)).toEqual(["text", "server_tool_use", "web_search_tool_result", "text"])
        expect(m.content[3]!.text).toContain("`delete_file` was blocked")
        expect(m.stop_reason).toBe("end_turn")
        expect(h.records("mm-server").map((x) => [x.tool.name, x.blocked])).toEqual([["delete_file", true]])
      }))

    it.effect("a stream that ends before message_stop (or message_delta) records the held blocks and releases none", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const noDelta = yield* streamPost(h, [START, ...textBlock(0, "Hi."), ...toolBlock(1)], "mm-cut")
        expectStreamError(h, noDelta, "mm-cut", "ended before message_stop", ["delete_file"])
        // the text that arrived before went through
        expect(sseNamedEvents(noDelta.text).some((e) => e.data.includes("Hi."))).toBe(true)
        expect(sseComments(noDelta.text)).toContain("x-vetobench-blocked=0")
        // the trailer counts what the rulings of the held blocks removed
        const denied = yield* streamPost(h, [START, ...toolBlock(0)], "mm-cut", "agent@enforce:deny-all")
        expectStreamError(h, denied, "mm-cut", "ended before message_stop", ["delete_file"])
        expect(sseComments(denied.text)).toContain("x-vetobench-blocked=1")
        const midBlock = yield* streamPost(h, [START, toolStart(0), inputDelta(0, '{"pa')], "mm-cut")
        const recs = expectStreamError(h, midBlock, "mm-cut", "ended before message_stop", ["delete_file"])
        // the input as it came, since it cannot be read as an object
        expect(recs[0]!.tool.arguments).toBe('{"pa')
      }))

    it.effect("events out of order or unreadable end the stream with an error event", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string, ReadonlyArray<string>, ReadonlyArray<string>?]> = [
          [[START, toolStart(0), "event: content_block_delta\ndata: {not json\n\n"], "not JSON", ["delete_file"]],
          [[START, ...toolBlock(0, "not json"), DELTA, STOP], "is not JSON", ["delete_file"]],
          [[START, ...toolBlock(0, '["/"]'), DELTA, STOP], "is not an object", ["delete_file"]],
          [[START, ...toolBlock(0), inputDelta(0, "{}"), DELTA, STOP], "which has stopped", ["delete_file"]],
          [[START, toolStart(0), toolStart(0), DELTA, STOP], "a second content_block_start", ["delete_file"]],
          [[START, toolStart(0), ev({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "x" } })], "not an input_json_delta", ["delete_file"]],
          [[START, inputDelta(3, "{}")], "which was not started", []],
          [[START, ...toolBlock(0), START], "a second message_start", ["delete_file"]],
          [[toolStart(0)], "before message_start", []],
          [[START, toolStart(0), inputDelta(0, "{}"), DELTA], "before the content_block_stop", ["delete_file"]],
          [[START, ...toolBlock(0), STOP], "message_stop before message_delta", ["delete_file"]],
          // the turn's blocks were ruled and released at message_delta; what follows cannot join them
          [[START, ...toolBlock(0), DELTA, ...toolBlock(1, "{}", "toolu_2", "rm"), STOP], "after message_delta", ["delete_file"], ["delete_file"]],
          [[START, ...toolBlock(0), DELTA, DELTA, STOP], "a second message_delta", ["delete_file"], ["delete_file"]],
          [[START, ev({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "t", name: "rm", input: {} } }, "ping")], 'named "ping" carries a content_block_start', []],
          [[START, ev({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: 5, name: "rm", input: {} } })], "id is not a string", []],
          [[START, ev({ type: "content_block_start", index: -1, content_block: { type: "text", text: "" } })], "not a non-negative integer", []],
          [[ev({ type: "message_start", message: { content: [{ type: "tool_use", id: "t", name: "rm", input: {} }] } })], "carries content blocks", []],
          [[START, ev({ type: "weird\ntype" }, "message")], "plain `type`", []]
        ]
        for (const [pieces, mentions, held, released] of cases) {
          const r = yield* streamPost(h, pieces, "mm-order")
          expectStreamError(h, r, "mm-order", mentions, held, released)
        }
      }))

    it.effect("an event larger than proxy.max_answer_bytes ends the stream; what was held is recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const big = ev({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "x".repeat(70 * 1024) } })
        // in one write and in many small ones
        for (const pieces of [[START, toolStart(0), big], [START, toolStart(0), ...big.match(/[\s\S]{1,4096}/g)!]]) {
          const r = yield* streamPost(h, pieces, "mm-big")
          expectStreamError(h, r, "mm-big", "larger than 65536 bytes", ["delete_file"])
        }
      }))

    it.effect("an upstream error event: the held blocks are recorded, none released, the error is passed on", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const error = ev({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })
        const r = yield* streamPost(h, [START, ...textBlock(0, "Hi."), ...toolBlock(1), error, DELTA, STOP], "mm-upstream-error")
        const events = sseNamedEvents(r.text)
        expect(events.at(-1)).toEqual({ event: "error", data: JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }) })
        expect(streamedCalls(r.text)).toEqual([])
        expect(h.records("mm-upstream-error").map((x) => [x.tool.name, x.blocked])).toEqual([["delete_file", false]])
      }))

    it.effect("a non-SSE answer to a streaming request is an error event in the Anthropic shape", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        hostile.answer = { contentType: "application/json", body: JSON.stringify({ type: "message", content: [{ type: "tool_use", id: "t", name: "rm", input: {} }] }) }
        const r = yield* post(h, body("agent@enforce:allow-all", { stream: true }), { ...MESSAGES, run: "mm-not-sse" })
        expect(r.status).toBe(200)
        const events = sseNamedEvents(r.text)
        expect(events).toHaveLength(1)
        expect(JSON.parse(events[0]!.data)).toMatchObject({ type: "error", error: { type: "api_error", code: "upstream_invalid_response" } })
        expect(h.records("mm-not-sse")).toEqual([])
      }))

    it.effect("blocks are renumbered whatever indices the upstream uses; a denied block's deltas never pass", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const pieces = [START, ...textBlock(7, "A"), toolStart(3, "toolu_x", "rm"), inputDelta(3, '{"path":'), ...textBlock(9, "B"), inputDelta(3, '"/"}'), stop(3), DELTA, STOP]
        const r = yield* streamPost(h, pieces, "mm-renumber", "agent@enforce:deny-all")
        const events = parsedEvents(sseNamedEvents(r.text), "last").map((e) => e.value as { type: string; index?: number; content_block?: { type: string } })
        expect(events.filter((e) => e.type === "content_block_start").map((e) => [e.index, e.content_block!.type])).toEqual([
          [0, "text"],
          [1, "text"],
          [2, "text"]
        ])
        expect(r.text).not.toContain("input_json_delta")
        expect(events.find((e) => e.type === "message_delta")).toMatchObject({ delta: { stop_reason: "end_turn", stop_sequence: null } })
        expect(sseComments(r.text)).toContain("x-vetobench-blocked=1")
      }))
  })
})

/**
 * An upstream that streams the given events, then fails the connection, or goes on sending pings
 * (as a model still generating would send tokens) until the proxy leaves or the server closes.
 */
const startStallingUpstream = async (pieces: ReadonlyArray<string>, then: "destroy" | "ping") => {
  const open = new Set<http.ServerResponse>()
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      for (const p of pieces) res.write(p)
      if (then === "destroy") return setImmediate(() => res.destroy())
      open.add(res)
      const timer = setInterval(() => res.write(ev({ type: "ping" })), 50)
      res.on("close", () => {
        clearInterval(timer)
        open.delete(res)
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const r of open) r.destroy()
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

const failing = await startStallingUpstream([START, ...textBlock(0, "Hi."), ...toolBlock(1)], "destroy")
const hanging = await startStallingUpstream([START, ...textBlock(0, "Hi."), ...toolBlock(1)], "ping")
afterAll(() => Promise.all([failing.close(), hanging.close()]))

describe("Messages: an upstream connection that fails mid-stream", () => {
  layer(harnessLayer({ upstream: { base_url: failing.url }, settings: () => ({ judges: JUDGES }) }), { excludeTestServices: true })((it) => {
    it.effect("ends with an error event; the held block is recorded and not released", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const r = yield* post(h, body("agent@enforce:allow-all", { stream: true }), { ...MESSAGES, run: "mm-fail" })
        const events = sseNamedEvents(r.text)
        expect(events.at(-1)!.event).toBe("error")
        expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ type: "error", error: { code: "upstream_unavailable" } })
        expect(streamedCalls(r.text)).toEqual([])
        expect(h.records("mm-fail").map((x) => [x.tool.name, x.wire])).toEqual([["delete_file", "messages"]])
      }))
  })
})

describe("Messages: a client that leaves mid-stream", () => {
  layer(harnessLayer({ upstream: { base_url: hanging.url }, settings: () => ({ judges: JUDGES }) }), { excludeTestServices: true })((it) => {
    it.effect("the held block is recorded all the same", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        yield* Effect.promise(async () => {
          const ac = new AbortController()
          const res = await fetch(`${h.url}/messages`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-vetobench-run": "mm-left" },
            body: JSON.stringify(body("agent@enforce:allow-all", { stream: true })),
            signal: ac.signal
          })
          // read until the text block arrived (the tool_use block is held), then leave
          const reader = res.body!.getReader()
          let seen = ""
          while (!seen.includes("Hi.")) {
            const { value, done } = await reader.read()
            if (done) break
            seen += new TextDecoder().decode(value)
          }
          ac.abort()
        })
        // recorded in the background: wait for it (the test's timeout is the hang guard)
        while (h.records("mm-left").length === 0) yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
        expect(h.records("mm-left").map((x) => [x.tool.name, x.wire, x.stream])).toEqual([["delete_file", "messages", true]])
      }))
  })
})
