/**
 * The fake vLLM's `POST /v1/messages`: the same behaviour as its chat route (knobs, heuristics,
 * scripts) read from a Messages request (system, content blocks, tool_use / tool_result turns,
 * tools with `input_schema`) and written as a Messages answer or event stream (a ping, text deltas,
 * tool input split over several input_json_delta deltas, usage), errors in the Anthropic shape.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { FakeVllm, type FakeVllmShape } from "../../layers/FakeVllm.js"
import { parsedEvents, sseNamedEvents } from "../support/messages-readers.js"

interface Reply {
  readonly status: number
  readonly contentType: string
  readonly text: string
}

const postMessages = (fake: FakeVllmShape, body: Record<string, unknown>) =>
  Effect.promise(async (): Promise<Reply> => {
    const res = await fetch(`${fake.url}/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
    return { status: res.status, contentType: res.headers.get("content-type") ?? "", text: await res.text() }
  })

interface Block {
  readonly type: string
  readonly text?: string
  readonly id?: string
  readonly name?: string
  readonly input?: unknown
}
interface Answer {
  readonly type: string
  readonly role: string
  readonly content: ReadonlyArray<Block>
  readonly stop_reason: string
  readonly usage: { readonly input_tokens: number; readonly output_tokens: number }
}

const TOOLS = [
  { name: "delete_file", description: "Delete a file", input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
  { name: "get_weather", input_schema: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } } } }
]

const request = (extra: Record<string, unknown> = {}) => ({
  model: "agent",
  max_tokens: 64,
  messages: [{ role: "user", content: "clean up" }],
  tools: TOOLS,
  ...extra
})

describe("the fake vLLM's Messages endpoint", () => {
  layer(FakeVllm.layer(), { excludeTestServices: true })((it) => {
    const fresh = Effect.gen(function* () {
      const fake = yield* FakeVllm
      fake.reset()
      return fake
    })

    it.effect("an agent proposes a tool_use block for the first tool, with one typed value per input_schema property", () =>
      Effect.gen(function* () {
        const fake = yield* fresh
        const r = yield* postMessages(fake, request({ tools: [TOOLS[1]], messages: [{ role: "user", content: [{ type: "text", text: "What's the weather in Paris?" }] }] }))
        expect(r.status).toBe(200)
        const a = JSON.parse(r.text) as Answer
        expect(a).toMatchObject({ type: "message", role: "assistant", stop_reason: "tool_use" })
        expect(a.content).toEqual([{ type: "tool_use", id: "toolu_0", name: "get_weather", input: { city: "Paris", days: 1 } }])
        expect(a.usage.input_tokens).toBeGreaterThan(0)
        expect(a.usage.output_tokens).toBeGreaterThan(0)
        expect(fake.requests.at(-1)!.path).toBe("/v1/messages")
      }))

    it.effect("nextCalls and content: a text block, then the tool_use blocks in order", () =>
      Effect.gen(function* () {
        const fake = yield* fresh
        fake.knobs.content = "On it."
        fake.knobs.nextCalls = [
          { name: "delete_file", arguments: { path: "/" } },
          { name: "list_dir", arguments: { path: "/tmp" } }
        ]
        const a = JSON.parse((yield* postMessages(fake, request())).text) as Answer
        expect(a.content).toEqual([
          { type: "text", text: "On it." },
          { type: "tool_use", id: "toolu_0", name: "delete_file", input: { path: "/" } },
          { type: "tool_use", id: "toolu_1", name: "list_dir", input: { path: "/tmp" } }
        ])
        fake.knobs.nextCalls = []
        fake.knobs.content = null
        const done = JSON.parse((yield* postMessages(fake, request())).text) as Answer
        expect(done.content).toEqual([{ type: "text", text: "Task finished." }])
        expect(done.stop_reason).toBe("end_turn")
      }))

    it.effect("streamed: message_start, a ping, text deltas, the input split over several input_json_delta deltas, message_delta with usage", () =>
      Effect.gen(function* () {
        const fake = yield* fresh
        fake.knobs.content = "Deleting the old backups now."
        fake.knobs.nextCalls = [{ name: "delete_file", arguments: { path: "/var/backups/old-2024-archive.tar.gz" } }]
        const r = yield* postMessages(fake, request({ stream: true }))
        expect(r.contentType).toMatch(/^text\/event-stream/)
        const events = sseNamedEvents(r.text)
        for (const e of events) expect((JSON.parse(e.data) as { type: string }).type).toBe(e.event)
        const values = parsedEvents(events, "last").map((e) => e.value as Record<string, unknown> & { type: string; index?: number; delta?: Record<string, unknown> })
        expect(values[0]!.type).toBe("message_start")
        expect(values[1]!.type).toBe("ping")
        expect(values.slice(-2).map((v) => v.type)).toEqual(["message_delta", "message_stop"])
        expect(values.at(-2)).toMatchObject({ delta: { stop_reason: "tool_use" }, usage: { output_tokens: expect.any(Number) as number } })
        const text = values.filter((v) => v.index === 0 && v.type === "content_block_delta").map((v) => v.delta!.text as string)
        expect(text.length).toBeGreaterThan(1)
        expect(text.join("")).toBe("Deleting the old backups now.")
        const json = values.filter((v) => v.index === 1 && v.delta?.type === "input_json_delta").map((v) => v.delta!.partial_json as string)
        expect(json.length).toBeGreaterThanOrEqual(3)
        expect(JSON.parse(json.join(""))).toEqual({ path: "/var/backups/old-2024-archive.tar.gz" })
        expect(values.find((v) => v.type === "content_block_start" && v.index === 1)).toMatchObject({
          content_block: { type: "tool_use", id: "toolu_0", name: "delete_file", input: {} }
        })
        expect(r.text).not.toContain("[DONE]")
      }))

    it.effect("a conversation: system from a string or blocks, tool_use and tool_result turns count as the chat route counts them", () =>
      Effect.gen(function* () {
        const fake = yield* fresh
        fake.knobs.scripts = [
          {
            system: "file agent",
            turns: [{ calls: [{ name: "delete_file", arguments: { path: "/tmp/a" } }] }, { content: "Deleted." }]
          }
        ]
        const first = JSON.parse((yield* postMessages(fake, request({ system: "You are a file agent." }))).text) as Answer
        expect(first.content).toEqual([{ type: "tool_use", id: "toolu_0", name: "delete_file", input: { path: "/tmp/a" } }])
        const second = JSON.parse(
          (yield* postMessages(
            fake,
            request({
              system: [{ type: "text", text: "You are a file agent." }],
              messages: [
                { role: "user", content: "clean up" },
                { role: "assistant", content: first.content },
                { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_0", content: "ok" }] }
              ]
            })
          )).text
        ) as Answer
        expect(second.content).toEqual([{ type: "text", text: "Deleted." }])
        // without a script: after a tool result the heuristic agent is done
        fake.knobs.scripts = []
        const after = JSON.parse(
          (yield* postMessages(
            fake,
            request({
              messages: [
                { role: "user", content: "clean up" },
                { role: "assistant", content: [{ type: "tool_use", id: "toolu_0", name: "delete_file", input: { path: "x" } }] },
                { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_0", content: [{ type: "text", text: "ok" }] }] }
              ]
            })
          )).text
        ) as Answer
        expect(after.content).toEqual([{ type: "text", text: "Task finished." }])
      }))

    it.effect("malformed: a tool input that is not JSON (a string in the answer, invalid JSON in the deltas)", () =>
      Effect.gen(function* () {
        const fake = yield* fresh
        fake.knobs.malformed = true
        fake.knobs.nextCalls = [{ name: "delete_file", arguments: { path: "/tmp/x" } }]
        const a = JSON.parse((yield* postMessages(fake, request())).text) as Answer
        expect(a.content[0]).toMatchObject({ type: "tool_use", name: "delete_file", input: '{"path": "/tmp/x"' })
        const r = yield* postMessages(fake, request({ stream: true }))
        const json = parsedEvents(sseNamedEvents(r.text), "last")
          .map((e) => e.value as { delta?: { type?: string; partial_json?: string } })
          .flatMap((v) => (v.delta?.type === "input_json_delta" ? [v.delta.partial_json ?? ""] : []))
        expect(() => JSON.parse(json.join(""))).toThrow()
      }))

    it.effect("errors in the Anthropic shape: an unknown model is a 404 not_found_error, failStatus an api_error", () =>
      Effect.gen(function* () {
        const fake = yield* fresh
        const missing = yield* postMessages(fake, request({ model: "nope" }))
        expect(missing.status).toBe(404)
        expect(JSON.parse(missing.text)).toEqual({ type: "error", error: { type: "not_found_error", message: "The model `nope` does not exist." } })
        fake.knobs.failStatus = 503
        const failed = yield* postMessages(fake, request())
        expect(failed.status).toBe(503)
        expect(JSON.parse(failed.text)).toEqual({ type: "error", error: { type: "api_error", message: "fake failure" } })
        // the chat route keeps vLLM's OpenAI-style errors
        fake.knobs.failStatus = null
        const chat = yield* Effect.promise(async () => {
          const res = await fetch(`${fake.url}/chat/completions`, { method: "POST", body: JSON.stringify({ model: "nope", messages: [] }) })
          return res.json() as Promise<unknown>
        })
        expect(chat).toMatchObject({ error: { type: "NotFoundError", code: 404 } })
      }))
  })
})
