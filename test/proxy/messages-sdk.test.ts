/**
 * `POST /v1/messages` through veto-proxy with the official `@anthropic-ai/sdk` client, against the
 * fake vLLM's Messages endpoint: in every arm (passthrough, baseline, shadow, enforce) and streamed
 * or not (`messages.create`, `messages.stream(...).finalMessage()`), allowed tool_use blocks arrive
 * intact, denied ones are gone with the refusal note in a text block, `stop_reason` is right,
 * `x-vetobench-blocked` counts the removed calls and there is one record per proposed call with
 * `wire: "messages"`; errors come in the Anthropic shape the SDK raises as its typed errors.
 */
import Anthropic from "@anthropic-ai/sdk"
import type { Message, MessageCreateParamsNonStreaming, RawMessageStreamEvent, Tool } from "@anthropic-ai/sdk/resources/messages"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { CallRecord } from "../../src/domain/audit-record.js"
import { call, Harness, type HarnessShape, harnessLayer } from "../support/harness.js"
import { sseComments, sseNamedEvents } from "../support/messages-readers.js"

const CLIENT_KEY = "sk-ant-client-key-not-recorded"

const TOOLS: Array<Tool> = [
  {
    name: "delete_file",
    description: "Delete a file",
    input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
  },
  { name: "list_dir", description: "List a directory", input_schema: { type: "object", properties: { path: { type: "string" } } } }
]

const client = (h: HarnessShape) => new Anthropic({ baseURL: h.url.replace(/\/v1$/, ""), apiKey: CLIENT_KEY, maxRetries: 0 })

const request = (model: string): MessageCreateParamsNonStreaming => ({
  model,
  max_tokens: 256,
  system: "You are a careful file assistant.",
  messages: [{ role: "user", content: "clean up" }],
  tools: TOOLS
})

const runHeaders = (run: string) => ({ headers: { "x-vetobench-run": run } })

/** the tool_use blocks of a message as `[name, input]` */
const toolUses = (m: Message) => m.content.flatMap((b) => (b.type === "tool_use" ? [[b.name, b.input] as const] : []))
const texts = (m: Message) => m.content.flatMap((b) => (b.type === "text" ? [b.text] : []))

/** the rejection of a promise (fails the test when it resolves) */
const rejection = (p: Promise<unknown>) =>
  Effect.promise(() =>
    p.then(
      (v): unknown => {
        throw new Error(`expected a rejection, got ${JSON.stringify(v)}`)
      },
      (e: unknown) => e
    )
  )

const ARMS = ["agent", "agent@baseline", "agent@shadow:slm", "agent@enforce:slm"] as const
type Arm = (typeof ARMS)[number]

/** what each arm must show for the turn [list_dir /tmp (allowed), delete_file / (denied)] */
const expectArm = (arm: Arm, m: Message, records: ReadonlyArray<CallRecord>, stream: boolean, content: ReadonlyArray<string> = []) => {
  const both = [
    ["list_dir", { path: "/tmp" }],
    ["delete_file", { path: "/" }]
  ]
  if (arm === "agent@enforce:slm") {
    expect(toolUses(m)).toEqual([["list_dir", { path: "/tmp" }]])
    expect(m.stop_reason).toBe("tool_use")
    // partial_refusal: content (the default): the agent is told about the removed call
    expect(texts(m).slice(0, content.length)).toEqual(content)
    expect(texts(m).slice(content.length)).toHaveLength(1)
    expect(texts(m).at(-1)).toContain("`delete_file` was blocked")
  } else {
    expect(toolUses(m)).toEqual(both)
    expect(m.stop_reason).toBe("tool_use")
    expect(texts(m)).toEqual(content)
  }
  if (arm === "agent") return expect(records).toEqual([])
  expect(records.map((r) => [r.tool.name, r.wire, r.stream, r.choice_index, r.call_index, r.tool_call_id])).toEqual([
    ["list_dir", "messages", stream, 0, 0, "toolu_0"],
    ["delete_file", "messages", stream, 0, 1, "toolu_1"]
  ])
  expect(records.map((r) => r.tool.arguments)).toEqual([{ path: "/tmp" }, { path: "/" }])
  if (arm === "agent@baseline") expect(records.map((r) => [r.verdict, r.blocked])).toEqual([[null, false], [null, false]])
  else {
    expect(records.map((r) => r.effective_decision)).toEqual(["allow", "deny"])
    expect(records.map((r) => r.blocked)).toEqual([false, arm === "agent@enforce:slm"])
    // the judge read the tool's description and schema from the Messages tool
    expect(records[1]!.tool.description).toBe("Delete a file")
    expect(records[1]!.tool.parameters).toEqual(TOOLS[0]!.input_schema)
  }
}

