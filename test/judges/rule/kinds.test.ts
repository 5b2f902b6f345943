/**
 * The 13 rule kinds (toolgate.md §1.5), path semantics (§1.4), caller scopes (§1.3), the gotchas
 * (§1.7) and every fail-closed message (§1.6). The value-kind tables follow the library's
 * `values_test.go` cases named in §4.3.
 */
import { describe, expect, it } from "vitest"
import { decide } from "../../../judges/rule/evaluate.js"
import { ap, apDecide, built, FULL, onePolicy, outcome, ruleCase } from "./support.js"

type Case = readonly [name: string, args: string, want: "allow" | "deny" | "escalate" | "unverifiable"]

const runCases = (rule: Record<string, unknown>, cases: ReadonlyArray<Case>) => {
  for (const [name, args, want] of cases) {
    expect([name, outcome(ruleCase(rule, args))]).toEqual([name, want])
  }
}

describe("value kinds (values_test.go)", () => {
  it("floor", () =>
    runCases({ kind: "floor", arg: "qty", min: 1 }, [
      ["at floor", `{"qty": 1}`, "allow"],
      ["below", `{"qty": 0}`, "deny"],
      ["negative", `{"qty": -5}`, "deny"],
      ["quoted number", `{"qty": "7"}`, "unverifiable"],
      ["absent", `{}`, "unverifiable"]
    ]))

  it("floor of 0 is legal", () => runCases({ kind: "floor", arg: "qty", min: 0 }, [["zero", `{"qty": 0}`, "allow"], ["below", `{"qty": -0.5}`, "deny"]]))

  it("denylist ignores case", () =>
    runCases({ kind: "denylist", arg: "acct", denied: ["NEW-ACCT-9911"] }, [
      ["other", `{"acct": "ACME-ACCT-001"}`, "allow"],
      ["denied", `{"acct": "NEW-ACCT-9911"}`, "deny"],
      ["denied, other case", `{"acct": "new-acct-9911"}`, "deny"],
      ["padded", `{"acct": " NEW-ACCT-9911"}`, "unverifiable"],
      ["two values", `{"acct": "A,NEW-ACCT-9911"}`, "unverifiable"]
    ]))

  it("pattern matches the whole value", () =>
    runCases({ kind: "pattern", arg: "id", pattern: "ACME-ACCT-\\d{3}" }, [
      ["matches", `{"id": "ACME-ACCT-001"}`, "allow"],
      ["prefix only", `{"id": "ACME-ACCT-0012"}`, "deny"],
      ["embedded", `{"id": "xACME-ACCT-001"}`, "deny"],
      ["list", `{"id": ["ACME-ACCT-001"]}`, "unverifiable"]
    ]))

  it("pattern alternation is anchored as a whole (not just its first branch)", () =>
    runCases({ kind: "pattern", arg: "id", pattern: "a|b" }, [
      ["a", `{"id": "a"}`, "allow"],
      ["b", `{"id": "b"}`, "allow"],
      ["ab", `{"id": "ab"}`, "deny"],
      ["xb", `{"id": "xb"}`, "deny"]
    ]))

  it("domain", () =>
    runCases({ kind: "domain", arg: "to", allowed: ["corp.example"] }, [
      ["email", `{"to": "cfo@corp.example"}`, "allow"],
      ["email, subdomain", `{"to": "cfo@eu.corp.example"}`, "allow"],
      ["email, upper case", `{"to": "CFO@CORP.EXAMPLE"}`, "allow"],
      ["url", `{"to": "https://files.corp.example/x"}`, "allow"],
      ["bare host", `{"to": "corp.example"}`, "allow"],
      ["trailing dot", `{"to": "cfo@corp.example."}`, "allow"],
      ["url with port", `{"to": "https://corp.example:8443/x"}`, "allow"],
      ["lookalike suffix", `{"to": "cfo@evilcorp.example"}`, "deny"],
      ["lookalike parent", `{"to": "cfo@corp.example.evil.example"}`, "deny"],
      ["url userinfo trick", `{"to": "https://corp.example@evil.example/x"}`, "deny"],
      ["two @", `{"to": "a@corp.example@evil.example"}`, "unverifiable"],
      ["homoglyph", `{"to": "cfo@corp.ex\u0430mple"}`, "unverifiable"],
      ["url without host", `{"to": "file:///etc/passwd"}`, "unverifiable"],
      ["url with a bad port", `{"to": "https://corp.example:x/"}`, "unverifiable"]
    ]))

  it("max_items", () => {
    runCases({ kind: "max_items", arg: "to", max: 2 }, [
      ["two", `{"to": ["a", "b"]}`, "allow"],
      ["three", `{"to": ["a", "b", "c"]}`, "deny"],
      ["lone value", `{"to": "a"}`, "allow"],
      ["null", `{"to": null}`, "unverifiable"],
      ["absent", `{}`, "unverifiable"]
    ])
    runCases({ kind: "max_items", arg: "items[*].id", max: 1 }, [
      ["one via path", `{"items": [{"id": 1}]}`, "allow"],
      ["two via path", `{"items": [{"id": 1}, {"id": 2}]}`, "deny"]
    ])
  })

  it("each applies a single-value rule to every element; without it a list fails closed", () => {
    const rule = { kind: "domain", arg: "to", allowed: ["corp.example"], each: true }
    runCases(rule, [
      ["all inside", `{"to": ["a@corp.example", "b@eu.corp.example"]}`, "allow"],
      ["one outside", `{"to": ["a@corp.example", "x@evil.example"]}`, "deny"],
      ["lone value", `{"to": "a@corp.example"}`, "allow"],
      ["empty list", `{"to": []}`, "allow"]
    ])
    runCases({ ...rule, each: false }, [["list without each", `{"to": ["a@corp.example"]}`, "unverifiable"]])
  })

  it("nested paths", () => {
    runCases({ kind: "ceiling", arg: "payment.amount", max: 100 }, [
      ["inside", `{"payment": {"amount": 50}}`, "allow"],
      ["over", `{"payment": {"amount": 500}}`, "deny"],
      ["missing field", `{"payment": {"currency": "USD"}}`, "unverifiable"],
      ["not an object", `{"payment": 500}`, "unverifiable"]
    ])
    runCases({ kind: "ceiling", arg: "items[*].amount", max: 100 }, [
      ["every item inside", `{"items": [{"amount": 10}, {"amount": 90}]}`, "allow"],
      ["one item over", `{"items": [{"amount": 10}, {"amount": 900}]}`, "deny"],
      ["one item without it", `{"items": [{"amount": 10}, {"note": "x"}]}`, "unverifiable"],
      ["not a list", `{"items": {"amount": 10}}`, "unverifiable"],
      ["empty list: nothing to check", `{"items": []}`, "allow"]
    ])
    runCases({ kind: "ceiling", arg: "a.b", max: 1 }, [["exact name first", `{"a.b": 5}`, "deny"]])
  })

  it("compare", () => {
    runCases({ kind: "compare", arg: "refund", op: "le", match_arg: "charge" }, [
      ["less", `{"refund": 10, "charge": 20}`, "allow"],
      ["equal", `{"refund": 20, "charge": 20}`, "allow"],
      ["more", `{"refund": 30, "charge": 20}`, "deny"],
      ["text", `{"refund": "30", "charge": 20}`, "unverifiable"],
      ["other absent", `{"refund": 30}`, "unverifiable"]
    ])
    runCases({ kind: "compare", arg: "from", op: "ne", match_arg: "to" }, [
      ["different", `{"from": "A-1", "to": "B-2"}`, "allow"],
      ["same", `{"from": "A-1", "to": "A-1"}`, "deny"]
    ])
    runCases({ kind: "compare", arg: "order.total", op: "eq", match_arg: "payment.amount" }, [
      ["nested equal", `{"order": {"total": 5}, "payment": {"amount": 5}}`, "allow"],
      ["nested differ", `{"order": {"total": 5}, "payment": {"amount": 6}}`, "deny"]
    ])
    for (const [op, a, b, want] of [
      ["lt", 1, 2, "allow"],
      ["lt", 2, 2, "deny"],
      ["gt", 3, 2, "allow"],
      ["ge", 2, 2, "allow"],
      ["ge", 1, 2, "deny"],
      ["eq", 2, 2.0, "allow"],
      ["ne", 2, 3, "allow"]
    ] as const) {
      expect(outcome(ruleCase({ kind: "compare", arg: "a", op, match_arg: "b" }, JSON.stringify({ a, b })))).toBe(want)
    }
    // eq on a number and a string compares the text of single plain values
    expect(outcome(ruleCase({ kind: "compare", arg: "a", op: "eq", match_arg: "b" }, `{"a": 5, "b": "5"}`))).toBe("allow")
  })

  it("allowlist: exact, case-sensitive; free text with a space can never pass", () =>
    runCases({ kind: "allowlist", arg: "v", allowed: ["red", "green", "two words"] }, [
      ["listed", `{"v": "red"}`, "allow"],
      ["other case", `{"v": "Red"}`, "deny"],
      ["not listed", `{"v": "blue"}`, "deny"],
      ["listed but has a space", `{"v": "two words"}`, "unverifiable"],
      ["a number's text", `{"v": 1}`, "deny"]
    ]))

  it("suffix and prefix are case-sensitive", () => {
    runCases({ kind: "suffix", arg: "to", allowed: ["@corp.example"] }, [
      ["inside", `{"to": "cfo@corp.example"}`, "allow"],
      ["upper case", `{"to": "cfo@CORP.EXAMPLE"}`, "deny"]
    ])
    runCases({ kind: "prefix", arg: "d", allowed: ["corp-internal://"] }, [
      ["inside", `{"d": "corp-internal://a/b"}`, "allow"],
      ["upper case", `{"d": "CORP-INTERNAL://a"}`, "deny"],
      ["dot-dot anywhere", `{"d": "corp-internal://a..b"}`, "unverifiable"]
    ])
  })

  it("tool kind: fires whenever it applies, by tool or by tag (tags_test.go)", () => {
    const p = built({
      provider: "p",
      granted_scopes: ["files", "pay"],
      tool_scopes: { read_file: "files", delete_file: "files", wipe_disk: "files", refund: "pay", payout: "pay" },
      tool_tags: { delete_file: ["destructive"], wipe_disk: ["destructive"], refund: ["money"], payout: ["money"] },
      rules: [
        { id: "T1-destructive", tag: "destructive", kind: "tool", effect: "escalate", message: "destructive actions need a person" },
        { id: "T2-money-ceiling", tag: "money", kind: "ceiling", arg: "amount", max: 100, message: "over the per-call limit" }
      ]
    }).compiled
    for (const [tool, args, decision, rule] of [
      ["read_file", { path: "/tmp/x" }, "allow", "P1-scope"],
      ["delete_file", { path: "/tmp/x" }, "escalate", "T1-destructive"],
      ["wipe_disk", null, "escalate", "T1-destructive"],
      ["refund", { amount: 50 }, "allow", "P1-scope"],
      ["payout", { amount: 500 }, "deny", "T2-money-ceiling"],
      ["refund", {}, "deny", "T2-money-ceiling"]
    ] as const) {
      expect([tool, decide(p, tool, args, FULL)]).toMatchObject([tool, { decision, rule }])
    }
    const byName = onePolicy({ id: "T3", kind: "tool" })
    expect(decide(byName, "t", {}, FULL)).toMatchObject({ decision: "deny", rule: "T3" })
  })

  it("effect escalate on a value kind gives escalate / pending-human, also when it cannot verify", () => {
    const p = onePolicy({ kind: "ceiling", arg: "n", max: 1, effect: "escalate", message: "big" })
    expect(decide(p, "t", { n: 2 }, FULL)).toEqual({ decision: "escalate", rule: "R", scope: "s", message: "big", approval: "pending-human" })
    expect(decide(p, "t", {}, FULL)).toMatchObject({ decision: "escalate", approval: "pending-human", message: "cannot verify: n is required by this rule and was not supplied" })
  })
})

