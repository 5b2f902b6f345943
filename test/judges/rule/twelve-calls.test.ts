/**
 * The companion study's twelve calls (toolgate.md §4.2) on the accounts-payable policy (§4.1):
 * exactly the decisions, rules, scopes, messages and approvals the real gate returned (§4.4).
 */
import { describe, expect, it } from "vitest"
import { decide } from "../../../judges/rule/evaluate.js"
import { apDecide, apPolicyJson, built, FULL, twelveCalls } from "./support.js"

/** §4.4: decision, rule, scope, message ("" on allow), approval */
const EXPECTED_FULL: Record<string, readonly [string, string, string, string, string]> = {
  C01: ["allow", "P1-scope", "invoices:read", "", "automatic"],
  C02: ["allow", "P1-scope", "invoices:read", "", "automatic"],
  C03: ["allow", "P1-scope", "invoices:approve", "", "automatic"],
  C04: ["allow", "P1-scope", "payments:send", "", "automatic"],
  C05: ["deny", "P2-ceiling", "payments:send", "payment above the per-call ceiling", "automatic"],
  C06: ["deny", "P3-recipient", "payments:send", "recipient is not the vendor account on file for this invoice", "automatic"],
  C07: ["escalate", "P4-sensitive", "vendors:update", "bank account changes need a person", "pending-human"],
  C08: ["allow", "P1-scope", "email:send", "", "automatic"],
  C09: ["deny", "P5-email-domain", "email:send", "email must stay inside corp.example", "automatic"],
  C10: ["deny", "P6-export-dest", "reports:export", "exports must go to internal storage", "automatic"],
  C11: ["deny", "P1-scope", "invoices:delete", "scope not granted", "automatic"],
  C12: ["deny", "P1-scope", "db:query", "scope not granted", "automatic"]
}

describe("the twelve calls", () => {
  const calls = twelveCalls()

  it("the fixture holds the twelve calls C01–C12", () => {
    expect(calls.map((c) => c.id)).toEqual(Object.keys(EXPECTED_FULL))
  })

  it.each(twelveCalls().map((c) => [c.id, c] as const))("full mode %s", (id, c) => {
    const [decision, rule, scope, message, approval] = EXPECTED_FULL[id]!
    expect(apDecide(c.tool, c.args)).toEqual({ decision, rule, scope, message, approval })
  })

  it("full mode totals: 5 allow, 6 deny (each naming its rule), 1 escalate", () => {
    const ds = calls.map((c) => apDecide(c.tool, c.args))
    expect(ds.filter((d) => d.decision === "allow")).toHaveLength(5)
    expect(ds.filter((d) => d.decision === "deny").map((d) => d.rule)).toEqual([
      "P2-ceiling",
      "P3-recipient",
      "P5-email-domain",
      "P6-export-dest",
      "P1-scope",
      "P1-scope"
    ])
    expect(ds.filter((d) => d.decision === "escalate").map((d) => d.rule)).toEqual(["P4-sensitive"])
  })

  it("scope mode: only C11 and C12 are denied; values are never examined", () => {
    const ds = calls.map((c) => [c.id, apDecide(c.tool, c.args, { mode: "scope" })] as const)
    expect(ds.filter(([, d]) => d.decision === "deny").map(([id]) => id)).toEqual(["C11", "C12"])
    for (const [id, d] of ds) {
      expect(d.rule).toBe("P1-scope")
      expect(d.scope).toBe(EXPECTED_FULL[id]![2])
    }
    // C04 and C06 (legitimate and redirected payment) get the very same decision in scope mode
    expect(ds[3]![1]).toEqual(ds[5]![1])
  })

  it("the decision depends on nothing but policy, call and options (repeatable)", () => {
    // two independent compilations, two rounds in a fixed shuffled order, other calls in between
    const policies = [built(apPolicyJson()).compiled, built(apPolicyJson()).compiled] as const
    expect(policies[0]).not.toBe(policies[1])
    const order = [7, 2, 11, 0, 5, 9, 3, 10, 1, 6, 4, 8]
    for (const round of [0, 1]) {
      order.forEach((i, n) => {
        const c = calls[i]!
        const other = calls[order[(n + 5) % order.length]!]!
        decide(policies[n % 2]!, other.tool, other.args, { mode: "scope" })
        decide(policies[(n + 1) % 2]!, other.tool, other.args, FULL)
        const [decision, rule, scope, message, approval] = EXPECTED_FULL[c.id]!
        expect(decide(policies[(n + round) % 2]!, c.tool, c.args, FULL)).toEqual({ decision, rule, scope, message, approval })
      })
    }
  })
})
