/**
 * The gated routes (chat, responses, messages) served on `node:http` directly: the server (server.ts)
 * hands a `POST` to one of their paths to {@link makeGatedHandler}, which runs one Effect per request
 * on the proxy's runtime (built once with the layers) — the route (gated-route.ts), its error
 * mapping and the writing of its answer — instead of the platform's router, middleware and response
 * stream. Everything else stays on `@effect/platform` (app.ts), which serves the gated routes too for
 * the spellings its router also matches (a trailing slash, other letter case), through
 * {@link serveGated} as well.
 *
 * What is the same on both ways: the access record, the metrics, the request span and the access
 * line (observe.ts); `x-request-id` on every answer; the route's error shape for its proxy errors
 * and for a defect (a 500 and one log line); a client that goes away interrupts the request (its
 * held calls are still ruled and recorded, see wire/sse-driver.ts).
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { HttpServerError } from "@effect/platform"
import { Context, Effect, Runtime } from "effect"
import type { AccessRecord } from "./access-log.js"
import { chatFormat } from "./chat.js"
import { errorHeaders, internalError } from "./errors.js"
import { type AnswerOut, type GatedAnswer, gatedRoute, wholeAnswer, type WireFormat } from "./gated-route.js"
import { messagesFormat } from "./messages.js"
import { exitStatus, type Observe, type RequestHeaders } from "./observe.js"
import { type RequestMeta, requestMeta } from "./request-meta.js"
import { responsesFormat } from "./responses.js"

/** the gated routes, by path: each answers errors in its own format's shape */
export const GATED: ReadonlyMap<string, WireFormat> = new Map([
  ["/v1/chat/completions", chatFormat],
  ["/v1/messages", messagesFormat],
  ["/v1/responses", responsesFormat]
])

const pathOf = (url: string): string => {
  const q = url.indexOf("?")
  return q < 0 ? url : url.slice(0, q)
}

/** The format of a request served on `node:http` directly: a POST to a gated route's path as written. */
export const gatedFormatOf = (method: string | undefined, url: string | undefined): WireFormat | undefined =>
  method === "POST" && url !== undefined ? GATED.get(pathOf(url)) : undefined

/** Resumes once `res` can take more writes, or is gone. */
const drained = (res: ServerResponse): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    // gone already: its close was the last event it sends
    if (res.destroyed) return resume(Effect.void)
    const done = () => {
      res.off("drain", done)
      res.off("close", done)
      resume(Effect.void)
    }
    res.on("drain", done)
    res.on("close", done)
    return Effect.sync(() => {
      res.off("drain", done)
      res.off("close", done)
    })
  })

/** Write `answer` on `res` (with the request id; the record counts the bytes when the access log is on): the status written. */
const writeAnswer = (res: ServerResponse, method: string, path: string, rec: AccessRecord, answer: GatedAnswer): Effect.Effect<number> => {
  if (answer._tag === "Whole") {
    const length = Buffer.byteLength(answer.text)
    if (rec.countBytes) rec.bytesOut = length
    res.writeHead(answer.status, { ...answer.headers, "content-type": answer.contentType, "content-length": length, "x-request-id": rec.requestId })
    res.end(answer.text)
    return Effect.succeed(answer.status)
  }
  res.writeHead(200, { ...answer.headers, "content-type": answer.contentType, "x-request-id": rec.requestId })
  if (rec.countBytes) rec.bytesOut = 0
  const count = rec.countBytes
  const drain = drained(res)
  const out: AnswerOut = {
    write: (text) => {
      if (count) rec.bytesOut = (rec.bytesOut ?? 0) + Buffer.byteLength(text)
      return res.write(text)
    },
    writeBytes: (bytes) => {
      if (count) rec.bytesOut = (rec.bytesOut ?? 0) + bytes.length
      return res.write(bytes)
    },
    drain
  }
  return answer.pump(out).pipe(
    Effect.as(200),
    // a defect while streaming is a bug of ours: logged, and the stream ends where it is
    Effect.catchAllDefect((d) => {
      rec.error = "internal_error"
      return Effect.as(internalError(method, path, rec.requestId, d), 500)
    }),
    Effect.ensuring(Effect.sync(() => res.end()))
  )
}

/** The gated requests in progress, on either way in: shutdown waits for them (and their records) after the connections closed (server.ts). */
export interface InFlightShape {
  /** `effect`, counted as in progress until it ended, its finalizers (the records of a stream cut short) included */
  readonly track: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** resumes once no tracked request is in progress */
  readonly settled: Effect.Effect<void>
  readonly running: () => number
}

export class InFlight extends Context.Tag("vetobench/InFlight")<InFlight, InFlightShape>() {}

export const makeInFlight = (): InFlightShape => {
  let running = 0
  const waiters = new Set<() => void>()
  const ended = Effect.sync(() => {
    if (--running > 0) return
    for (const w of waiters) w()
    waiters.clear()
  })
  return {
    track: (effect) =>
      Effect.suspend(() => {
        running++
        return Effect.ensuring(effect, ended)
      }),
    settled: Effect.async<void>((resume) => {
      if (running === 0) return resume(Effect.void)
      const w = () => resume(Effect.void)
      waiters.add(w)
      return Effect.sync(() => void waiters.delete(w))
    }),
    running: () => running
  }
}

const answerGated = (format: WireFormat, msg: IncomingMessage, res: ServerResponse, rec: AccessRecord, meta: RequestMeta, method: string, path: string) =>
  gatedRoute(format, msg, rec, meta).pipe(
    Effect.catchTag("ProxyError", (e) => {
      rec.error = e.code
      return Effect.succeed(wholeAnswer(e.status, "application/json", format.errorBody(e.code, e.message, meta.requestId), errorHeaders(e)))
    }),
    Effect.catchAllDefect((d) => {
      rec.error = "internal_error"
      return Effect.map(internalError(method, path, meta.requestId, d, format.errorBody), (body) => wholeAnswer(500, "application/json", body))
    }),
    Effect.flatMap((answer) => writeAnswer(res, method, path, rec, answer))
  )

/**
 * The gated route of `format` for one request, answered on `res`: proxy errors in the format's
 * shape, a defect as a 500 with one log line. Never fails; the status the client got. In progress
 * for {@link InFlight} until it ended, the records of a stream cut short included.
 */
export const serveGated = (format: WireFormat, msg: IncomingMessage, res: ServerResponse, rec: AccessRecord, meta: RequestMeta) =>
  Effect.flatMap(InFlight, (inFlight) => inFlight.track(answerGated(format, msg, res, rec, meta, msg.method ?? "POST", pathOf(msg.url ?? ""))))

const status = exitStatus((code: number) => code)

/**
 * The `node:http` handler of the gated routes: one fiber per request on the runtime in context (the
 * proxy's layers), interrupted when the client goes away before the answer is written.
 */
export const makeGatedHandler = (observe: Observe) =>
  Effect.map(Effect.runtime<Effect.Effect.Context<ReturnType<typeof serveGated>>>(), (runtime) => {
    const runFork = Runtime.runFork(runtime)
    return (format: WireFormat, req: IncomingMessage, res: ServerResponse): void => {
      const headers: RequestHeaders = req.headers
      const fiber = runFork(
        observe.request(
          req.method ?? "POST",
          req.url ?? "",
          headers,
          (rec) => serveGated(format, req, res, rec, requestMeta(headers as Readonly<Record<string, string | undefined>>, rec.requestId)),
          status
        )
      )
      res.on("close", () => {
        if (!res.writableEnded) fiber.unsafeInterruptAsFork(HttpServerError.clientAbortFiberId)
      })
    }
  })
