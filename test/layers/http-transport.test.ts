/**
 * HttpTransport: the live undici transport against real loopback servers (pools, the shared
 * client, bounded reads, streaming, timeouts, abort on interruption, the body released with the
 * scope, TLS with a CA bundle, messages without credentials), the scripted one, and the
 * `Context.Reference` default.
 */
import { readFileSync } from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Either, Exit, Fiber, Stream } from "effect"
import {
  HttpTransport,
  HttpTransportError,
  liveTransport,
  type PoolOptions,
  type ScriptedRequest,
  scriptedTransport
} from "../../layers/HttpTransport.js"
import { closedPort } from "../support/net.js"
import { makeTestPki } from "../support/tls.js"

const OPTIONS: PoolOptions = { connections: 4, keepAliveTimeoutMs: 1000, connectTimeoutMs: 10_000, rejectUnauthorized: true }
const HANG_GUARD = 60_000

/** A loopback server for the scope's lifetime; connections are cut when it closes. */
const serve = (handler: http.RequestListener, tls?: { readonly key: string; readonly cert: string }) =>
  Effect.acquireRelease(
    Effect.async<http.Server | https.Server>((resume) => {
      const server = tls === undefined ? http.createServer(handler) : https.createServer(tls, handler)
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map((server) => `${tls === undefined ? "http" : "https"}://127.0.0.1:${(server.address() as AddressInfo).port}`))

/** A pool closed with the scope. */
const openPool = (origin: string, options: PoolOptions = OPTIONS) =>
  Effect.acquireRelease(Effect.sync(() => liveTransport.pool(origin, options)), (p) => p.close)

const post = (path: string, body = "", timeoutMs = HANG_GUARD) => ({ method: "POST" as const, path, headers: { "content-type": "text/plain" }, body, timeoutMs })

const failureOf = <A>(exit: Exit.Exit<A, HttpTransportError>) => {
  if (Exit.isSuccess(exit)) throw new Error("expected a transport failure")
  const e = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  if (!(e instanceof HttpTransportError)) throw new Error(`expected an HttpTransportError, got ${String(exit.cause)}`)
  return e
}

describe("HttpTransport (live, undici)", () => {
  it.live("a pool sends method, path, headers and body; status, headers and text come back", () =>
    Effect.gen(function* () {
      const seen: Array<{ method: string | undefined; url: string | undefined; auth: string | undefined; body: string }> = []
      const origin = yield* serve((req, res) => {
        let body = ""
        req.on("data", (c: Buffer) => (body += c.toString()))
        req.on("end", () => {
          seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, body })
          res.setHeader("x-one", "1")
          res.setHeader("set-cookie", ["a=1", "b=2"])
          res.statusCode = 201
          res.end(`\uFEFFgot ${body}`)
        })
      })
      const pool = yield* openPool(`${origin}/ignored/path?q=1`)
      expect(pool.origin).toBe(origin)
      const r = yield* pool.request({ ...post("/v1/x?y=2", "hello"), headers: { authorization: "Bearer k" } }, (e) => e)
      expect(r.status).toBe(201)
      expect(r.headers["x-one"]).toBe("1")
      expect(r.headers["set-cookie"]).toEqual(["a=1", "b=2"])
      expect(yield* r.text()).toBe("got hello") // the BOM is dropped
      expect(seen).toEqual([{ method: "POST", url: "/v1/x?y=2", auth: "Bearer k", body: "hello" }])
    }).pipe(Effect.scoped))

  it.live("text(limit): past the limit it fails with too-large; head(max) reads whole chunks up to max; stream yields the parts", () =>
    Effect.gen(function* () {
      const origin = yield* serve((_req, res) => {
        res.write("a".repeat(10))
        setTimeout(() => {
          res.write("b".repeat(10))
          setTimeout(() => res.end("c".repeat(10)), 20)
        }, 20)
      })
      const pool = yield* openPool(origin)
      const limited = yield* Effect.exit(Effect.scoped(Effect.flatMap(pool.request(post("/"), (e) => e), (r) => r.text(15))))
      const e = failureOf(limited)
      expect(e.failure).toEqual({ kind: "too-large", limit: 15 })
      expect(e.message).toBe(`${origin}: the answer is larger than 15 bytes`)
      expect(yield* Effect.scoped(Effect.flatMap(pool.request(post("/"), (e) => e), (r) => r.text(30)))).toBe("a".repeat(10) + "b".repeat(10) + "c".repeat(10))
      // whole chunks: at least the first part (parts that arrive together are one chunk)
      const head = Buffer.from(yield* Effect.scoped(Effect.flatMap(pool.request(post("/"), (e) => e), (r) => r.head(5)))).toString()
      expect(head.startsWith("a".repeat(10))).toBe(true)
      expect("a".repeat(10) + "b".repeat(10) + "c".repeat(10)).toContain(head)
      const parts = yield* Effect.scoped(Effect.flatMap(pool.request(post("/"), (e) => e), (r) => Stream.runCollect(Stream.decodeText(r.stream))))
      expect(Chunk.join(parts, "")).toBe("a".repeat(10) + "b".repeat(10) + "c".repeat(10))
    }).pipe(Effect.scoped))

  it.live("an unread body is released when the scope closes (the server sees the connection go)", () =>
    Effect.gen(function* () {
      const gone = yield* Deferred.make<void>()
      const origin = yield* serve((_req, res) => {
        const timer = setInterval(() => res.write("x".repeat(1024)), 5)
        res.on("close", () => {
          clearInterval(timer)
          Deferred.unsafeDone(gone, Exit.void)
        })
      })
      const pool = yield* openPool(origin)
      const status = yield* Effect.scoped(Effect.map(pool.request(post("/"), (e) => e), (r) => r.status))
      expect(status).toBe(200)
      yield* Deferred.await(gone).pipe(Effect.timeoutFail({ duration: HANG_GUARD, onTimeout: () => new Error("the body was never released") }))
    }).pipe(Effect.scoped))

  it.live("interrupting the wait for headers aborts the request", () =>
    Effect.gen(function* () {
      const arrived = yield* Deferred.make<void>()
      const aborted = yield* Deferred.make<void>()
      const origin = yield* serve((req, res) => {
        Deferred.unsafeDone(arrived, Exit.void)
        res.on("close", () => Deferred.unsafeDone(aborted, Exit.void))
        void req // never answered
      })
      const pool = yield* openPool(origin)
      const fiber = yield* Effect.fork(Effect.scoped(pool.request(post("/"), (e) => e)))
      yield* Deferred.await(arrived)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(aborted).pipe(Effect.timeoutFail({ duration: HANG_GUARD, onTimeout: () => new Error("the request was never aborted") }))
    }).pipe(Effect.scoped))

  it.live("timeoutMs bounds the wait for headers: a timeout failure, mapped by onError", () =>
    Effect.gen(function* () {
      const origin = yield* serve(() => {})
      const pool = yield* openPool(origin)
      const r = yield* Effect.either(Effect.scoped(pool.request(post("/", "", 100), (e) => ({ mapped: e.failure.kind }))))
      expect(r).toEqual(Either.left({ mapped: "timeout" }))
    }).pipe(Effect.scoped))

  it.live("a refused connection is an `other` failure whose message names the origin only (no userinfo, path or query)", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const pool = yield* openPool(`http://user:s3cret@127.0.0.1:${port}/v1?api_key=k3y`)
      const e = failureOf(yield* Effect.exit(Effect.scoped(pool.request(post("/v1/chat"), (e) => e))))
      expect(e.failure).toMatchObject({ kind: "other", code: "ECONNREFUSED" })
      expect(e.message).toContain(`http://127.0.0.1:${port}: ECONNREFUSED`)
      expect(e.message).not.toMatch(/s3cret|k3y|user/)
    }).pipe(Effect.scoped))

  it.live("TLS: a CA bundle is trusted alone; without it the failure says which certificate problem", () =>
    Effect.gen(function* () {
      const pki = makeTestPki()
      const origin = yield* serve((_req, res) => res.end("secure"), pki)
      const trusted = yield* openPool(origin, { ...OPTIONS, ca: readFileSync(pki.caFile) })
      expect(yield* Effect.scoped(Effect.flatMap(trusted.request(post("/"), (e) => e), (r) => r.text()))).toBe("secure")
      const untrusted = yield* openPool(origin)
      const e = failureOf(yield* Effect.exit(Effect.scoped(untrusted.request(post("/"), (e) => e))))
      expect(e.failure).toMatchObject({ kind: "tls", untrustedCa: true })
      const unchecked = yield* openPool(origin, { ...OPTIONS, rejectUnauthorized: false })
      expect(yield* Effect.scoped(Effect.map(unchecked.request(post("/"), (e) => e), (r) => r.status))).toBe(200)
    }).pipe(Effect.scoped))

  it.live("the shared client reaches an origin through the process-wide dispatcher", () =>
    Effect.gen(function* () {
      const origin = yield* serve((req, res) => res.end(`${req.method} ${req.url}`))
      const client = liveTransport.shared(`${origin}/anything`)
      expect(client.origin).toBe(origin)
      const text = yield* Effect.scoped(Effect.flatMap(client.request({ method: "GET", path: "/classify?v=1", headers: {}, timeoutMs: HANG_GUARD }, (e) => e), (r) => r.text()))
      expect(text).toBe("GET /classify?v=1")
    }).pipe(Effect.scoped))
})

