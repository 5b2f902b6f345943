/**
 * The limits on the proxy's MCP sessions over Streamable HTTP (src/proxy/mcp-route.ts), with the
 * SDK's client: at most `mcp.max_sessions` open (an initialize past it is a JSON-RPC error with
 * 503, and a session ended with DELETE frees its place), and a session idle for
 * `mcp.session_idle_timeout_s` is closed with its server (its id then answers 404), while one with
 * a request in flight is not.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { type InProcessServer, startCliInProcess } from "../support/cli.js"
import { firstText, mcpFixture } from "./support.js"

const servers: Array<InProcessServer> = []
const clients: Array<Client> = []

const startProxy = async (mcp: Record<string, unknown>, proxySettings: Record<string, unknown> = {}) => {
  const f = mcpFixture({ mcp, proxy: proxySettings })
  const proxy = await startCliInProcess(["proxy", "-c", f.config, "--port", "0"], /veto-proxy (http:\/\/127\.0\.0\.1:\d+)\/v1/)
  servers.push(proxy)
  return proxy.match[1]!
}

const connect = async (base: string) => {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/fs/enforce:allow-all`))
  const client = new Client({ name: "test-host", version: "1.0.0" })
  await client.connect(transport)
  clients.push(client)
  return { client, transport }
}

const initialize = (base: string) =>
  fetch(`${base}/mcp/fs/enforce:allow-all`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } })
  })

/** Poll until `check` holds; a hang guard, not a timing assertion. */
const eventually = async (check: () => Promise<boolean>, what: string): Promise<void> => {
  const until = Date.now() + 100_000
  while (Date.now() < until) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`never happened: ${what}`)
}

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})))
  await Promise.all(servers.map((s) => s.stop()))
})

describe("MCP sessions over HTTP: limits", () => {
  let capped: string
  beforeAll(async () => {
    capped = await startProxy({ max_sessions: 2 })
  }, 120_000)

  it("mcp.max_sessions: a third initialize is refused with 503 and a JSON-RPC error naming the key; ending a session frees its place", async () => {
    const a = await connect(capped)
    await connect(capped)
    const refused = await initialize(capped)
    expect(refused.status).toBe(503)
    const body = (await refused.json()) as { jsonrpc: string; error: { code: number; message: string } }
    expect(body.jsonrpc).toBe("2.0")
    expect(body.error.message).toContain("mcp.max_sessions")
    await a.transport.terminateSession()
    await eventually(async () => {
      const r = await initialize(capped)
      await r.body?.cancel()
      return r.status === 200
    }, "a place freed by DELETE")
  })

  it("a request body over proxy.max_body_bytes (or not JSON) is a JSON-RPC parse error with 400, before any session or server", async () => {
    const base = await startProxy({}, { max_body_bytes: 1024 })
    for (const body of ["{not json", JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { pad: "x".repeat(4096) } })]) {
      const r = await fetch(`${base}/mcp/fs/enforce:allow-all`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body }).catch((e: unknown) => { throw new Error(String((e as { cause?: unknown }).cause)) })
      expect(r.status).toBe(400)
      const answer = (await r.json()) as { error: { code: number; message: string } }
      expect(answer.error.code).toBe(-32700)
      expect(answer.error.message).toContain("proxy.max_body_bytes (1024 bytes)")
    }
  })

  it("mcp.session_idle_timeout_s: a session its client abandoned is closed with its server and its id answers 404; the client can start afresh", async () => {
    const base = await startProxy({ session_idle_timeout_s: 0.5 })
    // a client that initializes and goes away without DELETE (no GET stream held open either)
    const init = await initialize(base)
    expect(init.status).toBe(200)
    await init.body?.cancel()
    const sid = init.headers.get("mcp-session-id")!
    expect(sid).toMatch(/^[0-9a-f-]{36}$/)
    const probe = () =>
      fetch(`${base}/mcp/fs/enforce:allow-all`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" })
      })
    // each probe is a request (it restarts the idle clock), so probe less often than the timeout
    await eventually(async () => {
      await new Promise((r) => setTimeout(r, 1500))
      const r = await probe()
      await r.body?.cancel()
      return r.status === 404
    }, "the idle session closed")
    const again = await connect(base)
    expect(firstText(await again.client.callTool({ name: "read_file", arguments: { path: "/notes.txt" } }))).toBe("buy milk")
  })

  it("a session with a request in flight is not closed as idle", async () => {
    const base = await startProxy({ session_idle_timeout_s: 0.5, call_timeout_s: 3 })
    const init = await initialize(base)
    await init.body?.cancel()
    const sid = init.headers.get("mcp-session-id")!
    const send = (message: Record<string, unknown>) =>
      fetch(`${base}/mcp/fs/enforce:allow-all`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" },
        body: JSON.stringify({ jsonrpc: "2.0", ...message })
      })
    await (await send({ method: "notifications/initialized" })).body?.cancel()
    // `hang` never answers: the call is in flight until the gate's 3 s call deadline, six idle timeouts long;
    // had the session been closed as idle meanwhile, the answer would be a closed connection, not the deadline
    const hung = await send({ id: 2, method: "tools/call", params: { name: "hang", arguments: {} } })
    expect(hung.status).toBe(200)
    expect(await hung.text()).toMatch(/did not answer tools\/call 'hang' within 3s/)
  })
})
