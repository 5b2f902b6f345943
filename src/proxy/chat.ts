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
import { Gate, type GateRequest, type GateShape } from "../gate/Gate.js"
import { type AccessRecord, CurrentAccess, loggable } from "./access-log.js"
import { errorBody, ProxyError } from "./errors.js"
import { fromUpstreamError, readAll, readChatBody, relay } from "./forward.js"
import { observedUpstream } from "./observe.js"
import { runIdProblem } from "../domain/run-id.js"
import { didYouMean } from "../domain/suggest.js"
import type { RequestMeta } from "./request-meta.js"
import { gateSseStream } from "./sse-gate.js"
import { gateChatText } from "./wire/chat.js"

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

const invalidAnswerError = (message: string) => new ProxyError({ code: "upstream_invalid_response", message })

const answer = (text: string, blocked: number) =>
  HttpServerResponse.text(text, { contentType: "application/json", headers: { "x-vetobench-blocked": String(blocked) } })

const isEventStream = (contentType: string) => contentType.toLowerCase().startsWith("text/event-stream")

/** the gate, counting the request's proposed, blocked and held calls into its access record */
const countingGate = (gate: GateShape, rec: AccessRecord): GateShape => ({
  ruleChoice: (req, choiceIndex, toolCalls) =>
    Effect.map(gate.ruleChoice(req, choiceIndex, toolCalls), (rulings) => {
      rec.proposed += rulings.length
      for (const r of rulings) {
        if (r.blocked) rec.blocked++
        if (r.effective === "hold") rec.held++
      }
      return rulings
    })
})

const auditFailed = (e: AuditWriteError) =>
  new ProxyError({ code: "audit_write_failed", message: `audit write failed, call not released: ${e.file}: ${e.reason}` })

export const chatCompletions = Effect.gen(function* () {
  const settings = yield* Settings
  const upstreams = yield* Upstreams
  const judges = yield* Judges
  const rec = yield* CurrentAccess
  const ruling = yield* Gate
  const gate = rec.observed ? countingGate(ruling, rec) : ruling
  const meta = yield* CurrentRequest
  if (meta.runId !== null) {
    const problem = runIdProblem(meta.runId)
    if (problem !== null) return yield* new ProxyError({ code: "invalid_request", message: `x-vetobench-run: ${problem}` })
    rec.runId = meta.runId
  }
  const body = yield* readChatBody(settings.proxy.max_body_bytes)
  const route = yield* routeOf(body.model)
  rec.model = loggable(route.model)
  rec.arm = route.arm
  rec.judge = route.judge === null ? null : loggable(route.judge)
  if (isJudged(route) && judges.get(route.judge!) === undefined) {
    return yield* new ProxyError({
      code: "unknown_judge",
      message: `unknown judge '${route.judge}'${didYouMean(route.judge!, judges.names)}; configured: ${judges.names.join(", ")}`
    })
  }
  const target = yield* Effect.mapError(upstreams.resolve(route.model), fromUpstreamError)
  normaliseChatBody(body, target.model, target.defaults)
  const stream = body.stream === true
  const request = gateRequest(route, meta, target.model, body.tools, stream)

  return yield* observedUpstream(upstreams, target, "chat/completions", JSON.stringify(body), rec, stream, (res, release) =>
    Effect.gen(function* () {
      if (!stream || res.status >= 300) {
        const text = yield* readAll(res, release)
        if (res.status >= 300 || route.arm === "passthrough") return relay(res.status, res.contentType, text, {})
        const gated = yield* gateChatText(gate, request, text, settings.proxy.partial_refusal).pipe(
          Effect.mapError((e) => (e._tag === "InvalidAnswer" ? invalidAnswerError(e.message) : auditFailed(e)))
        )
        return answer(gated.text, gated.blocked)
      }
      const sse = { "cache-control": "no-cache" }
      if (route.arm === "passthrough") {
        return HttpServerResponse.stream(res.stream.pipe(Stream.ensuring(release)), { contentType: res.contentType, headers: sse })
      }
      if (!isEventStream(res.contentType)) {
        // an answer that is not an event stream is not shown to a streaming client: an error event ends it
        const err = yield* Effect.match(readAll(res, release), {
          onFailure: (e) => e,
          onSuccess: () => invalidAnswerError(`the upstream answered ${res.contentType || "no content type"} to a streaming request`)
        })
        rec.error = err.code
        return HttpServerResponse.text(`data: ${errorBody(err.code, err.message, meta.requestId)}\n\n`, {
          contentType: "text/event-stream",
          headers: { ...sse, "x-vetobench-blocked": "0" }
        })
      }
      const gated = gateSseStream(res.stream, { gate, request, partial: settings.proxy.partial_refusal, requestId: meta.requestId, maxEventSize: settings.proxy.max_answer_bytes }).pipe(
        Stream.catchAll((e) => {
          const err = e._tag === "AuditWriteError" ? auditFailed(e) : fromUpstreamError(e)
          rec.error = err.code
          return Stream.make(`data: ${errorBody(err.code, err.message, meta.requestId)}\n\n`)
        }),
        Stream.encodeText,
        Stream.ensuring(release)
      )
      return HttpServerResponse.stream(gated, { contentType: "text/event-stream", headers: sse })
    })
  )
})
