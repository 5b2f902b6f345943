/**
 * A call whose audit record cannot be written is never released (Gate.ts header, architecture 6):
 * non-streaming the proxy answers 503 `audit_write_failed`; streaming it sends an SSE error event
 * and none of the held tool-call deltas.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { auditFileName } from "../../src/domain/run-id.js"
import { AuditSink, AuditWriteError } from "../../layers/AuditSink.js"
import { call, Harness, harnessLayer, post } from "../support/harness.js"
import { postStream } from "../support/sse.js"

/** a sink whose every append fails, as a full disk would */
const failingAudit = Layer.succeed(AuditSink, {
  append: (runId) => Effect.fail(new AuditWriteError({ file: `failing:${auditFileName(runId)}`, reason: "write failed: ENOSPC (test)" })),
  fileFor: (runId) => `failing:${auditFileName(runId)}`,
  checkpoint: () => Effect.void
})

describe("veto-proxy with a failing audit sink", () => {
  layer(harnessLayer({ audit: failingAudit }), { excludeTestServices: true })((it) => {
    it.effect("non-streaming: 503 audit_write_failed and the call is not released", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp/audit-failure" })]
        const r = yield* post(h, { model: "agent@enforce:allow-all" }, { run: "af-json" })
        expect(r.status).toBe(503)
        expect(r.headers.get("content-type")).toMatch(/^application\/json/)
        expect(r.json.error).toMatchObject({ code: "audit_write_failed", type: "vetobench_error" })
        expect(r.json.error!.message).toContain("call not released")
        expect(r.json.choices).toBeUndefined()
        expect(r.text).not.toContain("list_dir")
        expect(r.text).not.toContain("call_0")
      }))

    it.effect("non-streaming without tool calls is unaffected (nothing to record)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = []
        const r = yield* post(h, { model: "agent@enforce:allow-all" }, { run: "af-text" })
        expect(r.status).toBe(200)
        expect(r.json.choices[0]!.message.tool_calls ?? []).toEqual([])
      }))

    it.effect("streaming: an error event is sent and no tool-call delta reaches the client", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp/audit-failure" })]
        const s = yield* postStream(h, { model: "agent@enforce:allow-all" }, { run: "af-sse" })
        expect(s.status).toBe(200)
        expect(s.contentType).toMatch(/^text\/event-stream/)
        const errors = s.chunks.filter((c) => c.error !== undefined)
        expect(errors).toHaveLength(1)
        expect(errors[0]!.error).toMatchObject({ code: "audit_write_failed", type: "vetobench_error" })
        expect(s.chunks[s.chunks.length - 1]).toBe(errors[0])
        expect(s.chunks.some((c) => (c.choices ?? []).some((ch) => (ch.delta?.tool_calls ?? []).length > 0))).toBe(false)
        expect(s.text).not.toContain("list_dir")
        expect(s.text).not.toContain("call_0")
        expect(s.done).toBe(false)
        expect(s.blocked).toBeNull()
      }))
  })
})
