/**
 * `vetobench verify-audit` as users run it, over the tamper matrix of the audit-v2 issue: edit,
 * delete, insert, reorder, truncated tail (with and without the anchor), forged checkpoint, swapped
 * public key, and the checks that could not be made (PARTIAL, exit 3). Forgeries that keep the chain
 * intact are in verify-forgery.test.ts. The commands run in this process (test/support/cli.ts).
 */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { recordHash } from "../../src/domain/audit-chain.js"
import { makeCheckpoint, signerFromPem } from "../../src/domain/checkpoint.js"
import { runCliInProcess } from "../support/cli.js"

let src = { log: "", anchor: "", pub: "", key: "" }

beforeAll(async () => {
  const out = mkdtempSync(path.join(tmpdir(), "vetobench-verify-"))
  expect((await runCliInProcess(["demo", "--arms-only", "--out", out])).code).toBe(0)
  const [stamp] = readdirSync(out)
  const dir = path.join(out, stamp!)
  src = {
    log: path.join(dir, "audit", "demo.jsonl"),
    anchor: path.join(dir, "audit", "demo.anchor.jsonl"),
    pub: path.join(dir, "keys", "audit.pub"),
    key: path.join(dir, "keys", "audit.key")
  }
})

/** A copy of the demo's log and anchor, changed by `edit` (lines of the log, lines of the anchor). */
const tampered = (edit: (log: Array<string>, anchor: Array<string>) => void) => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-tamper-"))
  const log = readFileSync(src.log, "utf8").trimEnd().split("\n")
  const anchor = readFileSync(src.anchor, "utf8").trimEnd().split("\n")
  edit(log, anchor)
  const file = path.join(dir, "demo.jsonl")
  writeFileSync(file, log.map((l) => l + "\n").join(""))
  writeFileSync(path.join(dir, "demo.anchor.jsonl"), anchor.map((l) => l + "\n").join(""))
  return file
}

const verify = (file: string, ...extra: Array<string>) => runCliInProcess(["verify-audit", file, "--pubkey", src.pub, ...extra])

