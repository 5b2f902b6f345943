/** Graceful shutdown: in-flight requests finish within proxy.shutdown_grace_s; stragglers are cut after it. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Schedule, Scope } from "effect"
import { call, Harness, harnessLayer, type HarnessOptions, post, proxyRequest } from "../support/harness.js"
import { readUntilHeld, startSilentUpstream } from "./silent-upstream.js"

const startHarness = (grace: number, opts: HarnessOptions = {}) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const ctx = yield* Layer.buildWithScope(harnessLayer({ settings: () => ({ proxy: { shutdown_grace_s: grace } }), ...opts }), scope)
    return { scope, h: ctx.unsafeMap.get(Harness.key) as Harness["Type"] }
  })

/** resumes once the fake vLLM received a request for `model` */
const upstreamGot = (h: Harness["Type"], model: string) =>
  Effect.sync(() => h.fake.requests.some((r) => (r.body as { model?: string } | null)?.model === model)).pipe(
    Effect.filterOrFail((b) => b, () => "not yet"),
    Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("100 seconds"))),
    Effect.orDie
  )

const silentUpstream = Effect.acquireRelease(
  Effect.promise(() => startSilentUpstream()),
  (u) => Effect.promise(() => u.close())
)

describe("graceful shutdown", () => {
  it.live("a request in flight when the server stops still gets its answer and its record", () =>
    Effect.gen(function* () {
      const { scope, h } = yield* startHarness(5)
      h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
      h.fake.knobs.delayMs = 400
      h.fake.knobs.delayModels = new Set(["agent"])
      const inflight = yield* Effect.fork(post(h, { model: "agent@baseline" }, { run: "grace" }))
      // in flight: the proxy has forwarded it (an idle connection would be closed at once)
      yield* upstreamGot(h, "agent")
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

  for (const path of ["chat/completions", "chat/completions/"]) {
    it.live(`a stream cut at the end of the grace period (${path}): its held call is still recorded before the proxy is gone`, () =>
      Effect.scoped(
        Effect.gen(function* () {
          const upstream = yield* silentUpstream
          const { scope, h } = yield* startHarness(0.2, {
            upstream: { base_url: upstream.url, timeout_s: 300 },
            settings: () => ({ proxy: { shutdown_grace_s: 0.2 }, judges: { "allow-all": { kind: "static", decision: "allow" } } })
          })
          const run = `cut-at-shutdown-${path.length}`
          const reading = yield* Effect.promise(() => readUntilHeld(`${h.url}/${path}`, { "x-vetobench-run": run }))
          expect(reading.text).not.toContain("delete_file")
          // the stream is open and the call held: the server stops, cuts it after the grace period
          yield* Scope.close(scope, Exit.void)
          yield* Effect.promise(() => reading.reader.cancel().catch(() => undefined))
          // no waiting here: once the proxy's layers are released, the record is written or lost
          expect(h.records(run).map((r) => [r.tool.name, r.stream])).toEqual([["delete_file", true]])
        })
      ))
  }

  for (const stream of [false, true]) {
    it.live(`a call a model judge is still ruling when the grace period ends (${stream ? "streamed" : "JSON"}) is recorded before the proxy is gone`, () =>
      Effect.gen(function* () {
        const { scope, h } = yield* startHarness(0.2)
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        // the judge model answers after the grace period (a hang guard is the judge deadline, 60 s)
        h.fake.knobs.delayMs = 1500
        h.fake.knobs.delayModels = new Set(["judge"])
        const run = `judging-at-shutdown-${stream}`
        yield* Effect.fork(Effect.either(Effect.tryPromise(() => fetch(...proxyRequest(h, { model: "agent@enforce:slm", stream }, { run })).then((r) => r.text()))))
        yield* upstreamGot(h, "judge")
        yield* Scope.close(scope, Exit.void)
        // no waiting here: once the proxy's layers are released, the record is written or lost
        expect(h.records(run).map((r) => [r.tool.name, r.stream])).toEqual([["list_dir", stream]])
      }))
  }
})
