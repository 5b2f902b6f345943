/**
 * `x-vetobench-attempt` (src/domain/attempt.ts): a runner's attempt number is recorded on every call
 * of the request; a value the gate cannot read is refused with a 400 naming the header (in the
 * route's own error shape), never silently dropped (counts take each episode's final attempt).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, Harness, harnessLayer, post } from "../support/harness.js"

describe("x-vetobench-attempt", () => {
  layer(harnessLayer(), { excludeTestServices: true })((it) => {
    it.effect("a valid number is recorded on the call", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp/attempt" })]
        const res = yield* post(h, { model: "agent@shadow:allow-all" }, { run: "attempt-ok", headers: { "x-vetobench-attempt": "3" } })
        expect(res.status).toBe(200)
        expect(h.records("attempt-ok").map((r) => [r.tool.name, r.attempt])).toEqual([["list_dir", 3]])
      }))

    it.effect("a value that is not a positive integer is a 400 naming the header, on every route", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        for (const bad of ["0", "-1", "2.5", "x", "1234567890"]) {
          const res = yield* post(h, { model: "agent@shadow:allow-all" }, { run: "attempt-bad", headers: { "x-vetobench-attempt": bad } })
          expect(res.status).toBe(400)
          expect(res.json.error?.code).toBe("invalid_request")
          expect(res.json.error?.message).toContain("x-vetobench-attempt")
        }
        const messages = yield* Effect.promise(() =>
          fetch(`${h.url}/messages`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-vetobench-attempt": "none" },
            body: JSON.stringify({ model: "agent@shadow:allow-all", max_tokens: 16, messages: [{ role: "user", content: "x" }] })
          }).then(async (r) => ({ status: r.status, body: (await r.json()) as { type: string; error: { type: string; message: string } } }))
        )
        expect(messages.status).toBe(400)
        expect(messages.body.type).toBe("error")
        expect(messages.body.error.type).toBe("invalid_request_error")
        expect(messages.body.error.message).toContain("x-vetobench-attempt")
        expect(h.records("attempt-bad")).toEqual([])
      }))
  })
})
