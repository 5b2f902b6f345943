/**
 * Seeing the proxy work: the middleware every request goes through, and the upstream call's
 * observation. Per request it
 * - makes the {@link AccessRecord} the handlers fill in (request id, route, model route, calls, upstream);
 * - when the response is done (a stream: when it ended or the client went away) counts the request
 *   (`vetobench_requests_total`) and, with the access log on, writes the access line;
 * - with tracing on, makes the request span (honouring an incoming `traceparent`), the parent of the
 *   upstream `chat` span and the judges' `execute_tool` spans.
 *
 * With tracing off no span is made and no tracer is touched: the cost is the record, one
 * `performance.now()` pair and a counter increment.
 *
 * The server middleware wraps the platform's response writing too (a streamed body is written
 * inside it), which is why the line and the span end when the stream ends.
 */
import { HttpBody, HttpServerRequest, HttpServerResponse, HttpTraceContext, type HttpApp } from "@effect/platform"
import { Cause, Effect, Exit, Option, Stream, type Tracer } from "effect"
import { Metrics, type MetricsShape } from "../../layers/Metrics.js"
import { Telemetry, traceparentOf } from "../../layers/Telemetry.js"
import type { RawResponse, Target, TransportError, UpstreamPath, UpstreamsShape } from "../../layers/Upstreams.js"
import { AccessLine, accessFields, type AccessRecord, CurrentAccess, newAccessRecord } from "./access-log.js"
import { ProxyError } from "./errors.js"
import { withUpstream } from "./forward.js"
import { requestIdOf } from "./request-meta.js"
import { isMcpPath, MCP_ROUTE, PROXY_PATHS } from "./paths.js"

/** the routes the proxy serves, as metric and log labels */

/** A request path as a bounded label: a route of the proxy, `/v1/holds/:id`, or `unmatched`. */
export const routeLabel = (path: string): string =>
  PROXY_PATHS.has(path) ? path : path.startsWith("/v1/holds/") && path.indexOf("/", 10) < 0 ? "/v1/holds/:id" : isMcpPath(path) ? MCP_ROUTE : "unmatched"

const pathOf = (url: string): string => {
  const q = url.indexOf("?")
  return q < 0 ? url : url.slice(0, q)
}

const contentLength = (h: Readonly<Record<string, string | undefined>>): number | null => {
  const v = h["content-length"]
  if (v === undefined) return null
  const n = Number(v)
  return Number.isSafeInteger(n) && n >= 0 ? n : null
}

/** the status the client got: the response's, 499 when it went away, 500 for a failure */
const statusOf = (exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>): number =>
  Exit.isSuccess(exit) ? exit.value.status : Cause.isInterruptedOnly(exit.cause) ? 499 : 500

export interface ObserveOptions {
  /** write an access line per request */
  readonly accessLog: boolean
}

/**
 * The middleware for `HttpServer.serve`, built once with the proxy's Metrics and Telemetry.
 */
export const makeObserve = (opts: ObserveOptions) =>
  Effect.gen(function* () {
    const metrics = yield* Metrics
    const { tracer } = yield* Telemetry
    const accessLog = opts.accessLog

    const finish = (rec: AccessRecord, started: number, status: number): Effect.Effect<void> => {
      metrics.request(rec.route, rec.arm ?? "none", status)
      return accessLog ? Effect.logInfo(new AccessLine(accessFields(rec, status, performance.now() - started))) : Effect.void
    }

    // nothing reads the records: the request path stays as it was without observability
    const watching = accessLog || metrics.enabled || tracer !== null
    return <E, R>(app: HttpApp.Default<E, R>) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (req) => {
        if (!watching) return Effect.provideService(app, CurrentAccess, newAccessRecord(requestIdOf(req.headers), req.method, "", null, false, false))
        const started = performance.now()
        const rec = newAccessRecord(requestIdOf(req.headers), req.method, routeLabel(pathOf(req.url)), contentLength(req.headers), accessLog)
        const inner = Effect.provideService(app, CurrentAccess, rec)
        if (tracer === null) return Effect.onExit(inner, (exit) => finish(rec, started, statusOf(exit)))
        const parent = HttpTraceContext.fromHeaders(req.headers)
        return Effect.flatMap(
          Effect.makeSpan(`${req.method} ${rec.route}`, {
            kind: "server",
            captureStackTrace: false,
            ...(Option.isSome(parent) ? { parent: parent.value } : {}),
            attributes: { "http.request.method": req.method, "http.route": rec.route, "vetobench.request_id": rec.requestId }
          }),
          (span) =>
            Effect.onExit(Effect.withParentSpan(inner, span), (exit) => {
              const status = statusOf(exit)
              span.attribute("http.response.status_code", status)
              if (rec.arm !== null) span.attribute("vetobench.arm", rec.arm)
              if (rec.judge !== null) span.attribute("vetobench.judge", rec.judge)
              if (rec.model !== null) span.attribute("vetobench.model", rec.model)
              if (rec.runId !== null) span.attribute("vetobench.run_id", rec.runId)
              if (rec.arm !== null && rec.arm !== "passthrough") {
                span.attribute("vetobench.calls.proposed", rec.proposed)
                span.attribute("vetobench.calls.blocked", rec.blocked)
                span.attribute("vetobench.calls.held", rec.held)
              }
              if (status >= 500) span.attribute("error.type", String(status))
              return Effect.zipRight(
                Effect.clockWith((clock) =>
                  Effect.sync(() => span.end(clock.unsafeCurrentTimeNanos(), status >= 500 && Exit.isSuccess(exit) ? Exit.fail(`HTTP ${status}`) : exit))
                ),
                finish(rec, started, status)
              )
            })
        ).pipe(Effect.withTracer(tracer))
      })
  })

