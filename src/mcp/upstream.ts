/**
 * The transport to a configured MCP server: spawn its command (stdio; the server's stderr goes to
 * the gate's stderr) or reach its URL (Streamable HTTP). Secrets (env, headers) are revealed only
 * here, into the transport.
 */
import { Redacted } from "effect"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { McpServerSettings } from "../config/mcp-settings.js"

const revealAll = (r: Readonly<Record<string, Redacted.Redacted<string>>>): Record<string, string> =>
  Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Redacted.value(v)]))

/** A new, unstarted transport to the server (one per gated session). */
export const upstreamTransport = (server: McpServerSettings): Transport =>
  server.kind === "stdio"
    ? new StdioClientTransport({ command: server.command, args: [...server.args], env: revealAll(server.env), cwd: server.cwd, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: revealAll(server.headers) } })
