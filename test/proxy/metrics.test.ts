/**
 * `GET /metrics` as an operator meets it: a scrape after traffic through a real proxy shows the
 * requests, the tool calls by judge and effective decision, judge durations (cached verdicts left
 * out), judge errors by status, holds pending, audit appends and failures, and upstream durations,
 * each with its labels; `proxy.metrics: false` is a 404; `proxy.metrics_token` guards it; two
 * proxies in one process keep separate registries.
 */
import { describe, expect, layer, it as plain } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Redacted } from "effect"
import { register as globalRegistry } from "prom-client"
import { auditFileName } from "../../src/domain/run-id.js"
import { AuditSink, AuditWriteError } from "../../layers/AuditSink.js"
import { call, Harness, type HarnessShape, harnessLayer, post, TEST_JUDGES } from "../support/harness.js"
import { scrape } from "../support/prometheus.js"
import { postStream } from "../support/sse.js"

const TOKEN = "op-token-for-metrics"
const baseOf = (h: HarnessShape) => h.url.replace(/\/v1$/, "")
const judges = { ...TEST_JUDGES, "deny-all": { kind: "static", decision: "deny" }, "hold-all": { kind: "static", decision: "hold" } }

const api = (h: HarnessShape, method: "GET" | "POST", path: string, body?: unknown) =>
  Effect.promise(async () => {
    const res = await fetch(`${h.url}${path}`, {
      method,
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {})
    })
    return (await res.json()) as { data?: Array<{ id: string }> }
  })

