/**
 * One gated route, whatever the wire format: run-id and route checks, the upstream, the arm, the
 * buffered and the streamed answer, errors. What differs per format (how a request is checked and
 * normalised, where calls are in an answer, how a denial looks, how an error looks) is the format's
 * {@link WireFormat}, one module per format under `src/proxy/wire/`; adding a format is that module
 * and one route line in app.ts.
 */
import type { IncomingMessage } from "node:http"
import { Context, Effect, Stream } from "effect"
import { Judges } from "../../judges/Judges.js"
import type { AuditWriteError } from "../../layers/AuditSink.js"
import { type Target, type TransportError, Upstreams, type UpstreamPath } from "../../layers/Upstreams.js"
import { Settings } from "../config/service.js"
import type { Wire } from "../domain/audit-record.js"
import type { PartialRefusal } from "../domain/refusal.js"
import { isJudged, parseRoute, RouteError, type Route } from "../domain/route.js"
import { ATTEMPT_HEADER, attemptOf } from "../domain/attempt.js"
import { runIdProblem } from "../domain/run-id.js"
import { didYouMean } from "../domain/suggest.js"
import { Gate, type GateRequest, type GateShape } from "../gate/Gate.js"
import type { ResultPosition, ToolResult } from "../screening/results.js"
import { Screening } from "../screening/Screening.js"
import { type AccessRecord, loggable } from "./access-log.js"
import { type ProxyErrorCode, ProxyError } from "./errors.js"
import { fromUpstreamError, readAll, relayedText } from "./forward.js"
import { observedUpstream } from "./observe.js"
import type { RequestMeta } from "./request-meta.js"
import type { GatedText, InvalidAnswer } from "./wire/json-answer.js"
import type { SseOut } from "./wire/sse-driver.js"

export class CurrentRequest extends Context.Tag("vetobench/CurrentRequest")<CurrentRequest, RequestMeta>() {}

/** What the SSE gate of a format is given. */
export interface StreamGateOptions {
  readonly gate: GateShape
  readonly request: GateRequest
  readonly partial: PartialRefusal
  /** the request id, carried by error events */
  readonly requestId?: string
  /** one event larger than this (`proxy.max_answer_bytes`) ends the stream with an error event */
  readonly maxEventSize?: number
  /** the events the client was sent, for a format that numbers them (Responses' `sequence_number`): an error event the route writes after them continues the count */
  readonly events?: { sent: number }
}

/** Everything a gated route needs to know about one wire format. */
export interface WireFormat {
  readonly wire: Wire
  /** where the upstream serves this format, below its `base_url` */
  readonly path: UpstreamPath
  /** read the request body and check the fields the proxy relies on (limit first) */
  readonly readBody: (msg: IncomingMessage, limit: number) => Effect.Effect<Record<string, unknown> & { model: string }, ProxyError>
  /** set the upstream's model name, apply its `model_defaults` and the format's normalisation, in place */
  readonly normalise: (body: Record<string, unknown>, target: Target) => void
  /** the request's tool results (`tool` messages, `function_call_output` items, `tool_result` blocks), for the result screen */
  readonly results: (body: Record<string, unknown>) => ReadonlyArray<ToolResult>
  /** put the screen's notice in place of the result at `position`, in place */
  readonly replaceResult: (body: Record<string, unknown>, position: ResultPosition, notice: string) => void
  /** the request's tools in the chat function-tool shape the judges read (descriptions, schemas) */
  readonly tools: (body: Record<string, unknown>) => ReadonlyArray<unknown> | undefined
  /** a logged arm's 200 answer: the text the client gets and how many calls were removed */
  readonly gateText: (
    gate: GateShape,
    request: GateRequest,
    text: string,
    partial: PartialRefusal
  ) => Effect.Effect<GatedText, AuditWriteError | InvalidAnswer>
  /** a logged arm's event stream: the gated SSE text, written to `out` */
  readonly gateStream: <E>(upstream: Stream.Stream<Uint8Array, E>, opts: StreamGateOptions, out: SseOut) => Effect.Effect<void, E | AuditWriteError>
  /** an error body in the shape this format's clients read */
  readonly errorBody: (code: ProxyErrorCode, message: string, requestId: string | null) => string
  /** the same error as one SSE event that ends a stream */
  /** the event that ends a stream with an error; `eventsSent`: the events the client got before it (0 when it is the first) */
  readonly errorEvent: (code: ProxyErrorCode, message: string, requestId: string | null, eventsSent: number) => string
  /** an upstream error answer that is not JSON, wrapped in this format's error shape */
  readonly upstreamError: (status: number, text: string) => string
}

