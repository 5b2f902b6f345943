/**
 * Streaming through veto-proxy (architecture decisions 1 and 3): reassembled streams equal the
 * non-streaming answer, text passes through live, held tool calls are ruled and then emitted (or
 * replaced by the refusal), rulings are identical with and without streaming, upstream errors
 * stay JSON, and the usage chunk survives the gate.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { CallRecord as AuditRecord } from "../../src/domain/audit-record.js"
import { call, Harness, type HarnessShape, harnessLayer, post } from "../support/harness.js"
import { assemble, type Chunk, messageView, postStream, streamView } from "../support/sse.js"

const ARMS = ["agent", "agent@baseline", "agent@shadow:slm", "agent@enforce:slm"] as const

/** a record without the fields that legitimately differ between two requests */
const ruling = (r: AuditRecord): Record<string, unknown> => {
  const {
    seq: _seq,
    ts: _ts,
    prev_hash: _prev,
    hash: _hash,
    request_id: _rid,
    run_id: _run,
    stream: _stream,
    gate_ms: _gate,
    verdict,
    layers,
    ...rest
  } = r
  const v = (x: NonNullable<AuditRecord["verdict"]>) => {
    const { latency_ms: _l, cached: _c, usage: _u, ...kept } = x
    return kept
  }
  return { ...rest, verdict: verdict === null ? null : v(verdict), layers: layers.map(v) }
}

const agentRequests = (h: HarnessShape) =>
  h.fake.requests.filter((r) => (r.body as { model?: string } | null)?.model === "agent")

