/**
 * `vetobench demo --wire`: the scripted session and the experiment with the agent speaking the
 * Messages API (and, for the session alone, the Responses API) — the same rows as over chat
 * completions, the output naming the format, every audit record carrying it.
 */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import type { AuditRecord } from "../../src/domain/audit-record.js"
import { isCallRecord } from "../../src/domain/audit-record.js"
import { runCliInProcess } from "../support/cli.js"

const tmp = () => mkdtempSync(path.join(tmpdir(), "vetobench-demo-wire-"))

/** The call records of every audit log the demo wrote under `out`. */
const callRecords = (out: string) => {
  const audit = path.join(out, readdirSync(out)[0]!, "audit")
  return readdirSync(audit)
    .filter((f) => f.endsWith(".jsonl") && !f.endsWith(".anchor.jsonl"))
    .flatMap((f) =>
      readFileSync(path.join(audit, f), "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as AuditRecord)
        .filter(isCallRecord)
    )
}

/** The table rows of the scripted session: what each arm returned to the agent. */
const rows = (stdout: string) => {
  const lines = stdout.split("\n")
  return (prefix: string, stream = "no") => lines.find((l) => l.startsWith(prefix) && l.split(/\s+/)[1] === stream) ?? ""
}

describe("vetobench demo --wire", () => {
  it("messages: the session and the experiment over POST /v1/messages", async () => {
    const out = tmp()
    const r = await runCliInProcess(["demo", "--wire", "messages", "--out", out])
    expect(r.stderr).not.toMatch(/Error:|at .*\.(mjs|ts)/)
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("wire format: messages (POST /v1/messages)")
    const row = rows(r.stdout)
    expect(row("qwen3.8-27b ")).toContain("list_dir, execute_command")
    expect(row("qwen3.8-27b@baseline")).toMatch(/list_dir, execute_command\s+0/)
    expect(row("qwen3.8-27b@shadow:small")).toContain("list_dir, execute_command")
    expect(row("qwen3.8-27b@enforce:small")).toMatch(/list_dir\s+1\s+I did not perform this action/)
    expect(row("qwen3.8-27b@enforce:small", "yes")).toMatch(/list_dir\s+1\s+I did not perform this action/)
    expect(r.stdout).toMatch(/enforce\s+no\s+execute_command\s+deny \(security_compromise\)\s+deny\s+yes/)
    expect(r.stdout).toMatch(/^OK {6}.*demo\.jsonl: 8 records – chain ok/m)

    // the experiment's agent spoke the same format, with the allow-all control equal to baseline
    expect(r.stdout).toMatch(/^== experiment: .*, wire format messages$/m)
    expect(r.stdout).toMatch(/^run {3}enforce-rules .*: \d+ ok/m)
    const records = callRecords(out)
    const experiment = records.filter((c) => c.run_id !== "demo")
    expect(records.filter((c) => c.run_id === "demo")).toHaveLength(8)
    expect(experiment.length).toBeGreaterThan(0)
    expect(records.every((c) => c.wire === "messages")).toBe(true)
    const html = /^open the report: (.*report\.html)$/m.exec(r.stdout)?.[1]
    const summary = JSON.parse(readFileSync(path.join(path.dirname(html!), "summary.json"), "utf8")) as {
      asbench: Record<string, Record<string, { n_scored: number; overall: unknown }>>
    }
    const scored = summary.asbench["qwen3.8-27b"]!
    expect(scored["baseline"]!.n_scored).toBeGreaterThan(0)
    expect(scored["enforce-allow-all"]!.overall).toEqual(scored["baseline"]!.overall)
  })

  it("responses: the session alone over POST /v1/responses", async () => {
    const out = tmp()
    const r = await runCliInProcess(["demo", "--wire", "responses", "--arms-only", "--out", out])
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("wire format: responses (POST /v1/responses)")
    const row = rows(r.stdout)
    expect(row("qwen3.8-27b@shadow:small")).toContain("list_dir, execute_command")
    expect(row("qwen3.8-27b@enforce:small")).toMatch(/list_dir\s+1\s+I did not perform this action/)
    expect(row("qwen3.8-27b@enforce:small", "yes")).toMatch(/list_dir\s+1\s+I did not perform this action/)
    const records = callRecords(out)
    expect(records).toHaveLength(8)
    expect(records.every((c) => c.wire === "responses")).toBe(true)
    expect(records.filter((c) => c.blocked).map((c) => [c.arm, c.stream, c.tool.name])).toEqual([
      ["enforce", false, "execute_command"],
      ["enforce", true, "execute_command"]
    ])
  })

  it("an unknown format is a usage error", async () => {
    const r = await runCliInProcess(["demo", "--wire", "grpc", "--arms-only", "--out", tmp()])
    expect(r.code).toBe(2)
  })
})
