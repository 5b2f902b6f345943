/**
 * The trust boundary on `POST /v1/messages`, against a hostile upstream: in a logged arm, every
 * tool_use block that any conforming JSON + SSE reader finds in what the proxy returns was ruled,
 * recorded and released — a property over generated answers and streams (escapes, whitespace,
 * duplicate keys with decoys, several tool_use blocks among other blocks, input JSON split over
 * deltas, interleaved blocks, pings, framing variants, cut streams, random byte boundaries), also as
 * the official @anthropic-ai/sdk client reads it. Answers the gate cannot read are a 502 or end with
 * an error event, never passed on.
 */
import Anthropic from "@anthropic-ai/sdk"
import type { Message } from "@anthropic-ai/sdk/resources/messages"
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import type { CallRecord } from "../../src/domain/audit-record.js"
import { canonicalize } from "../../src/domain/canonical-json.js"
import { parseArguments } from "../../src/domain/tool-call.js"
import { Harness, type HarnessShape, harnessLayer, post } from "../support/harness.js"
import { startHostileUpstream } from "../support/hostile-upstream.js"
import { callsInMessage, callsInMessageStream, parsedEvents, sseNamedEvents } from "../support/messages-readers.js"
import {
  genMessage,
  genMessageStream,
  messageStreamPieces,
  messageText,
  readableStream,
  streamedToolUses,
  toolUsesPerJsonParse
} from "../support/messages-spellings.js"
import { type FoundCall, readings } from "../support/readers.js"

const hostile = await startHostileUpstream()
afterAll(() => hostile.close())

const harness = harnessLayer({
  upstream: { base_url: hostile.url },
  settings: () => ({
    judges: { "deny-all": { kind: "static", decision: "deny" }, "allow-all": { kind: "static", decision: "allow" } },
    proxy: { fail_policy: "closed" }
  })
})

const MESSAGES = { path: "messages" }
const body = (model: string, stream = false) => ({ model, max_tokens: 64, messages: [{ role: "user", content: "go" }], tools: [], stream })

/** a call as the record holds it: name and canonical arguments */
const key = (name: string, args: unknown) => `${name}\u0000${canonicalize(parseArguments(args))}`

/** Every call found is released by a record of this request (as a multiset). Returns the request's records. */
const expectReleased = (h: HarnessShape, run: string, requestId: string, found: ReadonlyArray<FoundCall>): Array<CallRecord> => {
  const records = h.records(run).filter((r) => r.request_id === requestId)
  const released = new Map<string, number>()
  for (const r of records) if (!r.blocked) released.set(key(r.tool.name, r.tool.arguments), (released.get(key(r.tool.name, r.tool.arguments)) ?? 0) + 1)
  for (const c of found) {
    const k = key(c.name, c.arguments)
    const left = released.get(k) ?? 0
    expect(left, `tool_use ${c.name}(${c.arguments}) reached the client without a released record`).toBeGreaterThan(0)
    released.set(k, left - 1)
  }
  for (const r of records) expect(r.wire).toBe("messages")
  return records
}

/** the calls each reader (first-/last-wins JSON, SDK-style and index-keyed accumulation) assembles from a stream */
const streamFindings = (text: string): Array<Array<FoundCall>> => {
  const events = sseNamedEvents(text)
  return (["first", "last"] as const).flatMap((dup) => {
    const values = parsedEvents(events, dup)
    return [callsInMessageStream(values, "sdk"), callsInMessageStream(values, "keyed")]
  })
}

const PROPERTY_TIMEOUT = 300_000

let counter = 0
const nextId = () => `mtb-${++counter}`

