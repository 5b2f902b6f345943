/**
 * Read a request body with a size limit checked before reading (content-length) and while
 * reading (chunked uploads), so an oversized body gets a 413, not a reset socket.
 */
import type { IncomingMessage } from "node:http"
import { Effect } from "effect"
import { ProxyError } from "./errors.js"

const tooLarge = (limit: number) =>
  new ProxyError({ code: "body_too_large", message: `request body larger than ${limit} bytes (proxy.max_body_bytes)` })

const invalid = (message: string) => new ProxyError({ code: "invalid_request", message })

/** the body's text: UTF-8 (RFC 8259), a leading byte order mark dropped; never bytes replaced silently */
const utf8 = new TextDecoder("utf-8", { fatal: true })

const decoded = (bytes: Buffer): Effect.Effect<string, ProxyError> => {
  try {
    return Effect.succeed(utf8.decode(bytes))
  } catch {
    return Effect.fail(invalid("request body is not UTF-8 text"))
  }
}

export const readBody = (msg: IncomingMessage, limit: number): Effect.Effect<string, ProxyError> =>
  Effect.async<string, ProxyError>((resume) => {
    // a compressed body is not read as text: the client is told, not answered "not valid JSON"
    const encoding = msg.headers["content-encoding"]
    if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity") {
      msg.resume()
      return resume(Effect.fail(invalid(`content-encoding '${encoding.slice(0, 40)}' is not supported: send the request body uncompressed`)))
    }
    const declared = Number(msg.headers["content-length"] ?? NaN)
    if (Number.isFinite(declared) && declared > limit) {
      msg.resume()
      return resume(Effect.fail(tooLarge(limit)))
    }
    const chunks: Array<Buffer> = []
    let size = 0
    let settled = false
    const finish = (e: Effect.Effect<string, ProxyError>) => {
      if (settled) return
      settled = true
      msg.off("data", onData)
      resume(e)
    }
    const onData = (c: Buffer) => {
      size += c.length
      if (size > limit) {
        chunks.length = 0
        msg.resume()
        return finish(Effect.fail(tooLarge(limit)))
      }
      chunks.push(c)
    }
    msg.on("data", onData)
    msg.once("end", () => finish(decoded(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks))))
    msg.once("error", (e) =>
      finish(Effect.fail(new ProxyError({ code: "invalid_request", message: `request body could not be read: ${e.message}` })))
    )
  })
