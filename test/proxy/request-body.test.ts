/**
 * A request body the proxy cannot read as JSON text is refused with an error naming what is wrong,
 * in the route's error shape, and nothing reaches the upstream: a compressed body
 * (`content-encoding`), bytes that are not UTF-8 (never replaced silently by U+FFFD, which would make
 * the judge and the upstream read text the client did not send). A UTF-8 byte order mark is dropped.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import { gzipSync } from "node:zlib"
import { Harness, type HarnessShape, harnessLayer } from "../support/harness.js"

const send = (h: HarnessShape, path: string, body: Buffer, headers: Record<string, string> = {}) =>
  Effect.promise(
    () =>
      new Promise<{ status: number; text: string; requestId: string | undefined }>((resolve, reject) => {
        const req = http.request(`${h.url}/${path}`, {
          method: "POST",
          agent: false,
          headers: { "content-type": "application/json", "content-length": String(body.length), "x-vetobench-run": "request-body", ...headers }
        })
        req.on("response", (res) => {
          const parts: Array<Buffer> = []
          res.on("data", (c: Buffer) => parts.push(c))
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString("utf8"), requestId: res.headers["x-request-id"] as string | undefined }))
        })
        req.on("error", reject)
        req.end(body)
      })
  )

const CHAT = { model: "agent@enforce:allow-all", messages: [{ role: "user", content: "clean up" }] }
const MESSAGES = { model: "agent@enforce:allow-all", max_tokens: 10, messages: [{ role: "user", content: "clean up" }] }

describe("request bodies the proxy cannot read", () => {
  layer(harnessLayer(), { excludeTestServices: true })((it) => {
    it.effect("a gzip body: 400 naming the content-encoding, in each route's shape; the upstream is not called", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const before = h.fake.requests.length
        const chat = yield* send(h, "chat/completions", gzipSync(JSON.stringify(CHAT)), { "content-encoding": "gzip" })
        expect(chat.status).toBe(400)
        const chatError = (JSON.parse(chat.text) as { error: { code: string; message: string } }).error
        expect(chatError.code).toBe("invalid_request")
        expect(chatError.message).toContain("content-encoding 'gzip' is not supported")
        const messages = yield* send(h, "messages", gzipSync(JSON.stringify(MESSAGES)), { "content-encoding": "gzip" })
        expect(messages.status).toBe(400)
        const anthropic = JSON.parse(messages.text) as { type: string; error: { type: string; message: string } }
        expect(anthropic.type).toBe("error")
        expect(anthropic.error.message).toContain("content-encoding 'gzip'")
        expect(messages.requestId).toMatch(/^[0-9a-f]{32}$/)
        expect(h.fake.requests.length).toBe(before)
      }))

    it.effect("bytes that are not UTF-8: 400 'not UTF-8 text', never read with replacement characters", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const before = h.fake.requests.length
        const text = Buffer.from(JSON.stringify({ ...CHAT, messages: [{ role: "user", content: "delete XX now" }] }))
        const at = text.indexOf("XX")
        text[at] = 0xff
        text[at + 1] = 0xfe
        const r = yield* send(h, "chat/completions", text)
        expect(r.status).toBe(400)
        expect(JSON.parse(r.text)).toMatchObject({ error: { code: "invalid_request", message: "request body is not UTF-8 text" } })
        expect(h.fake.requests.length).toBe(before)
      }))

    it.effect("a UTF-8 byte order mark before the JSON is dropped; identity encoding is no encoding", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(CHAT))])
        expect((yield* send(h, "chat/completions", bom)).status).toBe(200)
        expect((yield* send(h, "chat/completions", Buffer.from(JSON.stringify(CHAT)), { "content-encoding": "identity" })).status).toBe(200)
      }))
  })
})