/** Count the bytes of a response body into the record (access log on): at once, or as a stream is written. */
export const countBytes = (res: HttpServerResponse.HttpServerResponse, rec: AccessRecord): HttpServerResponse.HttpServerResponse => {
  if (!rec.countBytes) return res
  const body = res.body
  switch (body._tag) {
    case "Uint8Array":
      rec.bytesOut = body.contentLength
      return res
    case "Stream": {
      rec.bytesOut = 0
      const counted = Stream.mapChunks(body.stream, (chunk) => {
        for (const b of chunk) rec.bytesOut = (rec.bytesOut ?? 0) + b.length
        return chunk
      })
      return HttpServerResponse.setBody(res, HttpBody.stream(counted, body.contentType, body.contentLength))
    }
    default:
      return res
  }
}

const transportStatus = (e: TransportError): string => (e._tag === "UpstreamTimeout" ? "timeout" : "unavailable")

/**
 * `withUpstream` observed: the upstream's status and latency (until its body ended: read, or the
 * stream done) go into the record and `vetobench_upstream_duration_seconds`; with tracing on, a
 * client span `chat <model>` (GenAI attributes) covers the same time, and with `telemetry.propagate`
 * the upstream gets its `traceparent`.
 */
export const observedUpstream = <A, E, R>(
  upstreams: UpstreamsShape,
  target: Target,
  path: UpstreamPath,
  body: string,
  rec: AccessRecord,
  stream: boolean,
  use: (res: RawResponse, release: Effect.Effect<void>) => Effect.Effect<A, E, R>
): Effect.Effect<A, E | ProxyError, R | Metrics | Telemetry> =>
  Effect.flatMap(Effect.all([Metrics, Telemetry]), ([metrics, telemetry]) => {
    if (!rec.observed) return withUpstream(upstreams, target, path, body, { requestId: rec.requestId }, use)
    const name = target.upstream.name
    rec.upstream = name
    if (telemetry.tracer === null) return observed(metrics, null, false, upstreams, target, path, body, rec, use)
    // the GenAI operation names: `chat` for every conversational API (chat, responses, messages)
    const operation = path === "completions" ? "text_completion" : "chat"
    const url = URL.canParse(target.upstream.base_url) ? new URL(target.upstream.base_url) : null
    return Effect.flatMap(
      Effect.makeSpan(`${operation} ${target.model}`, {
        kind: "client",
        captureStackTrace: false,
        attributes: {
          "gen_ai.operation.name": operation,
          "gen_ai.request.model": target.model,
          "vetobench.upstream": name,
          "vetobench.stream": stream,
          ...(url !== null ? { "server.address": url.hostname, "server.port": Number(url.port || (url.protocol === "https:" ? 443 : 80)) } : {})
        }
      }),
      (span) => observed(metrics, span, telemetry.propagate, upstreams, target, path, body, rec, use)
    )
  })

const observed = <A, E, R>(
  metrics: MetricsShape,
  span: Tracer.Span | null,
  propagate: boolean,
  upstreams: UpstreamsShape,
  target: Target,
  path: UpstreamPath,
  body: string,
  rec: AccessRecord,
  use: (res: RawResponse, release: Effect.Effect<void>) => Effect.Effect<A, E, R>
): Effect.Effect<A, E | ProxyError, R> =>
  Effect.suspend(() => {
    const started = performance.now()
    let status: number | string | null = null
    let done = false
    const end = (exit: Exit.Exit<unknown, unknown>) =>
      Effect.clockWith((clock) =>
        Effect.sync(() => {
          if (done) return
          done = true
          const ms = performance.now() - started
          const label = status ?? "unavailable"
          rec.upstreamStatus = label
          rec.upstreamMs = ms
          metrics.upstream(target.upstream.name, String(label), ms / 1000)
          if (span !== null) {
            if (typeof label === "number") span.attribute("http.response.status_code", label)
            if (typeof label !== "number" || label >= 400) span.attribute("error.type", String(label))
            span.end(clock.unsafeCurrentTimeNanos(), typeof label === "number" && label < 400 ? Exit.void : Exit.isFailure(exit) ? exit : Exit.fail(`upstream ${label}`))
          }
        })
      )
    // a body that fails to arrive (timeout, reset) is what the status says
    const failed = (e: TransportError) => Effect.sync(() => (status = transportStatus(e)))
    const send = { requestId: rec.requestId, ...(span !== null && propagate ? { traceparent: traceparentOf(span) } : {}) }
    return withUpstream(upstreams, target, path, body, send, (res, release) => {
      status = res.status
      const watched: RawResponse = { ...res, text: Effect.tapError(res.text, failed), stream: Stream.tapError(res.stream, failed) }
      return use(watched, Effect.zipRight(release, end(Exit.void)))
    }).pipe(
      Effect.onExit((exit) => {
        if (Exit.isSuccess(exit)) return Effect.void
        if (status === null) {
          const failure = Cause.failureOption(exit.cause)
          status = Cause.isInterruptedOnly(exit.cause)
            ? "aborted"
            : Option.isSome(failure) && failure.value instanceof ProxyError && failure.value.code === "upstream_timeout"
              ? "timeout"
              : "unavailable"
        }
        return end(exit)
      })
    )
  })
