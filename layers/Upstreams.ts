/**
 * Upstreams: the model endpoints (vLLM). One keep-alive pool per upstream (from `HttpTransport`,
 * closed with the layer), TLS with an optional CA bundle, aliases, a catch-all upstream,
 * `model_defaults` on every request we send, per-upstream timeouts. The key sent is always the
 * upstream's own; no client header is forwarded.
 */
import { readFileSync } from "node:fs"
import { Context, Data, Duration, Effect, Either, Layer, Redacted, type Scope, Stream } from "effect"
import { Settings } from "../src/config/service.js"
import type { Settings as SettingsShape, UpstreamSettings } from "../src/config/settings.js"
import { applyModelDefaults } from "../src/domain/normalise.js"
import { isObject } from "../src/domain/is-object.js"
import { redactUrl, redactUrlsIn } from "../src/domain/redact-url.js"
import { networkFailure } from "./http-errors.js"
import { firstHeader, HttpTransport, type HttpPool, type HttpTransportError, type HttpTransportShape, type TransportFailure } from "./HttpTransport.js"

export class NoRoute extends Data.TaggedError("NoRoute")<{ readonly model: string }> {
  override get message() {
    return `no upstream serves model '${this.model}'; add it to an upstream's \`models\` list`
  }
}
export class UpstreamStatus extends Data.TaggedError("UpstreamStatus")<{
  readonly upstream: string
  readonly status: number
  readonly body: string
}> {
  override get message() {
    return `upstream returned HTTP ${this.status}: ${redactUrlsIn(this.body.slice(0, 500))}`
  }
}
export class UpstreamTimeout extends Data.TaggedError("UpstreamTimeout")<{
  readonly upstream: string
  readonly timeout_s: number
}> {
  override get message() {
    return `upstream '${this.upstream}' did not answer within ${this.timeout_s}s`
  }
}
export class UpstreamUnavailable extends Data.TaggedError("UpstreamUnavailable")<{
  readonly upstream: string
  readonly reason: string
}> {
  override get message() {
    return `upstream '${this.upstream}' unavailable: ${redactUrlsIn(this.reason)}`
  }
}
export type TransportError = UpstreamTimeout | UpstreamUnavailable
export type UpstreamError = NoRoute | UpstreamStatus | TransportError

export interface Target {
  readonly upstream: UpstreamSettings
  /** the model name sent upstream (after alias resolution) */
  readonly model: string
  readonly defaults: Readonly<Record<string, unknown>> | undefined
}

export interface RawResponse {
  readonly status: number
  readonly contentType: string
  /** read the whole body (bounded by the upstream's timeout) */
  readonly text: Effect.Effect<string, TransportError>
  /** the body as it arrives; idle timeout = the upstream's timeout */
  readonly stream: Stream.Stream<Uint8Array, TransportError>
}

/** the upstream paths the proxy posts to (below an upstream's `base_url`) */
export type UpstreamPath = "chat/completions" | "completions" | "responses" | "messages"

export interface SendOptions {
  readonly requestId?: string
  readonly timeout_s?: number
  /** a W3C trace context header for the upstream (only with `telemetry.propagate`) */
  readonly traceparent?: string
}

export interface UpstreamsShape {
  /** alias (one lookup) then upstream: what the proxy does with a client's model */
  readonly resolve: (model: string) => Either.Either<Target, NoRoute>
  /** upstream for a literal model name (judges, scorers) */
  readonly target: (model: string) => Either.Either<Target, NoRoute>
  /** POST a raw JSON body; the body is released when the scope closes */
  readonly send: (
    target: Target,
    path: UpstreamPath,
    body: string,
    opts?: SendOptions
  ) => Effect.Effect<RawResponse, TransportError, Scope.Scope>
  /** chat completion for judges and scorers: defaults applied, non-2xx is an error */
  readonly chat: (model: string, payload: Record<string, unknown>, opts?: SendOptions) => Effect.Effect<Record<string, unknown>, UpstreamError>
  readonly completion: (model: string, payload: Record<string, unknown>, opts?: SendOptions) => Effect.Effect<Record<string, unknown>, UpstreamError>
  /** per upstream: served ids from GET models, or `error: …` */
  readonly listModels: Effect.Effect<Readonly<Record<string, ReadonlyArray<string> | string>>>
  /** sorted union of configured models and alias names (GET /v1/models) */
  readonly served: ReadonlyArray<string>
}

