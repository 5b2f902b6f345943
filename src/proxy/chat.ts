/**
 * `POST /v1/chat/completions` — the gated endpoint (reference §2.2–2.5, architecture 1–6).
 */
import { HttpServerResponse } from "@effect/platform"
import { Context, Effect, Stream } from "effect"
import { Judges } from "../../judges/Judges.js"
import type { AuditWriteError } from "../../layers/AuditSink.js"
import { Upstreams } from "../../layers/Upstreams.js"
import { Settings } from "../config/service.js"
import { normaliseChatBody } from "../domain/normalise.js"
import { isJudged, parseRoute, RouteError, type Route } from "../domain/route.js"
import { Gate, type GateRequest } from "../gate/Gate.js"
import { errorBody, ProxyError } from "./errors.js"
import { fromUpstreamError, readAll, readJsonBody, relay, withUpstream } from "./forward.js"
import type { RequestMeta } from "./request-meta.js"
import { gateSseStream } from "./sse-gate.js"
import { isObject } from "../domain/is-object.js"

export class CurrentRequest extends Context.Tag("vetobench/CurrentRequest")<CurrentRequest, RequestMeta>() {}

export const routeOf = (model: string) => {
  const r = parseRoute(model)
  return r instanceof RouteError ? Effect.fail(new ProxyError({ code: "invalid_route", message: r.message })) : Effect.succeed(r)
}

const gateRequest = (route: Route, meta: RequestMeta, agentModel: string, tools: unknown, stream: boolean): GateRequest => ({
  arm: route.arm as GateRequest["arm"],
  judge: route.judge,
  tools: Array.isArray(tools) ? tools : undefined,
  stream,
  context: {
    requestId: meta.requestId,
    runId: meta.runId,
    episodeId: meta.episodeId,
    sessionId: meta.sessionId,
    principal: meta.principal,
    agentModel,
    headers: meta.headers
  }
})

const auditFailed = (e: AuditWriteError) =>
  new ProxyError({ code: "audit_write_failed", message: `audit write failed, call not released: ${e.file}: ${e.reason}` })

export const chatCompletions = Effect.gen(function* () {
  const settings = yield* Settings
  const upstreams = yield* Upstreams
  const judges = yield* Judges
  const gate = yield* Gate
  const meta = yield* CurrentRequest
  const body = yield* readJsonBody(settings.proxy.max_body_bytes)
  const route = yield* routeOf(body.model)
  if (isJudged(route) && judges.get(route.judge!) === undefined) {
    return yield* new ProxyError({
      code: "unknown_judge",
      message: `unknown judge '${route.judge}'; configured: ${judges.names.join(", ")}`
    })
  }
  const target = yield* Effect.mapError(upstreams.resolve(route.model), fromUpstreamError)
  normaliseChatBody(body, target.model, target.defaults)
  const stream = body.stream === true
  const request = gateRequest(route, meta, target.model, body.tools, stream)

  return yield* withUpstream(upstreams, target, "chat/completions", JSON.stringify(body), meta.requestId, (res, release) =>
    Effect.gen(function* () {
      if (!stream || res.status >= 300) {
        const text = yield* readAll(res, release)
        if (res.status >= 300 || route.arm === "passthrough") return relay(res.status, res.contentType, text, {})
        if (!text.includes('"tool_calls"')) {
          return HttpServerResponse.text(text, { contentType: "application/json", headers: { "x-vetobench-blocked": "0" } })
        }
        const parsed = yield* Effect.try({
          try: () => JSON.parse(text) as unknown,
          catch: () => new ProxyError({ code: "upstream_invalid_response", message: `upstream answered invalid JSON: ${text.slice(0, 200)}` })
        })
        if (!isObject(parsed)) {
          return yield* new ProxyError({ code: "upstream_invalid_response", message: "upstream answer is not a JSON object" })
        }
        const blocked = yield* Effect.mapError(gate.ruleResponse(request, parsed), auditFailed)
        // the gate changes `parsed` only to strip blocked calls: when it blocked none, the upstream bytes go back as they came
        return HttpServerResponse.text(blocked === 0 ? text : JSON.stringify(parsed), {
          contentType: "application/json",
          headers: { "x-vetobench-blocked": String(blocked) }
        })
      }
      const sse = { "cache-control": "no-cache" }
      if (route.arm === "passthrough") {
        return HttpServerResponse.stream(res.stream.pipe(Stream.ensuring(release)), { contentType: res.contentType, headers: sse })
      }
      const gated = gateSseStream(res.stream, { gate, request, partial: settings.proxy.partial_refusal }).pipe(
        Stream.catchAll((e) => {
          const err = e._tag === "AuditWriteError" ? auditFailed(e) : fromUpstreamError(e)
          return Stream.make(`data: ${errorBody(err.code, err.message)}\n\n`)
        }),
        Stream.encodeText,
        Stream.ensuring(release)
      )
      return HttpServerResponse.stream(gated, { contentType: "text/event-stream", headers: sse })
    })
  )
})
