/**
 * `POST /v1/completions` — legacy text completions: alias and model defaults applied, the arm
 * suffix dropped (no gating, no audit), full error handling, streaming passed through.
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import { Upstreams } from "../../layers/Upstreams.js"
import { Settings } from "../config/service.js"
import { applyModelDefaults } from "../domain/normalise.js"
import { CurrentAccess, loggable } from "./access-log.js"
import { routeOf } from "./gated-route.js"
import { fromUpstreamError, readAll, readJsonBody, relay } from "./forward.js"
import { observedUpstream } from "./observe.js"

export const completions = Effect.gen(function* () {
  const settings = yield* Settings
  const upstreams = yield* Upstreams
  const rec = yield* CurrentAccess
  const body = yield* readJsonBody(settings.proxy.max_body_bytes)
  const route = yield* routeOf(body.model)
  rec.model = loggable(route.model)
  const target = yield* Effect.mapError(upstreams.resolve(route.model), fromUpstreamError)
  body.model = target.model
  applyModelDefaults(body, target.defaults)
  return yield* observedUpstream(upstreams, target, "completions", JSON.stringify(body), rec, body.stream === true, (res, release) =>
    body.stream === true && res.status < 300
      ? Effect.succeed(HttpServerResponse.stream(res.stream.pipe(Stream.ensuring(release)), { contentType: res.contentType }))
      : Effect.map(readAll(res, release), (text) => relay(res.status, res.contentType, text, {}))
  )
})
