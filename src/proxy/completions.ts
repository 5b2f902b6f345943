/**
 * `POST /v1/completions` — legacy text completions: alias and model defaults applied, the arm
 * suffix dropped (no gating, no audit), full error handling, streaming passed through.
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import { Upstreams } from "../../layers/Upstreams.js"
import { Settings } from "../config/service.js"
import { applyModelDefaults } from "../domain/normalise.js"
import { CurrentRequest, routeOf } from "./chat.js"
import { fromUpstreamError, readAll, readJsonBody, relay, withUpstream } from "./forward.js"

export const completions = Effect.gen(function* () {
  const settings = yield* Settings
  const upstreams = yield* Upstreams
  const meta = yield* CurrentRequest
  const body = yield* readJsonBody(settings.proxy.max_body_bytes)
  const route = yield* routeOf(body.model)
  const target = yield* Effect.mapError(upstreams.resolve(route.model), fromUpstreamError)
  body.model = target.model
  applyModelDefaults(body, target.defaults)
  return yield* withUpstream(upstreams, target, "completions", JSON.stringify(body), meta.requestId, (res, release) =>
    body.stream === true && res.status < 300
      ? Effect.succeed(HttpServerResponse.stream(res.stream.pipe(Stream.ensuring(release)), { contentType: res.contentType }))
      : Effect.map(readAll(res, release), (text) => relay(res.status, res.contentType, text, {}))
  )
})
