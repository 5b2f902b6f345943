/**
 * Results bound to the log, end to end at the CLI:
 * - `vetobench demo`: the enforce arm's answer names its denied call's record (`x-vetobench-record`), the
 *   demo writes that record's receipt, and the receipt verifies with the public key alone; the log copied
 *   elsewhere still proves the same receipt and is consistent with it;
 * - the demo's experiment outputs are bound to its results log: `verify-results` is OK (exit 0) with the
 *   key, PARTIAL (exit 3) without it; an edited summary.json, a deleted file, a bound audit log whose
 *   history was rewritten: FAIL (exit 1), each named;
 * - `vetobench report` binds its three files (a second report binds them again, the latest counts).
 */
import { copyFileSync, cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createHash } from "node:crypto"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { recordHash } from "../../src/domain/audit-chain.js"
import { makeWorkspace } from "../report/workspace.js"
import { runCliInProcess } from "../support/cli.js"

const tmp = (prefix: string) => mkdtempSync(path.join(tmpdir(), `vetobench-${prefix}-`))
const cli = (...args: Array<string>) => runCliInProcess(args)

let demo = { root: "", out: "", experiment: "", audit: "", pub: "", receipt: "" }

beforeAll(async () => {
  const out = tmp("results-demo")
  const r = await cli("demo", "--out", out)
  expect(r.code, r.stderr).toBe(0)
  const root = path.join(out, readdirSync(out)[0]!)
  const m = /its receipt \(record (\d+) in the signed tree of 8\): (\S+)$/m.exec(r.stdout)
  expect(m, r.stdout).not.toBeNull()
  demo = { root, out: r.stdout, experiment: path.join(root, "experiment"), audit: path.join(root, "audit"), pub: path.join(root, "keys", "audit.pub"), receipt: m![2]! }
}, 300_000)

/** A copy of the demo's experiment, audit and key directories, laid out the same. */
const copyDemo = () => {
  const root = tmp("results-copy")
  for (const d of ["experiment", "audit", "keys"]) cpSync(path.join(demo.root, d), path.join(root, d), { recursive: true })
  return { root, experiment: path.join(root, "experiment"), audit: path.join(root, "audit"), pub: path.join(root, "keys", "audit.pub") }
}

