/**
 * Helpers of the MCP gate tests: a settings file with the test server (test/mcp/fs-server.ts) under
 * `mcp.servers.fs`, static judges, and the audit records of a run; an SDK client connected to
 * `vetobench mcp stdio` (the built bundle) over stdio.
 */
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { stringify } from "yaml"
import { verifyChain } from "../../src/domain/chain-verify.js"
import { CLI } from "../support/cli.js"
import { FS_SERVER_FILE } from "./fs-server.js"

export const REPO = path.resolve(".")

export interface McpFixture {
  readonly dir: string
  readonly config: string
  readonly auditDir: string
  /** the test server's count of calls that reached it */
  readonly callLog: string
}

/** A settings file in a fresh directory: the test server as `fs`, static judges, `extra` proxy/mcp settings merged in. */
export const mcpFixture = (
  extra: {
    readonly proxy?: Record<string, unknown>
    readonly mcp?: Record<string, unknown>
    readonly servers?: Record<string, unknown>
    readonly upstreams?: ReadonlyArray<Record<string, unknown>>
    readonly judges?: Record<string, unknown>
    readonly screening?: Record<string, unknown>
  } = {}
): McpFixture => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-mcp-"))
  const auditDir = path.join(dir, "audit")
  const callLog = path.join(dir, "calls.log")
  const config = path.join(dir, "vetobench.yaml")
  writeFileSync(
    config,
    stringify({
      upstreams: extra.upstreams ?? [{ name: "none", base_url: "http://127.0.0.1:9" }],
      judges: {
        "allow-all": { kind: "static", decision: "allow" },
        "deny-all": { kind: "static", decision: "deny" },
        "hold-all": { kind: "static", decision: "hold" },
        ...extra.judges
      },
      ...(extra.screening !== undefined ? { screening: extra.screening } : {}),
      proxy: { audit_dir: auditDir, ...extra.proxy },
      mcp: {
        call_timeout_s: 5,
        ...extra.mcp,
        servers: { fs: { command: process.execPath, args: ["--import", "tsx", FS_SERVER_FILE], cwd: REPO, env: { MCP_CALL_LOG: callLog } }, ...extra.servers }
      }
    })
  )
  return { dir, config, auditDir, callLog }
}

/** The tool names that reached the test server, in order. */
export const callsSeen = (f: McpFixture): ReadonlyArray<string> =>
  existsSync(f.callLog) ? readFileSync(f.callLog, "utf8").split("\n").filter((l) => l !== "") : []

/** The records of a run's audit file, and whether its chain verifies. */
export const auditOf = (f: McpFixture, runId: string): { readonly records: ReadonlyArray<Record<string, unknown>>; readonly chainOk: boolean } => {
  const file = path.join(f.auditDir, `${runId}.jsonl`)
  if (!existsSync(file)) return { records: [], chainOk: true }
  const text = readFileSync(file, "utf8")
  return { records: text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, unknown>), chainOk: verifyChain(text, null).ok }
}

/** An SDK client connected to `vetobench mcp stdio` for the fixture's `fs` server; close it when done. */
export const stdioGateClient = async (f: McpFixture, arm: string, runId: string, more: ReadonlyArray<string> = []): Promise<Client> => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, "mcp", "stdio", "--server", "fs", "--arm", arm, "-c", f.config, "--run", runId, ...more],
    cwd: REPO,
    stderr: "pipe"
  })
  const client = new Client({ name: "test-host", version: "1.0.0" })
  await client.connect(transport)
  return client
}

/** The text of a tool result's first content part. */
export const firstText = (result: unknown): string => {
  const content = (result as { content?: ReadonlyArray<{ type: string; text?: string }> }).content
  return content?.[0]?.text ?? ""
}
