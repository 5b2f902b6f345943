/**
 * The Responses route against upstream answers it must not pass on as they are: shapes the gate
 * cannot rule on (a 502 `upstream_invalid_response`, nothing recorded), the built-in call items and
 * server-side tool items (which are ruled, which pass), and streams that end badly — cut short,
 * an `error` event or `response.failed` from the upstream, an unreadable or oversized event, a
 * client that leaves — where the held calls are recorded and none is released.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import OpenAI from "openai"
import type { ResponseStreamEvent } from "openai/resources/responses/responses"
import { Harness, harnessLayer } from "../support/harness.js"
import { startHostileUpstream } from "../support/hostile-upstream.js"
import { blockedComment, callsInResponse, callViewsOfResponseStream, eventsOf, postResponses } from "../support/responses.js"

const hostile = await startHostileUpstream()

/**
 * An upstream that sends these events and then holds the stream open, with a keep-alive comment
 * now and then, until the proxy hangs up. (A silent upstream would not do: the proxy notices a
 * client that left only when the upstream body yields again — reported with this work.)
 */
const pings = new Set<NodeJS.Timeout>()
const held = http.createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    res.writeHead(200, { "content-type": "text/event-stream" })
    for (const e of HELD_OPEN) res.write(frame(e))
    const ping = setInterval(() => res.write(": keep-alive\n\n"), 100)
    pings.add(ping)
    res.on("close", () => {
      clearInterval(ping)
      pings.delete(ping)
    })
  })
})
await new Promise<void>((resolve) => held.listen(0, "127.0.0.1", resolve))
afterAll(async () => {
  for (const p of pings) clearInterval(p)
  await hostile.close()
  held.closeAllConnections()
  await new Promise<void>((resolve) => held.close(() => resolve()))
})

const JUDGES = { "deny-all": { kind: "static", decision: "deny" }, "allow-all": { kind: "static", decision: "allow" } } as const

const frame = (e: Record<string, unknown>) => `event: ${String(e.type)}\ndata: ${JSON.stringify(e)}\n\n`
const sse = (...events: ReadonlyArray<Record<string, unknown>>) => ({ contentType: "text/event-stream", body: events.map(frame).join("") })

const FC = { id: "fc_1", type: "function_call", call_id: "call_1", name: "delete_file", arguments: '{"path": "/"}', status: "completed" }
const RESPONSE = { id: "resp_1", object: "response", created_at: 1, model: "agent", status: "in_progress", output: [] }

/** the events of one function call item at output_index 0 (arguments in two deltas) */
const callEvents = [
  { type: "response.output_item.added", output_index: 0, item: { ...FC, arguments: "", status: "in_progress" } },
  { type: "response.function_call_arguments.delta", output_index: 0, item_id: "fc_1", delta: '{"path": ' },
  { type: "response.function_call_arguments.delta", output_index: 0, item_id: "fc_1", delta: '"/"}' },
  { type: "response.function_call_arguments.done", output_index: 0, item_id: "fc_1", arguments: '{"path": "/"}' },
  { type: "response.output_item.done", output_index: 0, item: FC }
]
const created = { type: "response.created", response: RESPONSE }

const HELD_OPEN = [
  created,
  ...callEvents,
  { type: "response.output_item.added", output_index: 1, item: { id: "msg_1", type: "message", role: "assistant", status: "in_progress", content: [] } }
]

/** nothing the client could take from these events is a call */
const expectNoCall = (events: ReadonlyArray<Record<string, unknown>>) => {
  for (const view of callViewsOfResponseStream(events)) expect(view).toEqual([])
}

