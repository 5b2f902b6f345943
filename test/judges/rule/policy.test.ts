/**
 * Loading a policy: Go-compatible decoding (case-insensitive keys, unknown keys ignored, null),
 * every validation error of toolgate.md §1.2 (naming the rule id and key), JSON and YAML files,
 * the policy hash, and the compiled form (rules per tool, in policy order).
 */
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { decide } from "../../../judges/rule/evaluate.js"
import { buildPolicy, decodePolicy, formatIssue, loadPolicyFile, PolicyLoadError } from "../../../judges/rule/policy.js"
import { AP_POLICY_FILE, apPolicyJson, built, FULL, issuesOf } from "./support.js"

const base = (rules: ReadonlyArray<Record<string, unknown>>, extra: Record<string, unknown> = {}) => ({
  provider: "p",
  granted_scopes: ["s"],
  tool_scopes: { t: "s", u: "s" },
  tool_tags: { t: ["money"] },
  rules,
  ...extra
})

/** The first issue's text for a policy with one rule (id R, tool t unless overridden). */
const ruleError = (rule: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  issuesOf(base([{ id: "R", tool: "t", ...rule }], extra)).map(formatIssue)

describe("validation (§1.2)", () => {
  it.each([
    ["empty provider", { ...base([]), provider: "" }, "provider: policy has no provider"],
    ["no provider key", { tool_scopes: { t: "s" } }, "provider: policy has no provider"],
    ["empty tool_scopes", { ...base([]), tool_scopes: {}, tool_tags: {} }, "tool_scopes: policy maps no tools to scopes"],
    ["tool_tags naming an unknown tool", { ...base([]), tool_tags: { delet_file: ["x"] } }, 'tool_tags.delet_file: tool_tags names "delet_file", which is not in tool_scopes'],
    ["rule without id", base([{ tool: "t", kind: "tool" }]), "rules[0].id: rule needs an id"],
    ["duplicate id", base([{ id: "A", tool: "t", kind: "tool" }, { id: "A", tool: "u", kind: "tool" }]), 'rule A (rules[1].id): duplicate rule id "A"'],
    ["tool and tag", base([{ id: "R", tool: "t", tag: "money", kind: "tool" }]), "rule R (rules[0]): sets both tool and tag; use one"],
    ["a tag no tool carries", base([{ id: "R", tag: "destrutive", kind: "tool" }]), 'rule R (rules[0].tag): uses tag "destrutive", which no tool carries'],
    ["kind tool with an arg", base([{ id: "R", tool: "t", kind: "tool", arg: "x" }]), "rule R (rules[0].arg): a rule of kind tool takes no arg"],
    ["kind tool without tool or tag", base([{ id: "R", kind: "tool" }]), "rule R (rules[0]): a rule of kind tool needs a tool or a tag"],
    ["other kind without arg", base([{ id: "R", tool: "t", kind: "ceiling", max: 1 }]), "rule R (rules[0].arg): needs an arg"],
    ["invalid path a..b", base([{ id: "R", tool: "t", kind: "ceiling", arg: "a..b", max: 1 }]), 'rule R (rules[0].arg): "a..b" is not a valid argument path'],
    ["invalid path a[*]b", base([{ id: "R", tool: "t", kind: "ceiling", arg: "a[*]b", max: 1 }]), 'rule R (rules[0].arg): "a[*]b" is not a valid argument path'],
    ["invalid path a[0]", base([{ id: "R", tool: "t", kind: "ceiling", arg: "a[0]", max: 1 }]), 'rule R (rules[0].arg): "a[0]" is not a valid argument path'],
    ["each on max_items", base([{ id: "R", tool: "t", kind: "max_items", arg: "x", max: 2, each: true }]), "rule R (rules[0].each): a rule of kind max_items cannot apply to each element"],
    ["each on lookup", base([{ id: "R", tool: "t", kind: "lookup", arg: "x", match_arg: "y", each: true }], { lookups: { R: {} } }), "rule R (rules[0].each): a rule of kind lookup cannot apply to each element"],
    ["floor without min", base([{ id: "R", tool: "t", kind: "floor", arg: "x" }]), "rule R (rules[0].min): needs min"],
    ["denylist without denied", base([{ id: "R", tool: "t", kind: "denylist", arg: "x" }]), "rule R (rules[0].denied): needs a denied list"],
    ["pattern without pattern", base([{ id: "R", tool: "t", kind: "pattern", arg: "x" }]), "rule R (rules[0].pattern): needs a pattern"],
    ["pattern that does not compile", base([{ id: "R", tool: "t", kind: "pattern", arg: "x", pattern: "(" }]), "rule R (rules[0].pattern): has a bad pattern: missing closing )"],
    ["domain without allowed", base([{ id: "R", tool: "t", kind: "domain", arg: "x" }]), "rule R (rules[0].allowed): needs an allowed list of domains"],
    ["domain @corp.example", base([{ id: "R", tool: "t", kind: "domain", arg: "x", allowed: ["@corp.example"] }]), 'rule R (rules[0].allowed): "@corp.example" is not a bare lower-case domain'],
    ["domain Corp.example", base([{ id: "R", tool: "t", kind: "domain", arg: "x", allowed: ["Corp.example"] }]), 'rule R (rules[0].allowed): "Corp.example" is not a bare lower-case domain'],
    ["domain .corp.example", base([{ id: "R", tool: "t", kind: "domain", arg: "x", allowed: [".corp.example"] }]), 'rule R (rules[0].allowed): ".corp.example" is not a bare lower-case domain'],
    ["domain https://corp.example", base([{ id: "R", tool: "t", kind: "domain", arg: "x", allowed: ["https://corp.example"] }]), 'rule R (rules[0].allowed): "https://corp.example" is not a bare lower-case domain'],
    ["domain *.corp.example", base([{ id: "R", tool: "t", kind: "domain", arg: "x", allowed: ["*.corp.example"] }]), 'rule R (rules[0].allowed): "*.corp.example" is not a bare lower-case domain'],
    ["domain corp.example.", base([{ id: "R", tool: "t", kind: "domain", arg: "x", allowed: ["corp.example."] }]), 'rule R (rules[0].allowed): "corp.example." is not a bare lower-case domain'],
    ["domain non-ASCII", base([{ id: "R", tool: "t", kind: "domain", arg: "x", allowed: ["b\u00fccher.example"] }]), 'rule R (rules[0].allowed): "b\u00fccher.example" is not a bare lower-case domain'],
    ["max_items without max", base([{ id: "R", tool: "t", kind: "max_items", arg: "x" }]), "rule R (rules[0].max): needs max of at least 1"],
    ["max_items max 0.5", base([{ id: "R", tool: "t", kind: "max_items", arg: "x", max: 0.5 }]), "rule R (rules[0].max): needs max of at least 1"],
    ["compare with op lte", base([{ id: "R", tool: "t", kind: "compare", arg: "x", match_arg: "y", op: "lte" }]), "rule R (rules[0].op): needs op lt, le, gt, ge, eq or ne"],
    ["compare without match_arg", base([{ id: "R", tool: "t", kind: "compare", arg: "x", op: "lt" }]), "rule R (rules[0].match_arg): needs match_arg"],
    ["compare with [*]", base([{ id: "R", tool: "t", kind: "compare", arg: "x[*].a", op: "lt", match_arg: "y" }]), "rule R (rules[0]): compares single values; [*] is not allowed"],
    ["compare with a bad match_arg path", base([{ id: "R", tool: "t", kind: "compare", arg: "x", op: "lt", match_arg: "y." }]), 'rule R (rules[0].match_arg): "y." is not a valid argument path'],
    ["allowlist without allowed", base([{ id: "R", tool: "t", kind: "allowlist", arg: "x" }]), "rule R (rules[0].allowed): needs an allowed list"],
    ["suffix without allowed", base([{ id: "R", tool: "t", kind: "suffix", arg: "x", allowed: [] }]), "rule R (rules[0].allowed): needs an allowed list"],
    ["prefix without allowed", base([{ id: "R", tool: "t", kind: "prefix", arg: "x" }]), "rule R (rules[0].allowed): needs an allowed list"],
    ["lookup without match_arg", base([{ id: "R", tool: "t", kind: "lookup", arg: "x" }], { lookups: { R: {} } }), "rule R (rules[0].match_arg): needs match_arg"],
    ["lookup without table", base([{ id: "R", tool: "t", kind: "lookup", arg: "x", match_arg: "y" }]), "rule R (rules[0]): has no lookup table (lookups.R)"],
    ["sensitive_field without field", base([{ id: "R", tool: "t", kind: "sensitive_field", arg: "x" }]), "rule R (rules[0].field): needs a field"],
    ["unknown kind", base([{ id: "R", tool: "t", kind: "ceil", arg: "x" }]), 'rule R (rules[0].kind): unknown kind "ceil"'],
    ["no kind", base([{ id: "R", tool: "t", arg: "x" }]), 'rule R (rules[0].kind): unknown kind ""'],
    ["unknown effect", base([{ id: "R", tool: "t", kind: "tool", effect: "warn" }]), 'rule R (rules[0].effect): unknown effect "warn" (deny or escalate)']
  ] as const)("%s", (_, policy, error) => {
    const issues = issuesOf(policy).map(formatIssue)
    expect(issues.some((i) => i.startsWith(error))).toBe(true)
  })

  it("every problem of a rule is reported, each naming the rule", () => {
    const issues = issuesOf(base([{ id: "R", tool: "t", tag: "money", kind: "floor", each: true, effect: "nope" }]))
    expect(issues.map((i) => i.rule)).toEqual(["R", "R", "R", "R"])
    expect(issues.map((i) => i.path)).toEqual(["rules[0]", "rules[0].arg", "rules[0].min", "rules[0].effect"])
  })

  it("legal corner cases load: floor min 0, ceiling without max, tool rule by tag, effect deny spelled out, lookup table null", () => {
    expect(ruleError({ kind: "floor", arg: "x", min: 0 })).toEqual([])
    expect(ruleError({ kind: "ceiling", arg: "x" })).toEqual([])
    expect(issuesOf(base([{ id: "R", tag: "money", kind: "tool", effect: "deny" }]))).toEqual([])
    expect(ruleError({ kind: "lookup", arg: "x", match_arg: "y" }, { lookups: { R: null } })).toEqual([])
    expect(ruleError({ kind: "pattern", arg: "x", pattern: "[[:alpha:]]+\\d{2}" })).toEqual([])
    // Go does not check a lookup's match_arg path (the lint warns instead)
    expect(ruleError({ kind: "lookup", arg: "x", match_arg: "a..b" }, { lookups: { R: {} } })).toEqual([])
  })

  it("type errors name the key (Go's unmarshal errors)", () => {
    expect(issuesOf({ provider: 1, tool_scopes: { t: "s" } }).map(formatIssue)).toEqual(["provider: must be a string, not number"])
    expect(issuesOf({ provider: "p", tool_scopes: { t: 1 } }).map(formatIssue)).toEqual(["tool_scopes.t: must be a string, not number"])
    expect(issuesOf({ provider: "p", tool_scopes: { t: "s" }, rules: {} }).map(formatIssue)).toEqual(["rules: must be a list of rules, not a mapping"])
    expect(issuesOf(base([{ id: "R", tool: "t", kind: "ceiling", arg: "x", max: "5000" }])).map(formatIssue)).toEqual([
      "rule R (rules[0].max): must be a number, not string"
    ])
    expect(issuesOf(base([{ id: "R", tool: "t", kind: "ceiling", arg: "x", each: "yes" }])).map(formatIssue)).toEqual([
      "rule R (rules[0].each): must be true or false, not string"
    ])
    expect(issuesOf(base([], { lookups: { R: { k: 1 } } })).map(formatIssue)).toEqual(["lookups.R.k: must be a string, not number"])
    expect(issuesOf([1, 2]).map(formatIssue)).toEqual(["policy: a policy must be a mapping (JSON object), not a list"])
  })
})

describe("decoding like Go's encoding/json", () => {
  it("keys match case-insensitively, unknown keys are ignored (and noted), the reserved vetobench key is kept", () => {
    const raw = {
      PROVIDER: "p",
      Granted_Scopes: ["s"],
      tool_scopes: { t: "s" },
      RULES: [{ ID: "R", Tool: "t", KIND: "ceiling", Arg: "n", MAX: 1, efect: "escalate" }],
      rulez: [],
      vetobench: { trajectory: [] }
    }
    const d = decodePolicy(raw)
    expect(Either.isRight(d)).toBe(true)
    if (Either.isLeft(d)) return
    expect(d.right.spec.provider).toBe("p")
    expect(d.right.spec.rules[0]).toMatchObject({ id: "R", tool: "t", kind: "ceiling", arg: "n", max: 1, effect: "" })
    expect(d.right.unknownKeys).toEqual([
      { path: "", key: "rulez" },
      { path: "rules[0]", key: "efect", rule: "R" }
    ])
    expect(d.right.caseVariants.map((n) => `${n.key}→${n.canonical}`)).toEqual(["PROVIDER→provider", "Granted_Scopes→granted_scopes", "RULES→rules", "ID→id", "Tool→tool", "KIND→kind", "Arg→arg", "MAX→max"])
    expect(d.right.extension).toEqual({ trajectory: [] })
    const p = built(raw).compiled
    expect(decide(p, "t", { n: 2 }, FULL)).toMatchObject({ decision: "deny", rule: "R" })
  })

  it("the last spelling of a key wins; null leaves a string unchanged and empties a list", () => {
    const d = decodePolicy({ provider: "a", Provider: "b", PROVIDER: null, granted_scopes: ["x"], GRANTED_SCOPES: null, tool_scopes: { t: "s" } })
    expect(Either.isRight(d) && d.right.spec.provider).toBe("b")
    expect(Either.isRight(d) && d.right.spec.granted_scopes).toEqual([])
  })

  it("a null policy is an empty one (no provider)", () => {
    expect(issuesOf(null).map(formatIssue)).toContain("provider: policy has no provider")
  })
})

describe("compiled form", () => {
  it("per tool, the applicable rules in policy order (tool, tag, global)", () => {
    const { compiled } = built({
      provider: "p",
      granted_scopes: ["s"],
      tool_scopes: { a: "s", b: "s", c: "s" },
      tool_tags: { a: ["x"], b: ["x"] },
      rules: [
        { id: "G", kind: "ceiling", arg: "n", max: 9 },
        { id: "TA", tool: "a", kind: "ceiling", arg: "n", max: 9 },
        { id: "X", tag: "x", kind: "tool" },
        { id: "TC", tool: "c", kind: "ceiling", arg: "n", max: 9 },
        { id: "TYPO", tool: "d", kind: "ceiling", arg: "n", max: 9 }
      ]
    })
    const ids = (t: string) => compiled.tools.get(t)!.rules.map((r) => r.id)
    expect(ids("a")).toEqual(["G", "TA", "X"])
    expect(ids("b")).toEqual(["G", "X"])
    expect(ids("c")).toEqual(["G", "TC"])
    expect(compiled.tools.has("d")).toBe(false)
    expect(compiled.tools.get("a")!.fired.map((d) => d.scope)).toEqual(["s", "s", "s"])
  })
})

describe("policy files", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-policy-"))

  it.effect("the fixture loads; version = sha256: + 16 hex of the file bytes; provider kept", () =>
    Effect.gen(function* () {
      const loaded = yield* loadPolicyFile(AP_POLICY_FILE, "/nonexistent-root")
      const hex = createHash("sha256").update(readFileSync(AP_POLICY_FILE)).digest("hex")
      expect(loaded.version).toBe(`sha256:${hex.slice(0, 16)}`)
      expect(loaded.sha256).toBe(hex)
      expect(loaded.compiled.provider).toBe("ap-assistant-provider")
      expect([...loaded.compiled.tools.keys()]).toHaveLength(10)
    }))

  it.effect("a relative path resolves against the root; YAML by extension gives the same decisions", () =>
    Effect.gen(function* () {
      const yaml = [
        "provider: ap-assistant-provider",
        "granted_scopes: [payments:send]",
        "tool_scopes:",
        "  send_payment: payments:send",
        "rules:",
        "  - {id: P2-ceiling, tool: send_payment, kind: ceiling, arg: amount, max: 5000.0, message: payment above the per-call ceiling}",
        "  - id: P3-recipient",
        "    tool: send_payment",
        "    kind: lookup",
        "    arg: recipient_account",
        "    match_arg: invoice_id",
        "lookups:",
        "  P3-recipient: {INV-1042: ACME-ACCT-001}"
      ].join("\n")
      writeFileSync(path.join(dir, "ap.yaml"), yaml)
      const loaded = yield* loadPolicyFile("ap.yaml", dir)
      const d = (args: unknown) => decide(loaded.compiled, "send_payment", args, FULL)
      expect(d({ invoice_id: "INV-1042", amount: 48000, recipient_account: "ACME-ACCT-001" }).rule).toBe("P2-ceiling")
      expect(d({ invoice_id: "INV-1042", amount: 10, recipient_account: "X" }).rule).toBe("P3-recipient")
      expect(d({ invoice_id: "INV-1042", amount: 10, recipient_account: "ACME-ACCT-001" }).decision).toBe("allow")
    }))

  it.effect("load errors name the file and the problem", () =>
    Effect.gen(function* () {
      writeFileSync(path.join(dir, "bad.json"), "{ nope")
      writeFileSync(path.join(dir, "bad.yml"), "a: [")
      writeFileSync(path.join(dir, "invalid.json"), JSON.stringify({ ...apPolicyJson(), provider: "" }))
      for (const [file, text] of [
        ["missing.json", "policy file not found (resolved against the repo root"],
        ["bad.json", "not valid JSON"],
        ["bad.yml", "YAML syntax error"],
        ["invalid.json", "provider: policy has no provider"]
      ] as const) {
        const e = yield* Effect.flip(loadPolicyFile(file, dir))
        expect(e).toBeInstanceOf(PolicyLoadError)
        expect(e.message).toContain(path.join(dir, file))
        expect(e.message).toContain(text)
      }
    }))

  it("buildPolicy returns every issue as data", () => {
    const b = buildPolicy({})
    expect(Either.isLeft(b) && b.left.map((i) => i.path)).toEqual(["provider", "tool_scopes"])
  })
})
