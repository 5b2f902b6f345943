/**
 * The trust boundary on the Responses route, against a hostile upstream: in a logged arm, every call
 * a client can take from what the proxy returns — read by JSON parsers that keep the first or the
 * last of duplicate keys, by a WHATWG SSE parser, as the openai SDK assembles it — was ruled,
 * recorded and released (a property over generated answers: `\u` escapes in keys, duplicate `type`,
 * `arguments` and `output` keys, calls smuggled into `response` objects, event names that lie,
 * split deltas, several and interleaved items, early ends, random byte boundaries). Answers the gate
 * cannot read are a 502 or an error event, never passed on.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import OpenAI from "openai"
import type { ResponseStreamEvent } from "openai/resources/responses/responses"
import { canonicalize } from "../../src/domain/canonical-json.js"
import type { CallRecord } from "../../src/domain/audit-record.js"
import { parseArguments } from "../../src/domain/tool-call.js"
import { Harness, type HarnessShape, harnessLayer } from "../support/harness.js"
import { startHostileUpstream } from "../support/hostile-upstream.js"
import { parseJsonWith, readings, sseEvents } from "../support/readers.js"
import { callsInResponse, callViewsOfResponseStream, type FoundCall, postResponses } from "../support/responses.js"
import { genResponse, genResponseStream, responseStreamPieces, responseText } from "../support/responses-spellings.js"

const hostile = await startHostileUpstream()
afterAll(() => hostile.close())

const harness = harnessLayer({
  upstream: { base_url: hostile.url },
  settings: () => ({
    judges: { "deny-all": { kind: "static", decision: "deny" }, "allow-all": { kind: "static", decision: "allow" } },
    proxy: { fail_policy: "closed" }
  })
})

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
    expect(left, `call ${c.name}(${c.arguments}) reached the client without a released record`).toBeGreaterThan(0)
    released.set(k, left - 1)
  }
  return records
}

/** the event values each reader takes from a stream's events (until one it cannot parse) */
const streamReadings = (datas: ReadonlyArray<string>): Array<Array<unknown>> =>
  (["first", "last"] as const).map((dup) => {
    const values: Array<unknown> = []
    for (const d of datas) {
      try {
        values.push(parseJsonWith(d, dup))
      } catch {
        break
      }
    }
    return values
  })

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)
const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed", "error"])

/** the properties are bounded by their run counts; the timeout only has to allow a busy 2-core machine */
const PROPERTY_TIMEOUT = 300_000

let counter = 0
const nextId = () => `rtb-${++counter}`

describe("the Responses trust boundary against a hostile upstream", () => {
  layer(harness, { excludeTestServices: true })((it) => {
    it.effect("buffered: what any reader finds in the answer was ruled, recorded and released (property)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(genResponse, fc.constantFrom("deny-all", "allow-all"), fc.constantFrom("enforce", "shadow"), async (g, judge, arm) => {
              const body = responseText(g)
              hostile.answer = { body }
              const id = nextId()
              const r = await Effect.runPromise(postResponses(h, { model: `agent@${arm}:${judge}` }, { run: "rtb-json", headers: { "x-request-id": id } }))
              const mine = () => h.records("rtb-json").filter((x) => x.request_id === id)
              if (r.status !== 200) {
                expect(r.status, r.text).toBe(502)
                expect(r.json).toMatchObject({ error: { code: "upstream_invalid_response", type: "vetobench_error" } })
                expect(mine()).toEqual([])
                return
              }
              const found = readings(r.text).map(callsInResponse)
              expect(found.length).toBe(3)
              for (const f of found) expectReleased(h, "rtb-json", id, f)
              // exactly one record per call item JSON.parse finds in the upstream's answer
              expect(mine().length).toBe(callsInResponse(JSON.parse(body.replace(/^\uFEFF/, ""))).length)
              expect(mine().every((x) => x.wire === "responses")).toBe(true)
              if (arm === "enforce" && judge === "deny-all") expect(found.flat()).toEqual([])
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
            fc.asyncProperty(genResponseStream, fc.constantFrom("deny-all", "allow-all"), async (s, judge) => {
              hostile.answer = { contentType: "text/event-stream", body: responseStreamPieces(s) }
              const id = nextId()
              const r = await Effect.runPromise(postResponses(h, { model: `agent@enforce:${judge}`, stream: true }, { run: "rtb-sse", headers: { "x-request-id": id } }))
              expect(r.status).toBe(200)
              const datas = sseEvents(r.text)
              for (const values of streamReadings(datas)) {
                for (const found of callViewsOfResponseStream(values)) {
                  expectReleased(h, "rtb-sse", id, found)
                  if (judge === "deny-all") expect(found).toEqual([])
                }
              }
              // one reading for every parser, numbered as the client gets it, ending with a terminal event
              const values = datas.map((d) => JSON.parse(d) as Record<string, unknown>)
              expect(values.map((v) => v.sequence_number)).toEqual(values.map((_, i) => i))
              const added = values.filter((v) => v.type === "response.output_item.added").map((v) => v.output_index)
              expect(added).toEqual(added.map((_, i) => i))
              const last = values[values.length - 1]!
              expect(TERMINAL.has(String(last.type)), JSON.stringify(last)).toBe(true)
              if (s.terminal === "none" || s.terminal === "[DONE]") expect(last).toMatchObject({ type: "error", code: "upstream_invalid_response" })
              // the response objects the client reads hold exactly the items it was sent
              let sent = 0
              for (const v of values) {
                if (v.type === "response.output_item.added") sent++
                if (isObj(v.response)) expect((v.response.output as Array<unknown>).length).toBe(sent)
              }
            }),
            { numRuns: 150 }
          )
        )
      }), PROPERTY_TIMEOUT)

    it.effect("the official openai SDK takes no unruled call either (a sample: create, streamed create, stream helper)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const client = new OpenAI({ baseURL: h.url, apiKey: "unused", maxRetries: 0 })
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(genResponseStream, fc.constantFrom("create", "stream", "helper"), async (s, how) => {
              const id = nextId()
              const opts = { headers: { "x-vetobench-run": "rtb-sdk", "x-request-id": id } }
              const request = { model: "agent@enforce:allow-all", input: "go" }
              const found: Array<Array<FoundCall>> = []
              if (how === "create") {
                hostile.answer = { body: responseText(s.response) }
                const res = await client.responses.create(request, opts).catch((e: unknown) => e)
                if (res instanceof Error) {
                  expect(res).toBeInstanceOf(OpenAI.APIError)
                  expect((res as InstanceType<typeof OpenAI.APIError>).status).toBe(502)
                } else found.push(callsInResponse(res))
              } else {
                hostile.answer = { contentType: "text/event-stream", body: responseStreamPieces(s) }
                if (how === "stream") {
                  const events: Array<ResponseStreamEvent> = []
                  for await (const e of await client.responses.create({ ...request, stream: true }, opts)) events.push(e)
                  found.push(...callViewsOfResponseStream(events))
                } else {
                  const runner = client.responses.stream(request, opts)
                  const events: Array<ResponseStreamEvent> = []
                  // a copy: the SDK's snapshot takes the added item itself and appends the deltas to it
                  runner.on("event", (e) => events.push(structuredClone(e)))
                  // an error event or a failed response rejects finalResponse()
                  const final = await runner.finalResponse().catch(() => null)
                  found.push(...callViewsOfResponseStream(events))
                  if (final !== null) found.push(callsInResponse(final))
                }
              }
              for (const view of found) expectReleased(h, "rtb-sdk", id, view)
            }),
            { numRuns: 60 }
          )
        )
      }), PROPERTY_TIMEOUT)
  })
})
