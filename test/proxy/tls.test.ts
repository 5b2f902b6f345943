/**
 * TLS to the upstream: the fake vLLM serves HTTPS with a certificate from a test CA; `verify_tls`
 * decides whether the proxy trusts it (CA bundle path, system store, or no verification).
 */
import { readFileSync, rmSync } from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it, layer } from "@effect/vitest"
import { Effect, Either } from "effect"
import { decodeSettings } from "../../src/config/settings.js"
import { verifyChainText } from "../../src/domain/chain-verify.js"
import { call, Harness, harnessLayer, post } from "../support/harness.js"
import { makeTestPki } from "../support/tls.js"

const pki = makeTestPki()
const tls = { key: pki.key, cert: pki.cert }
afterAll(() => rmSync(pki.dir, { recursive: true, force: true }))

describe("upstream over HTTPS, verify_tls = CA bundle", () => {
  layer(harnessLayer({ fake: { tls }, upstream: { verify_tls: pki.caFile } }), { excludeTestServices: true })((it) => {
    it.effect("chat through the proxy works and is judged (shadow)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        expect(h.fake.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/v1$/)
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const r = yield* post(h, { model: "agent@shadow:slm" }, { run: "tls-ca" })
        expect(r.status, r.text).toBe(200)
        expect(r.json.choices[0]!.message.tool_calls!.map((c) => c.function.name)).toEqual(["delete_file"])
        // the agent and the judge were both reached over TLS
        expect(h.fake.requests.map((q) => (q.body as { model: string }).model)).toEqual(["agent", "judge"])
        const recs = h.records("tls-ca")
        expect(recs).toHaveLength(1)
        expect(recs[0]!.verdict!.status).toBe("ok")
        expect(recs[0]!.verdict!.decision).toBe("deny")
        expect(verifyChainText(readFileSync(h.auditFile("tls-ca"), "utf8"))).toMatchObject({ ok: true, records: 1 })
      }))
  })
})

describe("upstream over HTTPS, verify_tls = true (system store only)", () => {
  layer(harnessLayer({ fake: { tls }, upstream: { verify_tls: true } }), { excludeTestServices: true })((it) => {
    it.effect("502 upstream_unavailable naming TLS verification and verify_tls; nothing recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        for (const model of ["agent@enforce:slm", "agent"]) {
          const r = yield* post(h, { model }, { run: "tls-strict" })
          expect(r.status, r.text).toBe(502)
          expect(r.headers.get("content-type")).toContain("application/json")
          expect(r.json.error!.type).toBe("vetobench_error")
          expect(r.json.error!.code).toBe("upstream_unavailable")
          expect(r.json.error!.message).toContain("TLS verification failed")
          expect(r.json.error!.message).toContain("verify_tls")
          expect(r.json.error!.message).not.toContain("EMPTY")
        }
        // the handshake failed: the fake never saw a request
        expect(h.fake.requests).toEqual([])
        expect(h.records("tls-strict")).toEqual([])
      }))
  })
})

describe("upstream over HTTPS, verify_tls = false", () => {
  layer(harnessLayer({ fake: { tls }, upstream: { verify_tls: false } }), { excludeTestServices: true })((it) => {
    it.effect("chat works without verification", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        const r = yield* post(h, { model: "agent@enforce:slm" }, { run: "tls-off" })
        expect(r.status, r.text).toBe(200)
        expect(r.json.choices[0]!.message.tool_calls!.map((c) => c.function.name)).toEqual(["list_dir"])
        expect(h.records("tls-off")).toHaveLength(1)
      }))
  })
})

describe("verify_tls decoding", () => {
  const decode = (verify_tls: unknown) =>
    decodeSettings(
      { upstreams: [{ name: "cluster", base_url: "https://127.0.0.1:8443/v1", verify_tls }] },
      { file: "tls.yaml", root: pki.dir, env: {} }
    )

  it("a CA bundle path that does not exist is a ConfigError naming the key", () => {
    const missing = path.join(pki.dir, "no-such-ca.pem")
    const r = decode(missing)
    if (Either.isRight(r)) throw new Error("expected a ConfigError")
    expect(r.left._tag).toBe("ConfigError")
    expect(r.left.path).toBe("upstreams[0].verify_tls")
    expect(r.left.message).toContain("upstreams[0].verify_tls")
    expect(r.left.message).toContain(missing)
  })

  it("an existing bundle (relative to the root) and booleans decode", () => {
    const ok = (v: unknown) => {
      const r = decode(v)
      if (Either.isLeft(r)) throw new Error(r.left.message)
      return r.right.upstreams[0]!.verify_tls
    }
    expect(ok("ca.pem")).toBe(pki.caFile)
    expect(ok(true)).toBe(true)
    expect(ok(false)).toBe(false)
  })
})
