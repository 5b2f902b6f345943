/**
 * The bridge's reading of `tools/list` answers (src/mcp/bridge.ts), over the SDK's in-memory
 * transports: the tools the judges see are every page of a paginated list (a later page adds to
 * the earlier ones, a first page starts afresh), and with tool hiding on, an answer the gate cannot
 * read is refused instead of passed on unfiltered.
 */
import { describe, expect, it } from "vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js"
import { makeBridge, type BridgeOptions } from "../../src/mcp/bridge.js"
import type { McpTool } from "../../src/mcp/rule-call.js"

const tool = (name: string, description = `the ${name} tool`) => ({ name, description, inputSchema: { type: "object" as const, properties: {} } })

const PAGES: Record<string, { tools: Array<ReturnType<typeof tool>>; nextCursor?: string }> = {
  first: { tools: [tool("read_file"), tool("list_dir")], nextCursor: "p2" },
  p2: { tools: [tool("send_email"), tool("list_dir", "listed again, newer")], nextCursor: "p3" },
  p3: { tools: [tool("delete_file")] }
}

/** A paginated server; the bridge between it and an SDK client; every tool list `decide` was given. */
const setup = async (more: Partial<BridgeOptions> = {}, upstreamOverride?: InMemoryTransport) => {
  const server = new Server({ name: "paged", version: "1.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, (req) => PAGES[req.params?.cursor ?? "first"] ?? { tools: [] })
  server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: "text" as const, text: "done" }] }))
  const [serverSide, gateUp] = InMemoryTransport.createLinkedPair()
  const [gateDown, clientSide] = InMemoryTransport.createLinkedPair()
  if (upstreamOverride === undefined) await server.connect(serverSide)
  const seen: Array<ReadonlyArray<string>> = []
  const bridge = makeBridge({
    server: "paged",
    client: gateDown,
    upstream: upstreamOverride ?? gateUp,
    callTimeoutMs: 60_000,
    decide: (_call, tools: ReadonlyArray<McpTool>) => {
      seen.push(tools.map((t) => `${t.name}:${t.description ?? ""}`))
      return Promise.resolve({ _tag: "forward", ruling: null })
    },
    ...more
  })
  await bridge.start()
  const client = new Client({ name: "host", version: "1.0.0" })
  await client.connect(clientSide)
  return { client, seen, bridge }
}

describe("the MCP bridge reads tools/list", () => {
  it("a paginated list: the judges see every page's tools, a tool listed again with its newer entry; a new first page starts afresh", async () => {
    const { client, seen, bridge } = await setup()
    let cursor: string | undefined
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor })
      cursor = page.nextCursor
    } while (cursor !== undefined)
    await client.callTool({ name: "read_file", arguments: {} })
    expect(seen[0]).toEqual(["read_file:the read_file tool", "list_dir:listed again, newer", "send_email:the send_email tool", "delete_file:the delete_file tool"])
    await client.listTools()
    await client.callTool({ name: "read_file", arguments: {} })
    expect(seen[1]).toEqual(["read_file:the read_file tool", "list_dir:the list_dir tool"])
    await client.close()
    await bridge.close()
  })

  it("with tool hiding on, a tools/list answer the gate cannot read is an MCP error, never the unfiltered list", async () => {
    // a hand-driven server side: it answers tools/list with tools that are not tools
    const [serverSide, gateUp] = InMemoryTransport.createLinkedPair()
    serverSide.onmessage = (m: JSONRPCMessage) => {
      if (!("id" in m) || !("method" in m)) return
      const result =
        m.method === "initialize"
          ? { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "bad", version: "1" } }
          : { tools: [{ description: "no name" }, "send_email"] }
      void serverSide.send({ jsonrpc: "2.0", id: m.id, result })
    }
    await serverSide.start()
    let hideAsked = 0
    const { client, bridge } = await setup(
      {
        hideTools: () => {
          hideAsked += 1
          return Promise.resolve({ _tag: "HiddenTools", names: [] })
        }
      },
      gateUp
    )
    const answer = await client.listTools().then(
      () => null,
      (e: unknown) => e
    )
    expect(answer).toBeInstanceOf(McpError)
    expect(String((answer as McpError).message)).toContain("cannot be read")
    expect(hideAsked).toBe(0)
    await client.close()
    await bridge.close()
  })
})