describe("the Responses route against malformed and failing upstreams", () => {
  layer(harnessLayer({ upstream: { base_url: hostile.url }, settings: () => ({ judges: JUDGES }) }), { excludeTestServices: true })((it) => {
    it.effect("an answer whose shape the gate cannot read is a 502 in the OpenAI shape, nothing recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["not json", "is not JSON"],
          ["[1]", "is not a JSON object"],
          ['{"output": {}}', "output is not an array"],
          ['{"output": [1]}', "output[0] is not an object"],
          ['{"output": [{"call_id": "c"}]}', "output[0].type is not a string"],
          ['{"output": [{"type": "function_call", "call_id": "c", "name": "x", "arguments": {"a": 1}}]}', "output[0].arguments is not a string"],
          ['{"output": [{"type": "function_call", "name": "x", "arguments": "{}"}]}', "output[0].call_id is not a string"],
          ['{"output": [{"type": "custom_tool_call", "call_id": "c", "name": "x", "input": null}]}', "output[0].input is not a string"],
          ['{"output": [{"type": "local_shell_call", "call_id": "c"}]}', "output[0] (local_shell_call) has no action"],
          ['{"output": [{"type": "apply_patch_call", "call_id": "c", "operation": "rm"}]}', "output[0].operation is not an object"]
        ]
        for (const [body, problem] of cases) {
          hostile.answer = { body }
          const r = yield* postResponses(h, { model: "agent@enforce:allow-all" }, { run: "rmal-json" })
          expect(r.status, body).toBe(502)
          expect(r.json).toMatchObject({ error: { code: "upstream_invalid_response", type: "vetobench_error" } })
          expect((r.json!.error as { message: string }).message).toContain(problem)
        }
        // the SDK raises it as an API error with the status
        hostile.answer = { body: '{"output": {}}' }
        const client = new OpenAI({ baseURL: h.url, apiKey: "x", maxRetries: 0 })
        const e = yield* Effect.promise(() => client.responses.create({ model: "agent@enforce:allow-all", input: "x" }).then(() => null, (e: unknown) => e))
        expect(e).toBeInstanceOf(OpenAI.InternalServerError)
        expect((e as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(502)
        expect(h.records("rmal-json")).toEqual([])
      }))

    it.effect("built-in calls are ruled as calls named by their item type; server-side tools pass", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const output = [
          { id: "ws_1", type: "web_search_call", status: "completed", action: { type: "search", query: "rm -rf" } },
          { id: "cu_1", type: "computer_call", call_id: "call_cu", action: { type: "click", button: "left", x: 1, y: 2 }, pending_safety_checks: [], status: "completed" },
          { id: "ls_1", type: "local_shell_call", call_id: "call_ls", action: { type: "exec", command: ["rm", "-rf", "/"], env: {} }, status: "completed" },
          { id: "sh_1", type: "shell_call", call_id: "call_sh", action: { commands: ["ls"], max_output_length: null, timeout_ms: null }, environment: null, status: "completed" },
          { id: "ap_1", type: "apply_patch_call", call_id: "call_ap", operation: { type: "delete_file", path: "a.txt" }, status: "completed" },
          { id: "ct_1", type: "custom_tool_call", call_id: "call_ct", name: "patch", input: "*** Begin Patch" },
          { id: "mcp_1", type: "mcp_call", name: "drop_db", arguments: "{}", server_label: "db" },
          { id: "ci_1", type: "code_interpreter_call", code: "print(1)", container_id: "c", outputs: null, status: "completed" }
        ]
        hostile.answer = { body: JSON.stringify({ ...RESPONSE, status: "completed", output }) }
        const shadow = yield* postResponses(h, { model: "agent@shadow:allow-all" }, { run: "rmal-builtin" })
        expect(shadow.json!.output).toEqual(output)
        expect(h.records("rmal-builtin").map((r) => [r.tool.name, r.tool.arguments, r.tool_call_id])).toEqual([
          ["computer_call", { action: { type: "click", button: "left", x: 1, y: 2 } }, "call_cu"],
          ["local_shell_call", { action: { type: "exec", command: ["rm", "-rf", "/"], env: {} } }, "call_ls"],
          ["shell_call", { action: { commands: ["ls"], max_output_length: null, timeout_ms: null }, environment: null }, "call_sh"],
          ["apply_patch_call", { operation: { type: "delete_file", path: "a.txt" } }, "call_ap"],
          ["patch", "*** Begin Patch", "call_ct"]
        ])
        const enforce = yield* postResponses(h, { model: "agent@enforce:deny-all" }, { run: "rmal-builtin-deny" })
        expect(enforce.headers.get("x-vetobench-blocked")).toBe("5")
        const kept = enforce.json!.output as Array<Record<string, unknown>>
        expect(kept.map((i) => i.type)).toEqual(["web_search_call", "mcp_call", "code_interpreter_call", "message"])
        expect(callsInResponse(enforce.json)).toEqual([])
        const note = kept[3]!
        expect(note).toMatchObject({ role: "assistant", status: "completed", content: [{ type: "output_text", annotations: [] }] })
        expect(String(note.id)).toMatch(/^msg_/)
        const text = (note.content as Array<{ text: string }>)[0]!.text
        for (const name of ["computer_call", "local_shell_call", "shell_call", "apply_patch_call", "patch"]) expect(text).toContain(`\`${name}\` was blocked`)
      }))

    it.effect("a stream cut short: the held call is recorded, not released, and an error event ends the stream", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        hostile.answer = sse(created, ...callEvents)
        const r = yield* postResponses(h, { model: "agent@enforce:allow-all", stream: true }, { run: "rmal-cut" })
        expect(r.status).toBe(200)
        const events = eventsOf(r.items)
        expectNoCall(events)
        expect(events.map((e) => e.type)).toEqual(["response.created", "error"])
        expect(events[1]).toEqual({
          type: "error",
          code: "upstream_invalid_response",
          message: "the upstream stream ended before response.completed",
          param: null,
          sequence_number: 1
        })
        expect(blockedComment(r.items)).toBe(0)
        expect(h.records("rmal-cut").map((x) => [x.tool.name, x.wire, x.stream])).toEqual([["delete_file", "responses", true]])
      }))

    it.effect("the upstream connection failing mid-stream: the route's error event continues the sequence numbers", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const text = { type: "response.output_item.added", output_index: 1, item: { id: "msg_1", type: "message", role: "assistant", status: "in_progress", content: [] } }
        hostile.answer = { ...sse(created, ...callEvents, text), reset: true }
        const r = yield* postResponses(h, { model: "agent@enforce:allow-all", stream: true }, { run: "rmal-reset" })
        const events = eventsOf(r.items)
        expectNoCall(events)
        expect(events.map((e) => [e.type, e.sequence_number])).toEqual([
          ["response.created", 0],
          ["response.output_item.added", 1],
          ["error", 2]
        ])
        expect(h.records("rmal-reset").map((x) => x.tool.name)).toEqual(["delete_file"])
      }))

    it.effect("a JSON answer to a streaming request: one error event of this format, nothing passed on", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        hostile.answer = { body: JSON.stringify({ ...RESPONSE, output: [FC] }) }
        const r = yield* postResponses(h, { model: "agent@enforce:allow-all", stream: true }, { run: "rmal-json-stream" })
        expect(r.headers.get("content-type")).toMatch(/^text\/event-stream/)
        expect(r.text).toMatch(/^event: error\ndata: /)
        expect(eventsOf(r.items)).toEqual([
          {
            type: "error",
            code: "upstream_invalid_response",
            message: "the upstream answered application/json to a streaming request",
            param: null,
            sequence_number: 0
          }
        ])
        expect(h.records("rmal-json-stream")).toEqual([])
      }))

    it.effect("an upstream error event or response.failed: passed on, the held call recorded and not released", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const text = { type: "response.output_item.added", output_index: 1, item: { id: "msg_1", type: "message", role: "assistant", status: "in_progress", content: [] } }
        const failures = [
          { type: "error", code: "server_error", message: "engine died", param: null, sequence_number: 40 },
          { type: "response.failed", response: { ...RESPONSE, status: "failed", output: [FC], error: { code: "server_error", message: "engine died" } } }
        ]
        for (const failure of failures) {
          const run = `rmal-${failure.type}`
          hostile.answer = sse(created, ...callEvents, text, failure)
          const r = yield* postResponses(h, { model: "agent@enforce:allow-all", stream: true }, { run })
          const events = eventsOf(r.items)
          expectNoCall(events)
          expect(events.map((e) => [e.type, e.sequence_number])).toEqual([
            ["response.created", 0],
            ["response.output_item.added", 1],
            [failure.type, 2]
          ])
          // the text item the client was sent is at its output_index 0
          expect(events[1]!.output_index).toBe(0)
          if (failure.type === "response.failed") expect((events[2]!.response as { output: Array<unknown> }).output).toEqual([text.item])
          else expect(events[2]).toMatchObject({ code: "server_error", message: "engine died" })
          expect(h.records(run).map((x) => [x.tool.name, x.blocked])).toEqual([["delete_file", false]])
        }
      }))

    it.effect("an event the gate cannot read ends the stream with an error event; the held call is recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["event: x\ndata: {not json\n\n", "is not JSON"],
          ["data: [DONE]\n\n", "sent [DONE] before response.completed"],
          ['data: {"type": 5}\n\n', "has no string type"],
          ['data: {"type":"response.output_text.delta","output_index":7,"delta":"x"}\n\n', "names output_index 7, at which no item was added"],
          ['data: {"type":"response.function_call_arguments.delta","output_index":3,"delta":"x"}\n\n', "does not belong to a function_call item"],
          [frame({ type: "response.output_item.added", output_index: 0, item: { type: "message" } }), "a second item was added at output_index 0"],
          [frame({ type: "response.output_item.done", output_index: 0, item: { ...FC, type: "message" } }), "was added as function_call and is done as message"],
          [frame({ type: "response.completed", response: "done" }), "response is not an object"]
        ]
        let n = 0
        for (const [bad, problem] of cases) {
          const run = `rmal-bad-${n++}`
          hostile.answer = { contentType: "text/event-stream", body: sse(created, ...callEvents.slice(0, 2)).body + bad + frame({ type: "response.completed", response: RESPONSE }) }
          const r = yield* postResponses(h, { model: "agent@enforce:allow-all", stream: true }, { run })
          const events = eventsOf(r.items)
          expectNoCall(events)
          const last = events[events.length - 1]!
          expect(last).toMatchObject({ type: "error", code: "upstream_invalid_response" })
          expect(String(last.message), bad).toContain(problem)
          expect(h.records(run).map((x) => x.tool.name)).toEqual(["delete_file"])
        }
      }))

    it.effect("the SDK on the proxy's error event: create() yields it, stream().finalResponse() rejects with it", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        hostile.answer = sse(created, ...callEvents)
        const client = new OpenAI({ baseURL: h.url, apiKey: "x", maxRetries: 0 })
        const request = { model: "agent@enforce:allow-all", input: "x" }
        const events = yield* Effect.promise(async () => {
          const out: Array<ResponseStreamEvent> = []
          for await (const e of await client.responses.create({ ...request, stream: true })) out.push(e)
          return out
        })
        expect(events[events.length - 1]).toMatchObject({ type: "error", code: "upstream_invalid_response" })
        const rejected = yield* Effect.promise(() => client.responses.stream(request).finalResponse().then(() => null, (e: unknown) => e))
        expect(rejected).toMatchObject({ type: "error", code: "upstream_invalid_response", message: "the upstream stream ended before response.completed" })
      }))
  })
})

