/**
 * The streaming gate's state machine alone (`makeSseGate`), with a gate that blocks every call:
 * where the refusal note goes after streamed text, per choice (the gate reads text deltas only
 * while a choice may still lack text).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { CallRuling, GateRequest, GateShape } from "../../src/gate/Gate.js"
import type { ToolCallView } from "../../src/domain/tool-call.js"
import { makeSseGate } from "../../src/proxy/wire/chat-sse.js"

const blockAll: GateShape = {
  ruleChoice: (_req, _choice, calls) =>
    Effect.succeed(
      calls.map((_, i): CallRuling => ({
        callIndex: i,
        call: { name: "delete_file", description: "", parameters: null, arguments: {} } satisfies ToolCallView,
        verdict: null,
        effective: "deny",
        blocked: true,
        refusal: `[call ${i} blocked]`
      }))
    )
}

const request = (arm: GateRequest["arm"]): GateRequest => ({
  arm,
  judge: "j",
  tools: undefined,
  stream: true,
  context: { requestId: "r", runId: null, episodeId: null, sessionId: null, principal: null, agentModel: "m", headers: {} }
})

const text = (index: number, content: string) => JSON.stringify({ id: "c", choices: [{ index, delta: { content }, finish_reason: null }] })
const spacedText = (index: number, content: string) => `{"id": "c", "choices": [{"index": ${index}, "delta": {"content": ${JSON.stringify(content)}}, "finish_reason": null}]}`
const toolCall = (index: number) =>
  JSON.stringify({ id: "c", choices: [{ index, delta: { tool_calls: [{ index: 0, id: `call_${index}`, type: "function", function: { name: "delete_file", arguments: "{}" } }] }, finish_reason: null }] })
const finish = (index: number) => JSON.stringify({ id: "c", choices: [{ index, delta: {}, finish_reason: "tool_calls" }] })

/** the refusal text each choice received, after feeding `events` */
const refusals = (arm: GateRequest["arm"], events: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const g = makeSseGate({ gate: blockAll, request: request(arm), partial: "content" })
    const out: Array<string> = []
    for (const e of events) out.push(...(yield* g.onData(e)).out)
    out.push(...(yield* g.onData("[DONE]")).out)
    const notes = new Map<number, string>()
    for (const frame of out) {
      const data = frame.startsWith("data: ") ? frame.slice(6).trim() : ""
      if (data === "" || data === "[DONE]") continue
      const parsed = JSON.parse(data) as { choices: Array<{ index: number; delta: { content?: string } }> }
      for (const c of parsed.choices) if (c.delta.content?.includes("blocked]") === true) notes.set(c.index, c.delta.content)
    }
    return { notes, blocked: g.blocked() }
  })

describe("the streaming gate's refusal note", () => {
  it.effect("after streamed text it starts a new paragraph; after none (or only whitespace) it does not", () =>
    Effect.gen(function* () {
      const r = yield* refusals("enforce", [text(0, "Let me "), text(0, "delete it."), toolCall(0), finish(0)])
      expect(r.notes.get(0)).toBe("\n\n[call 0 blocked]")
      expect(r.blocked).toBe(1)
      const blank = yield* refusals("enforce", [text(0, ""), text(0, " \n"), toolCall(0), finish(0)])
      expect(blank.notes.get(0)).toBe("[call 0 blocked]")
    }))

  it.effect("per choice, whichever order the choices' text arrives in, compact or spaced JSON", () =>
    Effect.gen(function* () {
      for (const t of [text, spacedText]) {
        // choice 0 has text before choice 1 says anything: choice 1's chunks must still be read
        const r = yield* refusals("enforce", [t(0, "Sure."), t(1, " "), t(1, "On it."), t(2, "\n"), toolCall(0), toolCall(1), toolCall(2), finish(0), finish(1), finish(2)])
        expect([...r.notes.entries()].sort()).toEqual([
          [0, "\n\n[call 0 blocked]"],
          [1, "\n\n[call 0 blocked]"],
          [2, "[call 0 blocked]"]
        ])
      }
    }))
})
