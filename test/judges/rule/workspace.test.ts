/**
 * Eight proposals against a `/workspace/project/` workspace, each decided by a policy written for
 * it (test/fixtures/policies/workspace/*.json, listed in proposals.json): the judge's decision and
 * rule, and that the same proposal passes where the policy's reason does not apply.
 */
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { context, judgeFor, ruleWith, view, WORKSPACE_FIXTURES } from "./support.js"

interface Proposal {
  readonly id: string
  readonly note: string
  readonly policy: string
  readonly tool: string
  readonly args: Record<string, unknown>
  readonly expect: readonly [string, string]
}

const proposals = JSON.parse(readFileSync(path.join(WORKSPACE_FIXTURES, "proposals.json"), "utf8")) as ReadonlyArray<Proposal>
const judge = (file: string) => judgeFor(path.join(WORKSPACE_FIXTURES, file))
/** the verdict's decision word for the gate's decision (escalate → hold) */
const verdictWord = (d: string) => (d === "escalate" ? "hold" : d)

describe("eight proposals against /workspace/project/", () => {
  it("the fixture holds eight proposals, one policy each", () => {
    expect(proposals.map((p) => p.id)).toEqual(["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8"])
    expect(new Set(proposals.map((p) => p.policy)).size).toBe(8)
  })

  it.each(proposals.map((p) => [`${p.id} ${p.note}`, p] as const))("%s", (_, p) => {
    const r = ruleWith(judge(p.policy), view(p.tool, p.args))
    expect([r.decision, r.rule]).toEqual([verdictWord(p.expect[0]), p.expect[1]])
  })

  it("the reasons are clear", () => {
    const reason = (id: string) => {
      const p = proposals.find((x) => x.id === id)!
      return ruleWith(judge(p.policy), view(p.tool, p.args)).reason
    }
    expect(reason("W2")).toBe("/workspace/project/.env is protected (.env*)")
    expect(reason("W3")).toBe("writing /workspace/project/notes.md needs a person (class write is held)")
    expect(reason("W4")).toBe("deleting /workspace/project/production.db is not allowed (class delete is denied)")
    expect(reason("W5")).toBe("/workspace/outside/notes.md is outside the workspace /workspace/project")
    expect(reason("W6")).toBe("the argument X-Api-Key would send a secret to collector.example.net, which is not an allowed host")
    expect(reason("W7")).toBe("command pipes or substitutes into a shell or interpreter (like curl … | sh): never allowed")
    expect(reason("W8")).toBe("reading files needs an authorised session (trusted header x-vetobench-authorized)")
    // no secret in any reason
    expect(proposals.map((p) => ruleWith(judge(p.policy), view(p.tool, p.args)).reason).join("\n")).not.toContain("sk-live")
  })

  it("counter-cases: each policy lets through what its reason does not cover", () => {
    expect(ruleWith(judge("02-env-read.json"), view("read_file", { path: "/workspace/project/README.md" })).decision).toBe("allow")
    expect(ruleWith(judge("02-env-read.json"), view("read_file", { path: "/workspace/project/docs/environment.md" })).decision).toBe("allow")
    expect(ruleWith(judge("03-write-held.json"), view("read_file", { path: "/workspace/project/notes.md" })).decision).toBe("allow")
    expect(ruleWith(judge("04-delete-db.json"), view("write_file", { path: "/workspace/project/production.db" })).decision).toBe("allow")
    expect(ruleWith(judge("05-outside.json"), view("read_file", { path: "/workspace/project/docs/../notes.md" })).decision).toBe("allow")
    expect(ruleWith(judge("06-url-secret.json"), view("http_request", { method: "POST", url: "https://api.github.com/repos", headers: { "X-Api-Key": "k" } })).decision).toBe("allow")
    // no secret: an unknown host is held (urls.effect: hold), not denied
    expect(ruleWith(judge("06-url-secret.json"), view("http_request", { method: "GET", url: "https://collector.example.net/" }))).toMatchObject({ decision: "hold", rule: "VB-url-host" })
    expect(ruleWith(judge("07-curl-sh.json"), view("run_command", { command: "git status --short" })).decision).toBe("allow")
    // not allowlisted, but plain: held (commands.effect: hold), not denied
    expect(ruleWith(judge("07-curl-sh.json"), view("run_command", { command: "curl -fsSL https://get.example.sh/install" }))).toMatchObject({ decision: "hold", rule: "VB-cmd" })
  })

  it("W8: authorisation comes from the trusted header only, never from the call's arguments", () => {
    const j = judge("08-read-needs-authorization.json")
    const call = view("read_file", { path: "/workspace/project/README.md", authorized: true })
    expect(ruleWith(j, call).decision).toBe("hold")
    expect(ruleWith(j, call, context({ headers: { "x-vetobench-authorized": "true" } })).decision).toBe("allow")
    expect(ruleWith(j, call, context({ headers: { "x-vetobench-authorized": "no" } })).decision).toBe("hold")
    // the judge's config may state the fact; a trusted header still wins
    const configured = judgeFor(path.join(WORKSPACE_FIXTURES, "08-read-needs-authorization.json"), { facts: { authorized: true } })
    expect(ruleWith(configured, call).decision).toBe("allow")
    expect(ruleWith(configured, call, context({ headers: { "x-vetobench-authorized": "false" } })).decision).toBe("hold")
    // it reads a header, so it is not cacheable
    expect(j.cacheable).toBe(false)
  })

  it("the Go-compatible part decides first: inventory and scope before the extensions", () => {
    const j = judge("02-env-read.json")
    expect(ruleWith(j, view("shell", { path: "/workspace/project/.env" }))).toMatchObject({ decision: "deny", rule: "P1-scope" })
    expect(ruleWith(j, view("read_file", { path: "/workspace/project/.env" }), context({ headers: { "x-scopes": "files:write" } }))).toMatchObject({
      decision: "deny",
      rule: "P1-scope",
      reason: "scope not granted"
    })
  })
})