describe("the Responses route with a small max_answer_bytes", () => {
  layer(harnessLayer({ upstream: { base_url: hostile.url }, settings: () => ({ judges: JUDGES, proxy: { max_answer_bytes: 2048 } }) }), { excludeTestServices: true })((it) => {
    it.effect("an event larger than the limit ends the stream; the held call is recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const big = { type: "response.output_text.delta", output_index: 0, delta: "x".repeat(5000) }
        hostile.answer = sse(created, ...callEvents, big)
        const r = yield* postResponses(h, { model: "agent@enforce:allow-all", stream: true }, { run: "rmal-big" })
        const events = eventsOf(r.items)
        expectNoCall(events)
        expect(events[events.length - 1]).toMatchObject({ type: "error", message: "an event of the upstream stream is larger than 2048 bytes (proxy.max_answer_bytes)" })
        expect(h.records("rmal-big").map((x) => x.tool.name)).toEqual(["delete_file"])
      }))
  })
})

describe("the Responses route when the client leaves", () => {
  layer(harnessLayer({ upstream: { base_url: `http://127.0.0.1:${(held.address() as AddressInfo).port}/v1` }, settings: () => ({ judges: JUDGES }) }), {
    excludeTestServices: true
  })((it) => {
    it.effect("the call held when the client left is recorded all the same", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        yield* Effect.promise(async () => {
          const ctrl = new AbortController()
          const res = await fetch(`${h.url}/responses`, {
            method: "POST",
            signal: ctrl.signal,
            headers: { "content-type": "application/json", "x-vetobench-run": "rmal-left" },
            body: JSON.stringify({ model: "agent@enforce:allow-all", input: "x", stream: true })
          })
          const reader = res.body!.getReader()
          let text = ""
          // the message item comes after the call: once the client has it, the call is held
          while (!text.includes("response.output_item.added")) {
            const { value, done } = await reader.read()
            if (done) break
            text += new TextDecoder().decode(value)
          }
          ctrl.abort()
          expect(text).not.toContain("function_call")
        })
        const records = yield* Effect.sync(() => h.records("rmal-left")).pipe(
          Effect.filterOrFail((r) => r.length > 0, () => "not yet"),
          // a hang guard, not a timing assertion: the record is written by a fiber of its own
          Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("100 seconds")))
        )
        expect(records.map((x) => [x.tool.name, x.stream])).toEqual([["delete_file", true]])
      }))
  })
})
