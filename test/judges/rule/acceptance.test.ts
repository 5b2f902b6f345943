/**
 * Every case of toolgate.md §4.3 (extra acceptance cases) on the accounts-payable policy, with the
 * exact fail-closed messages of §1.6 where the case fires because it could not be checked.
 */
import { describe, expect, it } from "vitest"
import { parseScopesHeader } from "../../../judges/rule/evaluate.js"
import { apDecide } from "./support.js"

const pay = (over: Record<string, unknown>, omit: ReadonlyArray<string> = []) => {
  const args: Record<string, unknown> = { invoice_id: "INV-1042", amount: 1250.0, recipient_account: "ACME-ACCT-001", ...over }
  for (const k of omit) delete args[k]
  return args
}

const CV_P4_FIELD = "cannot verify: field is not a single plain value"

describe("§4.3 acceptance table", () => {
  it.each([
    // [case, tool, args, decision, rule, message]
    ['amount "1250" (string)', "send_payment", pay({ amount: "1250" }), "deny", "P2-ceiling", "cannot verify: amount is not a number, so it cannot be compared against the limit"],
    ["amount 5000 (equal passes)", "send_payment", pay({ amount: 5000 }), "allow", "P1-scope", ""],
    ["5000.01 with a bad recipient: the first rule in order", "send_payment", pay({ amount: 5000.01, recipient_account: "NEW-ACCT-9911" }), "deny", "P2-ceiling", "payment above the per-call ceiling"],
    ["recipient omitted", "send_payment", pay({}, ["recipient_account"]), "deny", "P3-recipient", "cannot verify: recipient_account is required by this rule and was not supplied"],
    ["recipientAccount misspelt", "send_payment", { ...pay({}, ["recipient_account"]), recipientAccount: "ATTACKER-ACCT-999" }, "deny", "P3-recipient", "cannot verify: recipient_account is required by this rule and was not supplied"],
    ["invoice INV-9999", "send_payment", pay({ invoice_id: "INV-9999" }), "deny", "P3-recipient", "cannot verify: no entry on file for INV-9999"],
    ["field Bank-Account", "update_vendor", { vendor_id: "ACME", field: "Bank-Account", value: "X" }, "escalate", "P4-sensitive", "bank account changes need a person"],
    ["field BANK_ACCOUNT", "update_vendor", { vendor_id: "ACME", field: "BANK_ACCOUNT", value: "X" }, "escalate", "P4-sensitive", "bank account changes need a person"],
    ["field bank-account", "update_vendor", { vendor_id: "ACME", field: "bank-account", value: "X" }, "escalate", "P4-sensitive", "bank account changes need a person"],
    ['field " bank_account"', "update_vendor", { vendor_id: "ACME", field: " bank_account", value: "X" }, "escalate", "P4-sensitive", CV_P4_FIELD],
    ['field ["bank_account"]', "update_vendor", { vendor_id: "ACME", field: ["bank_account"], value: "X" }, "escalate", "P4-sensitive", CV_P4_FIELD],
    ['field {"f": …}', "update_vendor", { vendor_id: "ACME", field: { f: "bank_account" }, value: "X" }, "escalate", "P4-sensitive", CV_P4_FIELD],
    ["field name", "update_vendor", { vendor_id: "ACME", field: "name", value: "Acme Ltd" }, "allow", "P1-scope", ""],
    ["field omitted", "update_vendor", { vendor_id: "ACME", value: "X" }, "escalate", "P4-sensitive", "cannot verify: field is required by this rule and was not supplied"],
    ["to: two comma-joined addresses", "send_email", { to: "a@evil.example,b@corp.example" }, "deny", "P5-email-domain", "cannot verify: to holds more than one value, or padding, so a suffix match is meaningless"],
    ["to: with \\n Bcc:", "send_email", { to: "a@evil.example\n Bcc: b@corp.example" }, "deny", "P5-email-domain", "cannot verify: to holds more than one value, or padding, so a suffix match is meaningless"],
    ["to: cfo@CORP.EXAMPLE (suffix is case-sensitive)", "send_email", { to: "cfo@CORP.EXAMPLE" }, "deny", "P5-email-domain", "email must stay inside corp.example"],
    ["to omitted", "send_email", { subject: "x" }, "deny", "P5-email-domain", "cannot verify: to is required by this rule and was not supplied"],
    ["to sent as recipient", "send_email", { recipient: "attacker@evil.example" }, "deny", "P5-email-domain", "cannot verify: to is required by this rule and was not supplied"],
    ["destination corp-internal://../x", "export_report", { destination: "corp-internal://../x" }, "deny", "P6-export-dest", "cannot verify: destination walks back out of the allowed prefix"],
    ["destination corp-internal://reports/q3", "export_report", { destination: "corp-internal://reports/q3" }, "allow", "P1-scope", ""],
    ["unknown tool wire_transfer", "wire_transfer", { amount: 1 }, "deny", "P1-scope", "tool is not in the provider's inventory"],
    ["empty arguments on list_invoices (forwarded as {})", "list_invoices", {}, "allow", "P1-scope", ""],
    ["null arguments are no arguments", "list_invoices", null, "allow", "P1-scope", ""],
    ['{"account": 12345678901234567890} on list_invoices', "list_invoices", JSON.parse('{"account":12345678901234567890}'), "allow", "P1-scope", ""]
  ] as const)("%s", (_, tool, args, decision, rule, message) => {
    const d = apDecide(tool, args)
    expect({ decision: d.decision, rule: d.rule, message: d.message }).toEqual({ decision, rule, message })
    expect(d.approval).toBe(decision === "escalate" ? "pending-human" : "automatic")
  })

  it("unknown tool: scope is empty", () => {
    expect(apDecide("wire_transfer", {}).scope).toBe("")
  })

  it('body [1,2] (the Go service answers 400): deny P0-arguments; so does a raw string or a number', () => {
    for (const args of [[1, 2], "{not json", 42, true]) {
      expect(apDecide("list_invoices", args)).toEqual({
        decision: "deny",
        rule: "P0-arguments",
        scope: "",
        message: "arguments are not a JSON object",
        approval: "automatic"
      })
    }
  })

  it.each([
    ["email:send", "list_invoices", "deny", "invoices:read"],
    ["*", "delete_invoice", "deny", "invoices:delete"],
    ["tools:invoke,invoices:read", "list_invoices", "allow", "invoices:read"],
    [" tools:invoke , invoices:read ,", "list_invoices", "allow", "invoices:read"]
  ] as const)("X-Scopes: %s on %s → %s", (header, tool, decision, scope) => {
    const d = apDecide(tool, { invoice_id: "INV-1042" }, { mode: "full", callerScopes: parseScopesHeader(header) })
    expect(d).toMatchObject({ decision, rule: "P1-scope", scope })
    if (decision === "deny") expect(d.message).toBe("scope not granted")
  })
})

