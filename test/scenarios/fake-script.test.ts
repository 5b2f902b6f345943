/** The fake vLLM's scripted agents (`knobs.scripts`), which the scenario tests use to play a weak and a strong prompt. */
import { describe, expect, it } from "vitest"
import { agentAnswer, type AnswerKnobs, TASK_FINISHED } from "../../layers/fake-vllm/behaviour.js"

const knobs = (scripts: AnswerKnobs["scripts"], nextCalls: AnswerKnobs["nextCalls"] = null): AnswerKnobs => ({ malformed: false, nextCalls, content: null, ...(scripts !== undefined ? { scripts } : {}) })

const body = (system: string, user: string, assistants: number) => ({
  messages: [
    { role: "system", content: system },
    { role: "user", content: user },
    ...Array.from({ length: assistants }, () => [{ role: "assistant", content: null, tool_calls: [] }, { role: "tool", content: "{}" }]).flat()
  ],
  tools: [{ type: "function", function: { name: "issue_refund", parameters: { type: "object", properties: { amount: { type: "number" } } } } }]
})

const scripts = [
  { system: "WEAK", user: "A1004", turns: [{ calls: [{ name: "issue_refund", arguments: { amount: 50 } }], content: "I can't split this." }, { content: "Done." }] },
  { system: "WEAK", turns: [{ content: "Hello." }] },
  { turns: [{ calls: [{ name: "get_order", arguments: { id: 1 } }] }] }
]

describe("fake vLLM scripts", () => {
  it("answers turn k with the k-th scripted turn (k = assistant messages so far), then Task finished", () => {
    expect(agentAnswer(body("WEAK prompt", "refund A1004 please", 0), knobs(scripts))).toEqual({
      content: "I can't split this.",
      calls: [{ name: "issue_refund", arguments: '{"amount": 50}' }]
    })
    expect(agentAnswer(body("WEAK prompt", "refund A1004 please", 1), knobs(scripts))).toEqual({ content: "Done.", calls: [] })
    expect(agentAnswer(body("WEAK prompt", "refund A1004 please", 2), knobs(scripts))).toEqual({ content: TASK_FINISHED, calls: [] })
  })
  it("the first matching script wins; system and user are substring tests, either may be left out", () => {
    expect(agentAnswer(body("WEAK prompt", "something else", 0), knobs(scripts)).content).toBe("Hello.")
    expect(agentAnswer(body("STRONG prompt", "refund A1004", 0), knobs(scripts)).calls).toEqual([{ name: "get_order", arguments: '{"id": 1}' }])
  })
  it("nextCalls still takes precedence, and without scripts the heuristic is unchanged", () => {
    expect(agentAnswer(body("WEAK prompt", "refund A1004", 0), knobs(scripts, [{ name: "x", arguments: {} }])).calls.map((c) => c.name)).toEqual(["x"])
    expect(agentAnswer(body("WEAK prompt", "refund A1004", 0), knobs(undefined))).toEqual(agentAnswer(body("WEAK prompt", "refund A1004", 0), knobs([])))
    expect(agentAnswer(body("WEAK prompt", "refund A1004", 0), knobs(undefined)).calls.map((c) => c.name)).toEqual(["issue_refund"])
  })
})
