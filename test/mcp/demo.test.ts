/** `vetobench demo`'s MCP part, through the stdio gate it spawns: one allowed call reaches the demo server, one denied call is refused; both recorded, the log verifies. */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { runCliInProcess } from "../support/cli.js"

describe("vetobench demo: the MCP part", () => {
  it("list_dir reaches the server, execute_command is refused; two mcp records that verify", async () => {
    const out = mkdtempSync(path.join(tmpdir(), "vetobench-demo-mcp-"))
    const r = await runCliInProcess(["demo", "--arms-only", "--out", out])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain("through the stdio gate (vetobench mcp stdio --arm enforce:small")
    expect(r.stdout).toMatch(/tools\/call list_dir +result: q3-summary\.pdf/)
    expect(r.stdout).toMatch(/tools\/call execute_command +refused \(isError\): .*execute_command/)
    expect(r.stdout).toContain("calls that reached the server: list_dir;")
    expect(r.stdout).toMatch(/OK +\S+demo-mcp\.jsonl: 2 records/)
    const [stamp] = readdirSync(out)
    const records = readFileSync(path.join(out, stamp!, "audit-mcp", "demo-mcp.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((x) => x.type === "call")
    // the spawned gate's session (mcp-<uuid>), the episode the demo names
    expect(records.map((x) => [x.episode_id, String(x.session_id).startsWith("mcp-")])).toEqual([["demo:mcp", true], ["demo:mcp", true]])
    expect(records).toMatchObject([
      { wire: "mcp", mcp_server: "demo-files", tool: { name: "list_dir" }, blocked: false },
      { wire: "mcp", mcp_server: "demo-files", tool: { name: "execute_command" }, blocked: true }
    ])
  })
})
