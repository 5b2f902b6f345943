/**
 * `GET /metrics`: the Prometheus text exposition (layers/Metrics.ts).
 *
 * It holds counts, durations and the configured judge, upstream and route names, never a secret,
 * a model's text, a tool argument or a client header, so by default it needs no credential (the
 * proxy binds 127.0.0.1). With `proxy.metrics_token` set it needs `Authorization: Bearer <token>`.
 * With `proxy.metrics: false` the route answers 404 and nothing is recorded.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Redacted } from "effect"
import { Metrics } from "../../layers/Metrics.js"
import { Settings } from "../config/service.js"
import { ProxyError } from "./errors.js"
import { bearerToken, sameToken } from "./holds-api.js"

export const metricsRoute = Effect.gen(function* () {
  const metrics = yield* Metrics
  if (!metrics.enabled) return yield* new ProxyError({ code: "not_found", message: "no route GET /metrics (metrics are off: proxy.metrics is false)" })
  const token = (yield* Settings).proxy.metrics_token
  if (token !== null) {
    const req = yield* HttpServerRequest.HttpServerRequest
    const given = bearerToken(req.headers["authorization"] ?? "")
    if (given === null || !sameToken(given, Redacted.value(token).trim())) {
      return yield* new ProxyError({ code: "unauthorized", message: "metrics credential required (Authorization: Bearer <proxy.metrics_token>)" })
    }
  }
  const { contentType, text } = yield* metrics.exposition
  return HttpServerResponse.text(text, { contentType })
})