describe("GET /metrics after traffic", () => {
  layer(
    harnessLayer({
      settings: () => ({ judges, proxy: { hold_policy: "wait", hold_timeout_s: 5, operator_token: Redacted.make(TOKEN), judge_timeout_s: 0.4 } })
    }),
    { excludeTestServices: true }
  )((it) => {
    it.effect("counts requests, tool calls by judge and decision, judge durations and errors, upstream durations", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const before = yield* scrape(baseOf(h))
        expect(before.status).toBe(200)
        expect(before.contentType).toMatch(/^text\/plain; version=0\.0\.4/)

        // enforce, deny judge: the call is withheld
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/srv/metrics-deny" })]
        expect((yield* post(h, { model: "agent@enforce:deny-all" }, { run: "m-deny" })).headers.get("x-vetobench-blocked")).toBe("1")
        // shadow, deny judge, streamed: ruled and recorded, released
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/srv/metrics-shadow" })]
        expect((yield* postStream(h, { model: "agent@shadow:deny-all" }, { run: "m-shadow" })).status).toBe(200)
        // an LLM judge twice on the same call: the second verdict comes from the cache
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/srv/metrics-cached" })]
        yield* post(h, { model: "agent@enforce:slm" }, { run: "m-cache" })
        yield* post(h, { model: "agent@enforce:slm" }, { run: "m-cache" })
        // the judge's model fails: verdict status error, fail closed
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/srv/metrics-error" })]
        h.fake.knobs.failStatus = 500
        h.fake.knobs.failModels = new Set(["judge"])
        expect((yield* post(h, { model: "agent@enforce:slm" }, { run: "m-error" })).headers.get("x-vetobench-blocked")).toBe("1")
        // the judge's model is slower than judge_timeout_s: verdict status timeout
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/srv/metrics-timeout" })]
        h.fake.knobs.delayMs = 1500
        h.fake.knobs.delayModels = new Set(["judge"])
        expect((yield* post(h, { model: "agent@enforce:slm" }, { run: "m-timeout" })).headers.get("x-vetobench-blocked")).toBe("1")
        // the agent's upstream answers 503: relayed, and counted under that status
        h.fake.reset()
        h.fake.knobs.failStatus = 503
        h.fake.knobs.failModels = new Set(["agent"])
        expect((yield* post(h, { model: "agent@enforce:deny-all" }, { run: "m-503" })).status).toBe(503)
        h.fake.reset()

        const after = yield* scrape(baseOf(h))
        const delta = (name: string, labels: Record<string, string> = {}) => after.value(name, labels) - before.value(name, labels)

        const chat = { route: "/v1/chat/completions" }
        expect(delta("vetobench_requests_total", { ...chat, arm: "enforce", status: "200" })).toBe(5)
        expect(delta("vetobench_requests_total", { ...chat, arm: "shadow", status: "200" })).toBe(1)
        expect(delta("vetobench_requests_total", { ...chat, arm: "enforce", status: "503" })).toBe(1)
        // the first scrape was counted when it was answered
        expect(delta("vetobench_requests_total", { route: "/metrics", arm: "none", status: "200" })).toBe(1)

        expect(delta("vetobench_tool_calls_total", { arm: "enforce", judge: "deny-all", decision: "deny", blocked: "true" })).toBe(1)
        expect(delta("vetobench_tool_calls_total", { arm: "shadow", judge: "deny-all", decision: "deny", blocked: "false" })).toBe(1)
        expect(delta("vetobench_tool_calls_total", { arm: "enforce", judge: "slm" })).toBe(4)
        // error and timeout verdicts are denied under fail_policy closed
        expect(delta("vetobench_tool_calls_total", { arm: "enforce", judge: "slm", decision: "deny", blocked: "true" })).toBeGreaterThanOrEqual(2)

        // judge durations: one per ruling that ran (the cached one is left out; the timeout is an error, not a duration)
        expect(delta("vetobench_judge_duration_seconds_count", { judge: "deny-all" })).toBe(2)
        expect(delta("vetobench_judge_duration_seconds_count", { judge: "slm" })).toBe(2)
        expect(delta("vetobench_judge_duration_seconds_bucket", { judge: "slm", le: "+Inf" })).toBe(2)
        expect(delta("vetobench_judge_duration_seconds_sum", { judge: "slm" })).toBeGreaterThan(0)
        expect(delta("vetobench_judge_errors_total", { judge: "slm", status: "error" })).toBe(1)
        expect(delta("vetobench_judge_errors_total", { judge: "slm", status: "timeout" })).toBe(1)
        expect(delta("vetobench_judge_errors_total", { judge: "deny-all" })).toBe(0)

        // one record per proposed call; nothing failed
        expect(delta("vetobench_audit_appends_total")).toBe(6)
        expect(delta("vetobench_audit_append_failures_total")).toBe(0)

        // the client requests' upstream calls (the judges' own calls are not in it)
        expect(delta("vetobench_upstream_duration_seconds_count", { upstream: "cluster", status: "200" })).toBe(6)
        expect(delta("vetobench_upstream_duration_seconds_count", { upstream: "cluster", status: "503" })).toBe(1)
        expect(delta("vetobench_upstream_duration_seconds_bucket", { upstream: "cluster", status: "200", le: "+Inf" })).toBe(6)

        // counts and names only: no argument, message text or credential
        for (const secret of ["/srv/metrics", "clean up", TOKEN, "delete_file"]) expect(after.text).not.toContain(secret)
        // every series is documented
        for (const name of ["requests_total", "tool_calls_total", "judge_duration_seconds", "judge_errors_total", "holds_pending", "audit_appends_total", "audit_append_failures_total", "upstream_duration_seconds"]) {
          expect(after.text).toContain(`# HELP vetobench_${name} `)
        }
      }))

    it.effect("holds pending is a gauge: 1 while a held call waits for a person, 0 once decided", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/srv/metrics-hold" })]
        const before = yield* scrape(baseOf(h))
        expect(before.value("vetobench_holds_pending")).toBe(0)
        const req = yield* Effect.fork(post(h, { model: "agent@enforce:hold-all" }, { run: "m-hold" }))
        let pending = 0
        for (let i = 0; i < 100 && pending === 0; i++) {
          yield* Effect.sleep("20 millis")
          pending = (yield* scrape(baseOf(h))).value("vetobench_holds_pending")
        }
        expect(pending).toBe(1)
        const [held] = (yield* api(h, "GET", "/holds")).data ?? []
        yield* api(h, "POST", `/holds/${held!.id}`, { approved: true, approver: "alice" })
        expect((yield* Fiber.join(req)).headers.get("x-vetobench-blocked")).toBe("0")
        const after = yield* scrape(baseOf(h))
        expect(after.value("vetobench_holds_pending")).toBe(0)
        expect(after.value("vetobench_tool_calls_total", { arm: "enforce", judge: "hold-all", decision: "hold", blocked: "false" }) -
          before.value("vetobench_tool_calls_total", { arm: "enforce", judge: "hold-all", decision: "hold", blocked: "false" })).toBe(1)
        // the call record and the approval record
        expect(after.value("vetobench_audit_appends_total") - before.value("vetobench_audit_appends_total")).toBe(2)
      }))
  })
})