describe("veto-proxy streaming (architecture 1)", () => {
  layer(harnessLayer(), { excludeTestServices: true })((it) => {
    for (const model of ARMS) {
      it.effect(`${model}: the reassembled stream equals the non-streaming answer`, () =>
        Effect.gen(function* () {
          const h = yield* Harness
          h.fake.reset()
          h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp/streaming-equality" })]
          const run = `eq-${model.replace(/[@:]/g, "-")}`
          const json = yield* post(h, { model }, { run })
          expect(json.status).toBe(200)
          const s = yield* postStream(h, { model }, { run })
          expect(s.status).toBe(200)
          expect(s.contentType).toMatch(/^text\/event-stream/)
          expect(s.done).toBe(true)
          const a = assemble(s.chunks)
          expect(a.role).toBe("assistant")
          expect(streamView(a)).toEqual(messageView(json.json.choices[0]!))
          expect(streamView(a)).toEqual({
            content: "",
            tool_calls: [{ id: "call_0", name: "list_dir", arguments: '{"path": "/tmp/streaming-equality"}' }],
            finish_reason: "tool_calls"
          })
          expect(a.tool_calls[0]!.type).toBe("function")
          // the request really went upstream as a stream
          expect(agentRequests(h).map((q) => (q.body as { stream?: boolean }).stream)).toEqual([undefined, true])
          if (model === "agent") {
            // the fake splits the arguments: the raw stream carries several tool-call deltas
            expect(a.toolCallChunks).toBeGreaterThanOrEqual(2)
            expect(s.blocked).toBeNull()
            expect(h.records(run)).toEqual([])
          } else {
            // logged arms hold the deltas and emit the ruled call at once
            expect(a.toolCallChunks).toBe(1)
            expect(s.blocked).toBe(0)
            const recs = h.records(run)
            expect(recs.map((r) => r.stream)).toEqual([false, true])
            expect(recs.map((r) => r.tool.name)).toEqual(["list_dir", "list_dir"])
            expect(recs[1]!.tool.arguments).toEqual({ path: "/tmp/streaming-equality" })
            expect(recs[1]!.tool_call_id).toBe("call_0")
            expect(recs[1]!.request_id).toBe(s.headers.get("x-request-id"))
          }
        }))
    }

    it.effect("enforce: text deltas reach the client before the held calls are ruled", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.content = "Let me check."
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp/live" })]
        h.fake.knobs.chunkDelayMs = 150
        const s = yield* postStream(h, { model: "agent@enforce:slm" }, { run: "live" })
        expect(s.status).toBe(200)
        const firstContent = s.items.find(
          (i) => i.kind === "data" && i.data !== "[DONE]" && /"content":"[^"]/.test(i.data)
        )
        expect(firstContent).toBeDefined()
        expect(firstContent!.kind === "data" && firstContent!.data).toContain('"content":"Let "')
        // ordering, not performance: several upstream chunks (150 ms apart) follow the first word
        expect(s.endedAt - firstContent!.at).toBeGreaterThanOrEqual(200)
        const toolAt = s.items.find((i) => i.kind === "data" && i.data.includes('"tool_calls":['))!.at
        expect(toolAt).toBeGreaterThan(firstContent!.at)
        const a = assemble(s.chunks)
        expect(a.content).toBe("Let me check.")
        expect(a.tool_calls.map((c) => c.name)).toEqual(["list_dir"])
        expect(a.finish_reason).toBe("tool_calls")
        expect(s.blocked).toBe(0)
      }))

    it.effect("enforce, every call denied: refusal text, finish stop, no tool-call deltas", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const s = yield* postStream(h, { model: "agent@enforce:slm" }, { run: "s-deny" })
        expect(s.status).toBe(200)
        expect(s.text).not.toContain('"tool_calls"')
        const a = assemble(s.chunks)
        expect(a.tool_calls).toEqual([])
        expect(a.toolCallChunks).toBe(0)
        expect(a.content).toContain("`delete_file` was blocked")
        expect(a.finish_reason).toBe("stop")
        expect(s.blocked).toBe(1)
        expect(s.text).toContain(": x-vetobench-blocked=1\n\n")
        expect(s.done).toBe(true)
        expect(s.text.endsWith("data: [DONE]\n\n")).toBe(true)
        const recs = h.records("s-deny")
        expect(recs).toHaveLength(1)
        expect(recs[0]!.blocked).toBe(true)
        expect(recs[0]!.stream).toBe(true)
        expect(recs[0]!.tool.arguments).toEqual({ path: "/" })
      }))

    it.effect("enforce, some calls denied: the kept call is re-indexed, the refusal goes into content", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" }), call("list_dir", { path: "/tmp" })]
        const s = yield* postStream(h, { model: "agent@enforce:slm" }, { run: "s-partial" })
        const a = assemble(s.chunks)
        expect(a.tool_calls).toEqual([
          { index: 0, id: "call_1", type: "function", name: "list_dir", arguments: '{"path": "/tmp"}' }
        ])
        expect(a.toolCallChunks).toBe(1)
        expect(a.content).toContain("`delete_file` was blocked")
        expect(a.content).not.toContain("list_dir")
        expect(a.finish_reason).toBe("tool_calls")
        expect(s.blocked).toBe(1)
        expect(s.done).toBe(true)
        expect(h.records("s-partial").map((r) => [r.tool.name, r.blocked])).toEqual([
          ["delete_file", true],
          ["list_dir", false]
        ])
      }))

    it.effect("enforce, some calls denied (brief's order): list_dir kept as index 0 / call_0", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" }), call("delete_file", { path: "/" })]
        const s = yield* postStream(h, { model: "agent@enforce:slm" }, { run: "s-partial2" })
        const a = assemble(s.chunks)
        expect(a.tool_calls).toEqual([
          { index: 0, id: "call_0", type: "function", name: "list_dir", arguments: '{"path": "/tmp"}' }
        ])
        expect(a.content).toContain("`delete_file` was blocked")
        expect(a.finish_reason).toBe("tool_calls")
        expect(s.blocked).toBe(1)
        // the note, then the kept call, then the finish chunk, then the count, then [DONE]
        const tail = s.items.slice(-5).map((i) => {
          if (i.kind === "comment") return i.text
          if (i.data === "[DONE]") return "[DONE]"
          const c = (JSON.parse(i.data) as Chunk).choices[0]
          if (c?.delta?.tool_calls !== undefined) return "tool_calls"
          if (typeof c?.finish_reason === "string") return `finish:${c.finish_reason}`
          if (c?.delta?.content?.includes("was blocked") === true) return "note"
          return "other"
        })
        expect(tail).toEqual(["note", "tool_calls", "finish:tool_calls", "x-vetobench-blocked=1", "[DONE]"])
      }))

    for (const arm of ["enforce", "shadow"] as const) {
      it.effect(`${arm}: streaming and non-streaming give identical rulings and the same message`, () =>
        Effect.gen(function* () {
          const h = yield* Harness
          const model = `agent@${arm}:slm`
          const cases = [
            [call("list_dir", { path: `/tmp/parity-${arm}` }), call("delete_file", { path: "/" })],
            [call("delete_file", { path: "/" })],
            [call("list_dir", { path: `/srv/parity-${arm}` })]
          ]
          for (const [n, calls] of cases.entries()) {
            h.fake.reset()
            h.fake.knobs.nextCalls = calls
            h.fake.knobs.content = n === 0 ? "Working on it." : null
            const json = yield* post(h, { model }, { run: `par-${arm}-${n}-json` })
            const s = yield* postStream(h, { model }, { run: `par-${arm}-${n}-sse` })
            const a = h.records(`par-${arm}-${n}-json`)
            const b = h.records(`par-${arm}-${n}-sse`)
            expect(a).toHaveLength(calls.length)
            expect(b.map(ruling)).toEqual(a.map(ruling))
            expect(a.every((r) => r.stream === false) && b.every((r) => r.stream === true)).toBe(true)
            expect(streamView(assemble(s.chunks))).toEqual(messageView(json.json.choices[0]!))
            expect(s.blocked).toBe(Number(json.headers.get("x-vetobench-blocked")))
          }
          if (arm === "enforce") expect(h.records("par-enforce-0-sse").map((r) => r.blocked)).toEqual([false, true])
          else expect(h.records("par-shadow-0-sse").map((r) => r.effective_decision)).toEqual(["allow", "deny"])
        }))
    }

    for (const model of ["agent", "agent@enforce:slm"]) {
      it.effect(`${model}: an upstream error while streaming is relayed as JSON, nothing audited`, () =>
        Effect.gen(function* () {
          const h = yield* Harness
          h.fake.reset()
          h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
          h.fake.knobs.failStatus = 500
          h.fake.knobs.failModels = new Set(["agent"])
          const run = `s-fail-${model.replace(/[@:]/g, "-")}`
          const s = yield* postStream(h, { model }, { run })
          expect(s.status).toBe(500)
          expect(s.contentType).toMatch(/^application\/json/)
          expect(JSON.parse(s.text)).toEqual({ error: { message: "fake failure", type: "InternalServerError", code: 500 } })
          expect(s.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/)
          expect(h.records(run)).toEqual([])
          expect(h.fake.requests.filter((r) => (r.body as { model?: string } | null)?.model === "judge")).toEqual([])
        }))
    }

    it.effect("the usage chunk (include_usage) is delivered in every logged arm", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const runs: Array<string> = []
        for (const model of ["agent@baseline", "agent@shadow:slm", "agent@enforce:slm"]) {
          for (const calls of [[call("list_dir", { path: "/tmp/usage" })], [call("delete_file", { path: "/" })]]) {
            h.fake.reset()
            h.fake.knobs.nextCalls = calls
            const body = { model, stream_options: { include_usage: true } }
            const run = `usage-${runs.length}`
            runs.push(run)
            // the usage of the same answer without streaming, straight from the passthrough arm
            const plain = yield* post(h, { model: "agent" })
            const expected = (plain.json as { usage?: unknown }).usage
            expect(expected).toMatchObject({ total_tokens: expect.any(Number) })
            const s = yield* postStream(h, body, { run })
            expect(s.status).toBe(200)
            const last = s.chunks[s.chunks.length - 1]!
            expect(last.choices).toEqual([])
            expect(last.usage).toEqual(expected)
            expect(s.chunks.filter((c) => c.usage != null)).toHaveLength(1)
            expect(s.done).toBe(true)
            expect(h.records(run)).toHaveLength(1)
            // the ruling itself still happened
            const a = assemble(s.chunks)
            const denied = model === "agent@enforce:slm" && calls[0]!.name === "delete_file"
            expect(a.finish_reason).toBe(denied ? "stop" : "tool_calls")
          }
        }
      }))
  })
})