describe("fail-closed cases of the library tests (failclosed_test.go)", () => {
  it("a ceiling denies every non-number amount", () => {
    for (const amount of ["999999", "9e99", "", null, [1], {}]) {
      expect(apDecide("send_payment", pay({ amount }))).toMatchObject({ decision: "deny", rule: "P2-ceiling" })
    }
  })

  it("a ceiling still compares numbers: under allows, over denies (9e99 is a number over any ceiling)", () => {
    expect(apDecide("send_payment", pay({ amount: 4999 })).decision).toBe("allow")
    for (const amount of [5001, 9e99]) expect(apDecide("send_payment", pay({ amount }))).toMatchObject({ decision: "deny", rule: "P2-ceiling", message: "payment above the per-call ceiling" })
  })

  it("a missing constrained argument never allows", () => {
    expect(apDecide("send_email", {}).decision).toBe("deny")
    expect(apDecide("send_payment", { invoice_id: "INV-1042", recipient_account: "ACME-ACCT-001" }).rule).toBe("P2-ceiling")
    expect(apDecide("export_report", { report: "q3" }).rule).toBe("P6-export-dest")
    expect(apDecide("update_vendor", { value: "GB00 XXXX" }).decision).toBe("escalate")
    expect(apDecide("send_payment", { amount: 4999.0 })).toMatchObject({
      rule: "P3-recipient",
      message: "cannot verify: recipient_account is required by this rule and was not supplied"
    })
  })

  it("recipient present but the invoice absent: the match_arg message", () => {
    expect(apDecide("send_payment", { amount: 1, recipient_account: "ACME-ACCT-001" }).message).toBe(
      "cannot verify: invoice_id was not supplied, so recipient_account cannot be checked against the table"
    )
  })

  it("sensitive_field resists spelling tricks; a different field passes", () => {
    for (const field of ["bank_account", "Bank_Account", "BANK_ACCOUNT", "bank-account", " bank_account", "bank_account ", "bank_account\n", ["bank_account"], { f: "bank_account" }]) {
      expect(apDecide("update_vendor", { field, value: "GB-ATTACKER" }).decision).toBe("escalate")
    }
    expect(apDecide("update_vendor", { field: "name", value: "Acme Ltd" }).decision).toBe("allow")
  })

  it("suffix and prefix refuse composite values; single values pass", () => {
    for (const to of [
      "attacker@evil.example,someone@corp.example",
      "attacker@evil.example, someone@corp.example",
      "attacker@evil.example>, <someone@corp.example",
      "attacker@evil.example\nBcc: x@corp.example"
    ]) {
      expect(apDecide("send_email", { to }).decision).toBe("deny")
    }
    for (const destination of ["corp-internal://../../../s3://attacker-bucket/dump", "corp-internal://x\nhttps://attacker.example"]) {
      expect(apDecide("export_report", { destination }).decision).toBe("deny")
    }
    expect(apDecide("send_email", { to: "someone@corp.example" }).decision).toBe("allow")
    expect(apDecide("export_report", { destination: "corp-internal://reports/q3" }).decision).toBe("allow")
  })

  it("an unverifiable decision says so; a real one carries the rule's message", () => {
    expect(apDecide("update_vendor", { vendor_id: "ACME", name: "Acme Ltd" }).message).toMatch(/^cannot verify:/)
    expect(apDecide("update_vendor", { field: "bank_account", value: "GB1" }).message).toBe("bank account changes need a person")
  })
})
