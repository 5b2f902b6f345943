/**
 * The access log as an operator reads it: one line per request, written when the response is done
 * (for a stream: when it ended), in the text and the JSON format of `--log-format`, with the request
 * id, route, model route, calls proposed / blocked / held, upstream status and latencies, and never
 * a message, a tool name or argument, a client credential, the upstream key or a query string.
 *
 * The proxy's log entries are captured with a logger that renders each one in both formats (the
 * same `proxyLogger` `vetobench proxy` writes to the console).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Logger, Redacted } from "effect"
import { proxyLogger } from "../../src/proxy/access-log.js"
import { call, Harness, type HarnessShape, harnessLayer, post, proxyRequest } from "../support/harness.js"
import { postStream } from "../support/sse.js"

const UPSTREAM_KEY = "sk-upstream-key-never-logged"
const CLIENT_KEY = "sk-client-key-never-logged"
const SECRET_TEXT = "my password is hunter2"
const SECRET_ARG = "/home/alice/secret-plan.txt"

interface Captured {
  readonly text: string
  readonly json: string
}
const lines: Array<Captured> = []
const text = proxyLogger("text")
const json = proxyLogger("json")
const capture = Logger.make<unknown, void>((entry) => {
  lines.push({ text: text.log(entry), json: json.log(entry) })
})

const linesOf = (requestId: string) => lines.filter((l) => l.text.includes(` request_id=${requestId} `))
type Fields = Record<string, string | number | null>
const fieldsOf = (requestId: string): Fields => {
  const mine = linesOf(requestId)
  expect(mine).toHaveLength(1)
  return JSON.parse(mine[0]!.json) as Fields
}

/** wait until the request's line is written (the middleware writes it right after the response) */
const lineFor = (requestId: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 50 && linesOf(requestId).length === 0; i++) yield* Effect.sleep("10 millis")
    return fieldsOf(requestId)
  })

const asClient = (id: string) => ({ headers: { "x-request-id": id, authorization: `Bearer ${CLIENT_KEY}` } })
const secretMessage = { messages: [{ role: "user", content: SECRET_TEXT }] }
const bodyBytes = (h: HarnessShape, body: Record<string, unknown>) => Buffer.byteLength(String(proxyRequest(h, body)[1].body))

