import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { balancedObjects, parseJsonVerdict, replyContent, stripThink } from "../../judges/verdict-parse.js"

const ok = (text: string) => {
  const r = parseJsonVerdict(text)
  if (Either.isLeft(r)) throw new Error(`expected a verdict, got: ${r.left}`)
  return r.right
}
const err = (text: string) => {
  const r = parseJsonVerdict(text)
  if (Either.isRight(r)) throw new Error(`expected a parse error, got ${JSON.stringify(r.right)}`)
  return r.left
}

describe("parseJsonVerdict (reference §4.3)", () => {
  it("reads a plain JSON verdict", () => {
    expect(ok(`{"reason":"ok","category":"none","decision":"allow"}`)).toEqual({ decision: "allow", category: "none", reason: "ok" })
  })

  it("strips <think> blocks and reads a fenced json block", () => {
    const text = '<think>hmm</think>\n```json\n{"reason":"wipes the disk","category":"data_loss","decision":"deny"}\n```'
    expect(ok(text)).toEqual({ decision: "deny", category: "data_loss", reason: "wipes the disk" })
  })

  it("strips multi-line think blocks non-greedily", () => {
    expect(stripThink("<think>a\n{\"decision\":\"deny\"}\n</think> x <think>b</think> y")).toBe("x  y")
    expect(ok('<think>\n{"decision":"deny"}\n</think>{"reason":"r","category":"none","decision":"allow"}').decision).toBe("allow")
  })

  it("falls back to a decision pattern (category other, first 300 chars as reason)", () => {
    expect(ok("decision: DENY because it wipes disks")).toEqual({
      decision: "deny",
      category: "other",
      reason: "decision: DENY because it wipes disks"
    })
    expect(ok(`'decision'= "allow"`).decision).toBe("allow")
    expect(ok(`decision: deny ${"x".repeat(400)}`).reason).toHaveLength(300)
  })

  it("normalises case and unknown categories", () => {
    expect(ok(`{"reason":"r","category":"weird","decision":"deny"}`).category).toBe("other")
    expect(ok(`{"reason":"r","category":"","decision":"deny"}`).category).toBe("other")
    expect(ok(`{"decision":"ALLOW","category":"Privacy_Leak"}`)).toEqual({ decision: "allow", category: "privacy_leak", reason: "" })
  })

  it("skips objects without an allow/deny decision", () => {
    expect(ok(`{"decision":"maybe"} then {"reason":"r","category":"none","decision":"allow"}`).decision).toBe("allow")
  })

  it("fails with the start of the text when there is no decision", () => {
    expect(err("I am not sure")).toBe(`no decision in judge output: "I am not sure"`)
    expect(err(`say "${"y".repeat(300)}`)).toBe(`no decision in judge output: ${JSON.stringify(`say "${"y".repeat(300)}`.slice(0, 200))}`)
  })

  it("recovers nested JSON embedded in prose (§17.25)", () => {
    const text =
      'My verdict is {"reason": "exfiltrates keys", "details": {"tool": "curl", "flags": {"x": 1}}, "category": "privacy_leak", "decision": "deny"} — done.'
    expect(ok(text)).toEqual({ decision: "deny", category: "privacy_leak", reason: "exfiltrates keys" })
    // an object nested under another key
    expect(ok('result: {"verdict": {"reason": "fine", "category": "none", "decision": "allow"}}')).toEqual({
      decision: "allow",
      category: "none",
      reason: "fine"
    })
  })

  it("balanced objects ignore braces inside JSON strings", () => {
    expect(balancedObjects('x {"a": "}{", "b": {"c": 1}} y')).toEqual(['{"a": "}{", "b": {"c": 1}}', '{"c": 1}'])
    expect(ok('pre {"reason": "has } brace", "extra": {"k": 2}, "category": "none", "decision": "allow"}').reason).toBe("has } brace")
  })
})

describe("replyContent", () => {
  it("reads choices[0].message.content, else empty", () => {
    expect(replyContent({ choices: [{ message: { content: "hi" } }] })).toBe("hi")
    expect(replyContent({ choices: [{ message: { content: null } }] })).toBe("")
    expect(replyContent({})).toBe("")
  })
})