describe("vetobench demo: the denied call's receipt", () => {
  it("the enforce arm's answer names the record of its denied call, and the demo writes its receipt", () => {
    expect(demo.out).toMatch(/^the denied call's answer said x-vetobench-record: demo,6; its receipt \(record 6 in the signed tree of 8\): .*receipts\/demo-6\.json$/m)
    const receipt = JSON.parse(readFileSync(demo.receipt, "utf8")) as { record: { seq: number; arm: string; effective_decision: string; blocked: boolean } }
    expect(receipt.record).toMatchObject({ seq: 6, arm: "enforce", effective_decision: "deny", blocked: true })
  })

  it("the receipt verifies with the public key alone, elsewhere; the log copied elsewhere proves the same receipt and is consistent with it", async () => {
    const elsewhere = tmp("results-elsewhere")
    const receipt = path.join(elsewhere, "receipt.json")
    const pub = path.join(elsewhere, "audit.pub")
    copyFileSync(demo.receipt, receipt)
    copyFileSync(demo.pub, pub)
    const v = await cli("audit", "verify-receipt", receipt, "--pubkey", pub)
    expect(v.code).toBe(0)
    expect(v.stdout).toMatch(/^OK {6}.*receipt\.json: record 6 of demo\.jsonl is in the tree of 8 records signed by [0-9a-f]{16} \(vetobench\/demo\/[0-9a-f]{16}\)$/m)
    for (const f of ["demo.jsonl", "demo.anchor.jsonl"]) copyFileSync(path.join(demo.audit, f), path.join(elsewhere, f))
    const again = path.join(elsewhere, "again.json")
    expect((await cli("audit", "prove", path.join(elsewhere, "demo.jsonl"), "--record", "6", "--out", again)).code).toBe(0)
    expect(JSON.parse(readFileSync(again, "utf8"))).toEqual(JSON.parse(readFileSync(receipt, "utf8")))
    const since = await cli("verify-audit", path.join(elsewhere, "demo.jsonl"), "--pubkey", pub, "--since", receipt)
    expect(since.code).toBe(0)
    expect(since.stdout).toMatch(/; since ok \(8 records with its root [0-9a-f]{16}…, consistent up to 8 records; signed by [0-9a-f]{16}\)$/m)
  })
})

describe("verify-results on the demo's experiment", () => {
  it("OK (exit 0) with the key, every bound file and log unchanged; PARTIAL (exit 3) without it", async () => {
    expect(demo.out).toMatch(/^bound \d+ result files and 4 audit logs to .*experiment\/results\.jsonl \(record 1, final checkpoint; check them with verify-results\)$/m)
    const ok = await cli("verify-results", demo.experiment, "--pubkey", demo.pub)
    expect(ok.code).toBe(0)
    expect(ok.stdout).toMatch(/^OK {6}.*results\.jsonl: 1 records – chain ok; anchor ok \(2 checkpoint\(s\) cover all records\); signatures ok \(signed by [0-9a-f]{16}\); 1 manifest\(s\): record 1 \(\d+ files\)/m)
    expect(ok.stdout).toMatch(/^OK {6}.*experiment: (\d+) of \1 bound files unchanged, 4 of 4 bound audit logs unchanged; results log ok$/m)
    const partial = await cli("verify-results", demo.experiment)
    expect(partial.code).toBe(3)
    expect(partial.stderr.trim()).toBe(`vetobench: the results of ${demo.experiment} could not be fully verified (PARTIAL: exit 3)`)
  })

  it("an edited summary.json: FAIL (exit 1), naming it; a deleted file too", async () => {
    const c = copyDemo()
    const summary = path.join(c.experiment, "summary.json")
    writeFileSync(summary, readFileSync(summary, "utf8").replace('"schema"', '"schema" '))
    const r = await cli("verify-results", c.experiment, "--pubkey", c.pub)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/^FAIL {4}summary\.json: changed since record 1 \(demo\): sha256 [0-9a-f]{16}…, bound [0-9a-f]{16}…$/m)
    expect(r.stderr.trim()).toBe(`vetobench: results of ${c.experiment}: changed or missing since they were bound: summary.json`)
    rmSync(path.join(c.experiment, "report.md"))
    const gone = await cli("verify-results", c.experiment, "--pubkey", c.pub)
    expect(gone.code).toBe(1)
    expect(gone.stdout).toMatch(/^FAIL {4}report\.md: missing \(bound by record 1 \(demo\)\)$/m)
  })

  it("an edited summary.json re-bound by a manifest appended after the last checkpoint (and a lock file faked): never OK", async () => {
    const c = copyDemo()
    const summary = path.join(c.experiment, "summary.json")
    writeFileSync(summary, readFileSync(summary, "utf8").replace('"schema"', '"schema" '))
    const log = path.join(c.experiment, "results.jsonl")
    const lines = readFileSync(log, "utf8").trimEnd().split("\n")
    const last = JSON.parse(lines[lines.length - 1]!) as Record<string, unknown> & { files: Array<{ path: string; sha256: string; bytes: number }>; seq: number; hash: string }
    const bytes = readFileSync(summary)
    const files = last.files.map((f) => (f.path.endsWith("summary.json") ? { ...f, sha256: createHash("sha256").update(bytes).digest("hex"), bytes: bytes.length } : f))
    const { hash: _h, ...body } = last
    const forged = { ...body, seq: last.seq + 1, files, prev_hash: last.hash }
    writeFileSync(log, [...lines, JSON.stringify({ ...forged, hash: recordHash(forged) })].map((l) => l + "\n").join(""))
    writeFileSync(`${log}.lock`, "999999\n")
    const r = await cli("verify-results", c.experiment, "--pubkey", c.pub)
    expect(r.code).not.toBe(0)
    expect(r.stdout).not.toMatch(/^OK +summary\.json/m)
    expect(r.stdout).toMatch(/summary\.json: .*bound by record \d+, which no signed checkpoint covers/)
  })

  it("a bound audit log whose history was rewritten (a record edited and re-chained): FAIL, naming the log", async () => {
    const c = copyDemo()
    const log = readdirSync(c.audit).find((f) => f.endsWith(".baseline.jsonl"))!
    const file = path.join(c.audit, log)
    const records = readFileSync(file, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>)
    let prev = "0".repeat(64)
    const rewritten = records.map((r, i) => {
      const { hash: _h, ...body } = r
      const next = { ...body, ...(i === 0 ? { agent_model: "someone-else" } : {}), prev_hash: prev }
      const hash = recordHash(next)
      prev = hash
      return JSON.stringify({ ...next, hash })
    })
    writeFileSync(file, rewritten.map((l) => l + "\n").join(""))
    const r = await cli("verify-results", c.experiment, "--pubkey", c.pub)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(
      new RegExp(`^FAIL {4}audit log \\.\\./audit/${log.replace(/\./g, "\\.")}: history rewritten: records 1–\\d+ are not those bound by record 1 \\(demo\\) \\(Merkle root [0-9a-f]{16}…, bound [0-9a-f]{16}…\\)$`, "m")
    )
  })
})

