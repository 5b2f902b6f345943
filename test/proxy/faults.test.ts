/**
 * Faults on every side of the proxy: upstream errors, unreachable and slow upstreams, oversized and
 * malformed bodies, judge failures and clients that walk away mid-stream. The error table is
 * architecture decision 6; the audit rule is "one record per proposed call, none lost".
 */
import { readFileSync } from "node:fs"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { errorBody as fakeErrorBody } from "../../layers/fake-vllm/wire.js"
import { verifyChainText } from "../../src/domain/chain-verify.js"
import { call, Harness, harnessLayer, post, type HarnessShape, type PostResult, TOOLS } from "../support/harness.js"
import { closedPort, postAndAbortAfterFirstChunk, rawPost, type RawResult } from "../support/net.js"

const LIMIT = 1024

/** one harness for the faults that share settings: small body limit, short upstream timeout, fail closed */
const faultsHarness = harnessLayer({
  settings: () => ({ proxy: { max_body_bytes: LIMIT, fail_policy: "closed" } }),
  upstream: { timeout_s: 0.5 }
})

const FAKE_500 = fakeErrorBody("fake failure", "InternalServerError", 500)

const modelsSent = (h: HarnessShape) => h.fake.requests.map((q) => (q.body as { model?: string } | null)?.model)

/** a proxy-generated error: status, JSON content type, `vetobench_error` body with this code */
const expectProxyError = (r: PostResult, status: number, code: string) => {
  expect(r.status, r.text).toBe(status)
  expect(r.headers.get("content-type")).toContain("application/json")
  const body = JSON.parse(r.text) as { error: { type: string; code: string; message: string } }
  expect(body.error.type).toBe("vetobench_error")
  expect(body.error.code).toBe(code)
  expect(body.error.message).not.toBe("")
  return body.error
}

const expectRawError = (r: RawResult, status: number, code: string) => {
  if (r.kind !== "response") throw new Error(`expected an HTTP ${status}, the request failed: ${r.code} ${r.message}`)
  expect(r.status, r.text).toBe(status)
  expect(r.headers["content-type"]).toContain("application/json")
  const body = JSON.parse(r.text) as { error: { type: string; code: string } }
  expect(body.error).toMatchObject({ type: "vetobench_error", code })
}

/** a JSON chat request of about `bytes` bytes */
const bigChat = (bytes: number) =>
  JSON.stringify({ model: "agent@enforce:slm", messages: [{ role: "user", content: "x".repeat(bytes) }], tools: TOOLS })

/** split a string into pieces of `size` characters (ASCII test bodies only) */
const pieces = (s: string, size: number): Array<string> => {
  const out: Array<string> = []
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size))
  return out
}

