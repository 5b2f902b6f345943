/**
 * Receipts and the transparency checks at the CLI (`audit prove`, `audit verify-receipt`,
 * `verify-audit --since`), and the tamper matrix: each forgery detected with its exact reason and exit 1.
 *
 * The genuine log: 10 records signed by the trusted key, checkpoints at 4 and 8 (periodic) and 10 (final).
 * A third party kept the checkpoint of 8 records (its C2SP note) and the receipt of record 6.
 * - an edited record: the chain names it; a receipt whose record was edited fails; no proof is made;
 * - a forked history with a valid new signature chain (records 6–10 rewritten and re-chained, the tree and
 *   every checkpoint recomputed and signed by the forger's key): another key for --pubkey, and with the kept
 *   checkpoint a rewritten history even when the forger's key is the one given, or none;
 * - a checkpoint signed by another key: in the anchor, in a receipt, given to --since;
 * - a truncated log: against the anchor, and against a kept checkpoint when the anchor was cut too;
 * - a receipt for a record that was later changed (the forged log): the record named.
 */
import { generateKeyPairSync } from "node:crypto"
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import { AuditSink } from "../../layers/AuditSink.js"
import { type Checkpoint, CHECKPOINT_PREFIX, signerFromPem, type Signer } from "../../src/domain/checkpoint.js"
import { canonicalize } from "../../src/domain/canonical-json.js"
import { parseSignedCheckpoint, signCheckpoint } from "../../src/domain/tlog-checkpoint.js"
import type { AuditEntry, CallEntry } from "../../src/domain/audit-record.js"
import { callEntry } from "../support/audit-entry.js"
import { runCliInProcess } from "../support/cli.js"

const tmp = (prefix: string) => mkdtempSync(path.join(tmpdir(), `vetobench-${prefix}-`))

interface KeyPair {
  readonly signer: Signer
  readonly key: string
  readonly pub: string
}

const keyPair = (dir: string, name: string): KeyPair => {
  const pair = generateKeyPairSync("ed25519")
  const key = path.join(dir, `${name}.key`)
  const pub = path.join(dir, `${name}.pub`)
  writeFileSync(key, pair.privateKey.export({ type: "pkcs8", format: "pem" }))
  writeFileSync(pub, pair.publicKey.export({ type: "spki", format: "pem" }))
  return { signer: signerFromPem(readFileSync(key, "utf8")), key, pub }
}

/** Write `entries` to run `t` in `dir` with a sink signed by `signer`, one at a time, a checkpoint every 4. */
const writeLog = (dir: string, signer: Signer, entries: ReadonlyArray<AuditEntry>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const sink = yield* AuditSink
        for (const e of entries) yield* sink.append("t", e)
      }).pipe(Effect.provide(AuditSink.layerFile(dir, { signer, checkpointEvery: 4 })))
    )
  )

const entries = (from: number, to: number, change: (e: CallEntry) => CallEntry = (e) => e) =>
  Array.from({ length: to - from + 1 }, (_, i) => change(callEntry(from + i, "t", { path: `/srv/${from + i}` })))
const denied = (e: CallEntry): CallEntry => (e.call_index === 0 && e.request_id === "req-6" ? { ...e, effective_decision: "deny", blocked: true } : e)

const lines = (file: string) => readFileSync(file, "utf8").split("\n").filter((l) => l !== "")
const cli = (...args: Array<string>) => runCliInProcess(args)

let trusted: KeyPair
let forger: KeyPair
/** the genuine log */
let genuine = { dir: "", log: "", anchor: "" }
/** the forged log: records 6–10 rewritten (record 6 allowed, not denied), everything recomputed, signed by the forger */
let forged = { dir: "", log: "", anchor: "" }
/** kept by a third party: the C2SP checkpoint of 8 records, of 10 records, and the receipt of record 6 */
let kept8 = ""
let kept10 = ""
let receipt6 = ""

const logIn = (dir: string) => ({ dir, log: path.join(dir, "t.jsonl"), anchor: path.join(dir, "t.anchor.jsonl") })

