/**
 * `POST /v1/completions` — legacy text completions: alias and model defaults applied, the arm
 * suffix dropped (no gating, no audit), full error handling, streaming passed through.
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect, Exit, Scope, Stream } from "effect"
import { Upstreams } from "../../layers/Upstreams.js"
import { Settings } from "../config/service.js"
import { applyModelDefaults } from "../domain/normalise.js"
import { CurrentRequest, routeOf } from "./chat.js"
import { fromUpstreamError, readJsonBody, relay } from "./forward.js"

export const completions = Effect.gen(function* () {
  const settings = yield* Settings
  const upstreams = yield* Upstreams
  const meta = yield* CurrentRequest
  const body = yield* readJsonBody(settings.proxy.max_body_bytes)
  const route = yield* routeOf(body.model)
  const target = yield* Effect.mapError(upstreams.resolve(route.model), fromUpstreamError)
  body.model = target.model
  applyModelDefaults(body, target.defaults)
  const scope = yield* Scope.make()
  const closeScope = Scope.close(scope, Exit.void)
  return yield* Effect.gen(function* () {
    const res = yield* upstreams
      .send(target, "completions", JSON.stringify(body), { requestId: meta.requestId })
      .pipe(Scope.extend(scope), Effect.mapError(fromUpstreamError))
    if (body.stream === true && res.status < 300) {
      return HttpServerResponse.stream(res.stream.pipe(Stream.ensuring(closeScope)), { contentType: res.contentType })
    }
    const text = yield* Effect.mapError(res.text, fromUpstreamError).pipe(Effect.ensuring(closeScope))
    return relay(res.status, res.contentType, text, {})
  }).pipe(Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : closeScope)))
})
