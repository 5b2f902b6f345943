/**
 * URL credentials never leave the proxy: an upstream `base_url` or a judge URL with userinfo
 * (`http://user:secretpass@host/v1`) is shown without it in 502 bodies (JSON and stream), in the
 * verdict reasons a refusal quotes, and in the audit records.
 */
import { readFileSync } from "node:fs"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { call, Harness, harnessLayer, post, TEST_JUDGES } from "../support/harness.js"
import { closedPort } from "../support/net.js"

const SECRET = "secretpass"

/** what no output may contain: the password, and the userinfo's `user:` */
const expectNoCredentials = (text: string) => {
  expect(text).not.toContain(SECRET)
  expect(text).not.toContain("user:")
}

describe("upstream base_url with userinfo", () => {
  const harness = Layer.unwrapEffect(
    Effect.map(closedPort, (port) => harnessLayer({ upstream: { base_url: `http://user:${SECRET}@127.0.0.1:${port}/v1` } }))
  )
  layer(harness, { excludeTestServices: true })((it) => {
    it.effect("a 502 names the host but never the credentials (JSON, stream, completions)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        for (const model of ["agent", "agent@enforce:slm"]) {
          for (const stream of [false, true]) {
            const r = yield* post(h, { model, stream }, { run: "redact-up" })
            expect(r.status, r.text).toBe(502)
            expect(r.text).toContain("upstream_unavailable")
            expect(r.text).toContain("127.0.0.1")
            expect(r.text).toContain("http://***@127.0.0.1:")
            expectNoCredentials(r.text)
          }
        }
        const completion = yield* post(h, { model: "judge-small", prompt: "p", messages: undefined, tools: undefined }, { path: "completions" })
        expect(completion.status).toBe(502)
        expect(completion.text).toContain("127.0.0.1")
        expectNoCredentials(completion.text)
      }))
  })
})

describe("judge URLs with userinfo", () => {
  const harness = Layer.unwrapEffect(
    Effect.map(closedPort, (port) =>
      harnessLayer({
        settings: () => ({
          judges: {
            ...TEST_JUDGES,
            cls: { kind: "classifier", endpoint: `http://user:${SECRET}@127.0.0.1:${port}/classify?api_key=k3y-${SECRET}` },
            gate: { kind: "toolgate", url: `http://user:${SECRET}@127.0.0.1:${port}`, mode: "tools", timeout_s: 2 }
          },
          proxy: { fail_policy: "closed" }
        })
      })
    )
  )
  layer(harness, { excludeTestServices: true })((it) => {
    it.effect("an unreachable classifier or toolgate: the refusal and the audit record show the URL without credentials", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        for (const judge of ["cls", "gate"]) {
          h.fake.reset()
          h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
          const run = `redact-${judge}`
          const r = yield* post(h, { model: `agent@enforce:${judge}` }, { run })
          expect(r.status, r.text).toBe(200)
          const content = r.json.choices[0]?.message.content ?? ""
          // failed closed: the refusal quotes the judge's error, which names where it tried
          expect(content).toContain("`list_dir` was blocked")
          expect(content).toContain("http://***@127.0.0.1:")
          expectNoCredentials(r.text)
          const [record] = h.records(run)
          expect(record?.verdict).toMatchObject({ status: "error" })
          expect(record?.verdict?.model).toMatch(/^http:\/\/\*\*\*@127\.0\.0\.1:\d+/)
          expectNoCredentials(readFileSync(h.auditFile(run), "utf8"))
        }
      }))
  })
})
