/** `vetobench audit keygen | manifest | outcomes | score` as users run them (in this process: test/support/cli.ts). */
import { createHash } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { runCliInProcess } from "../support/cli.js"

const tmp = () => mkdtempSync(path.join(tmpdir(), "vetobench-audit-cli-"))

describe("vetobench audit keygen", () => {
  it("writes a private key only its owner can read and a public key; never overwrites without --force", async () => {
    const dir = tmp()
    const r = await runCliInProcess(["audit", "keygen", "--out", dir, "--name", "k"])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/key id {6}[0-9a-f]{16}/)
    expect(statSync(path.join(dir, "k.key")).mode & 0o777).toBe(0o600)
    expect(readFileSync(path.join(dir, "k.pub"), "utf8")).toContain("BEGIN PUBLIC KEY")
    const again = await runCliInProcess(["audit", "keygen", "--out", dir, "--name", "k"])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain("refusing to overwrite")
    expect((await runCliInProcess(["audit", "keygen", "--out", dir, "--name", "k", "--force"])).code).toBe(0)
  })
})

describe("vetobench audit manifest", () => {
  it("appends the results manifest as the final record, covered by a new signed checkpoint", async () => {
    const out = tmp()
    expect((await runCliInProcess(["demo", "--arms-only", "--out", out])).code).toBe(0)
    const dir = path.join(out, readdirSync(out)[0]!)
    const log = path.join(dir, "audit", "demo.jsonl")
    const report = path.join(dir, "report.md")
    writeFileSync(report, "# results\n")
    const r = await runCliInProcess(["audit", "manifest", log, report, "--key", path.join(dir, "keys", "audit.key")])
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("as record 9")
    const last = JSON.parse(readFileSync(log, "utf8").trimEnd().split("\n").at(-1)!) as { type: string; files: Array<{ path: string; sha256: string; bytes: number }> }
    expect(last.type).toBe("manifest")
    expect(last.files).toEqual([{ path: report, sha256: createHash("sha256").update("# results\n").digest("hex"), bytes: 10 }])
    expect(last.files[0]!.sha256).toMatch(/^[0-9a-f]{64}$/)
    const v = await runCliInProcess(["verify-audit", log, "--pubkey", path.join(dir, "keys", "audit.pub")])
    expect(v.stdout).toMatch(/^OK {6}.*: 9 records – chain ok; anchor ok \(2 checkpoint\(s\) cover all records\); signatures ok/m)
    // an output that cannot be hashed is one error line, nothing appended
    const bad = await runCliInProcess(["audit", "manifest", log, "/nonexistent/out.csv", "--key", path.join(dir, "keys", "audit.key")])
    expect(bad.code).toBe(1)
    expect(bad.stderr.trim().split("\n")).toHaveLength(1)
    expect(readFileSync(log, "utf8").trimEnd().split("\n")).toHaveLength(9)
  })
})

