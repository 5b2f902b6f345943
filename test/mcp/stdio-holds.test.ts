/**
 * `vetobench mcp stdio --holds-port 0` (the built bundle) with `hold_policy: wait`: the gate serves
 * the hold API on 127.0.0.1 and prints its URL to stderr; a held call waits until a person approves
 * it through that API (it then reaches the server once, the approval record names the approver) or
 * rejects it (it never reaches the server, the client gets an `isError` result).
 */
import { afterEach, describe, expect, it } from "vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { CLI, runCliInProcess } from "../support/cli.js"
import { auditOf, callsSeen, firstText, mcpFixture, REPO, type McpFixture } from "./support.js"

const TOKEN = "op-secret-1"
const open: Array<Client> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()))
})

/** A client of the stdio gate with the hold API on a free port, and that API's base URL (read from the gate's stderr). */
const gateWithHolds = async (f: McpFixture, runId: string): Promise<{ readonly client: Client; readonly holds: string; readonly stderr: () => string }> => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, "mcp", "stdio", "--server", "fs", "--arm", "enforce:hold-all", "-c", f.config, "--run", runId, "--holds-port", "0"],
    cwd: REPO,
    stderr: "pipe"
  })
  let err = ""
  const url = new Promise<string>((resolve) =>
    transport.stderr?.on("data", (b: Buffer) => {
      err += b.toString()
      const m = /hold API at (http:\/\/127\.0\.0\.1:\d+)\/v1\/holds/.exec(err)
      if (m !== null) resolve(m[1]!)
    })
  )
  const client = new Client({ name: "test-host", version: "1.0.0" })
  await client.connect(transport)
  open.push(client)
  return { client, holds: await url, stderr: () => err }
}

const auth = { authorization: `Bearer ${TOKEN}` }

/** The pending holds, polled until one for `tool` is there. */
const pendingFor = async (holds: string, tool: string): Promise<string> => {
  for (;;) {
    const res = await fetch(`${holds}/v1/holds`, { headers: auth })
    expect(res.status).toBe(200)
    const body = (await res.json()) as { data: ReadonlyArray<{ id: string; tool: { name: string } }> }
    const hold = body.data.find((h) => h.tool.name === tool)
    if (hold !== undefined) return hold.id
    await new Promise((r) => setTimeout(r, 50))
  }
}

const decide = (holds: string, id: string, body: unknown, headers: Record<string, string> = auth) =>
  fetch(`${holds}/v1/holds/${id}`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) })

describe("vetobench mcp stdio --holds-port", () => {
  it("hold_policy wait: an approved call reaches the server once, a rejected one never; both decisions recorded", async () => {
    const f = mcpFixture({ proxy: { hold_policy: "wait", hold_timeout_s: 120, operator_token: TOKEN } })
    const { client, holds, stderr } = await gateWithHolds(f, "r-holds")
    expect(stderr()).not.toContain(TOKEN)

    // without the operator token: 401, in the proxy's error shape
    const denied = await fetch(`${holds}/v1/holds`)
    expect(denied.status).toBe(401)
    expect(await denied.json()).toMatchObject({ error: { code: "unauthorized" } })

    const approvedCall = client.callTool({ name: "read_file", arguments: { path: "/notes.txt" } })
    const approveId = await pendingFor(holds, "read_file")
    expect(callsSeen(f)).toEqual([])
    const bad = await decide(holds, approveId, { approved: "yes" })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { code: "invalid_request" } })
    const ok = await decide(holds, approveId, { approved: true, approver: "alice", note: "fine" })
    expect(ok.status).toBe(200)
    expect(await ok.json()).toEqual({ id: approveId, outcome: "approved", approver: "alice" })
    expect(firstText(await approvedCall)).toBe("buy milk")
    expect(callsSeen(f)).toEqual(["read_file"])

    const rejectedCall = client.callTool({ name: "delete_file", arguments: { path: "/notes.txt" } })
    const rejectId = await pendingFor(holds, "delete_file")
    expect((await decide(holds, rejectId, { approved: false, approver: "bob" })).status).toBe(200)
    const rejected = await rejectedCall
    expect(rejected.isError).toBe(true)
    expect(callsSeen(f)).toEqual(["read_file"])
    // a decided hold is no longer pending
    expect((await decide(holds, rejectId, { approved: true, approver: "bob" })).status).toBe(404)

    const { records, chainOk } = auditOf(f, "r-holds")
    expect(chainOk).toBe(true)
    const approvals = records.filter((r) => r.type === "approval")
    expect(approvals).toMatchObject([
      { approval: "approved", approver: "alice", note: "fine", released: true },
      { approval: "rejected", approver: "bob" }
    ])
    expect(records.filter((r) => r.type === "call").map((r) => [(r.tool as { name: string }).name, r.effective_decision])).toEqual([
      ["read_file", "hold"],
      ["delete_file", "hold"]
    ])
  })

  it("--holds-port out of range is an error naming the flag", async () => {
    const f = mcpFixture()
    const r = await runCliInProcess(["mcp", "stdio", "-c", f.config, "--server", "fs", "--arm", "baseline", "--holds-port", "70000"])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("--holds-port: 70000 is not a port")
  })
})