describe("the access log", () => {
  layer(
    harnessLayer({
      accessLog: true,
      upstream: { api_key: Redacted.make(UPSTREAM_KEY) },
      settings: () => ({ judges: { "deny-all": { kind: "static", decision: "deny" }, "hold-all": { kind: "static", decision: "hold" } } })
    }).pipe(Layer.provide(Logger.replace(Logger.defaultLogger, capture))),
    { excludeTestServices: true }
  )((it) => {
    it.effect("a JSON request: one line with the model route, the calls, the upstream and the latencies", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: SECRET_ARG }), call("list_dir", { path: SECRET_ARG })]
        const body = { model: "agent@enforce:deny-all", ...secretMessage }
        const r = yield* post(h, body, { run: "acc-run", ...asClient("acc-json-1") })
        expect(r.status).toBe(200)
        const f = yield* lineFor("acc-json-1")
        expect(f).toMatchObject({
          level: "info",
          msg: "access",
          request_id: "acc-json-1",
          method: "POST",
          route: "/v1/chat/completions",
          status: 200,
          error: null,
          run_id: "acc-run",
          model: "agent",
          arm: "enforce",
          judge: "deny-all",
          calls_proposed: 2,
          calls_blocked: 2,
          calls_held: 0,
          upstream: "cluster",
          upstream_status: 200,
          bytes_in: bodyBytes(h, body),
          bytes_out: Buffer.byteLength(r.text)
        })
        expect(Number.isNaN(Date.parse(String(f["time"])))).toBe(false)
        expect(f["upstream_ms"]).toBeGreaterThan(0)
        expect(f["duration_ms"]).toBeGreaterThanOrEqual(f["upstream_ms"] as number)

        const [line] = linesOf("acc-json-1")
        expect(line!.text).toMatch(
          /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO access request_id=acc-json-1 method=POST route=\/v1\/chat\/completions status=200 run_id=acc-run model=agent arm=enforce judge=deny-all calls_proposed=2 calls_blocked=2 calls_held=0 upstream=cluster upstream_status=200 duration_ms=[\d.]+ upstream_ms=[\d.]+ bytes_in=\d+ bytes_out=\d+$/
        )
      }))

    it.effect("a streamed request: the line is written when the stream ended, with every byte the client got", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: SECRET_ARG })]
        h.fake.knobs.content = SECRET_TEXT
        h.fake.knobs.chunkDelayMs = 20
        const s = yield* postStream(h, { model: "agent@shadow:deny-all", ...secretMessage }, asClient("acc-sse-1"))
        expect(s.status).toBe(200)
        expect(s.done).toBe(true)
        const f = yield* lineFor("acc-sse-1")
        expect(f).toMatchObject({
          route: "/v1/chat/completions",
          status: 200,
          arm: "shadow",
          judge: "deny-all",
          calls_proposed: 1,
          calls_blocked: 0,
          calls_held: 0,
          upstream_status: 200,
          bytes_out: Buffer.byteLength(s.text)
        })
        // the stream's whole duration, not the time to its first byte
        expect(f["duration_ms"]).toBeGreaterThanOrEqual((s.endedAt - s.startedAt) * 0.5)
        expect(f["upstream_ms"]).toBeGreaterThan(0)
        expect(linesOf("acc-sse-1")[0]!.text).toMatch(/ arm=shadow judge=deny-all calls_proposed=1 calls_blocked=0 calls_held=0 upstream=cluster upstream_status=200 /)
      }))

    it.effect("errors: the proxy's error code; an unknown path is `unmatched`, without its query string", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const r = yield* post(h, { model: "agent@enforce:no-such-judge" }, asClient("acc-400"))
        expect(r.status).toBe(400)
        expect(yield* lineFor("acc-400")).toMatchObject({ status: 400, error: "unknown_judge", arm: "enforce", judge: "no-such-judge", upstream: null })
        yield* Effect.promise(() => fetch(`${h.url}/nowhere/api_key=abc?api_key=sk-query-secret`, { headers: { "x-request-id": "acc-404" } }))
        const f = yield* lineFor("acc-404")
        expect(f).toMatchObject({ method: "GET", route: "unmatched", status: 404, error: "not_found", model: null, calls_proposed: null })
        expect(linesOf("acc-404")[0]!.text).not.toContain("sk-query-secret")
        h.fake.knobs.failStatus = 503
        h.fake.knobs.failModels = new Set(["agent"])
        expect((yield* post(h, { model: "agent" }, asClient("acc-503"))).status).toBe(503)
        expect(yield* lineFor("acc-503")).toMatchObject({ status: 503, arm: "passthrough", upstream_status: 503, calls_proposed: null })
      }))

    it.effect("a client-given model cannot forge a line: it is quoted", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        yield* post(h, { model: "agent\n2026-01-01T00:00:00.000Z INFO access request_id=forged@enforce:deny-all" }, asClient("acc-forge"))
        const [line] = linesOf("acc-forge")
        expect(line!.text.split("\n")).toHaveLength(1)
        expect(line!.text).toContain(' model="agent\\n2026-01-01T00:00:00.000Z INFO access request_id=forged" ')
        expect(linesOf("forged")).toHaveLength(0)
      }))

    it.effect("no line holds a message, a tool name or argument, a client credential or the upstream key; one line per request", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: SECRET_ARG })]
        yield* post(h, { model: "agent@enforce:hold-all", ...secretMessage }, asClient("acc-last"))
        expect(yield* lineFor("acc-last")).toMatchObject({ calls_proposed: 1, calls_blocked: 1, calls_held: 1 })
        for (const l of lines) {
          for (const secret of [SECRET_TEXT, "hunter2", SECRET_ARG, "secret-plan", CLIENT_KEY, UPSTREAM_KEY, "delete_file", "list_dir", "sk-query-secret"]) {
            expect(l.text).not.toContain(secret)
            expect(l.json).not.toContain(secret)
          }
        }
        // nothing else logs per request (no platform request logger beside it)
        const ids = lines.map((l) => /request_id=(\S+)/.exec(l.text)?.[1])
        expect(ids.every((id) => id !== undefined)).toBe(true)
        expect(new Set(ids).size).toBe(ids.length)
      }))
  })
})
