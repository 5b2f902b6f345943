/**
 * veto-proxy with the official `openai` client: what an agent framework sees. Blocked refusals,
 * streamed partial enforce (raw chunks and the `stream()` helper), typed errors for bad routes and
 * unknown models, correlation headers, and the client's key never reaching the upstream.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import type { ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions"
import { call, Harness, type HarnessShape, harnessLayer, post } from "../support/harness.js"
import { assemble, type Chunk } from "../support/sse.js"

const CLIENT_KEY = "client-key-not-forwarded"

const TOOLS: Array<ChatCompletionTool> = [
  {
    type: "function",
    function: {
      name: "delete_file",
      description: "Delete a file",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
    }
  },
  {
    type: "function",
    function: { name: "list_dir", description: "List a directory", parameters: { type: "object", properties: { path: { type: "string" } } } }
  }
]

const client = (h: HarnessShape) => new OpenAI({ baseURL: h.url, apiKey: CLIENT_KEY, maxRetries: 0 })

const base = (model: string) => {
  const messages: Array<ChatCompletionMessageParam> = [{ role: "user", content: "clean up" }]
  return { model, messages, tools: TOOLS }
}

const runHeaders = (run: string) => ({ headers: { "x-vetobench-run": run } })

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

describe("veto-proxy with the openai SDK", () => {
  layer(harnessLayer(), { excludeTestServices: true })((it) => {
    it.effect("non-streaming enforce: the blocked call becomes the refusal", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const c = client(h)
        const { data, response, request_id } = yield* Effect.promise(() =>
          c.chat.completions.create(base("agent@enforce:slm"), runHeaders("sdk-deny")).withResponse()
        )
        const choice = data.choices[0]!
        expect(choice.finish_reason).toBe("stop")
        expect(choice.message.tool_calls ?? null).toBeNull()
        expect(choice.message.content).toContain("`delete_file` was blocked")
        expect(response.status).toBe(200)
        expect(response.headers.get("x-vetobench-blocked")).toBe("1")
        const rid = response.headers.get("x-request-id")
        expect(rid).toMatch(/^[0-9a-f]{32}$/)
        expect(request_id).toBe(rid)
        const recs = h.records("sdk-deny")
        expect(recs.map((r) => [r.tool.name, r.blocked, r.request_id])).toEqual([["delete_file", true, rid]])
      }))

    it.effect("withResponse exposes x-request-id (given by the client) and x-vetobench-blocked", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp/sdk-headers" })]
        const c = client(h)
        const { data, response, request_id } = yield* Effect.promise(() =>
          c.chat.completions
            .create(base("agent@enforce:slm"), { headers: { "x-vetobench-run": "sdk-headers", "x-request-id": "sdk-req-7" } })
            .withResponse()
        )
        expect(response.headers.get("x-request-id")).toBe("sdk-req-7")
        expect(response.headers.get("x-vetobench-blocked")).toBe("0")
        expect(request_id).toBe("sdk-req-7")
        // the awaited (non-withResponse) form carries it as `_request_id`
        const plain = yield* Effect.promise(() =>
          c.chat.completions.create(base("agent@enforce:slm"), { headers: { "x-vetobench-run": "sdk-headers", "x-request-id": "sdk-req-8" } })
        )
        expect(plain._request_id).toBe("sdk-req-8")
        expect(data.choices[0]!.message.tool_calls!.map((t) => (t.type === "function" ? t.function.name : t.type))).toEqual([
          "list_dir"
        ])
        expect(h.records("sdk-headers").map((r) => r.request_id)).toEqual(["sdk-req-7", "sdk-req-8"])
        expect(h.fake.requests.find((q) => (q.body as { model?: string }).model === "agent")!.headers["x-request-id"]).toBe("sdk-req-7")
      }))

    it.effect("streaming create(): partial enforce keeps list_dir and tells the agent about delete_file", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" }), call("delete_file", { path: "/" })]
        const c = client(h)
        const chunks = yield* Effect.promise(async () => {
          const { data: stream, response } = await c.chat.completions
            .create({ ...base("agent@enforce:slm"), stream: true, stream_options: { include_usage: true } }, runHeaders("sdk-stream"))
            .withResponse()
          expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
          expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/)
          const out: Array<ChatCompletionChunk> = []
          for await (const chunk of stream) out.push(chunk)
          return out
        })
        const a = assemble(chunks as ReadonlyArray<Chunk>)
        expect(a.tool_calls).toEqual([
          { index: 0, id: "call_0", type: "function", name: "list_dir", arguments: '{"path": "/tmp"}' }
        ])
        expect(a.content).toContain("`delete_file` was blocked")
        expect(a.finish_reason).toBe("tool_calls")
        expect(chunks[chunks.length - 1]!.choices).toEqual([])
        expect(chunks[chunks.length - 1]!.usage!.total_tokens).toBeGreaterThan(0)
        expect(h.records("sdk-stream").map((r) => [r.tool.name, r.blocked, r.stream])).toEqual([
          ["list_dir", false, true],
          ["delete_file", true, true]
        ])
      }))

    it.effect("stream() helper: finalChatCompletion() has the kept call, the note and finish tool_calls", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.content = "Let me look."
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" }), call("list_dir", { path: "/var" })]
        const c = client(h)
        const { final, contentEvents } = yield* Effect.promise(async () => {
          const runner = c.chat.completions.stream(base("agent@enforce:slm"), runHeaders("sdk-helper"))
          let contentEvents = 0
          runner.on("content", () => {
            contentEvents++
          })
          const final = await runner.finalChatCompletion()
          return { final, contentEvents }
        })
        const choice = final.choices[0]!
        expect(choice.finish_reason).toBe("tool_calls")
        const calls = (choice.message.tool_calls ?? []).map((t) =>
          t.type === "function" ? { id: t.id, name: t.function.name, arguments: t.function.arguments } : null
        )
        expect(calls).toEqual([{ id: "call_1", name: "list_dir", arguments: '{"path": "/var"}' }])
        expect(choice.message.content).toMatch(/^Let me look\.\n\n.*`delete_file` was blocked/s)
        expect(contentEvents).toBeGreaterThanOrEqual(2)
        expect(h.records("sdk-helper").map((r) => r.blocked)).toEqual([true, false])
      }))

    it.effect("a bad route throws BadRequestError (400) with the proxy's message", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const direct = yield* post(h, { model: "agent@warp:slm" })
        expect(direct.status).toBe(400)
        const e = yield* rejection(client(h).chat.completions.create(base("agent@warp:slm"), runHeaders("sdk-bad")))
        expect(e).toBeInstanceOf(OpenAI.BadRequestError)
        const err = e as InstanceType<typeof OpenAI.BadRequestError>
        expect(err.status).toBe(400)
        expect(direct.json.error!.message).toContain("unknown arm 'warp'")
        expect(err.message).toBe(`400 ${direct.json.error!.message}`)
        expect(err.code).toBe("invalid_route")
        expect(err.type).toBe("vetobench_error")
        expect(err.requestID).toMatch(/^[0-9a-f]{32}$/)
        expect(h.fake.requests).toEqual([])
        expect(h.records("sdk-bad")).toEqual([])
      }))

    it.effect("an unknown model throws NotFoundError (404)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const e = yield* rejection(client(h).chat.completions.create(base("nobody-serves-this"), runHeaders("sdk-404")))
        expect(e).toBeInstanceOf(OpenAI.NotFoundError)
        const err = e as InstanceType<typeof OpenAI.NotFoundError>
        expect(err.status).toBe(404)
        expect(err.code).toBe("no_upstream")
        expect(err.message).toContain("nobody-serves-this")
        expect(h.fake.requests).toEqual([])
      }))

    it.effect("the client's api key never reaches the upstream (streaming or not)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp/sdk-key" })]
        const c = client(h)
        yield* Effect.promise(() => c.chat.completions.create(base("agent@shadow:slm"), runHeaders("sdk-key")))
        yield* Effect.promise(async () => {
          const s = await c.chat.completions.create({ ...base("agent"), stream: true }, runHeaders("sdk-key"))
          for await (const _ of s) {
            // drain
          }
        })
        const agent = h.fake.requests.filter((q) => (q.body as { model?: string }).model === "agent")
        expect(agent).toHaveLength(2)
        expect(h.fake.requests.filter((q) => (q.body as { model?: string }).model === "judge")).toHaveLength(1)
        for (const q of h.fake.requests) {
          expect(q.headers.authorization).toBe("Bearer EMPTY")
          expect(JSON.stringify(q.headers)).not.toContain(CLIENT_KEY)
          expect(JSON.stringify(q.body)).not.toContain(CLIENT_KEY)
        }
      }))
  })
})