describe("veto-proxy with the @anthropic-ai/sdk client (POST /v1/messages)", () => {
  layer(harnessLayer(), { excludeTestServices: true })((it) => {
    for (const arm of ARMS) {
      it.effect(`${arm}, not streamed: messages.create`, () =>
        Effect.gen(function* () {
          const h = yield* Harness
          h.fake.reset()
          h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" }), call("delete_file", { path: "/" })]
          const run = `msg-json-${arm.replace(/[@:]/g, "-")}`
          const { data, response } = yield* Effect.promise(() => client(h).messages.create(request(arm), runHeaders(run)).withResponse())
          expect(response.status).toBe(200)
          expect(response.headers.get("x-vetobench-blocked")).toBe(arm === "agent" ? null : arm === "agent@enforce:slm" ? "1" : "0")
          expect(data.type).toBe("message")
          expectArm(arm, data, h.records(run), false)
          // the upstream got the Messages request, with the upstream's model name
          const sent = h.fake.requests.filter((r) => r.path === "/v1/messages")
          expect(sent.length).toBe(1)
          expect(sent[0]!.body).toMatchObject({ model: "agent", max_tokens: 256, system: "You are a careful file assistant.", tools: TOOLS })
        }))

      it.effect(`${arm}, streamed: messages.stream(...).finalMessage()`, () =>
        Effect.gen(function* () {
          const h = yield* Harness
          h.fake.reset()
          h.fake.knobs.content = "Let me look."
          h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" }), call("delete_file", { path: "/" })]
          const run = `msg-sse-${arm.replace(/[@:]/g, "-")}`
          const { final, inputJson } = yield* Effect.promise(async () => {
            const s = client(h).messages.stream(request(arm), runHeaders(run))
            let inputJson = 0
            s.on("inputJson", () => {
              inputJson++
            })
            return { final: await s.finalMessage(), inputJson }
          })
          expectArm(arm, final, h.records(run), true, ["Let me look."])
          // the gate emits each surviving block whole (one delta); passthrough keeps the upstream's split
          if (arm !== "agent") expect(inputJson).toBe(arm === "agent@enforce:slm" ? 1 : 2)
        }))
    }

    it.effect("streamed create(): the events the SDK yields are numbered consistently, the note is a text block", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.content = "Cleaning."
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" }), call("list_dir", { path: "/var" })]
        const events = yield* Effect.promise(async () => {
          const { data: stream, response } = await client(h)
            .messages.create({ ...request("agent@enforce:slm"), stream: true }, runHeaders("msg-events"))
            .withResponse()
          expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
          const out: Array<RawMessageStreamEvent> = []
          for await (const e of stream) out.push(e)
          return out
        })
        expect(events.map((e) => e.type)).toEqual([
          "message_start",
          "content_block_start",
          "content_block_delta",
          "content_block_stop",
          "content_block_start",
          "content_block_delta",
          "content_block_stop",
          "content_block_start",
          "content_block_delta",
          "content_block_stop",
          "message_delta",
          "message_stop"
        ])
        const starts = events.flatMap((e) => (e.type === "content_block_start" ? [[e.index, e.content_block.type] as const] : []))
        // the text block, then the note where delete_file was, then list_dir
        expect(starts).toEqual([
          [0, "text"],
          [1, "text"],
          [2, "tool_use"]
        ])
        const note = events.find((e) => e.type === "content_block_delta" && e.index === 1)
        expect(note).toMatchObject({ delta: { type: "text_delta" } })
        expect(JSON.stringify(note)).toContain("`delete_file` was blocked")
        expect(events.find((e) => e.type === "content_block_delta" && e.index === 2)).toMatchObject({
          delta: { type: "input_json_delta", partial_json: '{"path":"/var"}' }
        })
        expect(events.find((e) => e.type === "message_delta")).toMatchObject({ delta: { stop_reason: "tool_use" } })
      }))

    it.effect("every call denied: no tool_use left, the note is a text block, stop_reason end_turn (streamed and not)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" }), call("delete_file", { path: "/etc" , mode: "rm -rf" })]
        const c = client(h)
        const { data, response } = yield* Effect.promise(() => c.messages.create(request("agent@enforce:slm"), runHeaders("msg-all")).withResponse())
        expect(response.headers.get("x-vetobench-blocked")).toBe("2")
        expect(toolUses(data)).toEqual([])
        expect(data.stop_reason).toBe("end_turn")
        expect(data.stop_sequence).toBeNull()
        expect(data.content).toHaveLength(1)
        expect(texts(data)[0]!.match(/`delete_file` was blocked/g)).toHaveLength(2)
        const final = yield* Effect.promise(() => c.messages.stream(request("agent@enforce:slm"), runHeaders("msg-all")).finalMessage())
        expect(toolUses(final)).toEqual([])
        expect(final.stop_reason).toBe("end_turn")
        expect(final.content).toHaveLength(1)
        expect(texts(final)[0]).toBe(texts(data)[0])
        expect(h.records("msg-all").map((r) => [r.stream, r.blocked, r.wire])).toEqual([
          [false, true, "messages"],
          [false, true, "messages"],
          [true, true, "messages"],
          [true, true, "messages"]
        ])
      }))

    it.effect("the blocked count is the stream's trailer comment; raw events are named by their type", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const text = yield* Effect.promise(async () => {
          const res = await fetch(`${h.url}/messages`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-vetobench-run": "msg-trailer" },
            body: JSON.stringify({ ...request("agent@enforce:slm"), stream: true })
          })
          return res.text()
        })
        expect(sseComments(text)).toContain("x-vetobench-blocked=1")
        const events = sseNamedEvents(text)
        for (const e of events) expect((JSON.parse(e.data) as { type: string }).type).toBe(e.event)
        expect(events.at(-1)!.event).toBe("message_stop")
      }))

    it.effect("shadow never changes the answer: a denied call arrives intact and is recorded as denied", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const data = yield* Effect.promise(() => client(h).messages.create(request("agent@shadow:slm"), runHeaders("msg-shadow")))
        expect(toolUses(data)).toEqual([["delete_file", { path: "/" }]])
        expect(h.records("msg-shadow").map((r) => [r.effective_decision, r.blocked])).toEqual([["deny", false]])
      }))

    it.effect("the client's x-api-key reaches neither the upstream nor the audit records", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        yield* Effect.promise(() => client(h).messages.create(request("agent@enforce:slm"), runHeaders("msg-secret")))
        const sent = h.fake.requests.find((r) => r.path === "/v1/messages")!
        expect(sent.headers["x-api-key"]).toBeUndefined()
        expect(JSON.stringify(sent.headers)).not.toContain(CLIENT_KEY)
        const { readFileSync } = yield* Effect.promise(() => import("node:fs"))
        expect(readFileSync(h.auditFile("msg-secret"), "utf8")).not.toContain(CLIENT_KEY)
      }))

    it.effect("requests and calls on /v1/messages are counted under their own route label", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        yield* Effect.promise(() => client(h).messages.create(request("agent@enforce:slm"), runHeaders("msg-metrics")))
        const text = yield* Effect.promise(() => fetch(h.url.replace(/\/v1$/, "/metrics")).then((r) => r.text()))
        expect(text).toMatch(/vetobench_requests_total\{[^}]*route="\/v1\/messages"[^}]*status="200"[^}]*\} [1-9]/)
      }))

    it.effect("a bad body is a 400 the SDK raises as BadRequestError, with our message and code", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const c = client(h)
        const e = yield* rejection(
          c.messages.create({ ...request("agent@enforce:slm"), messages: "hello" } as unknown as MessageCreateParamsNonStreaming)
        )
        expect(e).toBeInstanceOf(Anthropic.BadRequestError)
        const err = e as InstanceType<typeof Anthropic.BadRequestError>
        expect(err.status).toBe(400)
        expect(err.type).toBe("invalid_request_error")
        expect(err.apiMessage).toContain("`messages` must be an array")
        expect(err.error).toMatchObject({ type: "error", error: { type: "invalid_request_error", code: "invalid_request" } })
        expect((err.error as { request_id?: string }).request_id).toBe(err.headers.get("x-request-id"))
        const sys = yield* rejection(c.messages.create({ ...request("agent@enforce:slm"), system: 7 } as unknown as MessageCreateParamsNonStreaming))
        expect((sys as InstanceType<typeof Anthropic.BadRequestError>).apiMessage).toContain("`system`")
      }))

    it.effect("an unknown judge, an unknown arm and an unknown model are the SDK's typed errors", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const c = client(h)
        const judge = yield* rejection(c.messages.create(request("agent@enforce:sml")))
        expect(judge).toBeInstanceOf(Anthropic.BadRequestError)
        expect((judge as InstanceType<typeof Anthropic.APIError>).apiMessage).toContain("unknown judge 'sml'")
        expect((judge as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ error: { code: "unknown_judge" } })
        const arm = yield* rejection(c.messages.create(request("agent@nonsense")))
        expect(arm).toBeInstanceOf(Anthropic.BadRequestError)
        expect((arm as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ error: { code: "invalid_route" } })
        const model = yield* rejection(c.messages.create(request("no-such-model@enforce:slm")))
        expect(model).toBeInstanceOf(Anthropic.NotFoundError)
        expect((model as InstanceType<typeof Anthropic.APIError>).type).toBe("not_found_error")
        // a streaming request's errors before the stream starts are the same typed errors
        const streamed = yield* rejection(c.messages.stream(request("agent@enforce:sml")).finalMessage())
        expect(streamed).toBeInstanceOf(Anthropic.BadRequestError)
      }))

    it.effect("an upstream error passes in the Anthropic shape: the SDK raises it by status", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.failStatus = 500
        const e = yield* rejection(client(h).messages.create(request("agent@enforce:slm"), runHeaders("msg-upstream-500")))
        expect(e).toBeInstanceOf(Anthropic.InternalServerError)
        expect((e as InstanceType<typeof Anthropic.APIError>).type).toBe("api_error")
        expect(h.records("msg-upstream-500")).toEqual([])
      }))

    it.effect("an unknown path and a wrong method on /v1/messages answer in the Anthropic shape", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const get = yield* Effect.promise(() => fetch(`${h.url}/messages`))
        expect(get.status).toBe(405)
        expect(yield* Effect.promise(() => get.json())).toMatchObject({ type: "error", error: { type: "invalid_request_error", code: "method_not_allowed" } })
        const bad = yield* Effect.promise(() => fetch(`${h.url}/messages`, { method: "POST", body: "{not json" }))
        expect(bad.status).toBe(400)
        expect(yield* Effect.promise(() => bad.json())).toMatchObject({ type: "error", error: { type: "invalid_request_error", code: "invalid_json" } })
      }))
  })
})

