/**
 * Low-level HTTP helpers for fault tests: a port nobody listens on, raw `node:http` POSTs (with a
 * declared length or chunked), and a streaming request the client abandons mid-stream.
 */
import * as http from "node:http"
import * as net from "node:net"
import { Effect } from "effect"

/** A loopback port that was free a moment ago and is closed now (connecting to it is refused). */
export const closedPort: Effect.Effect<number> = Effect.promise(
  () =>
    new Promise<number>((resolve, reject) => {
      const server = net.createServer()
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        server.close(() => resolve(port))
      })
    })
)

export type RawResult =
  | {
      readonly kind: "response"
      readonly status: number
      readonly headers: http.IncomingHttpHeaders
      readonly text: string
      /** how many body chunks the client had written when the response arrived */
      readonly chunksWritten: number
    }
  | { readonly kind: "error"; readonly code: string; readonly message: string }

export interface RawPostOptions {
  readonly headers?: Record<string, string>
  /** a string is sent with `content-length`; an array is sent chunked, one write per element */
  readonly body: string | ReadonlyArray<string>
}

/** POST with `node:http`, so the test controls framing (content-length vs. chunked). Never fails. */
export const rawPost = (url: string, opts: RawPostOptions): Effect.Effect<RawResult> =>
  Effect.promise(
    () =>
      new Promise<RawResult>((resolve) => {
        const chunked = typeof opts.body !== "string"
        const headers: Record<string, string> = { "content-type": "application/json", ...opts.headers }
        if (chunked) headers["transfer-encoding"] = "chunked"
        else headers["content-length"] = String(Buffer.byteLength(opts.body as string))
        let settled = false
        let written = 0
        const settle = (r: RawResult) => {
          if (settled) return
          settled = true
          resolve(r)
        }
        const req = http.request(url, { method: "POST", headers, agent: false })
        req.on("response", (res) => {
          const parts: Array<Buffer> = []
          const at = written
          res.on("data", (c: Buffer) => parts.push(c))
          res.on("end", () =>
            settle({ kind: "response", status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(parts).toString("utf8"), chunksWritten: at })
          )
          res.on("error", (e: NodeJS.ErrnoException) => settle({ kind: "error", code: e.code ?? "ERROR", message: e.message }))
        })
        req.on("error", (e: NodeJS.ErrnoException) => settle({ kind: "error", code: e.code ?? "ERROR", message: e.message }))
        if (typeof opts.body === "string") {
          req.end(opts.body)
          return
        }
        const chunks = opts.body
        // one chunk per tick, so the server sees the body arrive in pieces and can answer early
        const next = () => {
          if (settled || req.destroyed) return
          const chunk = chunks[written]
          if (chunk === undefined) {
            req.end()
            return
          }
          written++
          req.write(chunk, () => setTimeout(next, 2))
        }
        next()
      })
  )

/**
 * Start a streaming POST, read until the first body bytes arrive, then abort the request.
 * Returns the status and the text received before the abort.
 */
export const postAndAbortAfterFirstChunk = (
  url: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {}
): Effect.Effect<{ readonly status: number; readonly first: string }> =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal: controller.signal
    })
    const reader = res.body!.getReader()
    const { value } = await reader.read()
    controller.abort()
    await reader.cancel().catch(() => undefined)
    return { status: res.status, first: new TextDecoder().decode(value ?? new Uint8Array()) }
  })