export class Upstreams extends Context.Tag("vetobench/Upstreams")<Upstreams, UpstreamsShape>() {}

interface PoolEntry {
  readonly pool: HttpPool
  readonly basePath: string
}

/**
 * A transport failure as a typed upstream error with a message a user can act on. The upstream's
 * URL is shown without its credentials (userinfo, credential query parameters), and they are
 * scrubbed from the network error's own message too.
 */
export const upstreamError = (u: UpstreamSettings, failure: TransportFailure, timeout_s: number): TransportError => {
  const where = redactUrl(u.base_url)
  switch (failure.kind) {
    case "timeout":
      return new UpstreamTimeout({ upstream: u.name, timeout_s })
    case "tls":
      return new UpstreamUnavailable({
        upstream: u.name,
        reason: `TLS verification failed (${failure.code}) for ${where}${failure.untrustedCa ? "; set verify_tls to the CA bundle that signed it" : ""}`
      })
    case "connect-timeout":
      return new UpstreamUnavailable({ upstream: u.name, reason: `connect timeout after ${u.connect_timeout_s}s (${where})` })
    case "too-large":
      return new UpstreamUnavailable({ upstream: u.name, reason: `error: the answer is larger than ${failure.limit} bytes (proxy.max_answer_bytes) (${where})` })
    case "other":
      return new UpstreamUnavailable({ upstream: u.name, reason: `${failure.code}: ${redactUrlsIn(failure.message, [u.base_url])} (${where})` })
  }
}

/** {@link upstreamError} of an undici / Node error (or of anything thrown while reading an answer). */
export const transportError = (u: UpstreamSettings, e: unknown, timeout_s: number): TransportError =>
  upstreamError(u, networkFailure(e), timeout_s)

const makePool = (transport: HttpTransportShape, u: UpstreamSettings): PoolEntry => {
  const url = new URL(u.base_url)
  const ca = typeof u.verify_tls === "string" ? readFileSync(u.verify_tls) : undefined
  const pool = transport.pool(url.origin, {
    connections: u.max_connections,
    keepAliveTimeoutMs: 30_000,
    connectTimeoutMs: u.connect_timeout_s * 1000,
    rejectUnauthorized: u.verify_tls !== false,
    ...(ca !== undefined ? { ca } : {})
  })
  return { pool, basePath: url.pathname.replace(/\/+$/, "") }
}

/** The upstream a model name goes to: the first that lists it in `models`, else the first catch-all (no `models`). */
export const upstreamFor = (settings: Pick<SettingsShape, "upstreams">, model: string): UpstreamSettings | undefined =>
  settings.upstreams.find((x) => x.models.includes(model)) ?? settings.upstreams.find((x) => x.models.length === 0)

/** A client's model name after `aliases` (own keys only: a model named `constructor` is not an alias). */
export const aliasOf = (settings: Pick<SettingsShape, "aliases">, model: string): string =>
  (Object.hasOwn(settings.aliases, model) ? settings.aliases[model] : undefined) ?? model

