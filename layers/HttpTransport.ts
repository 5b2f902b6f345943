/**
 * HttpTransport: the one way out of the process for the gate's HTTP calls — model upstreams
 * (`Upstreams`), the toolgate client and classifier endpoints (judges/). It owns undici: callers
 * describe a request and read the answer, and never see a socket, a dispatcher or an undici error.
 *
 * - `pool(origin, options)`: a keep-alive pool of one's own for one origin (connection limit, idle
 *   keep-alive, connect timeout, TLS: verify or not, only a given CA bundle); `close` frees it.
 * - `shared(origin)`: the process-wide dispatcher (undici's global one, looked up per request), for
 *   callers that keep no pool of their own.
 * - `request(req, onError)` on either: the wait for headers is interruptible (interruption aborts the
 *   request); once headers are in, the body belongs to the caller's scope and is released when it
 *   closes, read or not. `timeoutMs` bounds the time to headers and every pause in the body.
 * - Failures are `HttpTransportError`s (timeout, connect timeout, TLS, other, an answer over a read
 *   limit). `onError` maps them to the caller's own error where they arise, so a streamed body has
 *   no extra stage. Messages name the origin only (never userinfo, path or query) and quote network
 *   errors with URLs redacted (`networkFailure`).
 *
 * `HttpTransport` is a `Context.Reference`: without a layer the live undici transport is used, so
 * nothing that reaches the network has to wire it; a test or an embedder swaps it by providing
 * `HttpTransport.layerScripted(script)` (or any `HttpTransportShape`) where the gate is built
 * (`gateLayer({ transport })`, src/gate/live.ts).
 */
import { Context, Data, Effect, Layer, Option, Scope, Stream } from "effect"
import { type Dispatcher, getGlobalDispatcher, Pool } from "undici"
import { type NetworkFailure, networkFailure } from "./http-errors.js"

/** Why a request or a body read failed: a network failure, or an answer over the read's limit. */
export type TransportFailure = NetworkFailure | { readonly kind: "too-large"; readonly limit: number }

export class HttpTransportError extends Data.TaggedError("HttpTransportError")<{
  /** scheme, host and port only */
  readonly origin: string
  readonly failure: TransportFailure
}> {
  override get message() {
    const f = this.failure
    switch (f.kind) {
      case "timeout":
        return `${this.origin}: no answer within the request's timeout`
      case "connect-timeout":
        return `${this.origin}: connect timeout`
      case "tls":
        return `${this.origin}: TLS verification failed (${f.code})`
      case "too-large":
        return `${this.origin}: the answer is larger than ${f.limit} bytes`
      case "other":
        return `${this.origin}: ${f.code}: ${f.message}`
    }
  }
}

/** lower-case names as received; a repeated header is a list */
export type HttpHeaders = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/** The first value of a header (`undefined` when absent). */
export const firstHeader = (headers: HttpHeaders, name: string): string | undefined => {
  const v = headers[name]
  return typeof v === "string" ? v : v?.[0]
}

export interface HttpRequest {
  readonly method: "GET" | "POST"
  /** path and query below the client's origin */
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string
  /** the longest wait for the headers, and for each part of the body, in ms */
  readonly timeoutMs: number
}

export interface HttpResponse<E> {
  readonly status: number
  readonly headers: HttpHeaders
  /** the body as it arrives */
  readonly stream: Stream.Stream<Uint8Array, E>
  /** the whole body as UTF-8 (a BOM dropped); past `limit` bytes it fails (`too-large`) and the rest is not read */
  readonly text: (limit?: number) => Effect.Effect<string, E>
  /** the body's first bytes: whole chunks until `max` bytes are in or the body ends; the rest is not read */
  readonly head: (max: number) => Effect.Effect<Uint8Array, E>
}

export interface HttpClient {
  /** scheme, host and port */
  readonly origin: string
  /**
   * Send one request. `onError` maps a transport failure (of the request or of a later body read)
   * to the caller's error, once, where it happens. The body is released when the scope closes.
   */
  readonly request: <E>(req: HttpRequest, onError: (e: HttpTransportError) => E) => Effect.Effect<HttpResponse<E>, E, Scope.Scope>
}

export interface HttpPool extends HttpClient {
  /** close the pool's connections (requests in flight fail) */
  readonly close: Effect.Effect<void>
}

export interface PoolOptions {
  /** most connections at once; null = no limit */
  readonly connections: number | null
  /** how long an idle connection is kept */
  readonly keepAliveTimeoutMs: number
  readonly connectTimeoutMs: number
  /** false: any certificate is accepted */
  readonly rejectUnauthorized: boolean
  /** a CA bundle: then only it is trusted (else Node's trust store) */
  readonly ca?: Buffer
}

