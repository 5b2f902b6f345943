/**
 * The Agent-SafetyBench skeleton policy and catalogue: shared tool names kept distinct as
 * `<Env>.<tool>`, a policy built on the skeleton that treats one environment's tool differently
 * (selected by the `x-vetobench-environments` header), and the real data read in place.
 */
import { existsSync } from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { lintPolicy } from "../../../judges/rule/lint.js"
import { asbenchSkeleton } from "../../../src/adapters/agent-safetybench/skeleton.js"
import { buildSkeleton, type EnvTool } from "../../../judges/rule/skeleton.js"
import { built, context, judgeOf, ruleWith, view } from "./support.js"

const tool = (name: string, description = name): EnvTool => ({ name, description, parameters: { type: "object", properties: {} } })
const SOURCE = { data: "d.json", data_sha256: "0", environments: "envs", split: null }

describe("buildSkeleton", () => {
  const envs = new Map([
    ["Email", [tool("send_email", "Send an email to someone."), tool("search_emails")]],
    ["PhishingSimulation", [tool("send_email", "Send an email to some people."), tool("list_targets")]],
    ["Bank", [tool("transfer")]]
  ])
  const cases = [
    { id: 0, environments: [{ name: "Email", tools: ["send_email"] }] },
    { id: 1, environments: [{ name: "PhishingSimulation", tools: ["send_email", "list_targets"] }, { name: "Bank", tools: ["transfer"] }] },
    { id: 2, environments: [{ name: "Email", tools: ["send_email", "search_emails"] }] }
  ]
  const sk = buildSkeleton(cases, envs, SOURCE)

  it("grants every name, and <Env>.<tool> for each environment of a shared name; every scope, no rules", () => {
    expect(sk.policy).toEqual({
      provider: "agent-safetybench",
      granted_scopes: ["*"],
      tool_scopes: {
        list_targets: "PhishingSimulation",
        search_emails: "Email",
        send_email: "shared",
        "Email.send_email": "Email",
        "PhishingSimulation.send_email": "PhishingSimulation",
        transfer: "Bank"
      },
      rules: []
    })
    expect(sk.entries).toBe(6)
    expect(sk.shared).toEqual(["send_email"])
  })

  it("the catalogue keys every tool <Env>.<tool>, with its description, schema and how many cases offer it", () => {
    expect(sk.catalogue).toMatchObject({ cases: 3, environments: 3, tools: 5, tool_names: 4, shared_names: 1 })
    expect(sk.catalogue.entries.map((e) => [e.key, e.shared, e.policy_entry, e.cases])).toEqual([
      ["Bank.transfer", false, "transfer", 1],
      ["Email.send_email", true, "Email.send_email", 2],
      ["Email.search_emails", false, "search_emails", 1],
      ["PhishingSimulation.send_email", true, "PhishingSimulation.send_email", 1],
      ["PhishingSimulation.list_targets", false, "list_targets", 1]
    ])
    expect(sk.catalogue.entries[1]!.description).toBe("Send an email to someone.")
  })

  it("a policy grown from the skeleton: one environment's send_email held, the other's allowed", () => {
    const policy = { ...sk.policy, rules: [{ id: "phish-hold", tool: "PhishingSimulation.send_email", kind: "tool", effect: "escalate", message: "mass mail needs a person" }] }
    expect(lintPolicy(built(policy))).toEqual([])
    const j = judgeOf(policy)
    const send = view("send_email", { receiver: ["a@b.example"], content: "hi" })
    expect(ruleWith(j, send, context({ headers: { "x-vetobench-environments": "PhishingSimulation,Bank" } }))).toMatchObject({ decision: "hold", rule: "phish-hold" })
    expect(ruleWith(j, send, context({ headers: { "x-vetobench-environments": "Email" } })).decision).toBe("allow")
    expect(ruleWith(j, send).decision).toBe("allow")
    expect(ruleWith(j, view("wire_money", {}))).toMatchObject({ decision: "deny", rule: "P1-scope", reason: "tool is not in the provider's inventory" })
  })
})

const ASB = path.resolve("../shared/benchmarks/agent-safetybench")

describe.skipIf(!existsSync(path.join(ASB, "released_data.json")))("the skeleton of the real Agent-SafetyBench data", () => {
  it("loads as a policy, lints clean, and allows every catalogued tool, under its name and under its environment", () => {
    const sk = Effect.runSync(asbenchSkeleton({ data: path.join(ASB, "released_data.json"), environments: path.join(ASB, "environments"), split: null }))
    expect(sk.catalogue.shared_names).toBe(159)
    const b = built(sk.policy)
    expect(lintPolicy(b)).toEqual([])
    const j = judgeOf(sk.policy, { scopes_header: false })
    for (const e of sk.catalogue.entries) {
      expect(ruleWith(j, view(e.tool, {})).decision).toBe("allow")
      expect(ruleWith(j, view(e.tool, {}), context({ headers: { "x-vetobench-environments": e.environment } })).decision).toBe("allow")
    }
  })
})