describe("verify-audit: the tamper matrix", () => {
  it("the untouched log verifies fully (chain, anchor, signature)", async () => {
    const r = await verify(src.log)
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^OK {6}.*: 8 records – chain ok; anchor ok .*; signatures ok/m)
  })

  it.each([
    ["an edited record", (log: Array<string>) => {
      const rec = JSON.parse(log[2]!) as { blocked: boolean }
      rec.blocked = !rec.blocked
      log[2] = JSON.stringify(rec)
    }, /chain: record 3: hash mismatch \(record was modified\)/],
    ["a deleted record", (log: Array<string>) => void log.splice(1, 1), /chain: record 2: prev_hash does not match/],
    ["an inserted record", (log: Array<string>) => {
      const { hash: _h, ...body } = JSON.parse(log[3]!) as Record<string, unknown>
      const forged = { ...body, tool: { name: "delete_all", description: "", parameters: null, arguments: {} } }
      log.splice(4, 0, JSON.stringify({ ...forged, hash: recordHash(forged) }))
    }, /chain: record 5: prev_hash does not match/],
    ["reordered records", (log: Array<string>) => {
      const [a, b] = [log[4]!, log[5]!]
      log[4] = b
      log[5] = a
    }, /chain: record 5: prev_hash does not match/]
  ])("%s is detected at its index", async (_name, edit, message) => {
    const r = await verify(tampered((log) => edit(log)))
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/^FAIL {4}/m)
    expect(r.stdout).toMatch(message)
  })

  it("a truncated tail is detected with the anchor, and reported as unverifiable without it (PARTIAL: exit 3, 1 with --strict)", async () => {
    const file = tampered((log) => void log.splice(6))
    const withAnchor = await verify(file)
    expect(withAnchor.code).toBe(1)
    expect(withAnchor.stdout).toMatch(/chain ok; anchor FAILED: truncated: checkpoint 1 covers 8 records but the file has 6/)
    rmSync(file.replace(/\.jsonl$/, ".anchor.jsonl"))
    const without = await runCliInProcess(["verify-audit", file])
    expect(without.code).toBe(3)
    expect(without.stdout).toMatch(/^PARTIAL .*: 6 records – chain ok; anchor not checked: no anchor file: a truncated tail cannot be detected/m)
    expect((await runCliInProcess(["verify-audit", file, "--strict"])).code).toBe(1)
  })

  it("a rewritten file with a fresh chain is caught by the signed head", async () => {
    const file = tampered((log) => {
      // rebuild the whole chain over records 1-8 with record 8 changed: the chain verifies, the anchor does not
      let prev = "0".repeat(64)
      for (let i = 0; i < log.length; i++) {
        const { hash: _h, ...body } = JSON.parse(log[i]!) as Record<string, unknown>
        const next = { ...body, prev_hash: prev, ...(i === 7 ? { blocked: false } : {}) }
        const hash = recordHash(next)
        log[i] = JSON.stringify({ ...next, hash })
        prev = hash
      }
    })
    const r = await verify(file)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/chain ok; anchor FAILED: checkpoint 1: record 8 differs from the checkpointed head \(file rewritten\)/)
  })

  it("a forged checkpoint (edited after signing) fails its signature", async () => {
    const file = tampered((log, anchor) => {
      log.splice(7)
      const c = JSON.parse(anchor[0]!) as Record<string, unknown>
      const { hash } = JSON.parse(log[6]!) as { hash: string }
      anchor[0] = JSON.stringify({ ...c, seq: 7, count: 7, head: hash })
    })
    const r = await verify(file)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/signatures FAILED: checkpoint 1: signature does not verify \(forged or edited\)/)
  })

  it("a checkpoint re-signed with another key fails against the trusted key; without --pubkey the signer is not authenticated", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "vetobench-otherkey-"))
    expect((await runCliInProcess(["audit", "keygen", "--out", dir])).code).toBe(0)
    const other = signerFromPem(readFileSync(path.join(dir, "audit.key"), "utf8"))
    const file = tampered((log, anchor) => {
      log.splice(7)
      const { hash } = JSON.parse(log[6]!) as { hash: string }
      anchor[0] = JSON.stringify(makeCheckpoint({ file: "demo.jsonl", seq: 7, head: hash, ts: new Date().toISOString() }, other))
    })
    const r = await verify(file)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/signatures FAILED: checkpoint 1: signed by key [0-9a-f]{16}, not by the given key [0-9a-f]{16}/)
    const unauth = await runCliInProcess(["verify-audit", file])
    expect(unauth.code).toBe(3)
    expect(unauth.stdout).toMatch(/^PARTIAL .*signatures not checked: signatures valid under the recorded key [0-9a-f]{16}, but the signer is not authenticated \(give --pubkey\)/m)
  })

  it("--json gives the structured result; a missing file is a FAIL line, not a crash", async () => {
    const r = await runCliInProcess(["verify-audit", src.log, "/nonexistent/x.jsonl", "--json", "--pubkey", src.pub])
    expect(r.code).toBe(1)
    const json = JSON.parse(r.stdout) as Array<{ status: string; records?: number; error?: string; anchor?: { status: string } }>
    expect(json.map((x) => x.status)).toEqual(["ok", "failed"])
    expect(json[0]!.records).toBe(8)
    expect(json[0]!.anchor!.status).toBe("ok")
    expect(json[1]!.error).toBe("file not found")
    const plain = await runCliInProcess(["verify-audit", "/nonexistent/x.jsonl"])
    expect(plain.stdout).toMatch(/^FAIL {4}\/nonexistent\/x\.jsonl: file not found$/m)
    expect(plain.stderr).not.toMatch(/at .*\.mjs/)
  })

  it("--anchor names another anchor file; several files with --anchor is a usage error; no file exits 2", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "vetobench-anchor-"))
    const log = path.join(dir, "copy.jsonl")
    copyFileSync(src.log, log)
    const r = await runCliInProcess(["verify-audit", log, "--anchor", src.anchor, "--pubkey", src.pub])
    expect(r.stdout).toMatch(/checkpoint 1 is for demo\.jsonl, not copy\.jsonl/)
    expect((await runCliInProcess(["verify-audit", log, src.log, "--anchor", src.anchor])).code).toBe(1)
    expect((await runCliInProcess(["verify-audit"])).code).toBe(2)
  })
})
