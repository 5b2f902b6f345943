/**
 * The trust boundary through the HTTP proxy, against a hostile upstream: in a logged arm, every
 * callable call that any conforming JSON + SSE reader finds in what the proxy returns was ruled,
 * recorded and released (a property over generated answers: escapes, whitespace, duplicate keys,
 * several choices, pretty-printing, a BOM, SSE framing variants, random byte boundaries), also as the
 * official openai SDK reads it; answers the gate cannot read are a 502 or an error event, never
 * passed on; a stream that ends before `[DONE]` ends with an error event and records what it held.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import OpenAI from "openai"
import type { ChatCompletionChunk } from "openai/resources/chat/completions"
import { parseArguments } from "../../src/domain/tool-call.js"
import { canonicalize } from "../../src/domain/canonical-json.js"
import type { CallRecord } from "../../src/domain/audit-record.js"
import { Harness, type HarnessShape, harnessLayer, post } from "../support/harness.js"
import { startHostileUpstream } from "../support/hostile-upstream.js"
import { callsInCompletion, callsInStream, type FoundCall, parseJsonWith, readings, sseEvents } from "../support/readers.js"
import { answerText, callsPerJsonParse, genAnswer, genStream, streamPieces } from "../support/spellings.js"

const hostile = await startHostileUpstream()
afterAll(() => hostile.close())

const harness = harnessLayer({
  upstream: { base_url: hostile.url },
  settings: () => ({
    judges: { "deny-all": { kind: "static", decision: "deny" }, "allow-all": { kind: "static", decision: "allow" } },
    proxy: { fail_policy: "closed" }
  })
})

/** a call as the record holds it: name and canonical arguments (records are written in canonical JSON) */
const key = (name: string, args: unknown) => `${name}\u0000${canonicalize(parseArguments(args))}`

/**
 * Every call found is released by a record of this request (as a multiset: a call found twice needs
 * two released records). Returns the request's records.
 */
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

/** the calls each reader assembles from a streamed answer's events (until [DONE] or an unreadable event) */
const streamFindings = (datas: ReadonlyArray<string>): Array<Array<FoundCall>> =>
  (["first", "last"] as const).map((dup) => {
    const values: Array<unknown> = []
    for (const d of datas) {
      if (d.startsWith("[DONE]")) break
      try {
        values.push(parseJsonWith(d, dup))
      } catch {
        break // the SDKs throw on an event that is not JSON
      }
    }
    return callsInStream(values)
  })

/** the properties are bounded by their run counts; the timeout only has to allow a busy 2-core machine */
const PROPERTY_TIMEOUT = 300_000

let counter = 0
const nextId = () => `tb-${++counter}`

describe("the trust boundary against a hostile upstream", () => {
  layer(harness, { excludeTestServices: true })((it) => {
    it.effect("non-streamed: what any reader finds in the answer was ruled, recorded and released (property)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(genAnswer, fc.constantFrom("deny-all", "allow-all"), fc.constantFrom("enforce", "shadow"), async (a, judge, arm) => {
              const body = answerText(a)
              hostile.answer = { body }
              const id = nextId()
              const r = await Effect.runPromise(post(h, { model: `agent@${arm}:${judge}` }, { run: "tb-json", headers: { "x-request-id": id } }))
              if (r.status !== 200) {
                expect(r.status, r.text).toBe(502)
                expect(h.records("tb-json").filter((x) => x.request_id === id)).toEqual([])
                return
              }
              const found = readings(r.text).map(callsInCompletion)
              expect(found.length).toBe(3)
              for (const f of found) expectReleased(h, "tb-json", id, f)
              // exactly one record per call the gate read
              expect(h.records("tb-json").filter((x) => x.request_id === id).length).toBe(callsPerJsonParse(body))
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
            fc.asyncProperty(genStream, fc.constantFrom("deny-all", "allow-all"), async (s, judge) => {
              hostile.answer = { contentType: "text/event-stream", body: streamPieces(s) }
              const id = nextId()
              const r = await Effect.runPromise(post(h, { model: `agent@enforce:${judge}`, stream: true }, { run: "tb-sse", headers: { "x-request-id": id } }))
              expect(r.status).toBe(200)
              const datas = sseEvents(r.text)
              const findings = streamFindings(datas)
              for (const found of findings) expectReleased(h, "tb-sse", id, found)
              if (judge === "deny-all") for (const found of findings) expect(found).toEqual([])
              // it ends with [DONE] or with an error event, never silently
              const last = datas[datas.length - 1] ?? ""
              // calls after a choice's calls were released, or no [DONE]: the stream ends with an error event
              const refinished = s.answer.choices.some((c) => c.again !== null && c.finish !== null && (c.calls.length > 0 || c.fn !== null))
              // (with decoy keys the gate may read no calls before the finish: then nothing was released yet)
              if (s.done === null) expect(JSON.parse(last)).toMatchObject({ error: { code: "upstream_invalid_response", request_id: id } })
              else if (!refinished) expect(last).toBe("[DONE]")
              else if (last !== "[DONE]") expect(JSON.parse(last)).toMatchObject({ error: { code: "upstream_invalid_response", request_id: id } })
            }),
            { numRuns: 150 }
          )
        )
      }), PROPERTY_TIMEOUT)

    it.effect("the official openai SDK finds no unruled call either (a sample, streamed and not)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const client = new OpenAI({ baseURL: h.url, apiKey: "unused", maxRetries: 0 })
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(genStream, fc.boolean(), async (s, stream) => {
              const id = nextId()
              const opts = { headers: { "x-vetobench-run": "tb-sdk", "x-request-id": id } }
              const request = { model: "agent@enforce:allow-all", messages: [{ role: "user" as const, content: "go" }] }
              const found: Array<FoundCall> = []
              if (!stream) {
                hostile.answer = { body: answerText(s.answer) }
                const res = await client.chat.completions.create(request, opts).catch((e: unknown) => e)
                if (res instanceof Error) {
                  expect(res).toBeInstanceOf(OpenAI.APIError)
                  expect((res as InstanceType<typeof OpenAI.APIError>).status).toBe(502)
                } else found.push(...callsInCompletion(res))
              } else {
                hostile.answer = { contentType: "text/event-stream", body: streamPieces(s) }
                const chunks: Array<ChatCompletionChunk> = []
                try {
                  for await (const c of await client.chat.completions.create({ ...request, stream: true }, opts)) chunks.push(c)
                } catch (e) {
                  expect(e).toBeInstanceOf(OpenAI.APIError) // an error event, as the SDK reports it
                }
                found.push(...callsInStream(chunks))
              }
              expectReleased(h, "tb-sdk", id, found)
            }),
            { numRuns: 60 }
          )
        )
      }), PROPERTY_TIMEOUT)
  })
})