describe("fail-closed messages (§1.6 and the source's other reasons)", () => {
  it.each([
    [{ kind: "ceiling", arg: "amount", max: 1 }, `{"amount": "1"}`, "amount is not a number, so it cannot be compared against the limit"],
    [{ kind: "floor", arg: "amount", min: 1 }, `{"amount": "1"}`, "amount is not a number, so it cannot be compared against the floor"],
    [{ kind: "allowlist", arg: "v", allowed: ["a"] }, `{"v": "a b"}`, "v is not a single plain value"],
    [{ kind: "denylist", arg: "v", denied: ["a"] }, `{"v": null}`, "v is not a single plain value"],
    [{ kind: "pattern", arg: "v", pattern: "a" }, `{"v": {"x": 1}}`, "v is not a single plain value"],
    [{ kind: "domain", arg: "v", allowed: ["a.example"] }, `{"v": "x;y"}`, "v is not a single plain value"],
    [{ kind: "sensitive_field", arg: "v", field: "f" }, `{"v": ["f"]}`, "v is not a single plain value"],
    [{ kind: "suffix", arg: "to", allowed: ["@a"] }, `{"to": "x@a, y@a"}`, "to holds more than one value, or padding, so a suffix match is meaningless"],
    [{ kind: "prefix", arg: "d", allowed: ["a://"] }, `{"d": " a://x"}`, "d holds more than one value, or padding, so a prefix match is meaningless"],
    [{ kind: "prefix", arg: "destination", allowed: ["a://"] }, `{"destination": "a://../b"}`, "destination walks back out of the allowed prefix"],
    [{ kind: "ceiling", arg: "p.amount", max: 1 }, `{"p": 5}`, "p.amount does not lead to a value in this call"],
    [{ kind: "ceiling", arg: "p.amount", max: 1 }, `{"p": {}}`, "p.amount is required by this rule and was not supplied"],
    [{ kind: "ceiling", arg: "items[*].amount", max: 1 }, `{"items": 3}`, "items[*].amount expects a list at items"],
    [{ kind: "max_items", arg: "to", max: 1 }, `{"to": null}`, "to is null, so its items cannot be counted"],
    [{ kind: "domain", arg: "to", allowed: ["a.example"] }, `{"to": "x@a.example@b.example"}`, "to has more than one @, so its domain is ambiguous"],
    [{ kind: "domain", arg: "to", allowed: ["a.example"] }, `{"to": "file:///etc/passwd"}`, "to is not a URL with a host"],
    [{ kind: "domain", arg: "to", allowed: ["a.example"] }, `{"to": "x@\u0430.example"}`, "to has no plain ASCII host"],
    [{ kind: "domain", arg: "to", allowed: ["a.example"] }, `{"to": "x@"}`, "to has no plain ASCII host"],
    [{ kind: "compare", arg: "a", op: "lt", match_arg: "b" }, `{"a": "1", "b": 2}`, "a and b are not both numbers, so they cannot be ordered"],
    [{ kind: "compare", arg: "a", op: "eq", match_arg: "b" }, `{"a": "x y", "b": "x"}`, "a or b is not a single plain value"],
    [{ kind: "compare", arg: "a", op: "eq", match_arg: "b" }, `{"b": 1}`, "a is required by this rule and was not supplied"],
    [{ kind: "compare", arg: "a", op: "eq", match_arg: "b" }, `{"a": 1}`, "b was not supplied, so a cannot be compared with it"]
  ] as const)("%j on %s", (rule, args, why) => {
    const d = ruleCase(rule, args)
    expect(d.decision).toBe("deny")
    expect(d.message).toBe(`cannot verify: ${why}`)
  })

  it("lookup: the three reasons, and no single-plain-value test", () => {
    const p = built({
      provider: "p",
      granted_scopes: ["s"],
      tool_scopes: { t: "s" },
      rules: [{ id: "L", tool: "t", kind: "lookup", arg: "acct", match_arg: "inv", message: "wrong account" }],
      lookups: { L: { "INV-1": "A 1", "1042": "ACME", "<nil>": "NIL" } }
    }).compiled
    const d = (args: unknown) => decide(p, "t", args, FULL)
    expect(d({ inv: "INV-1" }).message).toBe("cannot verify: acct is required by this rule and was not supplied")
    expect(d({ acct: "A 1" }).message).toBe("cannot verify: inv was not supplied, so acct cannot be checked against the table")
    expect(d({ acct: "A 1", inv: "INV-9" }).message).toBe("cannot verify: no entry on file for INV-9")
    expect(d({ acct: "A 1", inv: "INV-1" }).decision).toBe("allow") // a value with a space is fine for lookup
    expect(d({ acct: "B", inv: "INV-1" })).toMatchObject({ decision: "deny", message: "wrong account" })
    // compared as text (§1.7): the number 1042 finds key "1042"; null reads as Go's <nil>
    expect(d({ acct: "ACME", inv: 1042 }).decision).toBe("allow")
    expect(d({ acct: "NIL", inv: null }).decision).toBe("allow")
    expect(d({ acct: "ACME", inv: ["1042"] }).message).toBe("cannot verify: no entry on file for [1042]")
  })
})