/** a sink whose every append fails, as a full disk would */
const failingAudit = Layer.succeed(AuditSink, {
  append: (runId) => Effect.fail(new AuditWriteError({ file: `failing:${auditFileName(runId)}`, reason: "write failed: ENOSPC (test)" })),
  fileFor: (runId) => `failing:${auditFileName(runId)}`,
  checkpoint: () => Effect.void
})

describe("GET /metrics with a failing audit sink", () => {
  layer(harnessLayer({ audit: failingAudit }), { excludeTestServices: true })((it) => {
    it.effect("counts the failed append and the 503", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/srv/metrics-enospc" })]
        expect((yield* post(h, { model: "agent@enforce:allow-all" }, { run: "m-fail" })).status).toBe(503)
        const s = yield* scrape(baseOf(h))
        expect(s.value("vetobench_audit_append_failures_total")).toBe(1)
        expect(s.value("vetobench_audit_appends_total")).toBe(0)
        expect(s.value("vetobench_requests_total", { route: "/v1/chat/completions", arm: "enforce", status: "503" })).toBe(1)
      }))
  })
})

describe("proxy.metrics: false", () => {
  layer(harnessLayer({ settings: () => ({ proxy: { metrics: false } }) }), { excludeTestServices: true })((it) => {
    it.effect("GET /metrics is a 404 (the proxy's JSON error); the proxy serves as before", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/srv/metrics-off" })]
        expect((yield* post(h, { model: "agent@enforce:allow-all" }, { run: "m-off" })).status).toBe(200)
        const s = yield* scrape(baseOf(h))
        expect(s.status).toBe(404)
        expect(JSON.parse(s.text)).toMatchObject({ error: { code: "not_found", type: "vetobench_error" } })
      }))
  })
})

describe("proxy.metrics_token", () => {
  layer(harnessLayer({ settings: () => ({ proxy: { metrics_token: Redacted.make(TOKEN) } }) }), { excludeTestServices: true })((it) => {
    it.effect("without the bearer token: 401; with it: the exposition", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const none = yield* scrape(baseOf(h))
        expect(none.status).toBe(401)
        expect(JSON.parse(none.text)).toMatchObject({ error: { code: "unauthorized" } })
        expect((yield* scrape(baseOf(h), { authorization: "Bearer wrong" })).status).toBe(401)
        const ok = yield* scrape(baseOf(h), { authorization: `Bearer ${TOKEN}` })
        expect(ok.status).toBe(200)
        expect(ok.value("vetobench_requests_total", { route: "/metrics", status: "401" })).toBe(2)
      }))
  })
})

describe("two proxies in one process", () => {
  plain.live("keep separate registries, neither in prom-client's global one", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const a = Context.get(yield* Layer.build(harnessLayer()), Harness)
        const b = Context.get(yield* Layer.build(harnessLayer()), Harness)
        a.fake.knobs.nextCalls = [call("list_dir", { path: "/srv/metrics-a" })]
        yield* post(a, { model: "agent@enforce:allow-all" }, { run: "m-a" })
        const chat = { route: "/v1/chat/completions" }
        expect((yield* scrape(baseOf(a))).value("vetobench_requests_total", chat)).toBe(1)
        expect((yield* scrape(baseOf(b))).value("vetobench_requests_total", chat)).toBe(0)
        expect(yield* Effect.promise(() => globalRegistry.metrics())).not.toContain("vetobench_")
      })
    ))
})
