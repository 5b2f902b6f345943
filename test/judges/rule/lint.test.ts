/** Policy lint: warnings (never errors) for policies that load but probably do not say what was meant. */
import { describe, expect, it } from "vitest"
import { formatWarning, lintPolicy } from "../../../judges/rule/lint.js"
import { apPolicyJson, built } from "./support.js"

const lint = (raw: unknown) => lintPolicy(built(raw)).map(formatWarning)

const base = (rules: ReadonlyArray<Record<string, unknown>>, extra: Record<string, unknown> = {}) => ({
  provider: "p",
  granted_scopes: ["s"],
  tool_scopes: { pay: "s", mail: "s", wipe: "s", drop: "admin" },
  tool_tags: { wipe: ["destructive"] },
  rules,
  ...extra
})

describe("lint", () => {
  it("the accounts-payable policy is clean", () => {
    expect(lint(apPolicyJson())).toEqual([])
  })

  it("unknown top-level keys (with a suggestion), but not the reserved vetobench key; case variants", () => {
    const w = lint({ ...base([{ id: "T", tag: "destructive", kind: "tool", message: "m" }]), rulez: [], vetobench: { trajectory: [] }, PROVIDER: "p" })
    expect(w).toContain('rulez: unknown top-level key "rulez" is ignored (the Go gate ignores it too); did you mean "rules"?')
    expect(w).toContain('PROVIDER: key "PROVIDER" is read as "provider" (keys match case-insensitively); write it as "provider"')
    expect(w.join("\n")).not.toContain("vetobench")
  })

  it("unknown and ignored rule keys", () => {
    const w = lint(base([{ id: "R", tool: "pay", kind: "ceiling", arg: "amount", max: 1, efect: "escalate", allowed: ["x"], message: "m" }]))
    expect(w).toContain('rule R: unknown key "efect" in rules[0] is ignored (the Go gate ignores it too); did you mean "effect"?')
    expect(w).toContain('rule R: kind ceiling ignores "allowed"')
  })

  it("a rule naming a tool not in tool_scopes never applies", () => {
    expect(lint(base([{ id: "R", tool: "send_paymnet", kind: "ceiling", arg: "amount", max: 1, message: "m" }]))).toContain(
      'rule R: never applies: tool "send_paymnet" is not in tool_scopes (the Go gate ignores such a rule without a word)'
    )
    expect(lint(base([{ id: "R", tool: "wipee", kind: "tool", message: "m" }])).find((w) => w.startsWith("rule R:"))).toMatch(
      /never applies: tool "wipee" .*did you mean "wipe"\?$/
    )
  })

  it("a rule on a tool whose scope the policy does not grant is never evaluated", () => {
    expect(lint(base([{ id: "R", tool: "drop", kind: "tool", message: "m" }]))).toContain(
      'rule R: is never evaluated: drop needs scope "admin", which granted_scopes does not grant'
    )
  })

  it("a rule with neither tool nor tag hits every tool", () => {
    expect(lint(base([{ id: "G", kind: "ceiling", arg: "amount", max: 1, message: "m" }]))).toContain(
      'rule G: has neither tool nor tag, so it applies to every tool: a tool whose call lacks "amount" is denied (fail closed)'
    )
  })

  it("ceiling without max denies every positive amount", () => {
    expect(lint(base([{ id: "C", tool: "pay", kind: "ceiling", arg: "amount", message: "m" }]))).toContain(
      "rule C: ceiling without max: max defaults to 0, so every positive amount is denied"
    )
  })

  it("rules that can never fire or never pass", () => {
    const w = lint(
      base(
        [
          { id: "A", tool: "mail", kind: "allowlist", arg: "to", allowed: ["a b", "ok"], message: "m" },
          { id: "S", tool: "mail", kind: "suffix", arg: "to", allowed: [""], message: "m" },
          { id: "P", tool: "mail", kind: "prefix", arg: "d", allowed: ["x/../"], message: "m" },
          { id: "D", tool: "mail", kind: "denylist", arg: "to", denied: ["a,b"], message: "m" },
          { id: "F", tool: "mail", kind: "sensitive_field", arg: "f", field: "bank account", message: "m" },
          { id: "L", tool: "pay", kind: "lookup", arg: "items[*].acct", match_arg: "inv", message: "m" },
          { id: "E", tool: "pay", kind: "lookup", arg: "acct", match_arg: "inv", message: "m" },
          { id: "RX", tool: "mail", kind: "pattern", arg: "to", pattern: "(a+)+b", message: "m" }
        ],
        { lookups: { L: { x: "y" }, E: {}, ORPHAN: {} } }
      )
    )
    expect(w).toEqual(
      expect.arrayContaining([
        'lookups.ORPHAN: table "ORPHAN" belongs to no lookup rule and is never read',
        'rule A: allowed entry "a b" can never match: a value with spaces, commas, quotes, <, >, ; or \\ is refused before matching',
        'rule S: allowed entry "" matches every value: the rule only fires on values that are not single plain values',
        'rule P: allowed entry "x/../" can never pass: any value containing ".." fires',
        'rule D: denied entry "a,b" can never match: a value with spaces, commas, quotes, <, >, ; or \\ is refused before matching (the rule then fires anyway)',
        'rule F: field "bank account" can never match a single plain value, so the rule only fires when it cannot verify',
        "rule L: always fires: a lookup needs exactly one value on each side, and a [*] path never gives one",
        'rule E: always fires: lookups.E is empty, so every key is "no entry on file"',
        "rule RX: pattern has a quantified group containing a quantifier: RE2 runs it in linear time, a JavaScript RegExp may backtrack exponentially on a hostile value"
      ])
    )
  })

  it("a rule after a tool-kind rule on the same tools never decides; unused tags; empty messages", () => {
    const w = lint(
      base(
        [
          { id: "T", tag: "destructive", kind: "tool", effect: "escalate", message: "m" },
          { id: "AFTER", tool: "wipe", kind: "ceiling", arg: "n", max: 1 }
        ],
        { tool_tags: { wipe: ["destructive"], pay: ["money"] } }
      )
    )
    expect(w).toContain("rule AFTER: never decides: T (kind tool) fires first on every tool this rule applies to")
    expect(w).toContain('tool_tags.pay: tag "money" on pay is used by no rule')
    expect(w).toContain("rule AFTER: has no message: a call it denies carries an empty reason")
  })

  it("warnings are structured: rule and key when known", () => {
    const w = lintPolicy(built(base([{ id: "C", tool: "pay", kind: "ceiling", arg: "amount", message: "m" }]))).find((x) => x.rule === "C")
    expect(w).toEqual({ rule: "C", key: "max", message: "ceiling without max: max defaults to 0, so every positive amount is denied" })
  })
})
