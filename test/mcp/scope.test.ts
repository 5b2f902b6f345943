/**
 * `scope` mode on MCP: a `rule` judge in `mode: scope` (test/fixtures/policies/mcp-scope.yaml) knows
 * which tools its policy grants (`grants`), and `vetobench mcp stdio` in the enforce arm hides the
 * others from `tools/list`, writing one `tools_hidden` record per answer that hid something; a
 * layered judge over it hides the same; on the proxy's `/mcp/<server>/<arm>` the request's
 * `x-scopes` header narrows what is shown. Shadow shows every tool and writes none. A call for a hidden
 * tool is still ruled, denied and recorded. Also the judges' `grants` themselves (caller scopes,
 * full mode, layered).
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Judge, JudgeContext } from "../../judges/Judge.js"
import { LayeredKind } from "../../judges/layered.js"
import { makeRuleJudge } from "../../judges/rule/kind.js"
import { type LoadedPolicy, loadPolicyFile } from "../../judges/rule/policy.js"
import { startCliInProcess } from "../support/cli.js"
import { auditOf, callsSeen, firstText, mcpFixture, REPO, stdioGateClient } from "./support.js"

const POLICY = path.join(REPO, "test/fixtures/policies/mcp-scope.yaml")
const ALL_TOOLS = ["read_file", "write_file", "delete_file", "list_dir", "fetch_page", "crash", "hang", "garbage"]
const GRANTED = ["read_file", "list_dir", "fetch_page"]
const HIDDEN = ["write_file", "delete_file", "crash", "hang", "garbage"]

const open: Array<Client> = []
const connect = async (...args: Parameters<typeof stdioGateClient>) => {
  const c = await stdioGateClient(...args)
  open.push(c)
  return c
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()))
})

const fixture = () =>
  mcpFixture({
    judges: {
      "scope-gate": { kind: "rule", policy: POLICY, mode: "scope" },
      "full-gate": { kind: "rule", policy: POLICY },
      stack: { kind: "layered", layers: ["allow-all", "scope-gate"] }
    }
  })

const ofType = (records: ReadonlyArray<Record<string, unknown>>, type: string) => records.filter((r) => r.type === type)

describe("scope mode on MCP tools/list", () => {
  it("enforce: the tools the policy does not grant are hidden, and one tools_hidden record says so", async () => {
    const f = fixture()
    const client = await connect(f, "enforce:scope-gate", "sc-enforce")
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(GRANTED)
    const { records, chainOk } = auditOf(f, "sc-enforce")
    expect(chainOk).toBe(true)
    const hidden = ofType(records, "tools_hidden")
    expect(hidden).toHaveLength(1)
    expect(hidden[0]).toMatchObject({ arm: "enforce", wire: "mcp", mcp_server: "fs", judge: "scope-gate", hidden: HIDDEN, shown: GRANTED.length, run_id: "sc-enforce" })
    expect(String(hidden[0]!.episode_id)).toMatch(/^mcp-/)
    expect(hidden[0]!.session_id).toBe(hidden[0]!.episode_id)
    expect(ofType(records, "call")).toEqual([])
    // a second answer hides again and is recorded again
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(GRANTED)
    expect(ofType(auditOf(f, "sc-enforce").records, "tools_hidden")).toHaveLength(2)
  })

  it("enforce: calling a hidden tool anyway is denied, never reaches the server, and is recorded; a granted one passes", async () => {
    const f = fixture()
    const client = await connect(f, "enforce:scope-gate", "sc-call")
    await client.listTools()
    const denied = await client.callTool({ name: "delete_file", arguments: { path: "/notes.txt" } })
    expect(denied.isError).toBe(true)
    expect(firstText(denied)).toContain("delete_file")
    expect(firstText(await client.callTool({ name: "read_file", arguments: { path: "/notes.txt" } }))).toBe("buy milk")
    expect(callsSeen(f)).toEqual(["read_file"])
    const { records, chainOk } = auditOf(f, "sc-call")
    expect(chainOk).toBe(true)
    expect(ofType(records, "call")).toMatchObject([
      { tool: { name: "delete_file" }, arm: "enforce", judge: "scope-gate", blocked: true, effective_decision: "deny" },
      { tool: { name: "read_file" }, arm: "enforce", judge: "scope-gate", blocked: false, effective_decision: "allow" }
    ])
    expect(ofType(records, "tools_hidden")).toHaveLength(1)
  })

  it("enforce through a layered judge: the scope layer hides the same tools", async () => {
    const f = fixture()
    const client = await connect(f, "enforce:stack", "sc-stack")
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(GRANTED)
    const { records, chainOk } = auditOf(f, "sc-stack")
    expect(chainOk).toBe(true)
    expect(ofType(records, "tools_hidden")).toMatchObject([{ judge: "stack", hidden: HIDDEN, shown: GRANTED.length }])
  })

  it("shadow and a full-mode judge show every tool and write no tools_hidden record", async () => {
    const f = fixture()
    const shadow = await connect(f, "shadow:scope-gate", "sc-shadow")
    expect((await shadow.listTools()).tools.map((t) => t.name)).toEqual(ALL_TOOLS)
    const full = await connect(f, "enforce:full-gate", "sc-full")
    expect((await full.listTools()).tools.map((t) => t.name)).toEqual(ALL_TOOLS)
    expect(auditOf(f, "sc-shadow").records).toEqual([])
    expect(auditOf(f, "sc-full").records).toEqual([])
  })
})

describe("scope mode on the proxy's /mcp route", () => {
  it("enforce: the x-scopes header narrows the tools shown, and the record names what was hidden", async () => {
    const f = fixture()
    const proxy = await startCliInProcess(["proxy", "-c", f.config, "--port", "0"], /veto-proxy (http:\/\/127\.0\.0\.1:\d+)\/v1/)
    try {
      const transport = new StreamableHTTPClientTransport(new URL(`${proxy.match[1]!}/mcp/fs/enforce:scope-gate`), {
        requestInit: { headers: { "x-vetobench-run": "sc-http", "x-scopes": "net:http" } }
      })
      const client = new Client({ name: "test-host", version: "1.0.0" })
      await client.connect(transport)
      open.push(client)
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["fetch_page"])
      const denied = await client.callTool({ name: "read_file", arguments: { path: "/notes.txt" } })
      expect(denied.isError).toBe(true)
      expect(callsSeen(f)).toEqual([])
      const { records, chainOk } = auditOf(f, "sc-http")
      expect(chainOk).toBe(true)
      expect(ofType(records, "tools_hidden")).toMatchObject([
        { judge: "scope-gate", hidden: ALL_TOOLS.filter((t) => t !== "fetch_page"), shown: 1, episode_id: transport.sessionId, session_id: transport.sessionId }
      ])
      expect(ofType(records, "call")).toMatchObject([{ tool: { name: "read_file" }, blocked: true, effective_decision: "deny" }])
    } finally {
      await Promise.all(open.splice(0).map((c) => c.close()))
      await proxy.stop()
    }
  }, 60_000)
})

describe("judges' grants", () => {
  const ctx = (headers: Record<string, string> = {}): JudgeContext => ({
    requestId: "r",
    runId: null,
    episodeId: null,
    sessionId: null,
    principal: null,
    agentModel: "m",
    headers
  })
  let loaded: LoadedPolicy
  beforeAll(async () => {
    loaded = await Effect.runPromise(loadPolicyFile(POLICY, REPO))
  })

  it("a scope-mode rule judge grants the granted tools in its inventory, narrowed by the caller's scopes", () => {
    const judge = makeRuleJudge("s", loaded, { mode: "scope", scopes: null, scopes_header: true })
    const grants = judge.grants!
    expect(ALL_TOOLS.filter((t) => grants(t, ctx()))).toEqual(GRANTED)
    expect(ALL_TOOLS.filter((t) => grants(t, ctx({ "x-scopes": "net:http" })))).toEqual(["fetch_page"])
    const configured = makeRuleJudge("s", loaded, { mode: "scope", scopes: ["files:read"], scopes_header: false })
    expect(ALL_TOOLS.filter((t) => configured.grants!(t, ctx({ "x-scopes": "net:http" })))).toEqual(["read_file", "list_dir"])
  })

  it("a full-mode rule judge has no grants (values decide); a layered judge grants what every granting layer grants", () => {
    expect(makeRuleJudge("f", loaded, { mode: "full", scopes: null, scopes_header: true }).grants).toBeUndefined()
    const scope = makeRuleJudge("s", loaded, { mode: "scope", scopes: null, scopes_header: true })
    const narrow = makeRuleJudge("n", loaded, { mode: "scope", scopes: ["net:http", "files:write"], scopes_header: false })
    const full = makeRuleJudge("f", loaded, { mode: "full", scopes: null, scopes_header: true })
    const byName = new Map<string, Judge>([
      ["s", scope],
      ["n", narrow],
      ["f", full]
    ])
    const make = (layers: ReadonlyArray<string>) =>
      Effect.runSync(LayeredKind.make("stack", { kind: "layered", layers }, { timeout_s: 5, judge: (n: string) => byName.get(n) }))
    const both = make(["s", "n"])
    expect(ALL_TOOLS.filter((t) => both.grants!(t, ctx()))).toEqual(["fetch_page"])
    expect(make(["f"]).grants).toBeUndefined()
    expect(ALL_TOOLS.filter((t) => make(["f", "s"]).grants!(t, ctx()))).toEqual(GRANTED)
  })
})
