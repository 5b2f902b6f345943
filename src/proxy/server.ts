/**
 * Serving the proxy: bind (127.0.0.1 by default), expose the bound URL, and shut down gracefully —
 * in-flight requests get `proxy.shutdown_grace_s`, then remaining connections are closed.
 */
import { createServer } from "node:http"
import { HttpMiddleware, HttpServer } from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Effect, Layer } from "effect"
import { app } from "./app.js"

export interface ProxyServerInfo {
  /** e.g. http://127.0.0.1:8080 (clients use `${url}/v1`) */
  readonly url: string
}

export class ProxyServer extends Context.Tag("vetobench/ProxyServer")<ProxyServer, ProxyServerInfo>() {}

export interface ServeOptions {
  readonly host: string
  readonly port: number
  readonly graceSeconds: number
}

const urlOf = (a: HttpServer.Address, host: string) =>
  a._tag === "UnixAddress" ? `http://unix:${a.path}` : `http://${host.includes(":") ? `[${host}]` : host}:${a.port}`

export const layer = (opts: ServeOptions) =>
  Layer.unwrapEffect(
    Effect.sync(() => {
      const server = createServer({ keepAliveTimeout: 65_000 })
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
      return HttpServer.serve(app).pipe(
        // a transparent proxy: no server span per request (it costs CPU and nobody collects it)
        HttpMiddleware.withTracerDisabledWhen(() => true),
        Layer.provideMerge(Layer.merge(grace, info)),
        Layer.provideMerge(NodeHttpServer.layer(() => server, { host: opts.host, port: opts.port }))
      )
    })
  )