/** The upstreams of `settings`, their pools opened on the `HttpTransport` in context (undici by default) and closed with the scope. */
export const make = (settings: SettingsShape) =>
  Effect.gen(function* () {
    const transport = yield* HttpTransport
    const pools = new Map<string, PoolEntry>()
    yield* Effect.addFinalizer(() => Effect.forEach(pools.values(), (p) => p.pool.close, { concurrency: "unbounded", discard: true }))
    for (const u of settings.upstreams) pools.set(u.name, makePool(transport, u))

    const target = (model: string): Either.Either<Target, NoRoute> => {
      const u = upstreamFor(settings, model)
      return u ? Either.right({ upstream: u, model, defaults: settings.model_defaults[model] }) : Either.left(new NoRoute({ model }))
    }
    const resolve = (model: string) => target(aliasOf(settings, model))

    const send: UpstreamsShape["send"] = (t, path, body, opts = {}) => {
      const u = t.upstream
      const entry = pools.get(u.name)!
      const timeout_s = opts.timeout_s ?? u.timeout_s
      const headers: Record<string, string> = {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${Redacted.value(u.api_key)}`
      }
      if (opts.requestId) headers["x-request-id"] = opts.requestId
      if (opts.traceparent) headers["traceparent"] = opts.traceparent
      const fail = (e: HttpTransportError) => upstreamError(u, e.failure, timeout_s)
      // a client that goes away aborts the upstream request; the body is released with the scope
      return entry.pool
        .request({ method: "POST", path: `${entry.basePath}/${path}`, headers, body, timeoutMs: Math.max(1, Math.round(timeout_s * 1000)) }, fail)
        .pipe(
          Effect.map(
            (r): RawResponse => ({
              status: r.status,
              contentType: firstHeader(r.headers, "content-type") ?? "",
              text: r.text(settings.proxy.max_answer_bytes),
              stream: r.stream
            })
          )
        )
    }

    const jsonCall =
      (path: "chat/completions" | "completions") =>
      (model: string, payload: Record<string, unknown>, opts: SendOptions = {}) =>
        Effect.flatMap(target(model), (t) => {
          const timeout_s = opts.timeout_s ?? t.upstream.timeout_s
          const name = t.upstream.name
          return Effect.gen(function* () {
            const body: Record<string, unknown> = { ...payload, model: t.model }
            applyModelDefaults(body, t.defaults)
            const res = yield* send(t, path, JSON.stringify(body), { ...opts, timeout_s })
            const text = yield* res.text
            if (res.status < 200 || res.status >= 300) {
              return yield* new UpstreamStatus({ upstream: name, status: res.status, body: text })
            }
            const parsed = yield* Effect.try({
              try: () => JSON.parse(text) as unknown,
              catch: () => new UpstreamUnavailable({ upstream: name, reason: `answer is not JSON: ${text.slice(0, 200)}` })
            })
            if (!isObject(parsed)) return yield* new UpstreamUnavailable({ upstream: name, reason: "answer is not a JSON object" })
            return parsed
          }).pipe(
            Effect.timeoutFail({
              duration: Duration.seconds(timeout_s),
              onTimeout: () => new UpstreamTimeout({ upstream: name, timeout_s })
            }),
            Effect.scoped
          )
        })

    const listModels = Effect.forEach(
      settings.upstreams,
      (u) =>
        Effect.gen(function* () {
          const entry = pools.get(u.name)!
          const r = yield* entry.pool.request(
            { method: "GET", path: `${entry.basePath}/models`, headers: { authorization: `Bearer ${Redacted.value(u.api_key)}` }, timeoutMs: 10_000 },
            (e) => upstreamError(u, e.failure, 10)
          )
          const text = yield* r.text()
          const res = yield* Effect.try({
            try: () => {
              if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${text.slice(0, 200)}`)
              return JSON.parse(text) as { data?: Array<{ id?: unknown }> }
            },
            catch: (e) => transportError(u, e, 10)
          })
          const ids = (res.data ?? []).map((m) => String(m.id)).sort()
          return [u.name, ids] as const
        }).pipe(
          Effect.scoped,
          Effect.catchAll((e) => Effect.succeed([u.name, `error: ${e.message}`] as const))
        ),
      { concurrency: "unbounded" }
    ).pipe(Effect.map((entries) => Object.fromEntries(entries)))

    const served = [...new Set([...settings.upstreams.flatMap((u) => u.models), ...Object.keys(settings.aliases)])].sort()

    return {
      resolve,
      target,
      send,
      chat: jsonCall("chat/completions"),
      completion: jsonCall("completions"),
      listModels,
      served
    } satisfies UpstreamsShape
  })

/** Upstreams from `Settings`; outbound HTTP through the `HttpTransport` in context (undici unless one is provided). */
export const layer: Layer.Layer<Upstreams, never, Settings> = Layer.scoped(Upstreams, Effect.flatMap(Settings, make))
