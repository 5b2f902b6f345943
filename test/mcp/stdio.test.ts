/**
 * `vetobench mcp stdio` (the built bundle) between the SDK's client and the test MCP server, over
 * stdio both sides: allowed calls reach the server exactly once, denied ones never and come back as
 * `isError` results with the refusal note; one record per call (`wire: mcp`, the server's name, the
 * session as episode); everything else passes through; a server that crashes, hangs or answers
 * garbage gives the client an MCP error, the gate stays up and every call is recorded.
 */
import { afterEach, describe, expect, it } from "vitest"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { spawn } from "node:child_process"
import { LATEST_PROTOCOL_VERSION, McpError } from "@modelcontextprotocol/sdk/types.js"
import { CLI, runCliInProcess } from "../support/cli.js"
import { auditOf, callsSeen, firstText, mcpFixture, REPO, stdioGateClient } from "./support.js"

const open: Array<Client> = []
const connect = async (...args: Parameters<typeof stdioGateClient>) => {
  const c = await stdioGateClient(...args)
  open.push(c)
  return c
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()))
})

const calls = (records: ReadonlyArray<Record<string, unknown>>) => records.filter((r) => r.type === "call")

describe("vetobench mcp stdio", () => {
  it("enforce: allowed calls reach the server once, recorded with wire mcp, the server and the session", async () => {
    const f = mcpFixture()
    const client = await connect(f, "enforce:allow-all", "r-allow")
    expect(client.getServerVersion()?.name).toBe("fs-test")
    const tools = await client.listTools()
    expect(tools.tools.map((t) => t.name)).toContain("read_file")
    const read = await client.callTool({ name: "read_file", arguments: { path: "/notes.txt" } })
    expect(firstText(read)).toBe("buy milk")
    await client.callTool({ name: "write_file", arguments: { path: "/a.txt", content: "x" } })
    expect(callsSeen(f)).toEqual(["read_file", "write_file"])
    const { records, chainOk } = auditOf(f, "r-allow")
    expect(chainOk).toBe(true)
    const rec = calls(records)
    expect(rec).toHaveLength(2)
    expect(rec[0]).toMatchObject({
      wire: "mcp",
      mcp_server: "fs",
      arm: "enforce",
      judge: "allow-all",
      agent_model: "mcp:fs",
      blocked: false,
      effective_decision: "allow",
      tool: { name: "read_file", arguments: { path: "/notes.txt" }, description: "Read a file." }
    })
    expect(String(rec[0]!.episode_id)).toMatch(/^mcp-/)
    expect(rec[0]!.episode_id).toBe(rec[1]!.episode_id)
    expect(rec[0]!.session_id).toBe(rec[0]!.episode_id)
  })

  it("enforce: a denied call never reaches the server; the client gets isError with the refusal note", async () => {
    const f = mcpFixture()
    const client = await connect(f, "enforce:deny-all", "r-deny", ["--episode", "ep-7"])
    const result = await client.callTool({ name: "delete_file", arguments: { path: "/notes.txt" } })
    expect(result.isError).toBe(true)
    expect(firstText(result)).toContain("delete_file")
    expect(callsSeen(f)).toEqual([])
    const rec = calls(auditOf(f, "r-deny").records)
    expect(rec).toHaveLength(1)
    expect(rec[0]).toMatchObject({ blocked: true, effective_decision: "deny", episode_id: "ep-7", mcp_server: "fs" })
  })

  it("shadow and baseline: calls reach the server once and are recorded, a deny only noted", async () => {
    const f = mcpFixture()
    const shadow = await connect(f, "shadow:deny-all", "r-shadow")
    expect(firstText(await shadow.callTool({ name: "read_file", arguments: { path: "/notes.txt" } }))).toBe("buy milk")
    const baseline = await connect(f, "baseline", "r-base")
    expect(firstText(await baseline.callTool({ name: "list_dir", arguments: {} }))).toContain("/notes.txt")
    expect(callsSeen(f)).toEqual(["read_file", "list_dir"])
    expect(calls(auditOf(f, "r-shadow").records)).toMatchObject([{ arm: "shadow", effective_decision: "deny", blocked: false }])
    expect(calls(auditOf(f, "r-base").records)).toMatchObject([{ arm: "baseline", judge: null, verdict: null, blocked: false }])
  })

  it("resources pass through untouched and unrecorded", async () => {
    const f = mcpFixture()
    const client = await connect(f, "enforce:deny-all", "r-res")
    const list = await client.listResources()
    expect(list.resources.map((r) => r.uri)).toEqual(["file:///notes.txt"])
    const read = await client.readResource({ uri: "file:///notes.txt" })
    expect(read.contents[0]).toMatchObject({ text: "buy milk" })
    expect(calls(auditOf(f, "r-res").records)).toHaveLength(0)
  })

  it("a server that answers garbage or hangs: an MCP error, the gate stays up, every call recorded", async () => {
    const f = mcpFixture({ mcp: { call_timeout_s: 1 } })
    const client = await connect(f, "enforce:allow-all", "r-bad")
    const garbage = await client.callTool({ name: "garbage", arguments: {} }).then(
      () => null,
      (e: unknown) => e
    )
    expect(garbage).toBeInstanceOf(McpError)
    expect(String((garbage as McpError).message)).toContain("not a tool result")
    const hang = await client.callTool({ name: "hang", arguments: {} }).then(
      () => null,
      (e: unknown) => e
    )
    expect(hang).toBeInstanceOf(McpError)
    expect(String((hang as McpError).message)).toContain("did not answer")
    expect(firstText(await client.callTool({ name: "read_file", arguments: { path: "/notes.txt" } }))).toBe("buy milk")
    expect(calls(auditOf(f, "r-bad").records).map((r) => (r.tool as { name: string }).name)).toEqual(["garbage", "hang", "read_file"])
  })

  it("a server that crashes: an MCP error, later calls too, the gate stays up and records them", async () => {
    const f = mcpFixture()
    const client = await connect(f, "enforce:allow-all", "r-crash")
    const crash = await client.callTool({ name: "crash", arguments: {} }).then(
      () => null,
      (e: unknown) => e
    )
    expect(crash).toBeInstanceOf(McpError)
    const after = await client.callTool({ name: "read_file", arguments: { path: "/notes.txt" } }).then(
      () => null,
      (e: unknown) => e
    )
    expect(after).toBeInstanceOf(McpError)
    expect(String((after as McpError).message)).toContain("not running")
    const { records, chainOk } = auditOf(f, "r-crash")
    expect(chainOk).toBe(true)
    expect(calls(records).map((r) => (r.tool as { name: string }).name)).toEqual(["crash", "read_file"])
  })

  it("a call the client cancels while it is held is still recorded, and never reaches the server", async () => {
    const f = mcpFixture({ proxy: { hold_policy: "wait", hold_timeout_s: 1 } })
    const client = await connect(f, "enforce:hold-all", "r-cancel")
    const abort = new AbortController()
    const pending = client.callTool({ name: "delete_file", arguments: { path: "/notes.txt" } }, undefined, { signal: abort.signal }).then(
      () => "answered",
      (e: unknown) => (e instanceof Error ? e.name : String(e))
    )
    // the call record is written before the hold waits: cancel once it is there
    while (calls(auditOf(f, "r-cancel").records).length === 0) await new Promise((r) => setTimeout(r, 25))
    abort.abort()
    expect(await pending).not.toBe("answered")
    // the hold expires (hold_timeout_s 1) and is recorded; the gate neither sends nor answers the call
    while (auditOf(f, "r-cancel").records.length < 2) await new Promise((r) => setTimeout(r, 50))
    expect(auditOf(f, "r-cancel").records.map((r) => r.type === "approval" ? `approval ${String(r.approval)}` : `call ${String(r.effective_decision)}`)).toEqual([
      "call hold",
      "approval expired"
    ])
    // the gate is still serving: the next call is held too, expires and is refused
    expect((await client.callTool({ name: "list_dir", arguments: {} })).isError).toBe(true)
    expect(callsSeen(f)).toEqual([])
  })

  it("negotiates the newest revision the SDK speaks (2025-11-25), writes only MCP on stdout, and ends when stdin closes", async () => {
    const f = mcpFixture()
    const gate = spawn(process.execPath, [CLI, "mcp", "stdio", "--server", "fs", "--arm", "enforce:deny-all", "-c", f.config], { cwd: REPO, stdio: ["pipe", "pipe", "pipe"] })
    let out = ""
    const firstLine = new Promise<string>((resolve) =>
      gate.stdout.on("data", (b: Buffer) => {
        out += b.toString()
        if (out.includes("\n")) resolve(out.slice(0, out.indexOf("\n")))
      })
    )
    const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } } }
    gate.stdin.write(`${JSON.stringify(init)}\n`)
    const answer = JSON.parse(await firstLine) as { id: number; result: { protocolVersion: string; serverInfo: { name: string } } }
    expect(answer).toMatchObject({ id: 1, result: { protocolVersion: "2025-11-25", serverInfo: { name: "fs-test" } } })
    const code = new Promise<number | null>((resolve) => gate.once("exit", resolve))
    gate.stdin.end()
    expect(await code).toBe(0)
    expect(out.trim().split("\n")).toHaveLength(1)
  })

  it("a server that crashed during the session: the gate answers errors until the host leaves, then exits 1 saying so", async () => {
    const f = mcpFixture()
    const gate = spawn(process.execPath, [CLI, "mcp", "stdio", "--server", "fs", "--arm", "enforce:allow-all", "-c", f.config, "--run", "r-lost"], {
      cwd: REPO,
      stdio: ["pipe", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    const answers = new Map<number, Record<string, unknown>>()
    const waiters = new Map<number, (a: Record<string, unknown>) => void>()
    gate.stdout.on("data", (b: Buffer) => {
      out += b.toString()
      let nl = out.indexOf("\n")
      while (nl >= 0) {
        const msg = JSON.parse(out.slice(0, nl)) as Record<string, unknown>
        out = out.slice(nl + 1)
        nl = out.indexOf("\n")
        if (typeof msg.id === "number") {
          answers.set(msg.id, msg)
          waiters.get(msg.id)?.(msg)
        }
      }
    })
    gate.stderr.on("data", (b: Buffer) => void (err += b.toString()))
    const request = (id: number, method: string, params: Record<string, unknown>) =>
      new Promise<Record<string, unknown>>((resolve) => {
        waiters.set(id, resolve)
        gate.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`)
      })
    await request(1, "initialize", { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } })
    gate.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`)
    expect(await request(2, "tools/call", { name: "crash", arguments: {} })).toHaveProperty("error")
    const after = await request(3, "tools/call", { name: "read_file", arguments: { path: "/notes.txt" } })
    expect(JSON.stringify(after.error)).toContain("not running")
    const code = new Promise<number | null>((resolve) => gate.once("exit", resolve))
    gate.stdin.end()
    expect(await code).toBe(1)
    expect(err).toMatch(/MCP server 'fs' closed the connection before the session ended/)
    expect(calls(auditOf(f, "r-lost").records).map((r) => (r.tool as { name: string }).name)).toEqual(["crash", "read_file"])
  })

  it("bad arms, unknown judges and unknown servers are errors naming what was wrong", async () => {
    const f = mcpFixture()
    const base = ["mcp", "stdio", "-c", f.config]
    const noJudge = await runCliInProcess([...base, "--server", "fs", "--arm", "enforce"])
    expect(noJudge.code).toBe(2)
    expect(noJudge.stderr + noJudge.stdout).toContain("arm 'enforce' needs a judge")
    const badArm = await runCliInProcess([...base, "--server", "fs", "--arm", "veto:x"])
    expect(badArm.code).toBe(2)
    expect(badArm.stderr + badArm.stdout).toContain("unknown arm 'veto:x'")
    const judge = await runCliInProcess([...base, "--server", "fs", "--arm", "enforce:deny-al"])
    expect(judge).toMatchObject({ code: 1 })
    expect(judge.stderr).toContain("unknown judge 'deny-al'")
    const server = await runCliInProcess([...base, "--server", "fss", "--arm", "baseline"])
    expect(server).toMatchObject({ code: 1 })
    expect(server.stderr).toContain("unknown MCP server 'fss'; did you mean 'fs'?")
    expect(callsSeen(f)).toEqual([])
  })
})