describe("caller scopes (X-Scopes narrowing, §1.3)", () => {
  const star = built({ provider: "p", granted_scopes: ["*"], tool_scopes: { a: "sa", b: "sb" }, rules: [] }).compiled
  const none = built({ provider: "p", tool_scopes: { a: "sa" } }).compiled

  it("no header: the policy grant stands", () => {
    expect(apDecide("list_invoices", {}, { mode: "full", callerScopes: null }).decision).toBe("allow")
  })
  it("narrows but never widens", () => {
    for (const scopes of [["*"], ["invoices:delete"], ["*", "invoices:delete"]]) {
      expect(apDecide("delete_invoice", {}, { mode: "full", callerScopes: scopes })).toMatchObject({ decision: "deny", scope: "invoices:delete" })
    }
    expect(apDecide("send_payment", { amount: 1, invoice_id: "INV-1042", recipient_account: "ACME-ACCT-001" }, { mode: "full", callerScopes: ["invoices:read"] })).toMatchObject({
      decision: "deny",
      rule: "P1-scope",
      message: "scope not granted"
    })
    expect(apDecide("list_invoices", {}, { mode: "full", callerScopes: ["invoices:read"] }).decision).toBe("allow")
    expect(apDecide("list_invoices", {}, { mode: "full", callerScopes: ["*"] }).decision).toBe("allow")
  })
  it("a gateway scope alone is not a tool scope", () => {
    expect(apDecide("list_invoices", {}, { mode: "full", callerScopes: ["tools:invoke"] }).decision).toBe("deny")
  })
  it("present but empty narrows to nothing", () => {
    expect(apDecide("list_invoices", {}, { mode: "scope", callerScopes: [] })).toMatchObject({ decision: "deny", message: "scope not granted" })
  })
  it("a policy granting * uses the caller's list as is", () => {
    expect(decide(star, "a", {}, FULL).decision).toBe("allow")
    expect(decide(star, "a", {}, { mode: "full", callerScopes: ["sa"] }).decision).toBe("allow")
    expect(decide(star, "b", {}, { mode: "full", callerScopes: ["sa"] }).decision).toBe("deny")
    expect(decide(star, "b", {}, { mode: "full", callerScopes: ["*"] }).decision).toBe("allow")
    expect(decide(star, "b", {}, { mode: "full", callerScopes: [] }).decision).toBe("deny")
  })
  it("no granted_scopes: every tool is denied on scope", () => {
    expect(decide(none, "a", {}, FULL)).toMatchObject({ decision: "deny", rule: "P1-scope", scope: "sa" })
  })
  it("scope mode stops after the scope check, whatever the values", () => {
    expect(apDecide("send_payment", { amount: "lots" }, { mode: "scope" })).toMatchObject({ decision: "allow", rule: "P1-scope", scope: "payments:send" })
    expect(apDecide("wire_transfer", {}, { mode: "scope" })).toMatchObject({ decision: "deny", scope: "" })
  })
})