export interface HttpTransportShape {
  /** a keep-alive pool of its own for `origin` (scheme, host, port; anything else in it is ignored) */
  readonly pool: (origin: string, options: PoolOptions) => HttpPool
  /** a client of the process-wide dispatcher for `origin` */
  readonly shared: (origin: string) => HttpClient
}

/** `https://user:pw@h:1/p?q` → `https://h:1` (no credentials, path or query). */
const originOf = (url: string): string => new URL(url).origin

// ---------------------------------------------------------------------------------------------
// live: undici

/** thrown by a bounded read, told apart from the body's own errors */
class OverLimit extends Error {
  constructor(readonly limit: number) {
    super(`the answer is larger than ${limit} bytes`)
  }
}

const transportError = (origin: string, e: unknown): HttpTransportError =>
  new HttpTransportError({ origin, failure: e instanceof OverLimit ? { kind: "too-large", limit: e.limit } : networkFailure(e) })

type Body = Dispatcher.ResponseData["body"]

/** Free a body whether or not it was read; a destroyed unread body may emit an error nobody else listens to. */
const releaseBody = (body: Body) => {
  body.on("error", () => {})
  body.destroy()
}

const readText = async (body: Body, limit: number | undefined): Promise<string> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length
    if (limit !== undefined && size > limit) {
      body.destroy()
      throw new OverLimit(limit)
    }
    chunks.push(chunk)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

const readHead = async (body: Body, max: number): Promise<Uint8Array> => {
  const parts: Array<Buffer> = []
  let n = 0
  for await (const chunk of body as AsyncIterable<Uint8Array>) {
    parts.push(Buffer.from(chunk))
    n += chunk.length
    if (n >= max) break // leaving the loop destroys the body
  }
  return Buffer.concat(parts)
}

/**
 * The body as an async iterable whose `return` (what an interrupted stream calls) destroys the body
 * first. Node queues an iterator's `return()` behind a pending `next()`: without the destroy, a
 * client that leaves while the upstream is silent would be noticed only when the upstream sends
 * again or times out (and the held calls' records would wait that long).
 */
const chunksOf = (body: Body): AsyncIterable<Uint8Array> => ({
  [Symbol.asyncIterator]: () => {
    const it = (body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]()
    return {
      next: () => it.next(),
      return: (value?: unknown) => {
        releaseBody(body)
        return it.return !== undefined ? it.return(value) : Promise.resolve({ done: true as const, value: undefined })
      }
    }
  }
})

/**
 * The body as a stream: one pull per chunk, the body released when the stream ends, fails or is
 * interrupted (`Stream.ensuring`). What `Stream.fromAsyncIterable` does, without its
 * `acquireRelease` and scope per stream (an `Effect.addFinalizer`, whose FiberRefs are diffed and
 * patched twice when it runs: measurable per request at saturation, docs/performance.md).
 */
const bodyStream = <E>(body: Body, fail: (e: unknown) => E): Stream.Stream<Uint8Array, E> =>
  Stream.suspend(() => {
    const it = chunksOf(body)[Symbol.asyncIterator]()
    const pull = Effect.async<Uint8Array, Option.Option<E>>((resume) => {
      it.next().then(
        (r) => resume(r.done === true ? Effect.fail(Option.none()) : Effect.succeed(r.value)),
        (e: unknown) => resume(Effect.fail(Option.some(fail(e))))
      )
    })
    return Stream.repeatEffectOption(pull).pipe(Stream.ensuring(Effect.promise(async () => void (await it.return?.()))))
  })

/**
 * Release `body` when the caller's scope closes: a plain scope finalizer (`Effect.addFinalizer` would
 * also capture the fiber's FiberRefs and diff them twice when it runs; releasing needs none of them).
 */
const releaseWithScope = (body: Body): Effect.Effect<void, never, Scope.Scope> =>
  Effect.flatMap(Effect.scope, (scope) => Scope.addFinalizer(scope, Effect.sync(() => releaseBody(body))))

const liveResponse = <E>(r: Dispatcher.ResponseData, fail: (e: unknown) => E): HttpResponse<E> => ({
  status: r.statusCode,
  headers: r.headers,
  stream: bodyStream(r.body, fail),
  text: (limit) => Effect.tryPromise({ try: () => readText(r.body, limit), catch: fail }),
  head: (max) => Effect.tryPromise({ try: () => readHead(r.body, max), catch: fail })
})