describe("upstream and client faults", () => {
  layer(faultsHarness, { excludeTestServices: true })((it) => {
    it.effect("upstream 500 passes through unchanged in passthrough, baseline, shadow and enforce; nothing recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        h.fake.knobs.failStatus = 500
        h.fake.knobs.failModels = new Set(["agent"])
        for (const model of ["agent", "agent@baseline", "agent@shadow:slm", "agent@enforce:slm"]) {
          for (const stream of [false, true]) {
            const r = yield* post(h, { model, stream }, { run: "up500" })
            expect(r.status, `${model} stream=${stream}`).toBe(500)
            expect(r.headers.get("content-type")).toContain("application/json")
            expect(JSON.parse(r.text)).toEqual(FAKE_500)
          }
        }
        // the judge was never asked: there was no answer to judge
        expect(modelsSent(h).every((m) => m === "agent")).toBe(true)
        expect(h.records("up500")).toEqual([])
      }))

    it.effect("an upstream slower than its timeout_s → 504 upstream_timeout (JSON and stream); nothing recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        h.fake.knobs.delayMs = 3000
        h.fake.knobs.delayModels = new Set(["agent"])
        for (const stream of [false, true]) {
          for (const model of ["agent", "agent@enforce:slm"]) {
            // a 504 (not the fake's eventual 200) shows the proxy gave up instead of waiting
            const r = yield* post(h, { model, stream }, { run: "slow-up" })
            const e = expectProxyError(r, 504, "upstream_timeout")
            expect(e.message).toContain("0.5s")
          }
        }
        expect(h.records("slow-up")).toEqual([])
      }))

    it.effect("a body over proxy.max_body_bytes is a 413 JSON error: declared length and chunked upload", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const url = `${h.url}/chat/completions`
        const headers = { "x-vetobench-run": "big" }
        // declared content-length over the limit: refused before reading
        expectRawError(yield* rawPost(url, { headers, body: bigChat(4 * LIMIT) }), 413, "body_too_large")
        // the same through fetch (what SDK clients use)
        const viaFetch = yield* post(h, { model: "agent@enforce:slm", messages: [{ role: "user", content: "y".repeat(4 * LIMIT) }] }, { run: "big" })
        expect(expectProxyError(viaFetch, 413, "body_too_large").message).toContain("max_body_bytes")
        // chunked upload, no content-length: the limit is enforced while reading
        const upload = pieces(bigChat(16 * LIMIT), 256)
        const chunked = yield* rawPost(url, { headers, body: upload })
        expectRawError(chunked, 413, "body_too_large")
        // answered while the upload was still going, not after buffering all of it
        expect(chunked.kind === "response" && chunked.chunksWritten < upload.length).toBe(true)
        // a chunked body under the limit is read whole and served
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        const small = JSON.stringify({ model: "agent", messages: [{ role: "user", content: "hi" }] })
        const okChunked = yield* rawPost(url, { headers, body: pieces(small, 7) })
        if (okChunked.kind !== "response") throw new Error(`chunked request failed: ${okChunked.code}`)
        expect(okChunked.status, okChunked.text).toBe(200)
        // only the small request reached the upstream
        expect(h.fake.requests).toHaveLength(1)
        expect((h.fake.requests[0]!.body as { messages: unknown }).messages).toEqual([{ role: "user", content: "hi" }])
        expect(h.records("big")).toEqual([])
      }))

    it.effect("malformed JSON, a JSON array, a missing or non-string model → 400, never 500", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["{not json", "invalid_json"],
          ["", "invalid_json"],
          ['{"model": "agent"', "invalid_json"],
          ["[]", "invalid_request"],
          ['[{"model": "agent"}]', "invalid_request"],
          ['"agent"', "invalid_request"],
          ["null", "invalid_request"],
          ['{"messages": [{"role": "user", "content": "hi"}]}', "invalid_request"],
          ['{"model": 42, "messages": []}', "invalid_request"]
        ]
        for (const endpoint of ["chat/completions", "completions"]) {
          for (const [body, code] of cases) {
            const r = yield* rawPost(`${h.url}/${endpoint}`, { headers: { "x-vetobench-run": "badjson" }, body })
            if (r.kind !== "response") throw new Error(`${endpoint} ${body}: ${r.code}`)
            expect(r.status, `${endpoint} ${JSON.stringify(body)}: ${r.text}`).toBe(400)
            expect(JSON.parse(r.text)).toMatchObject({ error: { type: "vetobench_error", code } })
          }
        }
        expect(h.fake.requests).toEqual([])
        expect(h.records("badjson")).toEqual([])
      }))

    it.effect("no record lost: after every fault the run's chain verifies with one record per proposed call", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const run = "keep"
        const send = (id: string, body: Record<string, unknown>) => post(h, body, { run, headers: { "x-request-id": id } })
        /** request id → number of proposed calls that must each have exactly one record */
        const expected = new Map<string, number>()

        // two successful enforce requests
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        expect((yield* send("keep-ok-1", { model: "agent@enforce:slm" })).status).toBe(200)
        expected.set("keep-ok-1", 1)
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/srv" }), call("delete_file", { path: "/" })]
        const ok2 = yield* send("keep-ok-2", { model: "agent@enforce:slm" })
        expect(ok2.status).toBe(200)
        expect(ok2.headers.get("x-vetobench-blocked")).toBe("1")
        expected.set("keep-ok-2", 2)
        expect(h.records(run)).toHaveLength(3)

        // upstream 500 (JSON and stream)
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/a" })]
        h.fake.knobs.failStatus = 500
        h.fake.knobs.failModels = new Set(["agent"])
        expect((yield* send("keep-500", { model: "agent@enforce:slm" })).status).toBe(500)
        expect((yield* send("keep-500-s", { model: "agent@enforce:slm", stream: true })).status).toBe(500)

        // upstream timeout (JSON and stream)
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/b" })]
        h.fake.knobs.delayMs = 3000
        h.fake.knobs.delayModels = new Set(["agent"])
        expect((yield* send("keep-slow", { model: "agent@enforce:slm" })).status).toBe(504)
        expect((yield* send("keep-slow-s", { model: "agent@shadow:slm", stream: true })).status).toBe(504)

        // bad input on the same run
        h.fake.reset()
        const headers = { "x-vetobench-run": run }
        expectRawError(yield* rawPost(`${h.url}/chat/completions`, { headers, body: "{oops" }), 400, "invalid_json")
        expectRawError(yield* rawPost(`${h.url}/chat/completions`, { headers, body: bigChat(2 * LIMIT) }), 413, "body_too_large")
        expectRawError(
          yield* rawPost(`${h.url}/chat/completions`, { headers, body: pieces(bigChat(8 * LIMIT), 512) }),
          413,
          "body_too_large"
        )
        expect((yield* send("keep-nojudge", { model: "agent@enforce:nope" })).status).toBe(400)

        // judge failures under fail closed: every call still gets its record (JSON and stream)
        h.fake.reset()
        h.fake.knobs.failStatus = 500
        h.fake.knobs.failModels = new Set(["judge"])
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/c" }), call("list_dir", { path: "/d" })]
        const judge500 = yield* send("keep-judge500", { model: "agent@enforce:slm" })
        expect(judge500.status).toBe(200)
        expect(judge500.headers.get("x-vetobench-blocked")).toBe("2")
        expected.set("keep-judge500", 2)
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/e" })]
        const judge500s = yield* send("keep-judge500-s", { model: "agent@enforce:slm", stream: true })
        expect(judge500s.status).toBe(200)
        expect(judge500s.text).toContain("data: [DONE]")
        expect(judge500s.text).toContain("x-vetobench-blocked=1")
        expected.set("keep-judge500-s", 1)

        // and the run goes on: a baseline request is logged after all of it
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/f" })]
        expect((yield* send("keep-ok-3", { model: "agent@baseline" })).status).toBe(200)
        expected.set("keep-ok-3", 1)

        const total = [...expected.values()].reduce((a, b) => a + b, 0)
        const text = readFileSync(h.auditFile(run), "utf8")
        expect(verifyChainText(text)).toMatchObject({ ok: true, records: total, torn: false })
        const recs = h.records(run)
        expect(recs.map((r) => r.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 1))
        const seen = recs.map((r) => `${r.request_id}#${r.call_index}`)
        const want = [...expected.entries()].flatMap(([id, n]) => Array.from({ length: n }, (_, i) => `${id}#${i}`))
        expect([...seen].sort()).toEqual([...want].sort())
        expect(new Set(seen).size).toBe(seen.length)
        // the judge-failure records carry the error verdict and the fail-closed decision
        for (const r of recs.filter((x) => x.request_id.startsWith("keep-judge500"))) {
          expect(r.verdict!.status).toBe("error")
          expect(r.effective_decision).toBe("deny")
          expect(r.blocked).toBe(true)
        }
      }))

    it.effect("a client that aborts mid-stream does not break the proxy", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.chunkDelayMs = 200
        h.fake.knobs.content = "let me look at the directory first and then decide"
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        for (const model of ["agent", "agent@enforce:slm", "agent@shadow:slm"]) {
          const body = { model, stream: true, messages: [{ role: "user", content: "look" }], tools: TOOLS }
          const r = yield* postAndAbortAfterFirstChunk(`${h.url}/chat/completions`, body, { "x-vetobench-run": "abort" })
          expect(r.status).toBe(200)
          expect(r.first).toContain("data: ")
        }
        // the proxy still serves, streamed and not
        h.fake.knobs.chunkDelayMs = 0
        const after = yield* post(h, { model: "agent@enforce:slm", stream: true }, { run: "after-abort" })
        expect(after.status).toBe(200)
        expect(after.text).toContain("data: [DONE]")
        const json = yield* post(h, { model: "agent@enforce:slm" }, { run: "after-abort" })
        expect(json.status).toBe(200)
        expect(json.json.choices[0]!.message.tool_calls!.map((c) => c.function.name)).toEqual(["list_dir"])
        expect(h.records("after-abort")).toHaveLength(2)
        // whatever the aborted streams left in the audit file is a valid chain
        const aborted = h.records("abort")
        if (aborted.length > 0) expect(verifyChainText(readFileSync(h.auditFile("abort"), "utf8")).ok).toBe(true)
      }))
  })
})

/** an upstream on a port nobody listens on (connection refused) */
const unreachableHarness = Layer.unwrapEffect(
  Effect.map(closedPort, (port) =>
    harnessLayer({ upstream: { base_url: `http://127.0.0.1:${port}/v1`, api_key: Redacted.make("sk-unreachable-secret") } })
  )
)

describe("unreachable upstream", () => {
  layer(unreachableHarness, { excludeTestServices: true })((it) => {
    it.effect("connection refused → 502 upstream_unavailable with a JSON body; nothing recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        for (const model of ["agent", "agent@baseline", "agent@enforce:slm"]) {
          for (const stream of [false, true]) {
            const r = yield* post(h, { model, stream }, { run: "unreachable" })
            const e = expectProxyError(r, 502, "upstream_unavailable")
            expect(e.message).toContain("cluster")
            expect(e.message).toContain("ECONNREFUSED")
            expect(e.message).not.toContain("sk-unreachable-secret")
          }
        }
        const completion = yield* post(h, { model: "judge-small", prompt: "p", messages: undefined, tools: undefined }, { path: "completions" })
        expectProxyError(completion, 502, "upstream_unavailable")
        expect(h.records("unreachable")).toEqual([])
      }))
  })
})
