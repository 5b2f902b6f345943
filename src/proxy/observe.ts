/**
 * Seeing the proxy work: the observation every request goes through (the platform app's middleware,
 * and the same for the gated routes served on node:http, gated-serve.ts), and the upstream call's
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
 * The observation wraps the writing of the response too (a streamed body is written inside it: by
 * the platform, or by gated-serve.ts), which is why the line and the span end when the stream ends.
 */
import { Headers, HttpBody, HttpServerRequest, HttpServerResponse, HttpTraceContext, type HttpApp } from "@effect/platform"
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

const contentLength = (v: string | undefined): number | null => {
  if (v === undefined) return null
  const n = Number(v)
  return Number.isSafeInteger(n) && n >= 0 ? n : null
}

/**
 * The status of a request that did not end with a response: the answer the platform made of its
 * cause when it made one (it fails with the interruption and that answer as a defect: 499 for a
 * client that went away), else 499 for an interruption only, else 500.
 */
const causeStatus = (cause: Cause.Cause<unknown>): number =>
  Option.getOrElse(
    Cause.find(cause, (c) => (c._tag === "Die" && HttpServerResponse.isServerResponse(c.defect) ? Option.some(c.defect.status) : Option.none())),
    () => (Cause.isInterruptedOnly(cause) ? 499 : 500)
  )

/** the status the client got: 499 when it went away, 500 for a failure, else what `ok` says */
export const exitStatus =
  <A>(ok: (a: A) => number) =>
  (exit: Exit.Exit<A, unknown>): number =>
    Exit.isSuccess(exit) ? ok(exit.value) : causeStatus(exit.cause)

const responseStatus = exitStatus((res: HttpServerResponse.HttpServerResponse) => res.status)

export interface ObserveOptions {
  /** write an access line per request */
  readonly accessLog: boolean
}

/** The request headers as the observation reads them. */
export type RequestHeaders = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/** Request observation, built once with the proxy's Metrics and Telemetry. */
export interface Observe {
  /**
   * One request, observed: `run` gets the request's access record (its request id too); `status`
   * reads the status the client got from how `run` ended.
   */
  readonly request: <A, E, R>(
    method: string,
    url: string,
    headers: RequestHeaders,
    run: (rec: AccessRecord) => Effect.Effect<A, E, R>,
    status: (exit: Exit.Exit<A, E>) => number
  ) => Effect.Effect<A, E, R>
  /** the same as the middleware of `HttpServer.serve` (the record in `CurrentAccess`) */
  readonly middleware: <E, R>(
    app: HttpApp.Default<E, R>
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, Exclude<R, CurrentAccess> | HttpServerRequest.HttpServerRequest>
}

const one = (v: string | ReadonlyArray<string> | undefined): string | undefined => (typeof v === "string" || v === undefined ? v : v[0])

/** The request observation (see the module's comment). */
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
    const request: Observe["request"] = (method, url, headers, run, status) => {
      const requestId = requestIdOf(headers as Readonly<Record<string, string | undefined>>)
      if (!watching) return run(newAccessRecord(requestId, method, "", null, false, false))
      const started = performance.now()
      const rec = newAccessRecord(requestId, method, routeLabel(pathOf(url)), contentLength(one(headers["content-length"])), accessLog)
      const inner = Effect.suspend(() => run(rec))
      if (tracer === null) return Effect.onExit(inner, (exit) => finish(rec, started, status(exit)))
      const parent = HttpTraceContext.fromHeaders(Headers.fromInput(headers))
      return Effect.flatMap(
        Effect.makeSpan(`${method} ${rec.route}`, {
          kind: "server",
          captureStackTrace: false,
          ...(Option.isSome(parent) ? { parent: parent.value } : {}),
          attributes: { "http.request.method": method, "http.route": rec.route, "vetobench.request_id": rec.requestId }
        }),
        (span) =>
          Effect.onExit(Effect.withParentSpan(inner, span), (exit) => {
            const code = status(exit)
            span.attribute("http.response.status_code", code)
            if (rec.arm !== null) span.attribute("vetobench.arm", rec.arm)
            if (rec.judge !== null) span.attribute("vetobench.judge", rec.judge)
            if (rec.model !== null) span.attribute("vetobench.model", rec.model)
            if (rec.runId !== null) span.attribute("vetobench.run_id", rec.runId)
            if (rec.arm !== null && rec.arm !== "passthrough") {
              span.attribute("vetobench.calls.proposed", rec.proposed)
              span.attribute("vetobench.calls.blocked", rec.blocked)
              span.attribute("vetobench.calls.held", rec.held)
            }
            if (code >= 500) span.attribute("error.type", String(code))
            return Effect.zipRight(
              Effect.clockWith((clock) =>
                Effect.sync(() => span.end(clock.unsafeCurrentTimeNanos(), code >= 500 && Exit.isSuccess(exit) ? Exit.fail(`HTTP ${code}`) : exit))
              ),
              finish(rec, started, code)
            )
          })
      ).pipe(Effect.withTracer(tracer))
    }
    const middleware: Observe["middleware"] = (app) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (req) =>
        request(req.method, req.url, req.headers, (rec) => Effect.provideService(app, CurrentAccess, rec), responseStatus)
      )
    return { request, middleware } satisfies Observe
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
  Effect.flatMap(Metrics, (metrics) => Effect.flatMap(Telemetry, (telemetry) => {
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
  }))

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