beforeAll(async () => {
  const keys = tmp("tamper-keys")
  trusted = keyPair(keys, "trusted")
  forger = keyPair(keys, "forger")
  genuine = logIn(tmp("tamper-genuine"))
  await writeLog(genuine.dir, trusted.signer, entries(1, 10, denied))
  const notes = lines(genuine.anchor).map((l) => JSON.parse(l) as Checkpoint)
  expect(notes.map((c) => [c.seq, c.final])).toEqual([
    [4, false],
    [8, false],
    [10, true]
  ])
  kept8 = path.join(keys, "kept-8.checkpoint")
  writeFileSync(kept8, notes[1]!.note!)
  kept10 = path.join(keys, "kept-10.checkpoint")
  writeFileSync(kept10, notes[2]!.note!)
  receipt6 = path.join(keys, "receipt-6.json")
  const r = await cli("audit", "prove", genuine.log, "--record", "6", "--out", receipt6)
  expect(r.code, r.stderr).toBe(0)
  // the forger keeps records 1–5 and writes 6–10 again, with record 6 allowed: a valid chain, tree and signature chain of their own
  forged = logIn(tmp("tamper-forged"))
  writeFileSync(forged.log, lines(genuine.log).slice(0, 5).map((l) => l + "\n").join(""))
  await writeLog(forged.dir, forger.signer, entries(6, 10))
}, 120_000)

/** A copy of the genuine log and anchor, changed by `edit` (lines without their newline). */
const copyOf = (edit: (log: Array<string>, anchor: Array<string>) => void) => {
  const c = logIn(tmp("tamper-copy"))
  const log = lines(genuine.log)
  const anchor = lines(genuine.anchor)
  edit(log, anchor)
  writeFileSync(c.log, log.map((l) => l + "\n").join(""))
  writeFileSync(c.anchor, anchor.map((l) => l + "\n").join(""))
  return c
}

/** An anchor line re-signed (v1 signature, key, and its note) by `by`. */
const resigned = (line: string, by: Signer): string => {
  const { sig: _sig, ...body } = JSON.parse(line) as Checkpoint
  const note = parseSignedCheckpoint(body.note!)
  if (typeof note === "string") throw new Error(note)
  const next = { ...body, key: by.key, note: signCheckpoint({ ...note.head, origin: `vetobench/t/${by.key.key_id}` }, by) }
  return JSON.stringify({ ...next, sig: by.sign(Buffer.from(CHECKPOINT_PREFIX + canonicalize(next), "utf8")).toString("base64") })
}

describe("genuine: receipts and consistency verify (exit 0); usage errors exit 2; unauthenticated is PARTIAL (exit 3)", () => {
  it("the inclusion receipt verifies with the trusted key, without the log (copied elsewhere, the log gone)", async () => {
    const elsewhere = path.join(tmp("tamper-elsewhere"), "receipt.json")
    copyFileSync(receipt6, elsewhere)
    const r = await cli("audit", "verify-receipt", elsewhere, "--pubkey", trusted.pub)
    expect(r.code).toBe(0)
    expect(r.stdout.trim()).toBe(`OK      ${elsewhere}: record 6 of t.jsonl is in the tree of 10 records signed by ${trusted.signer.key.key_id} (vetobench/t/${trusted.signer.key.key_id})`)
    const receipt = JSON.parse(readFileSync(receipt6, "utf8")) as { record: CallEntry & { seq: number }; leaf_index: number; audit_path: Array<string> }
    expect(receipt.record).toMatchObject({ seq: 6, effective_decision: "deny", blocked: true })
    expect(receipt.leaf_index).toBe(5)
    expect(receipt.audit_path).toHaveLength(4)
  })

  it("verify-audit --since the kept checkpoint: OK with the key; PARTIAL (exit 3) without it; the consistency proof from it verifies", async () => {
    const ok = await cli("verify-audit", genuine.log, "--pubkey", trusted.pub, "--since", kept8)
    expect(ok.code).toBe(0)
    expect(ok.stdout).toMatch(/^OK {6}.*: 10 records – chain ok; anchor ok \(3 checkpoint\(s\) cover all records\); signatures ok \(signed by [0-9a-f]{16}\); since ok \(8 records with its root [0-9a-f]{16}…, consistent up to 10 records; signed by [0-9a-f]{16}\)$/m)
    const partial = await cli("verify-audit", genuine.log, "--since", kept8)
    expect(partial.code).toBe(3)
    expect(partial.stdout).toMatch(/since not checked: 8 records with its root [0-9a-f]{16}…, consistent up to 10 records, but its signer is not authenticated \(give --pubkey\)/)
    const proof = path.join(tmp("tamper-proof"), "consistency.json")
    expect((await cli("audit", "prove", genuine.log, "--from", kept8, "--out", proof)).code).toBe(0)
    const v = await cli("audit", "verify-receipt", proof, "--pubkey", trusted.pub)
    expect(v.code).toBe(0)
    expect(v.stdout.trim()).toBe(`OK      ${proof}: t.jsonl grew from 8 to 10 records without rewriting any (consistency proof verifies; checkpoints signed by ${trusted.signer.key.key_id})`)
  })

  it("usage errors: prove needs --record or --from (exit 2, one line); verify-receipt needs --pubkey (exit 2)", async () => {
    const none = await cli("audit", "prove", genuine.log)
    expect(none.code).toBe(2)
    expect(none.stderr.trim()).toBe("vetobench audit prove: give --record N or --from FILE (one of them)")
    const both = await cli("audit", "prove", genuine.log, "--record", "1", "--from", kept8)
    expect(both.code).toBe(2)
    expect((await cli("audit", "verify-receipt", receipt6)).code).toBe(2)
    const beyond = await cli("audit", "prove", genuine.log, "--record", "11")
    expect(beyond.code).toBe(1)
    expect(beyond.stderr.trim()).toBe(`vetobench: ${genuine.log}: there is no record 11: the log has records 1–10`)
  })
})

