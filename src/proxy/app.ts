/**
 * The veto-proxy HTTP app: routes, request ids, and error mapping (architecture decision 6). The
 * request id and the access record come from the observation middleware (observe.ts). A POST to a
 * gated route's path as written does not come here: the server hands it to gated-serve.ts.
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Effect } from "effect"
import { Upstreams } from "../../layers/Upstreams.js"
import { VERSION } from "../domain/version.js"
import { chatFormat } from "./chat.js"
import { messagesFormat } from "./messages.js"
import { responsesFormat } from "./responses.js"
import { CurrentRequest, type WireFormat } from "./gated-route.js"
import { GATED, serveGated } from "./gated-serve.js"
import { completions } from "./completions.js"
import { CurrentAccess } from "./access-log.js"
import { errorBody, errorResponse, internalError, ProxyError } from "./errors.js"
import { holdRoutes } from "./holds-api.js"
import { metricsRoute } from "./metrics-route.js"
import { countBytes } from "./observe.js"
import { requestMeta } from "./request-meta.js"
import { PROXY_PATHS } from "./paths.js"
import { mcpRoute } from "./mcp-route.js"

/**
 * A gated route on the platform: the spellings of its path the router matches besides the one the
 * server hands to gated-serve.ts itself (a trailing slash, other letter case). The same route writes
 * the answer; the platform, finding the response ended, writes nothing more.
 */
const gatedRoute = (path: string, format: WireFormat) =>
  Effect.gen(function* () {
    const req = yield* HttpServerRequest.HttpServerRequest
    const rec = yield* CurrentAccess
    // the router matched another spelling of this route (a trailing slash, other case, doubled slashes): label it as the route
    rec.route = path
    const meta = yield* CurrentRequest
    const status = yield* serveGated(format, NodeHttpServerRequest.toIncomingMessage(req), NodeHttpServerRequest.toServerResponse(req), rec, meta)
    return HttpServerResponse.empty({ status })
  })

const health = HttpServerResponse.unsafeJson({ ok: true, version: VERSION })

const models = Effect.map(Upstreams, (u) =>
  HttpServerResponse.unsafeJson({
    object: "list",
    data: u.served.map((id) => ({ id, object: "model", owned_by: "vetobench" }))
  })
)

export const router = HttpRouter.empty.pipe(
  HttpRouter.get("/healthz", Effect.succeed(health)),
  HttpRouter.get("/metrics", metricsRoute),
  HttpRouter.get("/v1/models", models),
  HttpRouter.post("/v1/chat/completions", gatedRoute("/v1/chat/completions", chatFormat)),
  HttpRouter.post("/v1/messages", gatedRoute("/v1/messages", messagesFormat)),
  HttpRouter.post("/v1/responses", gatedRoute("/v1/responses", responsesFormat)),
  HttpRouter.post("/v1/completions", completions),
  holdRoutes,
  // the MCP gate over Streamable HTTP (POST, GET for the server's stream, DELETE to end a session)
  HttpRouter.all("/mcp/:server/:arm", mcpRoute)
)

/** The app: every response carries `x-request-id`; proxy errors and unknown routes become JSON. */
export const app = Effect.gen(function* () {
  const req = yield* HttpServerRequest.HttpServerRequest
  const access = yield* CurrentAccess
  const requestId = access.requestId
  const headers = { "x-request-id": requestId }
  const path = req.url.split("?")[0] ?? ""
  const shape = GATED.get(path)?.errorBody ?? errorBody
  const res = yield* router.pipe(
    Effect.provideService(CurrentRequest, requestMeta(req.headers, requestId)),
    Effect.catchTags({
      ProxyError: (e) => {
        access.error = e.code
        return Effect.succeed(errorResponse(e, requestId, {}, shape))
      },
      RouteNotFound: () => {
        access.error = PROXY_PATHS.has(path) ? "method_not_allowed" : "not_found"
        return Effect.succeed(
          errorResponse(
            PROXY_PATHS.has(path)
              ? new ProxyError({ code: "method_not_allowed", message: `${req.method} is not allowed on ${path}` })
              : new ProxyError({ code: "not_found", message: `no route ${req.method} ${path}` }),
            requestId,
            {},
            shape
          )
        )
      }
    }),
    // a defect is a bug of ours: a JSON 500 with the request id, and one log line to find it by
    Effect.catchAllDefect((d) => {
      access.error = "internal_error"
      return Effect.map(internalError(req.method, path, requestId, d, shape), (body) => HttpServerResponse.text(body, { status: 500, contentType: "application/json" }))
    })
  )
  return countBytes(HttpServerResponse.setHeaders(res, headers), access)
})