export const routeOf = (model: string) => {
  const r = parseRoute(model)
  return r instanceof RouteError ? Effect.fail(new ProxyError({ code: "invalid_route", message: r.message })) : Effect.succeed(r)
}

const gateRequest = (wire: Wire, route: Route, meta: RequestMeta, agentModel: string, tools: ReadonlyArray<unknown> | undefined, stream: boolean): GateRequest => ({
  arm: route.arm as GateRequest["arm"],
  wire,
  judge: route.judge,
  tools,
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

/**
 * the gate, noting the audit record (seq) of every call ruled deny or hold: a buffered answer names them in
 * `x-vetobench-record: <run>,<seq>[,<seq>…]`, for `vetobench audit prove <run>.jsonl --record <seq>` later
 */
const notingGate = (gate: GateShape, seqs: Array<number>): GateShape => ({
  ruleChoice: (req, choiceIndex, toolCalls) =>
    Effect.map(gate.ruleChoice(req, choiceIndex, toolCalls), (rulings) => {
      for (const r of rulings) if ((r.effective === "deny" || r.effective === "hold") && r.seq !== undefined) seqs.push(r.seq)
      return rulings
    })
})

const recordHeader = (runId: string | null, seqs: ReadonlyArray<number>): Record<string, string> =>
  seqs.length === 0 ? {} : { "x-vetobench-record": [runId ?? "adhoc", ...seqs].join(",") }

const auditFailed = (e: AuditWriteError) =>
  new ProxyError({ code: "audit_write_failed", message: `audit write failed, call not released: ${e.file}: ${e.reason}` })

const SSE_HEADERS = { "cache-control": "no-cache" }

/** Where a streamed answer goes: text (gated SSE) or bytes (a passthrough stream relayed as it came). */
export interface AnswerOut extends SseOut {
  readonly writeBytes: (bytes: Uint8Array) => boolean
}

/**
 * What a gated route answers: a whole body, or a stream whose `pump` writes it (and frees the
 * upstream's body when done, however it ends). The route never writes the response itself: the
 * server does (server.ts), with the request id and the access record's byte count.
 */
export type GatedAnswer =
  | {
      readonly _tag: "Whole"
      readonly status: number
      readonly contentType: string
      readonly headers: Readonly<Record<string, string>>
      readonly text: string
    }
  | {
      readonly _tag: "Stream"
      readonly contentType: string
      readonly headers: Readonly<Record<string, string>>
      readonly pump: (out: AnswerOut) => Effect.Effect<void>
    }

export const wholeAnswer = (status: number, contentType: string, text: string, headers: Readonly<Record<string, string>> = {}): GatedAnswer => ({
  _tag: "Whole",
  status,
  contentType,
  headers,
  text
})

/** a stream relayed as it came (a passthrough arm's), its upstream body freed when it ends */
const relayedStream = (upstream: Stream.Stream<Uint8Array, TransportError>, release: Effect.Effect<void>, rec: AccessRecord) => (out: AnswerOut) =>
  Stream.runForEach(upstream, (bytes) => (out.writeBytes(bytes) ? Effect.void : out.drain)).pipe(
    // an upstream failure ends the relayed stream where it is (the client sees it cut short); the access line names it
    Effect.catchAll((e) => Effect.sync(() => void (rec.error = fromUpstreamError(e).code))),
    Effect.ensuring(release)
  )

/**
 * The route handler of a gated wire format: one request, read from `msg`, its access record `rec`
 * filled in as the route learns things. Fails with the proxy errors the client gets in the format's shape.
 */
export const gatedRoute = (format: WireFormat, msg: IncomingMessage, rec: AccessRecord, meta: RequestMeta) =>
  Effect.gen(function* () {
    const settings = yield* Settings
    const upstreams = yield* Upstreams
    const judges = yield* Judges
    const ruling = yield* Gate
    const gate = rec.observed ? countingGate(ruling, rec) : ruling
    const screening = yield* Screening
    if (meta.runId !== null) {
      const problem = runIdProblem(meta.runId)
      if (problem !== null) return yield* new ProxyError({ code: "invalid_request", message: `x-vetobench-run: ${problem}` })
      rec.runId = meta.runId
    }
    // a runner's attempt number decides which calls are counted: one the gate cannot read is refused, not dropped
    const attempt = meta.headers[ATTEMPT_HEADER]
    if (attempt !== undefined && attemptOf(meta.headers) === null) {
      return yield* new ProxyError({ code: "invalid_request", message: `${ATTEMPT_HEADER}: must be a positive integer of at most 9 digits, got '${loggable(attempt)}'` })
    }
    const body = yield* format.readBody(msg, settings.proxy.max_body_bytes)
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
    format.normalise(body, target)
    const stream = body.stream === true
    const request = gateRequest(format.wire, route, meta, target.model, format.tools(body), stream)
    const partial = settings.proxy.partial_refusal
    // the result screen (src/screening/): the request's tool results, before it is forwarded
    if (route.arm !== "passthrough" && screening.judge !== null) {
      const rulings = yield* Effect.mapError(screening.screenResults({ arm: request.arm, wire: format.wire, context: request.context }, format.results(body)), auditFailed)
      for (const r of rulings) if (r.replaced && r.notice !== null) format.replaceResult(body, r.result.position, r.notice)
    }

    return yield* observedUpstream(upstreams, target, format.path, JSON.stringify(body), rec, stream, (res, release) =>
      Effect.gen(function* () {
        if (!stream || res.status >= 300) {
          const text = yield* readAll(res, release)
          if (res.status >= 300 || route.arm === "passthrough") {
            return wholeAnswer(res.status, "application/json", relayedText(res.status, res.contentType, text, format.upstreamError))
          }
          const seqs: Array<number> = []
          const gated = yield* format.gateText(notingGate(gate, seqs), request, text, partial).pipe(
            Effect.mapError((e) => (e._tag === "InvalidAnswer" ? invalidAnswerError(e.message) : auditFailed(e)))
          )
          return wholeAnswer(200, "application/json", gated.text, { "x-vetobench-blocked": String(gated.blocked), ...recordHeader(meta.runId, seqs) })
        }
        if (route.arm === "passthrough") {
          // (an upstream that names no content type: bytes, as the platform labelled them)
          const contentType = res.contentType || "application/octet-stream"
          return { _tag: "Stream", contentType, headers: SSE_HEADERS, pump: relayedStream(res.stream, release, rec) } satisfies GatedAnswer
        }
        if (!isEventStream(res.contentType)) {
          // an answer that is not an event stream is not shown to a streaming client: an error event ends it
          const err = yield* Effect.match(readAll(res, release), {
            onFailure: (e) => e,
            onSuccess: () => invalidAnswerError(`the upstream answered ${res.contentType || "no content type"} to a streaming request`)
          })
          rec.error = err.code
          return wholeAnswer(200, "text/event-stream", format.errorEvent(err.code, err.message, meta.requestId, 0), { ...SSE_HEADERS, "x-vetobench-blocked": "0" })
        }
        const events = { sent: 0 }
        const opts: StreamGateOptions = { gate, request, partial, requestId: meta.requestId, maxEventSize: settings.proxy.max_answer_bytes, events }
        const pump = (out: AnswerOut) =>
          format.gateStream(res.stream, opts, out).pipe(
            Effect.catchAll((e: TransportError | AuditWriteError) => {
              const err = e._tag === "AuditWriteError" ? auditFailed(e) : fromUpstreamError(e)
              rec.error = err.code
              return out.write(format.errorEvent(err.code, err.message, meta.requestId, events.sent)) ? Effect.void : out.drain
            }),
            Effect.ensuring(release)
          )
        return { _tag: "Stream", contentType: "text/event-stream", headers: SSE_HEADERS, pump } satisfies GatedAnswer
      })
    )
  })
