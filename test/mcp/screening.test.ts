/**
 * Result screening on MCP: `vetobench mcp stdio` with `screening.judge` a classifier (the fake vLLM's
 * `prompt-guard`): the test server's `fetch_page` result carries an injection. Enforce: the client
 * reads the notice instead; shadow: the result reaches the client, and is recorded as flagged; a
 * clean result passes. One `result` record per screened result, joined to its call by the call id.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { type InProcessServer, startCliInProcess } from "../support/cli.js"
import { INJECTION } from "./fs-server.js"
import { auditOf, firstText, mcpFixture, stdioGateClient } from "./support.js"

let fake: InProcessServer
const clients: Array<Client> = []

beforeAll(async () => {
  fake = await startCliInProcess(["fake-vllm", "--port", "0"], /fake vLLM serving (http:\/\/\S+)/)
}, 60_000)
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()))
  await fake.stop()
})

const fixture = () =>
  mcpFixture({
    upstreams: [{ name: "fake", base_url: `${fake.match[1]!.replace(/\/v1$/, "")}/v1` }],
    judges: { inj: { kind: "classifier", model: "prompt-guard" } },
    screening: { judge: "inj" }
  })

describe("result screening on MCP", () => {
  it("enforce: a flagged result is replaced by the notice; a clean one passes; both recorded", async () => {
    const f = fixture()
    const client = await stdioGateClient(f, "enforce:allow-all", "s-enforce")
    clients.push(client)
    const page = firstText(await client.callTool({ name: "fetch_page", arguments: { url: "https://example.com" } }))
    expect(page).not.toContain(INJECTION)
    expect(page).toContain("withheld")
    expect(firstText(await client.callTool({ name: "read_file", arguments: { path: "/notes.txt" } }))).toBe("buy milk")
    const { records, chainOk } = auditOf(f, "s-enforce")
    expect(chainOk).toBe(true)
    const calls = records.filter((r) => r.type === "call")
    const results = records.filter((r) => r.type === "result")
    expect(results).toMatchObject([
      { wire: "mcp", mcp_server: "fs", arm: "enforce", judge: "inj", tool_call_id: calls[0]!.tool_call_id },
      { wire: "mcp", mcp_server: "fs", arm: "enforce", judge: "inj", tool_call_id: calls[1]!.tool_call_id }
    ])
    expect(results.map((r) => (r.verdict as { decision: string }).decision)).toEqual(["deny", "allow"])
    expect(results.map((r) => [r.flagged, r.replaced])).toEqual([
      [true, true],
      [false, false]
    ])
  })

  it("shadow: the flagged result reaches the client and is only recorded", async () => {
    const f = fixture()
    const client = await stdioGateClient(f, "shadow:allow-all", "s-shadow")
    clients.push(client)
    expect(firstText(await client.callTool({ name: "fetch_page", arguments: { url: "https://example.com" } }))).toContain(INJECTION)
    const results = auditOf(f, "s-shadow").records.filter((r) => r.type === "result")
    expect(results).toMatchObject([{ wire: "mcp", arm: "shadow", mcp_server: "fs", flagged: true, replaced: false }])
    expect((results[0]!.verdict as { decision: string }).decision).toBe("deny")
  })
})
