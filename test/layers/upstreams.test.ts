/** Upstream selection: aliases (one lookup), first upstream listing the model, catch-all, no route; URL credentials never shown. */
import * as http from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Redacted } from "effect"
import * as Upstreams from "../../layers/Upstreams.js"
import { defaultSettings, makeUpstreamSettings } from "../../src/config/settings.js"
import { closedPort } from "../support/net.js"

const settings = defaultSettings("/tmp", {
  upstreams: [
    makeUpstreamSettings({ name: "a", base_url: "http://127.0.0.1:1/v1", models: ["m1", "shared"] }),
    makeUpstreamSettings({ name: "b", base_url: "http://127.0.0.1:2/v1", models: ["shared", "m2"] }),
    makeUpstreamSettings({ name: "any", base_url: "http://127.0.0.1:3/v1" }),
    makeUpstreamSettings({ name: "any2", base_url: "http://127.0.0.1:4/v1" })
  ],
  aliases: { alias: "m2", chained: "alias" },
  model_defaults: { m2: { temperature: 0.1 } }
})

const pick = (f: (u: Upstreams.UpstreamsShape) => Either.Either<Upstreams.Target, Upstreams.NoRoute>) =>
  Effect.scoped(Effect.map(Upstreams.make(settings), (u) => Either.map(f(u), (t) => [t.upstream.name, t.model, t.defaults])))

describe("Upstreams routing", () => {
  it.effect("first upstream listing the model wins; aliases resolve once; defaults follow the served name", () =>
    Effect.gen(function* () {
      expect(yield* pick((u) => u.resolve("shared"))).toEqual(Either.right(["a", "shared", undefined]))
      expect(yield* pick((u) => u.resolve("alias"))).toEqual(Either.right(["b", "m2", { temperature: 0.1 }]))
      // no chaining: `chained` → `alias`, which no upstream lists → the first catch-all
      expect(yield* pick((u) => u.resolve("chained"))).toEqual(Either.right(["any", "alias", undefined]))
      // judges use literal names: no alias applied
      expect(yield* pick((u) => u.target("alias"))).toEqual(Either.right(["any", "alias", undefined]))
    }))

  it.effect("without a catch-all an unknown model has no route", () =>
    Effect.gen(function* () {
      const only = defaultSettings("/tmp", { upstreams: [makeUpstreamSettings({ name: "a", base_url: "http://127.0.0.1:1/v1", models: ["m1"] })] })
      const r = yield* Effect.scoped(Effect.map(Upstreams.make(only), (u) => u.resolve("ghost")))
      expect(Either.isLeft(r)).toBe(true)
      expect(Either.getLeft(r).pipe((o) => (o._tag === "Some" ? o.value.message : ""))).toContain("no upstream serves model 'ghost'")
    }))

  it.effect("the served list is the sorted union of models and alias names", () =>
    Effect.gen(function* () {
      const served = yield* Effect.scoped(Effect.map(Upstreams.make(settings), (u) => u.served))
      expect(served).toEqual(["alias", "chained", "m1", "m2", "shared"])
    }))
})

describe("Upstreams never show URL credentials", () => {
  const SECRET = "secretpass"
  const withCreds = (base_url: string) => makeUpstreamSettings({ name: "c", base_url, models: ["m"], api_key: Redacted.make("sk-key") })
  const tlsError = Object.assign(new Error("self-signed certificate in certificate chain"), { code: "SELF_SIGNED_CERT_IN_CHAIN" })
  const timeoutError = Object.assign(new Error("Connect Timeout Error"), { code: "UND_ERR_CONNECT_TIMEOUT" })
  // what undici's fetch says for such a URL: the message quotes it, credentials and all
  const quoting = new TypeError(`Request cannot be constructed from a URL that includes credentials: http://user:${SECRET}@10.0.0.5:8000/v1/x`)

  it("transport error messages show the base_url as https://***@host/… (TLS, connect timeout, other)", () => {
    const u = withCreds(`https://user:${SECRET}@10.0.0.5:8000/v1?api_key=k3y-${SECRET}`)
    for (const e of [tlsError, timeoutError, quoting, Object.assign(new Error("connect ECONNREFUSED 10.0.0.5:8000"), { code: "ECONNREFUSED" })]) {
      const message = Upstreams.transportError(u, e, 5).message
      expect(message).toContain("https://***@10.0.0.5:8000/v1?api_key=***")
      expect(message).not.toContain(SECRET)
      expect(message).not.toContain("user:")
    }
  })

  it("a password with a percent-encoded @ or : (raw or decoded) is not shown either", () => {
    const u = withCreds("http://us%40er:p%40ss%3Aw0rd@10.0.0.5/v1")
    const echo = new Error("auth failed for us@er with p@ss:w0rd (http://us%40er:p%40ss%3Aw0rd@10.0.0.5/v1)")
    const message = Upstreams.transportError(u, echo, 5).message
    expect(message).not.toMatch(/p@ss:w0rd|p%40ss%3Aw0rd/)
    expect(message).toContain("http://***@10.0.0.5/v1")
  })

  it("upstream answers quoted in messages are redacted too", () => {
    expect(new Upstreams.UpstreamStatus({ upstream: "c", status: 401, body: `bad key for http://user:${SECRET}@h/v1` }).message).toBe(
      "upstream returned HTTP 401: bad key for http://***@h/v1"
    )
    expect(new Upstreams.UpstreamUnavailable({ upstream: "c", reason: `answer is not JSON: see https://h/v1?token=${SECRET}` }).message).toBe(
      "upstream 'c' unavailable: answer is not JSON: see https://h/v1?token=***"
    )
  })

  it.effect("listModels of an unreachable upstream: the error names the host, not the credentials", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const s = defaultSettings("/tmp", { upstreams: [withCreds(`http://user:${SECRET}@127.0.0.1:${port}/v1`)] })
      const listing = yield* Effect.scoped(Effect.flatMap(Upstreams.make(s), (u) => u.listModels))
      expect(listing.c).toEqual(expect.stringContaining(`http://***@127.0.0.1:${port}/v1`))
      expect(listing.c).not.toContain(SECRET)
    }))

  it.effect("userinfo is not sent: undici connects to the URL's origin, with the upstream's api_key as Bearer and no Basic auth", () =>
    Effect.gen(function* () {
      const seen: Array<{ url: string | undefined; authorization: string | undefined }> = []
      const server = http.createServer((req, res) => {
        seen.push({ url: req.url, authorization: req.headers.authorization })
        res.setHeader("content-type", "application/json")
        res.end(JSON.stringify({ object: "list", data: [{ id: "m" }], choices: [{ index: 0, message: { role: "assistant", content: "ok" } }] }))
      })
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => {
          server.listen(0, "127.0.0.1", () => resume(Effect.void))
        }),
        () =>
          Effect.async<void>((resume) => {
            server.close(() => resume(Effect.void))
          })
      )
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      const s = defaultSettings("/tmp", { upstreams: [withCreds(`http://user:${SECRET}@127.0.0.1:${port}/v1`)] })
      const ups = yield* Upstreams.make(s)
      expect(yield* ups.listModels).toEqual({ c: ["m"] })
      yield* ups.chat("m", { messages: [] })
      expect(seen).toEqual([
        { url: "/v1/models", authorization: "Bearer sk-key" },
        { url: "/v1/chat/completions", authorization: "Bearer sk-key" }
      ])
    }).pipe(Effect.scoped))
})
