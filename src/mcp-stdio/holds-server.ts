/**
 * The hold API of `vetobench mcp stdio --holds-port N`: the proxy's hold routes
 * (src/proxy/holds-api.ts, same operator token, same answers) on a small HTTP server of their own,
 * bound to 127.0.0.1, sharing the gate's `Holds` so a person can approve or reject a call the stdio
 * gate holds (`hold_policy: wait`). Errors are JSON in the proxy's error shape.
 */
import { createServer } from "node:http"
import { HttpRouter, type HttpServerError } from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Effect, type Scope } from "effect"
import type { Settings } from "../config/service.js"
import type { Holds } from "../gate/Holds.js"
import { errorResponse, ProxyError } from "../proxy/errors.js"
import { holdRoutes } from "../proxy/holds-api.js"

const HOST = "127.0.0.1"

const holdsApp = holdRoutes(HttpRouter.empty).pipe(
  Effect.catchTags({
    ProxyError: (e) => Effect.succeed(errorResponse(e)),
    RouteNotFound: (e) =>
      Effect.succeed(errorResponse(new ProxyError({ code: "not_found", message: `no route ${e.request.method} ${e.request.url.split("?")[0] ?? ""} (this server has only /v1/holds)` })))
  })
)

/** Serve the hold API on 127.0.0.1:`port` (0: a free port) for the scope's life; the base URL. */
export const serveHolds = (port: number): Effect.Effect<string, HttpServerError.ServeError, Settings | Holds | Scope.Scope> =>
  Effect.gen(function* () {
    const server = yield* NodeHttpServer.make(() => createServer(), { host: HOST, port })
    yield* server.serve(holdsApp)
    const address = server.address
    return address._tag === "TcpAddress" ? `http://${HOST}:${address.port}` : `http://unix:${address.path}`
  })
