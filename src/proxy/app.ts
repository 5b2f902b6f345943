/**
 * The veto-proxy HTTP app: routes, request ids, and error mapping (architecture decision 6).
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect } from "effect"
import { Upstreams } from "../../layers/Upstreams.js"
import { VERSION } from "../version.js"
import { chatCompletions, CurrentRequest } from "./chat.js"
import { completions } from "./completions.js"
import { defectMessage } from "../gate/Gate.js"
import { redactUrlsIn } from "../domain/redact-url.js"
import { errorBody, errorResponse, ProxyError } from "./errors.js"
import { holdRoutes } from "./holds-api.js"
import { requestIdOf, requestMeta } from "./request-meta.js"

const KNOWN_PATHS = new Set(["/healthz", "/v1/models", "/v1/chat/completions", "/v1/completions", "/v1/holds"])

const health = HttpServerResponse.unsafeJson({ ok: true, version: VERSION })

const models = Effect.map(Upstreams, (u) =>
  HttpServerResponse.unsafeJson({
    object: "list",
    data: u.served.map((id) => ({ id, object: "model", owned_by: "vetobench" }))
  })
)

export const router = HttpRouter.empty.pipe(
  HttpRouter.get("/healthz", Effect.succeed(health)),
  HttpRouter.get("/v1/models", models),
  HttpRouter.post("/v1/chat/completions", chatCompletions),
  HttpRouter.post("/v1/completions", completions),
  holdRoutes
)

/** The app: every response carries `x-request-id`; proxy errors and unknown routes become JSON. */
export const app = Effect.gen(function* () {
  const req = yield* HttpServerRequest.HttpServerRequest
  const requestId = requestIdOf(req.headers)
  const headers = { "x-request-id": requestId }
  const res = yield* router.pipe(
    Effect.provideService(CurrentRequest, requestMeta(req.headers, requestId)),
    Effect.catchTags({
      ProxyError: (e) => Effect.succeed(errorResponse(e, requestId)),
      RouteNotFound: () => {
        const path = req.url.split("?")[0] ?? ""
        return Effect.succeed(
          errorResponse(
            KNOWN_PATHS.has(path)
              ? new ProxyError({ code: "method_not_allowed", message: `${req.method} is not allowed on ${path}` })
              : new ProxyError({ code: "not_found", message: `no route ${req.method} ${path}` }),
            requestId
          )
        )
      }
    }),
    // a defect is a bug of ours: a JSON 500 with the request id, and one log line to find it by
    Effect.catchAllDefect((d) =>
      Effect.logError(`internal error in ${req.method} ${req.url.split("?")[0] ?? ""}: ${redactUrlsIn(defectMessage(Cause.die(d)))}`).pipe(
        Effect.annotateLogs({ request_id: requestId }),
        Effect.as(
          HttpServerResponse.text(errorBody("internal_error", `internal error (request ${requestId}); the proxy's log has the details`, requestId), {
            status: 500,
            contentType: "application/json"
          })
        )
      )
    )
  )
  return HttpServerResponse.setHeaders(res, headers)
})