describe("a bound audit log edited in place", () => {
  it("a record's body edited with its hash field left as it was: FAIL, naming the log (the chain is recomputed, not read)", async () => {
    const c = copyDemo()
    const log = readdirSync(c.audit).find((f) => f.endsWith(".baseline.jsonl"))!
    const file = path.join(c.audit, log)
    const lines = readFileSync(file, "utf8").trimEnd().split("\n")
    const first = JSON.parse(lines[0]!) as Record<string, unknown>
    lines[0] = JSON.stringify({ ...first, agent_model: "someone-else" })
    writeFileSync(file, lines.map((l) => l + "\n").join(""))
    const r = await cli("verify-results", c.experiment, "--pubkey", c.pub)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(new RegExp(`^FAIL {4}audit log \\.\\./audit/${log.replace(/\./g, "\\.")}: record 1: .*\\(records 1–\\d+ bound by record 1 \\(demo\\)\\)$`, "m"))
  })
})

describe("vetobench report binds its files", () => {
  it("report → bound; verify-results PARTIAL (unsigned), an edited summary.json FAIL; a second report binds the new files", async () => {
    const ws = makeWorkspace()
    try {
      const first = await cli("report", "-c", ws.settings, "-e", ws.experiment)
      // the fixture has an unscored case: exit 1 after writing (and binding) the files
      expect(first.code).toBe(1)
      expect(first.stdout).toContain(`bound 3 result files to ${path.join(ws.runDir, "results.jsonl")} (record 1, final checkpoint; check them with verify-results)`)
      expect((await cli("verify-results", ws.runDir)).code).toBe(3)
      const summary = path.join(ws.runDir, "summary.json")
      writeFileSync(summary, readFileSync(summary, "utf8").replace("fixture", "fixturE"))
      const edited = await cli("verify-results", ws.runDir)
      expect(edited.code).toBe(1)
      expect(edited.stdout).toMatch(/^FAIL {4}summary\.json: changed since record 1 \(report\)/m)
      const second = await cli("report", "-c", ws.settings, "-e", ws.experiment)
      expect(second.stdout).toContain("(record 2, final checkpoint;")
      const again = await cli("verify-results", ws.runDir, "--strict")
      expect(again.code).toBe(1)
      expect(again.stderr.trim()).toBe(`vetobench: the results of ${ws.runDir} could not be fully verified (--strict)`)
      expect((await cli("verify-results", ws.runDir)).code).toBe(3)
    } finally {
      ws.cleanup()
    }
  }, 120_000)

  it("a directory without a results log: one line, exit 1", async () => {
    const dir = tmp("results-none")
    const r = await cli("verify-results", dir)
    expect(r.code).toBe(1)
    expect(r.stderr.trim()).toBe(`vetobench: ${path.join(dir, "results.jsonl")}: no results log: nothing was bound here (run, score, replay and report bind their outputs)`)
  })
})
