/**
 * Read a request body with a size limit checked before reading (content-length) and while
 * reading (chunked uploads), so an oversized body gets a 413, not a reset socket.
 */
import type { IncomingMessage } from "node:http"
import { Effect } from "effect"
import { ProxyError } from "./errors.js"

const tooLarge = (limit: number) =>
  new ProxyError({ code: "body_too_large", message: `request body larger than ${limit} bytes (proxy.max_body_bytes)` })

export const readBody = (msg: IncomingMessage, limit: number): Effect.Effect<string, ProxyError> =>
  Effect.async<string, ProxyError>((resume) => {
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
    msg.once("end", () => finish(Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
    msg.once("error", (e) =>
      finish(Effect.fail(new ProxyError({ code: "invalid_request", message: `request body could not be read: ${e.message}` })))
    )
  })