/** `origin` is passed to the dispatcher only for the shared one (an Agent picks its pool by it). */
const liveClient = (origin: string, dispatcher: () => Dispatcher, routeByOrigin: boolean): HttpClient => ({
  origin,
  request: <E>(req: HttpRequest, onError: (e: HttpTransportError) => E) => {
    const fail = (e: unknown) => onError(transportError(origin, e))
    const send = Effect.async<Dispatcher.ResponseData, E>((resume, signal) => {
      dispatcher()
        .request({
          ...(routeByOrigin ? { origin } : {}),
          method: req.method,
          path: req.path,
          headers: req.headers,
          ...(req.body !== undefined ? { body: req.body } : {}),
          signal,
          headersTimeout: req.timeoutMs,
          bodyTimeout: req.timeoutMs
        })
        .then(
          (r) => resume(Effect.succeed(r)),
          (e: unknown) => resume(Effect.fail(fail(e)))
        )
    })
    // The wait for headers stays interruptible (the request is aborted); once they are in, the
    // body is owned by the scope and always released.
    return Effect.uninterruptibleMask((restore) =>
      restore(send).pipe(Effect.tap((r) => releaseWithScope(r.body)))
    ).pipe(Effect.map((r) => liveResponse(r, fail)))
  }
})

const livePool = (url: string, o: PoolOptions): HttpPool => {
  const origin = originOf(url)
  const pool = new Pool(origin, {
    connections: o.connections,
    keepAliveTimeout: o.keepAliveTimeoutMs,
    pipelining: 1,
    connect: { timeout: o.connectTimeoutMs, rejectUnauthorized: o.rejectUnauthorized, ...(o.ca !== undefined ? { ca: o.ca } : {}) }
  })
  return {
    ...liveClient(origin, () => pool, false),
    close: Effect.promise(() => pool.destroy().then(() => {}, () => {}))
  }
}

/** The undici transport (stateless: every pool belongs to whoever opened it). */
export const liveTransport: HttpTransportShape = {
  pool: livePool,
  shared: (url) => liveClient(originOf(url), getGlobalDispatcher, true)
}

// ---------------------------------------------------------------------------------------------
// scripted: for tests

export interface ScriptedRequest {
  readonly origin: string
  readonly method: HttpRequest["method"]
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
}

export interface ScriptedAnswer {
  readonly status: number
  /** names are lower-cased */
  readonly headers?: Readonly<Record<string, string>>
  /** the body, whole or in parts (the parts `stream` yields) */
  readonly body?: string | ReadonlyArray<string | Uint8Array>
}

/**
 * A scripted peer: every request through any pool or the shared client is handed to `script`. Its
 * failure is the request's transport failure; `timeoutMs` is not applied (a script that never
 * answers models a hang, bounded by the caller's own deadline).
 */
export type Script = (req: ScriptedRequest) => Effect.Effect<ScriptedAnswer, HttpTransportError>

const scriptedResponse = <E>(origin: string, answer: ScriptedAnswer, onError: (e: HttpTransportError) => E): HttpResponse<E> => {
  const encoder = new TextEncoder()
  const parts = (typeof answer.body === "string" ? [answer.body] : (answer.body ?? [])).map((p) => (typeof p === "string" ? encoder.encode(p) : p))
  const all = Buffer.concat(parts)
  const headers = Object.fromEntries(Object.entries(answer.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]))
  return {
    status: answer.status,
    headers,
    stream: Stream.fromIterable(parts),
    text: (limit) =>
      limit !== undefined && all.length > limit
        ? Effect.fail(onError(new HttpTransportError({ origin, failure: { kind: "too-large", limit } })))
        : Effect.succeed(new TextDecoder().decode(all)),
    head: (max) =>
      Effect.sync(() => {
        let n = 0
        const taken: Array<Uint8Array> = []
        for (const p of parts) {
          if (n >= max) break
          taken.push(p)
          n += p.length
        }
        return Buffer.concat(taken)
      })
  }
}

const scriptedClient = (url: string, script: Script): HttpClient => {
  const origin = originOf(url)
  return {
    origin,
    request: <E>(req: HttpRequest, onError: (e: HttpTransportError) => E) =>
      Effect.suspend(() => script({ origin, method: req.method, path: req.path, headers: req.headers, body: req.body })).pipe(
        Effect.mapError(onError),
        Effect.map((answer) => scriptedResponse(origin, answer, onError))
      )
  }
}

export const scriptedTransport = (script: Script): HttpTransportShape => ({
  pool: (url) => ({ ...scriptedClient(url, script), close: Effect.void }),
  shared: (url) => scriptedClient(url, script)
})

// ---------------------------------------------------------------------------------------------

export class HttpTransport extends Context.Reference<HttpTransport>()("vetobench/HttpTransport", {
  defaultValue: (): HttpTransportShape => liveTransport
}) {
  /** undici (also what is used when no layer provides one) */
  static Live: Layer.Layer<HttpTransport> = Layer.succeed(HttpTransport, liveTransport)
  /** every request answered by `script` (tests) */
  static layerScripted = (script: Script): Layer.Layer<HttpTransport> => Layer.succeed(HttpTransport, scriptedTransport(script))
}
