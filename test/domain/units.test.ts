/** Pure domain functions: reference §14.3 re-expressed, plus the tool-call view and refusals. */
import { describe, expect, it } from "vitest"
import { mergeLeadingSystem, normaliseTools } from "../../src/domain/normalise.js"
import { renderRefusal, stripCalls, DEFAULT_REFUSAL_TEMPLATE } from "../../src/domain/refusal.js"
import { formatRoute, makeRoute, parseRoute, RouteError } from "../../src/domain/route.js"
import { argumentsText, MAX_ARG_CHARS, schemaText, toolCallView } from "../../src/domain/tool-call.js"

describe("routes", () => {
  it("format/parse round trip", () => {
    for (const r of [makeRoute("m"), makeRoute("m", "baseline"), makeRoute("m", "shadow", "j"), makeRoute("org/m:7b", "enforce", "j-2")]) {
      const s = formatRoute(r)
      expect(s).not.toBeInstanceOf(RouteError)
      expect(parseRoute(s as string)).toEqual(r)
    }
  })

  it("splits at the last @ and the first :", () => {
    expect(parseRoute("a@b@enforce:j:x")).toEqual(makeRoute("a@b", "enforce", "j:x"))
    expect(parseRoute("")).toEqual(makeRoute(""))
  })

  it.each([
    ["m@warp:slm", "unknown arm 'warp'"],
    ["m@", "unknown arm ''"],
    ["m@passthrough", "unknown arm 'passthrough'"],
    ["agent@enforce", "needs a judge"],
    ["agent@enforce:", "needs a judge"],
    ["m@baseline:j", "the baseline arm takes no judge"],
    ["@baseline", "empty model"]
  ])("%s is an error (%s)", (name, message) => {
    const r = parseRoute(name)
    expect(r).toBeInstanceOf(RouteError)
    expect((r as RouteError).message).toContain(message)
  })

  it("formatting refuses a judge-less judged arm and a judge on baseline", () => {
    expect(formatRoute(makeRoute("m", "enforce"))).toBeInstanceOf(RouteError)
    expect(formatRoute(makeRoute("m", "baseline", "j"))).toBeInstanceOf(RouteError)
  })
})

describe("normalisation", () => {
  it("merges leading system messages; a single one returns the same array", () => {
    const msgs = [
      { role: "system", content: "a" },
      { role: "system", content: "b" },
      { role: "user", content: "u" },
      { role: "system", content: "late" }
    ]
    expect(mergeLeadingSystem(msgs)).toEqual([{ role: "system", content: "a\n\nb" }, { role: "user", content: "u" }, { role: "system", content: "late" }])
    const single = [{ role: "system", content: "a" }, { role: "user", content: "u" }]
    expect(mergeLeadingSystem(single)).toBe(single)
    expect(mergeLeadingSystem([])).toEqual([])
  })

  it("gives tools without an object schema an empty one, leaving others alone", () => {
    const tools = [
      { type: "function", function: { name: "a", parameters: null } },
      { type: "function", function: { name: "b", parameters: { type: "object", properties: { x: {} } } } },
      { type: "other" }
    ]
    const out = normaliseTools(tools) as typeof tools
    expect(out[0]!.function!.parameters).toEqual({ type: "object", properties: {} })
    expect(out[1]).toBe(tools[1])
    expect(out[2]).toBe(tools[2])
    expect(tools[0]!.function!.parameters).toBeNull()
  })
})

describe("tool-call view", () => {
  const tools = [{ type: "function", function: { name: "f", description: "does f", parameters: { type: "object", properties: { a: { type: "string" } } } } }]

  it("parses JSON arguments, keeps invalid ones raw, blank → {}", () => {
    expect(toolCallView({ function: { name: "f", arguments: '{"a":"x"}' } }, tools)).toEqual({
      name: "f",
      description: "does f",
      parameters: tools[0]!.function.parameters,
      arguments: { a: "x" }
    })
    expect(toolCallView({ function: { name: "f", arguments: "{oops" } }, tools).arguments).toBe("{oops")
    expect(toolCallView({ function: { name: "g", arguments: "  " } }, tools)).toEqual({ name: "g", description: "", parameters: null, arguments: {} })
  })

  it("truncates long arguments and renders absent schemas as (none)", () => {
    const v = toolCallView({ function: { name: "g", arguments: JSON.stringify({ x: "y".repeat(5000) }) } }, [])
    expect(argumentsText(v)).toHaveLength(MAX_ARG_CHARS + " …[truncated]".length)
    expect(schemaText(v)).toBe("(none)")
  })
})

describe("refusals", () => {
  it("fills placeholders, keeps escaped braces, says 'no reason given' for an empty reason", () => {
    expect(renderRefusal("{{x}} `{tool_name}` {category}: {reason}", { tool_name: "rm", category: "data_loss", reason: " " })).toBe(
      "{x} `rm` data_loss: no reason given"
    )
    expect(renderRefusal(DEFAULT_REFUSAL_TEMPLATE, { tool_name: "rm", category: "c", reason: "r" })).toContain("`rm` was blocked")
  })

  it("partial removal keeps survivors and (content mode) adds the notes; full removal ends the turn", () => {
    const msg = () => ({ content: "Sure. ", tool_calls: [{ id: "a" }, { id: "b" }] })
    const partial = msg()
    expect(stripCalls(partial, new Map([[1, "note-b"]]), "content")).toBe("tool_calls")
    expect(partial).toEqual({ content: "Sure.\n\nnote-b", tool_calls: [{ id: "a" }] })
    const dropped = msg()
    stripCalls(dropped, new Map([[1, "note-b"]]), "drop")
    expect(dropped.content).toBe("Sure. ")
    const all = msg()
    expect(stripCalls(all, new Map([[0, "n0"], [1, "n1"]]), "content")).toBe("stop")
    expect(all).toEqual({ content: "Sure.\n\nn0 n1", tool_calls: null })
  })
})