describe("HttpTransport (scripted)", () => {
  it.effect("every request goes to the script; answers read like live ones; a failure is mapped by onError", () =>
    Effect.gen(function* () {
      const seen: Array<ScriptedRequest> = []
      const t = scriptedTransport((req) =>
        req.path === "/down"
          ? Effect.fail(new HttpTransportError({ origin: req.origin, failure: { kind: "timeout" } }))
          : Effect.sync(() => (seen.push(req), { status: 200, headers: { "Content-Type": "text/plain" }, body: ["ab", "cd", "ef"] }))
      )
      const pool = t.pool("http://user:pw@model.test:8000/v1", OPTIONS)
      const r = yield* pool.request({ ...post("/v1/x", "hi"), headers: { a: "1" } }, (e) => e)
      expect(r.headers).toEqual({ "content-type": "text/plain" })
      expect(yield* r.text()).toBe("abcdef")
      expect(Buffer.from(yield* r.head(3)).toString()).toBe("abcd")
      expect(Chunk.toArray(yield* Stream.runCollect(Stream.decodeText(r.stream)))).toEqual(["ab", "cd", "ef"])
      expect(yield* Effect.either(r.text(5))).toEqual(Either.left(new HttpTransportError({ origin: "http://model.test:8000", failure: { kind: "too-large", limit: 5 } })))
      expect(seen).toEqual([{ origin: "http://model.test:8000", method: "POST", path: "/v1/x", headers: { a: "1" }, body: "hi" }])
      const down = yield* Effect.either(t.shared("http://guard.test").request(post("/down"), (e) => `mapped ${e.failure.kind}`))
      expect(down).toEqual(Either.left("mapped timeout"))
    }).pipe(Effect.scoped))

  it.effect("HttpTransport is undici unless a layer provides another", () =>
    Effect.gen(function* () {
      expect(yield* HttpTransport).toBe(liveTransport)
      const scripted = yield* Effect.provide(HttpTransport, HttpTransport.layerScripted(() => Effect.succeed({ status: 204 })))
      expect(scripted).not.toBe(liveTransport)
      const r = yield* Effect.scoped(scripted.shared("http://x.test").request(post("/"), (e) => e))
      expect(r.status).toBe(204)
      expect(yield* Effect.provide(HttpTransport, HttpTransport.Live)).toBe(liveTransport)
    }))
})