describe("the tamper matrix: each forgery FAILs (exit 1) with its exact reason", () => {
  it("an edited record: the chain names it; no proof is made from the log; a receipt whose record was edited fails", async () => {
    const c = copyOf((log) => {
      log[5] = log[5]!.replace('"blocked":true', '"blocked":false')
    })
    const v = await cli("verify-audit", c.log, "--pubkey", trusted.pub)
    expect(v.code).toBe(1)
    expect(v.stdout).toMatch(/^FAIL {4}.*: 10 records – chain: record 6: hash mismatch \(record was modified\);/m)
    const p = await cli("audit", "prove", c.log, "--record", "2")
    expect(p.code).toBe(1)
    expect(p.stderr.trim()).toBe(`vetobench: ${c.log}: the chain does not verify (record 6: hash mismatch (record was modified)): no proof is made from a broken log (run verify-audit)`)
    const edited = path.join(tmp("tamper-receipt"), "edited.json")
    writeFileSync(edited, readFileSync(receipt6, "utf8").replace('"blocked": true', '"blocked": false'))
    const r = await cli("audit", "verify-receipt", edited, "--pubkey", trusted.pub)
    expect(r.code).toBe(1)
    expect(r.stdout.trim()).toBe(`FAIL    ${edited}: the record's hash does not match its content (the record was edited)`)
    expect(r.stderr.trim()).toBe("vetobench: the receipt did not verify")
  })

  it("a forked history with a valid new signature chain: another key for --pubkey; a rewritten history against the kept checkpoint, whichever key is given", async () => {
    expect(lines(forged.log)).toHaveLength(10)
    // self-consistent under the forger's key
    expect((await cli("verify-audit", forged.log, "--pubkey", forger.pub)).code).toBe(0)
    const v = await cli("verify-audit", forged.log, "--pubkey", trusted.pub)
    expect(v.code).toBe(1)
    expect(v.stdout).toMatch(new RegExp(`signatures FAILED: checkpoint 1: signed by key ${forger.signer.key.key_id}, not by the given key ${trusted.signer.key.key_id}$`, "m"))
    for (const key of [[], ["--pubkey", forger.pub]]) {
      const s = await cli("verify-audit", forged.log, ...key, "--since", kept8)
      expect(s.code).toBe(1)
      expect(s.stdout).toMatch(/; since FAILED: (history rewritten: records 1–8 are not those it covers \(their Merkle root differs from its root\)|it is not signed by the given key .*)$/m)
    }
    const unkeyed = await cli("verify-audit", forged.log, "--since", kept8)
    expect(unkeyed.stdout).toMatch(/; since FAILED: history rewritten: records 1–8 are not those it covers \(their Merkle root differs from its root\)$/m)
    const p = await cli("audit", "prove", forged.log, "--from", kept8)
    expect(p.code).toBe(1)
    expect(p.stderr.trim()).toMatch(/the old checkpoint is of vetobench\/t\/[0-9a-f]{16}, this log's are of vetobench\/t\/[0-9a-f]{16}$/)
  })

  it("a checkpoint signed by another key: in the anchor, in a receipt, given to --since", async () => {
    const c = copyOf((_log, anchor) => {
      anchor[2] = resigned(anchor[2]!, forger.signer)
    })
    const v = await cli("verify-audit", c.log, "--pubkey", trusted.pub)
    expect(v.code).toBe(1)
    expect(v.stdout).toMatch(new RegExp(`signatures FAILED: checkpoint 3: signed by key ${forger.signer.key.key_id}, not by the given key ${trusted.signer.key.key_id}$`, "m"))
    const receipt = JSON.parse(readFileSync(receipt6, "utf8")) as { checkpoint: string }
    const head = parseSignedCheckpoint(receipt.checkpoint)
    if (typeof head === "string") throw new Error(head)
    const other = path.join(tmp("tamper-receipt"), "other-key.json")
    writeFileSync(other, JSON.stringify({ ...receipt, checkpoint: signCheckpoint(head.head, forger.signer) }))
    const r = await cli("audit", "verify-receipt", other, "--pubkey", trusted.pub)
    expect(r.code).toBe(1)
    expect(r.stdout.trim()).toMatch(
      new RegExp(`^FAIL {4}.*other-key\\.json: the checkpoint is not signed by the given key \\(vetobench/t/${trusted.signer.key.key_id}, key id [0-9a-f]{8}\\): signed by vetobench/t/${trusted.signer.key.key_id} \\(key id [0-9a-f]{8}\\)$`)
    )
    const since = path.join(tmp("tamper-since"), "other-key.checkpoint")
    writeFileSync(since, signCheckpoint(head.head, forger.signer))
    const s = await cli("verify-audit", genuine.log, "--pubkey", trusted.pub, "--since", since)
    expect(s.code).toBe(1)
    expect(s.stdout).toMatch(/; since FAILED: it is not signed by the given key \(vetobench\/t\/[0-9a-f]{16}, key id [0-9a-f]{8}\): signed by vetobench\/t\/[0-9a-f]{16} \(key id [0-9a-f]{8}\)$/m)
  })

  it("a truncated log: against its anchor; with the anchor cut too, against the kept checkpoint", async () => {
    const cut = copyOf((log) => void log.splice(8))
    const v = await cli("verify-audit", cut.log, "--pubkey", trusted.pub)
    expect(v.code).toBe(1)
    expect(v.stdout).toMatch(/anchor FAILED: truncated: checkpoint 3 covers 10 records but the file has 8;/)
    const both = copyOf((log, anchor) => {
      log.splice(8)
      anchor.splice(2)
    })
    const s = await cli("verify-audit", both.log, "--pubkey", trusted.pub, "--since", kept10)
    expect(s.code).toBe(1)
    expect(s.stdout).toMatch(/; since FAILED: truncated: it covers 10 records but the file has 8$/m)
    const p = await cli("audit", "prove", both.log, "--from", kept10)
    expect(p.code).toBe(1)
    expect(p.stderr.trim()).toMatch(/the old checkpoint covers 10 records, more than the log's latest \(8\): the log was cut$/)
  })

  it("a receipt for a record that was later changed: the record is named; the receipt itself still verifies (it is the evidence)", async () => {
    const s = await cli("verify-audit", forged.log, "--since", receipt6)
    expect(s.code).toBe(1)
    expect(s.stdout).toMatch(/; since FAILED: record 6 differs from the receipt's \(changed after the receipt was issued\)$/m)
    expect((await cli("audit", "verify-receipt", receipt6, "--pubkey", trusted.pub)).code).toBe(0)
    // the forger's own receipt of their record 6 is not signed by the trusted key
    const theirs = path.join(tmp("tamper-theirs"), "receipt.json")
    expect((await cli("audit", "prove", forged.log, "--record", "6", "--out", theirs)).code).toBe(0)
    const r = await cli("audit", "verify-receipt", theirs, "--pubkey", trusted.pub)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/: the checkpoint is not signed by the given key/)
  })
})
