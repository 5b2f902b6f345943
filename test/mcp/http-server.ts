/**
 * The test MCP server (fs-server.ts) served over Streamable HTTP from this process, one server per
 * MCP session: the upstream of the gate's `url` servers, and the direct target of the benchmark.
 */
import { randomUUID } from "node:crypto"
import { createServer, type Server as HttpServer } from "node:http"
import type { AddressInfo } from "node:net"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { makeFsServer } from "./fs-server.js"

export interface HttpFsServer {
  readonly url: string
  /** tool names that reached it, in order */
  readonly seen: Array<string>
  /** the headers of the requests it got (lower-cased names) */
  readonly headers: Array<Record<string, string | string[] | undefined>>
  readonly close: () => Promise<void>
}

export const startHttpFsServer = async (): Promise<HttpFsServer> => {
  const seen: Array<string> = []
  const headers: Array<Record<string, string | string[] | undefined>> = []
  const transports = new Map<string, StreamableHTTPServerTransport>()
  const http: HttpServer = createServer((req, res) => {
    headers.push(req.headers)
    const sid = req.headers["mcp-session-id"]
    const existing = typeof sid === "string" ? transports.get(sid) : undefined
    if (existing !== undefined) return void existing.handleRequest(req, res)
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void transports.set(id, transport)
    })
    void makeFsServer((name) => void seen.push(name))
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
  })
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
  const { port } = http.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    seen,
    headers,
    close: async () => {
      await Promise.all([...transports.values()].map((t) => t.close()))
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    }
  }
}