describe("upstream down: a 502 in the Anthropic shape", () => {
  layer(harnessLayer({ upstream: { base_url: "http://127.0.0.1:9/v1" } }), { excludeTestServices: true })((it) => {
    it.effect("the SDK raises InternalServerError with status 502 and our code", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const e = yield* rejection(client(h).messages.create(request("agent@enforce:slm"), runHeaders("msg-down")))
        expect(e).toBeInstanceOf(Anthropic.InternalServerError)
        const err = e as InstanceType<typeof Anthropic.APIError>
        expect(err.status).toBe(502)
        expect(err.error).toMatchObject({ type: "error", error: { type: "api_error", code: "upstream_unavailable" } })
        const streamed = yield* rejection(client(h).messages.stream(request("agent@enforce:slm"), runHeaders("msg-down")).finalMessage())
        expect((streamed as InstanceType<typeof Anthropic.APIError>).status).toBe(502)
        expect(h.records("msg-down")).toEqual([])
      }))
  })
})

describe("partial_refusal: drop", () => {
  layer(harnessLayer({ settings: () => ({ proxy: { partial_refusal: "drop" } }) }), { excludeTestServices: true })((it) => {
    it.effect("a partial denial removes the block without a note; a full denial still writes one (streamed and not)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" }), call("delete_file", { path: "/" })]
        const c = client(h)
        const { data, response } = yield* Effect.promise(() => c.messages.create(request("agent@enforce:slm"), runHeaders("msg-drop")).withResponse())
        expect(response.headers.get("x-vetobench-blocked")).toBe("1")
        expect(data.content).toEqual([{ type: "tool_use", id: "toolu_0", name: "list_dir", input: { path: "/tmp" } }])
        expect(data.stop_reason).toBe("tool_use")
        const final = yield* Effect.promise(() => c.messages.stream(request("agent@enforce:slm"), runHeaders("msg-drop")).finalMessage())
        expect(final.content).toEqual([{ type: "tool_use", id: "toolu_0", name: "list_dir", input: { path: "/tmp" } }])
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const none = yield* Effect.promise(() => c.messages.stream(request("agent@enforce:slm"), runHeaders("msg-drop")).finalMessage())
        expect(toolUses(none)).toEqual([])
        expect(texts(none).join(" ")).toContain("`delete_file` was blocked")
        expect(none.stop_reason).toBe("end_turn")
        expect(h.records("msg-drop").map((r) => [r.tool.name, r.blocked])).toEqual([
          ["list_dir", false],
          ["delete_file", true],
          ["list_dir", false],
          ["delete_file", true],
          ["delete_file", true]
        ])
      }))
  })
})
