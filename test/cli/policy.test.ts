/**
 * `vetobench policy skeleton` and `vetobench policy lint` as users run them (in this process:
 * test/support/cli.ts), on the real Agent-SafetyBench data in ../shared/benchmarks/agent-safetybench/
 * (read in place, never copied) and on the fixture policies.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { runCliInProcess } from "../support/cli.js"

const ASB = path.resolve("../shared/benchmarks/agent-safetybench")
const DATA = path.join(ASB, "released_data.json")
const FIXTURES = path.resolve("test/fixtures/policies")
const tmp = () => mkdtempSync(path.join(tmpdir(), "vetobench-policy-"))

interface SkeletonPolicy {
  readonly provider: string
  readonly granted_scopes: ReadonlyArray<string>
  readonly tool_scopes: Record<string, string>
  readonly rules: ReadonlyArray<unknown>
}
interface Catalogue {
  readonly cases: number
  readonly environments: number
  readonly tools: number
  readonly tool_names: number
  readonly shared_names: number
  readonly entries: ReadonlyArray<{ readonly key: string; readonly environment: string; readonly tool: string; readonly shared: boolean; readonly policy_entry: string; readonly cases: number; readonly description: string; readonly parameters: unknown }>
}

describe.skipIf(!existsSync(DATA))("vetobench policy skeleton --benchmark agent-safetybench (real data)", () => {
  it("writes a skeleton policy (every tool granted, no rules) and a catalogue keyed <Env>.<tool>; prints the 159 shared names", async () => {
    const dir = tmp()
    const out = path.join(dir, "asb.json")
    const r = await runCliInProcess(["policy", "skeleton", "--benchmark", "agent-safetybench", "--data", DATA, "--out", out])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    const lines = r.stdout.trim().split("\n")
    expect(lines[0]).toBe(`wrote ${out}: skeleton policy with 2172 tool entries (1702 tool names, plus <Env>.<tool> for each environment of a shared name), every scope granted, no rules`)
    expect(lines[1]).toBe(`wrote ${path.join(dir, "asb.catalogue.json")}: 2013 tools of 349 environments offered by 2000 cases, keyed <Env>.<tool>`)
    expect(lines[2]).toMatch(/^159 tool names occur in more than one environment \(e\.g\. /)

    const policy = JSON.parse(readFileSync(out, "utf8")) as SkeletonPolicy
    expect(policy.provider).toBe("agent-safetybench")
    expect(policy.granted_scopes).toEqual(["*"])
    expect(policy.rules).toEqual([])
    expect(Object.keys(policy.tool_scopes)).toHaveLength(2172)
    expect(policy.tool_scopes.send_email).toBe("shared")
    expect(policy.tool_scopes["Email.send_email"]).toBe("Email")
    expect(policy.tool_scopes["PhishingSimulation.send_email"]).toBe("PhishingSimulation")
    expect(policy.tool_scopes.search_emails).toBe("Email")
    expect(policy.tool_scopes["Email.search_emails"]).toBeUndefined()

    const cat = JSON.parse(readFileSync(path.join(dir, "asb.catalogue.json"), "utf8")) as Catalogue
    expect([cat.cases, cat.environments, cat.tools, cat.tool_names, cat.shared_names]).toEqual([2000, 349, 2013, 1702, 159])
    expect(new Set(cat.entries.map((e) => e.key)).size).toBe(2013)
    const sendEmail = cat.entries.filter((e) => e.tool === "send_email")
    expect(sendEmail.length).toBeGreaterThan(1)
    expect(new Set(sendEmail.map((e) => e.description)).size).toBeGreaterThan(1)
    const email = cat.entries.find((e) => e.key === "Email.send_email")!
    expect(email).toMatchObject({ environment: "Email", tool: "send_email", shared: true, policy_entry: "Email.send_email" })
    expect(email.cases).toBeGreaterThan(0)
    expect(email.parameters).toMatchObject({ type: "object", required: ["receiver", "content"] })
    expect(cat.entries.find((e) => e.key === "Email.search_emails")).toMatchObject({ shared: false, policy_entry: "search_emails" })
    // every policy entry named by the catalogue is in the policy
    for (const e of cat.entries) expect(policy.tool_scopes[e.policy_entry]).toBeDefined()

    // and the skeleton lints clean
    const lint = await runCliInProcess(["policy", "lint", out])
    expect(lint.code).toBe(0)
    expect(lint.stdout).toMatch(/: ok \(sha256:[0-9a-f]{16}\): provider agent-safetybench, 2172 tools, 0 rules; 0 warnings\n$/)
  })

  it("--split narrows to the split's cases; YAML by extension; --catalogue names the catalogue", async () => {
    const dir = tmp()
    const splitFile = path.join(dir, "split.json")
    writeFileSync(splitFile, JSON.stringify({ seed: 0, dev: [0], test: [1, 2, 3], note: "" }))
    const out = path.join(dir, "small.yaml")
    const cat = path.join(dir, "tools.json")
    const r = await runCliInProcess(["policy", "skeleton", "--benchmark", "agent-safetybench", "--data", DATA, "--split", splitFile, "--out", out, "--catalogue", cat])
    expect(r.code).toBe(0)
    const c = JSON.parse(readFileSync(cat, "utf8")) as Catalogue
    expect(c.cases).toBe(4)
    expect(c.environments).toBeLessThan(10)
    expect(readFileSync(out, "utf8")).toMatch(/^provider: agent-safetybench\ngranted_scopes:\n {2}- "\*"\n/)
    expect((await runCliInProcess(["policy", "lint", out])).code).toBe(0)
  })

  it("without --data it needs a settings file; a missing data file is one line, exit 1", async () => {
    const r = await runCliInProcess(["policy", "skeleton", "--benchmark", "agent-safetybench", "-c", "/nonexistent/v.yaml"])
    expect(r.code).toBe(1)
    expect(r.stderr.trim().split("\n")).toHaveLength(1)
    expect(r.stderr).toContain("give --data FILE")
    const m = await runCliInProcess(["policy", "skeleton", "--benchmark", "agent-safetybench", "--data", "/nonexistent/released_data.json", "--out", path.join(tmp(), "x.json")])
    expect(m.code).toBe(1)
    expect(m.stderr.trim()).toBe("vetobench: /nonexistent/released_data.json: not found")
    expect((await runCliInProcess(["policy", "skeleton", "--benchmark", "tau-bench", "--data", DATA])).code).toBe(2)
  })
})

describe("vetobench policy lint", () => {
  it("the fixture and example policies are clean (exit 0, no warnings)", async () => {
    for (const f of ["accounts-payable.json", "refunds.yaml", "workspace/01-readme-read.json", "workspace/08-read-needs-authorization.json"]) {
      const r = await runCliInProcess(["policy", "lint", path.join(FIXTURES, f)])
      expect(r.code, f).toBe(0)
      expect(r.stdout, f).toMatch(/; 0 warnings\n$/)
    }
    const ex = await runCliInProcess(["policy", "lint", "configs/policies/workspace-assistant.yaml"])
    expect(ex.code).toBe(0)
    expect(ex.stdout).toMatch(/vetobench: \d+ tool roles, 1 requires, 3 trajectory rules; 0 warnings\n$/)
  })

  it("warnings are printed and exit 0", async () => {
    const dir = tmp()
    const file = path.join(dir, "p.json")
    writeFileSync(
      file,
      JSON.stringify({
        provider: "p",
        granted_scopes: ["s"],
        tool_scopes: { pay: "s", run: "s" },
        rules: [
          { id: "C", tool: "pay", kind: "ceiling", arg: "amount", message: "too much" },
          { id: "G", kind: "ceiling", arg: "amount", max: 5, message: "m" },
          { id: "T", tool: "pai", kind: "tool", message: "m" }
        ],
        rulez: [],
        vetobench: { tools: { run: { arg: "command", class: "command" } }, commands: { allow: ["bash"] } }
      })
    )
    const r = await runCliInProcess(["policy", "lint", file])
    expect(r.code).toBe(0)
    expect(r.stderr).toBe("")
    expect(r.stdout).toContain('warning: rulez: unknown top-level key "rulez" is ignored (the Go gate ignores it too); did you mean "rules"?')
    expect(r.stdout).toContain("warning: rule C: ceiling without max: max defaults to 0, so every positive amount is denied")
    expect(r.stdout).toContain("warning: rule G: has neither tool nor tag, so it applies to every tool")
    expect(r.stdout).toContain('warning: rule T: never applies: tool "pai" is not in tool_scopes')
    expect(r.stdout).toContain('warning: vetobench.commands.allow: "bash" allows bash, which runs whatever follows it')
    expect(r.stdout).toMatch(/: ok \(sha256:[0-9a-f]{16}\): provider p, 2 tools, 3 rules; vetobench: 1 tool roles, 0 requires, 0 trajectory rules; 5 warnings\n$/)
  })

  it("errors are listed on stderr and exit 1", async () => {
    const dir = tmp()
    const file = path.join(dir, "bad.json")
    writeFileSync(
      file,
      JSON.stringify({
        provider: "p",
        tool_scopes: { pay: "s" },
        rules: [{ id: "R", tool: "pay", kind: "ceilling", arg: "amount" }],
        vetobench: { trajectory: [{ id: "X", kind: "ceiling", tool: "refund", sum: "usd" }] }
      })
    )
    const r = await runCliInProcess(["policy", "lint", file])
    expect(r.code).toBe(1)
    expect(r.stderr.split("\n").filter((l) => l !== "")).toEqual([
      'error: rule R (rules[0].kind): unknown kind "ceilling" (expected one of: ceiling, floor, allowlist, denylist, suffix, prefix, pattern, domain, sensitive_field, lookup, max_items, compare, tool)',
      'error: rule X (vetobench.trajectory[0].tool): names "refund", which is not in tool_scopes',
      "error: rule X (vetobench.trajectory[0].max): a ceiling rule needs max",
      `vetobench: ${file}: refused, 3 errors`
    ])
    const missing = await runCliInProcess(["policy", "lint", path.join(dir, "nope.json")])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain("policy file not found")
  })
})
