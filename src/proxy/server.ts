/**
 * Serving the proxy: bind (127.0.0.1 by default), expose the bound URL, and shut down gracefully —
 * in-flight requests get `proxy.shutdown_grace_s`, then remaining connections are closed. One
 * `node:http` request handler: the gated routes' POSTs go to gated-serve.ts (one Effect run per
 * request), everything else to the platform app (app.ts).
 */
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import { HttpMiddleware, HttpServer } from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Effect, Layer } from "effect"
import { app } from "./app.js"
import { errorBody } from "./errors.js"
import { gatedFormatOf, InFlight, makeGatedHandler, makeInFlight } from "./gated-serve.js"
import { makeObserve } from "./observe.js"

export interface ProxyServerInfo {
  /** e.g. http://127.0.0.1:8080 (clients use `${url}/v1`) */
  readonly url: string
}

export class ProxyServer extends Context.Tag("vetobench/ProxyServer")<ProxyServer, ProxyServerInfo>() {}

export interface ServeOptions {
  readonly host: string
  readonly port: number
  readonly graceSeconds: number
  /** one access log line per request */
  readonly accessLog: boolean
  /**
   * after the connections closed, how long shutdown waits at most for the gated requests still
   * recording (a stream cut short: its held calls are ruled and recorded first); the judge deadline
   */
  readonly recordSeconds: number
}

const urlOf = (a: HttpServer.Address, host: string) =>
  a._tag === "UnixAddress" ? `http://unix:${a.path}` : `http://${host.includes(":") ? `[${host}]` : host}:${a.port}`

/**
 * A request Node's HTTP parser refuses (a malformed chunked body, bad header syntax) never reaches
 * the app: it still gets the route's JSON error shape and a request id, instead of an empty 400.
 */
const answerMalformed = (err: Error & { code?: string }, socket: Duplex) => {
  if (err.code === "ECONNRESET" || !socket.writable) {
    socket.destroy()
    return
  }
  const id = randomUUID().replace(/-/g, "")
  const tooLarge = err.code === "HPE_HEADER_OVERFLOW"
  const body = errorBody(tooLarge ? "headers_too_large" : "invalid_request", `malformed HTTP request (${err.code ?? err.message})`, id)
  socket.end(
    `HTTP/1.1 ${tooLarge ? "431 Request Header Fields Too Large" : "400 Bad Request"}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${id}\r\nconnection: close\r\n\r\n${body}`
  )
}

export const layer = (opts: ServeOptions) =>
  Layer.unwrapEffect(
    Effect.sync(() => {
      const server = createServer({ keepAliveTimeout: 65_000 })
      server.on("clientError", answerMalformed)
      server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => {
        const id = randomUUID().replace(/-/g, "")
        const body = errorBody("invalid_request", `unsupported Expect header: ${String(req.headers.expect).slice(0, 60)}`, id)
        res.writeHead(417, { "content-type": "application/json", "x-request-id": id, "content-length": Buffer.byteLength(body) }).end(body)
      })
      // released before the server: arms the deadline that ends connections still open
      const grace = Layer.scopedDiscard(
        Effect.gen(function* () {
          yield* HttpServer.HttpServer
          yield* Effect.addFinalizer(() =>
            Effect.sync(() => {
              server.closeIdleConnections()
              setTimeout(() => server.closeAllConnections(), opts.graceSeconds * 1000).unref()
            })
          )
        })
      )
      const info = Layer.effect(
        ProxyServer,
        Effect.map(HttpServer.HttpServer, (s) => ({ url: urlOf(s.address, opts.host) }))
      )
      // the observation (observe.ts) counts, logs and, when tracing is on, makes the request span; a POST
      // to a gated route's path is served on node:http directly (gated-serve.ts), the rest by the platform app
      const serve = Layer.scopedDiscard(
        Effect.gen(function* () {
          yield* HttpServer.HttpServer
          const observe = yield* makeObserve({ accessLog: opts.accessLog })
          const platform = yield* NodeHttpServer.makeHandler(app, observe.middleware)
          const gated = yield* makeGatedHandler(observe)
          const handler = (req: IncomingMessage, res: ServerResponse) => {
            const format = gatedFormatOf(req.method, req.url)
            if (format === undefined) platform(req, res)
            else gated(format, req, res)
          }
          server.on("request", handler)
          yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", handler)))
        })
      )
      // released after the server closed (every connection ended): waits for the gated requests still
      // recording, so no record of a call is lost at shutdown (the audit sink closes after this)
      const inFlight = Layer.scoped(
        InFlight,
        Effect.gen(function* () {
          const tracker = makeInFlight()
          yield* Effect.addFinalizer(() =>
            tracker.settled.pipe(
              Effect.timeout(`${opts.recordSeconds} seconds`),
              Effect.catchAll(() => Effect.logWarning(`shutdown: ${tracker.running()} gated requests were still recording after ${opts.recordSeconds} s`))
            )
          )
          return tracker
        })
      )
      return serve.pipe(
        // no platform server span: the proxy makes its own, and only when tracing is configured
        HttpMiddleware.withTracerDisabledWhen(() => true),
        Layer.provideMerge(Layer.merge(grace, info)),
        Layer.provideMerge(NodeHttpServer.layer(() => server, { host: opts.host, port: opts.port })),
        Layer.provideMerge(inFlight)
      )
    })
  )