describe("vetobench audit outcomes", () => {
  it("adds outcome records that reference the calls; blocked calls need no result; re-running adds nothing", async () => {
    const out = tmp()
    expect((await runCliInProcess(["demo", "--arms-only", "--out", out])).code).toBe(0)
    const log = path.join(out, readdirSync(out)[0]!, "audit", "demo.jsonl")
    const key = path.join(out, readdirSync(out)[0]!, "keys", "audit.key")
    const calls = readFileSync(log, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as { seq: number; hash: string; request_id: string; tool_call_id: string; blocked: boolean })
    const results = path.join(out, "results.jsonl")
    const allowed = calls.filter((c) => !c.blocked)
    writeFileSync(results, allowed.slice(0, 3).map((c) => JSON.stringify({ request_id: c.request_id, tool_call_id: c.tool_call_id, outcome: "executed" })).join("\n") + "\n")
    // the log's checkpoints are signed: appending without the key is refused, nothing written
    const unsigned = await runCliInProcess(["audit", "outcomes", log, "--results", results])
    expect(unsigned.code).toBe(1)
    expect(unsigned.stderr).toMatch(/signed by key [0-9a-f]{16}; configure that key/)
    expect(readFileSync(log, "utf8").trimEnd().split("\n")).toHaveLength(calls.length)
    // a -c that does not exist is one line; nothing written
    const missing = await runCliInProcess(["audit", "outcomes", log, "--results", results, "-c", path.join(out, "missing.yaml")])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/missing\.yaml: settings file not found/)
    // the settings' audit.signing_key signs when --key is not given (as the proxy that wrote the log did)
    const settings = path.join(out, "settings.yaml")
    writeFileSync(settings, `upstreams:\n  - name: local\n    base_url: http://127.0.0.1:1/v1\n    models: []\naudit:\n  signing_key: ${key}\n`)
    const r = await runCliInProcess(["audit", "outcomes", log, "--results", results, "-c", settings])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    const blocked = calls.filter((c) => c.blocked).length
    expect(r.stdout).toContain(`${blocked + 3} outcome record(s) appended`)
    expect(r.stdout).toContain(`${allowed.length - 3} call(s) without a result`)
    const after = readFileSync(log, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as { type: string; ref?: { seq: number; hash: string }; outcome?: string })
    const outcomes = after.filter((x) => x.type === "outcome")
    expect(outcomes.filter((o) => o.outcome === "blocked").map((o) => o.ref!.seq)).toEqual(calls.filter((c) => c.blocked).map((c) => c.seq))
    for (const o of outcomes) expect(calls.find((c) => c.seq === o.ref!.seq)!.hash).toBe(o.ref!.hash)
    expect((await runCliInProcess(["verify-audit", log, "--pubkey", key.replace(/\.key$/, ".pub")])).stdout).toMatch(/^OK .*signatures ok/m)
    const again = await runCliInProcess(["audit", "outcomes", log, "--results", results, "--key", key])
    expect(again.stdout).toMatch(new RegExp(`^0 outcome record\\(s\\) appended to .*; ${blocked + 3} call\\(s\\) already had one`))
    const bad = path.join(out, "bad.jsonl")
    writeFileSync(bad, '{"request_id": "x", "outcome": "maybe"}\n')
    const badRun = await runCliInProcess(["audit", "outcomes", log, "--results", bad, "--key", key])
    expect(badRun.code).toBe(1)
    expect(badRun.stderr).toContain("line 1: needs request_id and outcome")
  })
})

describe("vetobench audit score", () => {
  const fixtures = path.resolve("test/fixtures/audit")
  const policy = path.resolve("test/fixtures/policies/accounts-payable.json")

  it.each([
    ["study-a-plain-log.jsonl", [0, 0.5, 0, 0, 0, 2]],
    ["study-b-scope-mode.jsonl", [0, 1, 0.17, 1, 2, 8]],
    ["study-c-full-mode.jsonl", [1, 1, 1, 1, 2, 9]]
  ])("reproduces the study row for %s (toolgate.md §3.2)", async (file, row) => {
    const r = await runCliInProcess(["audit", "score", path.join(fixtures, file), "--policy", policy, "--json"])
    expect(r.code).toBe(0)
    const s = (JSON.parse(r.stdout) as { files: Array<{ scores: Record<string, number> }> }).files[0]!.scores
    expect([
      s.action_recoverability,
      s.lifecycle_coverage,
      s.policy_checkability,
      s.responsibility_attribution,
      s.evidence_integrity_ordinal,
      s.schema_fields_recoverable_of_9
    ]).toEqual(row)
  })

  it("scores our own records; a missing file is one line, exit 1", async () => {
    const out = tmp()
    expect((await runCliInProcess(["demo", "--arms-only", "--out", out])).code).toBe(0)
    const log = path.join(out, readdirSync(out)[0]!, "audit", "demo.jsonl")
    const r = await runCliInProcess(["audit", "score", log])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/demo\.jsonl\s+8\s/)
    const missing = await runCliInProcess(["audit", "score", "/nonexistent/a.jsonl"])
    expect(missing.code).toBe(1)
    expect(missing.stderr.trim().split("\n")).toHaveLength(1)
  })
})