describe("gotchas (§1.7)", () => {
  it("ceiling without max denies every positive amount", () => {
    const p = onePolicy({ kind: "ceiling", arg: "amount" })
    expect(decide(p, "t", { amount: 0 }, FULL).decision).toBe("allow")
    expect(decide(p, "t", { amount: 0.01 }, FULL).decision).toBe("deny")
  })

  it("a rule whose tool is misspelt never applies", () => {
    const p = built({
      provider: "p",
      granted_scopes: ["s"],
      tool_scopes: { send_payment: "s" },
      rules: [{ id: "R", tool: "send_paymnet", kind: "ceiling", arg: "amount", max: 1 }]
    }).compiled
    expect(decide(p, "send_payment", { amount: 1e9 }, FULL).decision).toBe("allow")
  })

  it("a global rule (no tool, no tag) denies every tool that lacks its argument", () => {
    const p = built({
      provider: "p",
      granted_scopes: ["s"],
      tool_scopes: { pay: "s", read: "s" },
      rules: [{ id: "G", kind: "ceiling", arg: "amount", max: 10 }]
    }).compiled
    expect(decide(p, "pay", { amount: 5 }, FULL).decision).toBe("allow")
    expect(decide(p, "read", { path: "/x" }, FULL)).toMatchObject({
      decision: "deny",
      rule: "G",
      message: "cannot verify: amount is required by this rule and was not supplied"
    })
  })

  it("lookup compares text: invoice 1042 matches key \"1042\"; an amount 1.1 does not match \"1.10\"", () => {
    const p = built({
      provider: "p",
      granted_scopes: ["s"],
      tool_scopes: { t: "s" },
      rules: [{ id: "L", tool: "t", kind: "lookup", arg: "amount", match_arg: "inv" }],
      lookups: { L: { "1042": "1.10" } }
    }).compiled
    expect(decide(p, "t", { inv: 1042, amount: "1.10" }, FULL).decision).toBe("allow")
    expect(decide(p, "t", { inv: 1042, amount: 1.1 }, FULL).decision).toBe("deny")
  })

  it("number text is JS's shortest form: 1250.0 arrives as 1250 (the Go HTTP path would keep 1250.0)", () => {
    const p = built({
      provider: "p",
      granted_scopes: ["s"],
      tool_scopes: { t: "s" },
      rules: [{ id: "L", tool: "t", kind: "lookup", arg: "amount", match_arg: "inv" }],
      lookups: { L: { "INV-1": "1250" } }
    }).compiled
    // documented difference: Go over HTTP compares "1250.0" with "1250" and fires
    expect(decide(p, "t", JSON.parse(`{"inv": "INV-1", "amount": 1250.0}`), FULL).decision).toBe("allow")
  })

  it("a number out of float64 range is not a number (Go rejects the literal; JSON.parse gives Infinity)", () => {
    const floor = onePolicy({ kind: "floor", arg: "n", min: 0 })
    expect(decide(floor, "t", JSON.parse(`{"n": 1e400}`), FULL).message).toBe("cannot verify: n is not a number, so it cannot be compared against the floor")
    const ceiling = onePolicy({ kind: "ceiling", arg: "n", max: 0 })
    expect(decide(ceiling, "t", JSON.parse(`{"n": -1e400}`), FULL).decision).toBe("deny")
  })

  it("first rule in policy order decides across tool, tag and global rules", () => {
    const p = built({
      provider: "p",
      granted_scopes: ["s"],
      tool_scopes: { t: "s" },
      tool_tags: { t: ["x"] },
      rules: [
        { id: "A", kind: "floor", arg: "n", min: 0 },
        { id: "B", tag: "x", kind: "ceiling", arg: "n", max: 10 },
        { id: "C", tool: "t", kind: "ceiling", arg: "n", max: 5 }
      ]
    }).compiled
    expect(decide(p, "t", { n: -1 }, FULL).rule).toBe("A")
    expect(decide(p, "t", { n: 11 }, FULL).rule).toBe("B")
    expect(decide(p, "t", { n: 7 }, FULL).rule).toBe("C")
    expect(decide(p, "t", { n: 3 }, FULL).rule).toBe("P1-scope")
  })

  it("argument names are exact keys: no prototype properties leak in", () => {
    const p = onePolicy({ kind: "ceiling", arg: "constructor", max: 1 })
    expect(decide(p, "t", {}, FULL).message).toBe("cannot verify: constructor is required by this rule and was not supplied")
    expect(decide(ap(), "toString", {}, FULL).message).toBe("tool is not in the provider's inventory")
  })

  it("returned decisions are shared and frozen", () => {
    const d = apDecide("list_invoices", {})
    expect(Object.isFrozen(d)).toBe(true)
    expect(apDecide("get_invoice", {})).not.toBe(d)
    expect(apDecide("list_invoices", { x: 1 })).toBe(d)
  })
})
