/**
 * `/mcp/<server>/<arm>` of the proxy (in process) between the SDK's Streamable HTTP client and the
 * test MCP server, reached over stdio (spawned per session) and over Streamable HTTP: allowed calls
 * reach the server once, denied ones never; hold_policy wait approved and expired through the hold
 * API; one record per call with the MCP session as episode; bad paths and sessions answered with
 * JSON-RPC errors and the right status.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { type InProcessServer, startCliInProcess } from "../support/cli.js"
import { startHttpFsServer, type HttpFsServer } from "./http-server.js"
import { auditOf, callsSeen, firstText, mcpFixture, type McpFixture } from "./support.js"

const TOKEN = "op-secret"
let f: McpFixture
let upstream: HttpFsServer
let proxy: InProcessServer
let base: string
const clients: Array<Client> = []

beforeAll(async () => {
  upstream = await startHttpFsServer()
  f = mcpFixture({
    proxy: { hold_policy: "wait", hold_timeout_s: 2, operator_token: TOKEN },
    servers: { web: { url: upstream.url, headers: { authorization: "Bearer upstream-secret" } } }
  })
  proxy = await startCliInProcess(["proxy", "-c", f.config, "--port", "0"], /veto-proxy (http:\/\/127\.0\.0\.1:\d+)\/v1/)
  base = proxy.match[1]!
}, 60_000)

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()))
  await proxy.stop()
  await upstream.close()
})

const connect = async (path: string, headers: Record<string, string> = {}) => {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}${path}`), { requestInit: { headers } })
  const client = new Client({ name: "test-host", version: "1.0.0" })
  await client.connect(transport)
  clients.push(client)
  return { client, transport }
}

const calls = (runId: string) => auditOf(f, runId).records.filter((r) => r.type === "call")

describe("/mcp/<server>/<arm>", () => {
  it("stdio upstream, enforce: allowed once, denied never; the session is the episode", async () => {
    const { client, transport } = await connect("/mcp/fs/enforce:allow-all", { "x-vetobench-run": "h-allow" })
    expect(firstText(await client.callTool({ name: "read_file", arguments: { path: "/notes.txt" } }))).toBe("buy milk")
    const denier = await connect("/mcp/fs/enforce:deny-all", { "x-vetobench-run": "h-deny", "x-vetobench-episode": "ep-h" })
    const denied = await denier.client.callTool({ name: "delete_file", arguments: { path: "/notes.txt" } })
    expect(denied.isError).toBe(true)
    expect(firstText(denied)).toContain("delete_file")
    expect(callsSeen(f)).toEqual(["read_file"])
    expect(calls("h-allow")).toMatchObject([{ wire: "mcp", mcp_server: "fs", episode_id: transport.sessionId, session_id: transport.sessionId, blocked: false }])
    expect(calls("h-deny")).toMatchObject([{ mcp_server: "fs", episode_id: "ep-h", blocked: true, effective_decision: "deny" }])
    expect(auditOf(f, "h-allow").chainOk).toBe(true)
  })

  it("Streamable HTTP upstream (headers from the settings): shadow passes, enforce refuses", async () => {
    const shadow = await connect("/mcp/web/shadow:deny-all", { "x-vetobench-run": "h-web" })
    expect(firstText(await shadow.client.callTool({ name: "list_dir", arguments: {} }))).toContain("/notes.txt")
    const enforce = await connect("/mcp/web/enforce:deny-all", { "x-vetobench-run": "h-web" })
    expect((await enforce.client.callTool({ name: "write_file", arguments: { path: "/x", content: "y" } })).isError).toBe(true)
    expect(upstream.seen).toEqual(["list_dir"])
    expect(upstream.headers.every((h) => h.authorization === "Bearer upstream-secret")).toBe(true)
    expect(calls("h-web")).toMatchObject([
      { arm: "shadow", mcp_server: "web", blocked: false, effective_decision: "deny" },
      { arm: "enforce", mcp_server: "web", blocked: true }
    ])
    expect(auditOf(f, "h-web").chainOk).toBe(true)
  })

  it("hold_policy wait: a held call waits for the hold API; approved it runs, expired it is refused", async () => {
    const { client } = await connect("/mcp/fs/enforce:hold-all", { "x-vetobench-run": "h-hold" })
    const before = callsSeen(f).length
    const approved = client.callTool({ name: "write_file", arguments: { path: "/held.txt", content: "ok" } })
    const auth = { authorization: `Bearer ${TOKEN}` }
    let pending: ReadonlyArray<{ id: string }> = []
    while (pending.length === 0) {
      pending = ((await (await fetch(`${base}/v1/holds`, { headers: auth })).json()) as { data: ReadonlyArray<{ id: string }> }).data
      if (pending.length === 0) await new Promise((r) => setTimeout(r, 50))
    }
    const decided = await fetch(`${base}/v1/holds/${pending[0]!.id}`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ approved: true, approver: "alice" })
    })
    expect(decided.status).toBe(200)
    expect(firstText(await approved)).toBe("wrote /held.txt")
    // nobody decides this one: it expires (hold_timeout_s 2) and is refused
    const expired = await client.callTool({ name: "delete_file", arguments: { path: "/held.txt" } })
    expect(expired.isError).toBe(true)
    expect(callsSeen(f).slice(before)).toEqual(["write_file"])
    const records = auditOf(f, "h-hold").records
    expect(records.map((r) => [r.type, r.type === "approval" ? r.approval : r.effective_decision])).toEqual([
      ["call", "hold"],
      ["approval", "approved"],
      ["call", "hold"],
      ["approval", "expired"]
    ])
  })

  it("unknown servers, bad arms, unknown judges and sessions: JSON-RPC errors with the right status", async () => {
    const post = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } })
      })
    const server = await post("/mcp/nope/enforce:deny-all")
    expect(server.status).toBe(404)
    expect(((await server.json()) as { error: { message: string } }).error.message).toContain("unknown MCP server 'nope'")
    const arm = await post("/mcp/fs/enforce")
    expect(arm.status).toBe(400)
    expect(((await arm.json()) as { error: { message: string } }).error.message).toContain("needs a judge")
    const judge = await post("/mcp/fs/enforce:nobody")
    expect(judge.status).toBe(400)
    expect(((await judge.json()) as { error: { message: string } }).error.message).toContain("unknown judge 'nobody'")
    const session = await post("/mcp/fs/enforce:deny-all", { "mcp-session-id": "no-such-session" })
    expect(session.status).toBe(404)
    const run = await post("/mcp/fs/enforce:deny-all", { "x-vetobench-run": "bad run id!" })
    expect(run.status).toBe(400)
    expect(proxy.running()).toBe(true)
    // the access log labels the route with its pattern, never the path's values
    expect(proxy.output()).toMatch(/route=\/mcp\/:server\/:arm/)
    expect(proxy.output()).not.toContain("route=/mcp/nope")
  })
})
