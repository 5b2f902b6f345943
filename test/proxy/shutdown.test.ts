/** Graceful shutdown: in-flight requests finish within proxy.shutdown_grace_s; stragglers are cut after it. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Scope } from "effect"
import { call, Harness, harnessLayer, post } from "../support/harness.js"

const startHarness = (grace: number) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const ctx = yield* Layer.buildWithScope(harnessLayer({ settings: () => ({ proxy: { shutdown_grace_s: grace } }) }), scope)
    return { scope, h: ctx.unsafeMap.get(Harness.key) as Harness["Type"] }
  })

describe("graceful shutdown", () => {
  it.live("a request in flight when the server stops still gets its answer and its record", () =>
    Effect.gen(function* () {
      const { scope, h } = yield* startHarness(5)
      h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
      h.fake.knobs.delayMs = 400
      h.fake.knobs.delayModels = new Set(["agent"])
      const inflight = yield* Effect.fork(post(h, { model: "agent@baseline" }, { run: "grace" }))
      yield* Effect.sleep("100 millis")
      yield* Scope.close(scope, Exit.void).pipe(Effect.fork)
      const r = yield* Fiber.join(inflight)
      expect(r.status).toBe(200)
      expect(h.records("grace")).toHaveLength(1)
    }))

  it.live("a request still running after the grace period is cut, and shutdown completes", () =>
    Effect.gen(function* () {
      const { scope, h } = yield* startHarness(0.2)
      h.fake.knobs.delayMs = 5000
      h.fake.knobs.delayModels = new Set(["agent"])
      const inflight = yield* Effect.fork(Effect.either(Effect.tryPromise(() => fetch(`${h.url}/models`).then(() => fetch(`${h.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "agent", messages: [] }) })))))
      yield* Effect.sleep("100 millis")
      const started = Date.now()
      yield* Scope.close(scope, Exit.void)
      expect(Date.now() - started).toBeLessThan(4000)
      const r = yield* Fiber.join(inflight)
      expect(r._tag).toBe("Left")
    }))
})