describe("the Messages trust boundary against a hostile upstream", () => {
  layer(harness, { excludeTestServices: true })((it) => {
    it.effect("non-streamed: what any reader finds in the answer was ruled, recorded and released (property)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(genMessage, fc.constantFrom("deny-all", "allow-all"), fc.constantFrom("enforce", "shadow"), async (m, judge, arm) => {
              const text = messageText(m)
              hostile.answer = { body: text }
              const id = nextId()
              const r = await Effect.runPromise(post(h, body(`agent@${arm}:${judge}`), { ...MESSAGES, run: "mtb-json", headers: { "x-request-id": id } }))
              if (r.status !== 200) {
                expect(r.status, r.text).toBe(502)
                expect(JSON.parse(r.text)).toMatchObject({ type: "error", error: { type: "api_error", code: "upstream_invalid_response" }, request_id: id })
                expect(h.records("mtb-json").filter((x) => x.request_id === id)).toEqual([])
                return
              }
              const found = readings(r.text).map(callsInMessage)
              expect(found.length).toBe(3)
              for (const f of found) expectReleased(h, "mtb-json", id, f)
              // exactly one record per tool_use block the gate read
              expect(h.records("mtb-json").filter((x) => x.request_id === id).length).toBe(toolUsesPerJsonParse(text))
              if (judge === "allow-all" || arm === "shadow") for (const f of found) expect(f.length).toBe(toolUsesPerJsonParse(text))
              if (arm === "enforce" && judge === "deny-all") {
                expect(found.flat()).toEqual([])
                const removed = toolUsesPerJsonParse(text)
                expect(r.headers.get("x-vetobench-blocked")).toBe(String(removed))
                if (removed > 0) expect((JSON.parse(r.text) as { stop_reason: unknown }).stop_reason).toBe("end_turn")
              }
            }),
            { numRuns: 150 }
          )
        )
      }), PROPERTY_TIMEOUT)

    it.effect("streamed: what any SSE + JSON reader assembles was ruled, recorded and released (property)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(genMessageStream, fc.constantFrom("deny-all", "allow-all"), async (s, judge) => {
              hostile.answer = { contentType: "text/event-stream", body: messageStreamPieces(s) }
              const id = nextId()
              const r = await Effect.runPromise(post(h, body(`agent@enforce:${judge}`, true), { ...MESSAGES, run: "mtb-sse", headers: { "x-request-id": id } }))
              expect(r.status).toBe(200)
              for (const found of streamFindings(r.text)) {
                expectReleased(h, "mtb-sse", id, found)
                if (judge === "deny-all") expect(found).toEqual([])
              }
              // every event is named by its type, and the stream ends with message_stop or an error event
              const events = sseNamedEvents(r.text)
              for (const e of events) expect((JSON.parse(e.data) as { type: unknown }).type).toBe(e.event)
              const last = events[events.length - 1]!
              if (readableStream(s)) {
                expect(last.event).toBe("message_stop")
                // every tool_use block was ruled once; with allow-all every reader gets each of them
                expect(h.records("mtb-sse").filter((x) => x.request_id === id).length).toBe(streamedToolUses(s))
                if (judge === "allow-all") for (const found of streamFindings(r.text)) expect(found.length).toBe(streamedToolUses(s))
              }
              else if (last.event !== "message_stop") {
                expect(last.event).toBe("error")
                expect(JSON.parse(last.data)).toMatchObject({ type: "error", error: { code: "upstream_invalid_response" }, request_id: id })
              }
            }),
            { numRuns: 150 }
          )
        )
      }), PROPERTY_TIMEOUT)

    it.effect("the official @anthropic-ai/sdk client finds no unruled call either (a sample, streamed and not)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const client = new Anthropic({ baseURL: h.url.replace(/\/v1$/, ""), apiKey: "unused", maxRetries: 0 })
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(genMessageStream, fc.boolean(), async (s, stream) => {
              const id = nextId()
              const opts = { headers: { "x-vetobench-run": "mtb-sdk", "x-request-id": id } }
              const request = { model: "agent@enforce:allow-all", max_tokens: 64, messages: [{ role: "user" as const, content: "go" }] }
              const found: Array<FoundCall> = []
              const use = (m: Message) =>
                found.push(...m.content.flatMap((b) => (b.type === "tool_use" ? [{ name: b.name, arguments: JSON.stringify(b.input) }] : [])))
              if (!stream) {
                hostile.answer = { body: messageText(s.message) }
                const res = await client.messages.create(request, opts).catch((e: unknown) => e)
                if (res instanceof Error) {
                  expect(res).toBeInstanceOf(Anthropic.APIError)
                  expect((res as InstanceType<typeof Anthropic.APIError>).status).toBe(502)
                } else use(res as Message)
              } else {
                hostile.answer = { contentType: "text/event-stream", body: messageStreamPieces(s) }
                const runner = client.messages.stream(request, opts)
                // what the client assembled, also when the stream then fails
                runner.on("contentBlock", (b) => {
                  if (b.type === "tool_use") found.push({ name: b.name, arguments: JSON.stringify(b.input) })
                })
                const final = await runner.finalMessage().catch((e: unknown) => e)
                if (final instanceof Error) expect(final).toBeInstanceOf(Anthropic.AnthropicError)
                else expect(found).toEqual((final as Message).content.flatMap((b) => (b.type === "tool_use" ? [{ name: b.name, arguments: JSON.stringify(b.input) }] : [])))
              }
              expectReleased(h, "mtb-sdk", id, found)
            }),
            { numRuns: 60 }
          )
        )
      }), PROPERTY_TIMEOUT)
  })
})
