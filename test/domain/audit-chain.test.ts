import { createHash, generateKeyPairSync } from "node:crypto"
import { describe, expect, it } from "vitest"
import { GENESIS_TIP, lastRecordOf, recordHash, sealRecord } from "../../src/domain/audit-chain.js"
import { verifyAudit } from "../../src/domain/audit-verify.js"
import { verifyChainText } from "../../src/domain/chain-verify.js"
import { makeCheckpoint, publicKeyFromPem, signerFromPem } from "../../src/domain/checkpoint.js"
import { AUDIT_SCHEMA, GENESIS_HASH, HASH_PREFIX } from "../../src/domain/audit-record.js"
import type { CallEntry as AuditEntry, CallRecord as AuditRecord } from "../../src/domain/audit-record.js"
import { canonicalize } from "../../src/domain/canonical-json.js"
import { decided } from "../../src/domain/verdict.js"

const judge = { judge: "static", kind: "static", model: null, version: "p1" }

const entry = (i: number): AuditEntry => {
  const verdict = decided(judge, i % 2 === 0 ? "deny" : "allow", { reason: `rule ${i} — ünïcode` })
  return {
    type: "call",
    run_id: "run-1",
    request_id: `req-${i}`,
    episode_id: "ep-1",
    session_id: null,
    principal: null,
    agent_model: "qwen",
    arm: "enforce",
    judge: "static",
    stream: false,
    choice_index: 0,
    call_index: i,
    tool_call_id: `call_${i}`,
    tool: { name: "send_email", description: "Send mail", parameters: { type: "object" }, arguments: { to: "a@b.c", n: i } },
    verdict,
    layers: [verdict],
    effective_decision: verdict.decision,
    blocked: verdict.decision === "deny",
    fail_policy: "closed",
    approval: "automatic",
    outcome: null,
    gate_ms: 1.5
  }
}

const chain = (n: number): Array<AuditRecord> => {
  const out: Array<AuditRecord> = []
  let prev = GENESIS_HASH
  for (let i = 1; i <= n; i++) {
    const r = sealRecord(entry(i), { seq: i, ts: new Date(1_700_000_000_000 + i).toISOString(), prev_hash: prev })
    out.push(r)
    prev = r.hash
  }
  return out
}

const lines = (records: ReadonlyArray<unknown>): Array<string> => records.map((r) => JSON.stringify(r))
const text = (ls: ReadonlyArray<string>): string => ls.map((l) => l + "\n").join("")

describe("audit chain", () => {
  it("seals records with schema, chain position and a hash over the prefixed canonical form", () => {
    const [r1, r2] = chain(2)
    expect(r1!.schema).toBe(AUDIT_SCHEMA)
    expect(Object.keys(r1!).slice(0, 4)).toEqual(["schema", "seq", "ts", "type"])
    expect(Object.keys(r1!).slice(-2)).toEqual(["prev_hash", "hash"])
    expect(r1!.prev_hash).toBe(GENESIS_HASH)
    expect(r2!.prev_hash).toBe(r1!.hash)
    const { hash, ...body } = r1!
    const expected = createHash("sha256").update(HASH_PREFIX + canonicalize(body), "utf8").digest("hex")
    expect(hash).toBe(expected)
    expect(hash).toMatch(/^[0-9a-f]{64}$/)
    expect(recordHash(r1!)).toBe(hash) // a present hash key is ignored
    expect(recordHash({ ...body, prev_hash: "x" })).not.toBe(hash) // prev_hash is covered
  })

  it("verifies an intact chain, and an empty file", () => {
    expect(verifyChainText(text(lines(chain(5))))).toEqual({ ok: true, records: 5, index: null, message: "ok", torn: false })
    expect(verifyChainText("")).toEqual({ ok: true, records: 0, index: null, message: "ok", torn: false })
    // blank lines are skipped
    const ls = lines(chain(2))
    expect(verifyChainText(`${ls[0]}\n\n${ls[1]}\n`).ok).toBe(true)
  })

  it("detects an edited field at that record", () => {
    const recs = chain(5)
    const ls = lines(recs)
    ls[2] = JSON.stringify({ ...recs[2]!, blocked: !recs[2]!.blocked })
    expect(verifyChainText(text(ls))).toEqual({
      ok: false,
      records: 2,
      index: 3,
      message: "record 3: hash mismatch (record was modified)",
      torn: false
    })
    // re-serialising with other whitespace or key order is not an edit
    const reordered = lines(chain(5))
    reordered[2] = JSON.stringify(JSON.parse(canonicalize(recs[2])), null, 0)
    expect(verifyChainText(text(reordered)).ok).toBe(true)
  })

  it("detects a deleted record", () => {
    const ls = lines(chain(5))
    ls.splice(1, 1)
    const r = verifyChainText(text(ls))
    expect(r.ok).toBe(false)
    expect(r.index).toBe(2)
    expect(r.message).toBe("record 2: prev_hash does not match previous record (deleted, inserted or reordered record)")
  })

  it("detects reordered records", () => {
    const ls = lines(chain(5))
    ;[ls[1], ls[2]] = [ls[2]!, ls[1]!]
    const r = verifyChainText(text(ls))
    expect(r.index).toBe(2)
    expect(r.message).toMatch(/^record 2: prev_hash does not match/)
  })

  it("detects an inserted forged record at its index", () => {
    const recs = chain(5)
    // a copy of record 2 with another tool, hash recomputed
    const { hash: _h, ...body } = recs[1]!
    const forged = { ...body, tool: { ...body.tool, name: "delete_all" } }
    const ls = lines(recs)
    ls.splice(2, 0, JSON.stringify({ ...forged, hash: recordHash(forged) }))
    const r = verifyChainText(text(ls))
    expect(r.index).toBe(3)
    expect(r.message).toMatch(/^record 3: prev_hash does not match/)

    // a forged record linked correctly: the next (genuine) record no longer links
    const linked = { ...forged, seq: 3, prev_hash: recs[1]!.hash }
    const ls2 = lines(recs)
    ls2.splice(2, 0, JSON.stringify({ ...linked, hash: recordHash(linked) }))
    expect(verifyChainText(text(ls2)).index).toBe(4)
  })

  it("checks seq, unparsable lines and non-objects", () => {
    const r1 = sealRecord(entry(1), { seq: 1, ts: "2025-01-01T00:00:00.000Z", prev_hash: GENESIS_HASH })
    const r2 = sealRecord(entry(2), { seq: 3, ts: "2025-01-01T00:00:00.001Z", prev_hash: r1.hash })
    expect(verifyChainText(text(lines([r1, r2])))).toMatchObject({ ok: false, index: 2, message: "record 2: seq 3, expected 2" })
    const first = sealRecord(entry(1), { seq: 7, ts: "2025-01-01T00:00:00.000Z", prev_hash: GENESIS_HASH })
    expect(verifyChainText(text(lines([first]))).message).toBe("record 1: seq 7, expected 1")

    const ls = lines(chain(3))
    ls[1] = ls[1]!.slice(0, 40)
    expect(verifyChainText(text(ls))).toMatchObject({ ok: false, records: 1, index: 2, message: "record 2: not valid JSON" })
    expect(verifyChainText("[1]\n").message).toBe("record 1: not a JSON object")
  })

  it("reports a torn last line", () => {
    const ls = lines(chain(3))
    const torn = text(ls.slice(0, 2)) + ls[2]!.slice(0, 50)
    expect(verifyChainText(torn)).toEqual({
      ok: false,
      records: 2,
      index: 3,
      message: "record 3: torn last line (incomplete write)",
      torn: true
    })
    // complete JSON without its newline is still an incomplete write
    expect(verifyChainText(text(ls.slice(0, 2)) + ls[2]!)).toMatchObject({ ok: false, index: 3, torn: true })
    // an earlier failure wins over the torn tail
    const bad = lines(chain(3))
    bad[0] = "{"
    expect(verifyChainText(text(bad.slice(0, 2)) + "x")).toMatchObject({ index: 1, torn: false })
  })

  it("finds the chain tip of a text", () => {
    const recs = chain(3)
    const ls = lines(recs)
    expect(lastRecordOf("")).toEqual(GENESIS_TIP)
    expect(lastRecordOf("torn")).toEqual(GENESIS_TIP)
    expect(lastRecordOf(text(ls))).toEqual({ seq: 3, hash: recs[2]!.hash, ts: recs[2]!.ts })
    expect(lastRecordOf(text(ls) + "\n\n" + "{torn")).toEqual({ seq: 3, hash: recs[2]!.hash, ts: recs[2]!.ts })
    expect(lastRecordOf(text(ls) + "garbage\n")).toBeNull()
  })
})

describe("duplicate keys", () => {
  it("a record with a key written twice fails, naming the key and the line, though JSON.parse would read a record that hashes", () => {
    const recs = chain(4)
    const ls = lines(recs)
    // record 3 is allowed (blocked: false); the forgery shows "blocked":true first, JSON.parse keeps the last
    expect(recs[2]!.blocked).toBe(false)
    ls[2] = ls[2]!.replace("{", '{"blocked":true,')
    expect(recordHash(JSON.parse(ls[2]!) as object)).toBe(recs[2]!.hash)
    expect(verifyChainText(text(ls))).toEqual({
      ok: false,
      records: 2,
      index: 3,
      message: 'record 3: duplicate key "blocked" at line 3 (refused: JSON readers disagree on which value counts)',
      torn: false
    })
    // in a nested object, in canonical lines, after a blank line (the line number counts it)
    const nested = [canonicalize(recs[0]), "", canonicalize(recs[1]).replace('"name":"send_email"', '"name":"delete_all","name":"send_email"')]
    expect(verifyChainText(text(nested)).message).toBe('record 2: duplicate key "name" at line 3 (refused: JSON readers disagree on which value counts)')
  })
})

describe("number spellings", () => {
  /** one record whose tool arguments are `args` (as the proxy parsed them from the model's JSON) */
  const withArgs = (args: Record<string, unknown>): AuditRecord => {
    const e = entry(1)
    return sealRecord({ ...e, tool: { ...e.tool, arguments: args } }, { seq: 1, ts: "2026-11-30T12:00:00.000Z", prev_hash: GENESIS_HASH })
  }

  it("a respelled number that reads as the same double (the hash verifies) is refused, naming the number and the line", () => {
    const rec = withArgs({ id: 1e16 })
    for (const line of [canonicalize(rec), JSON.stringify(rec)]) {
      expect(line).toContain('"id":10000000000000000')
      expect(verifyChainText(text([line]))).toMatchObject({ ok: true, records: 1 })
      const respelled = line.replace('"id":10000000000000000', '"id":10000000000000001')
      // JavaScript reads the same record, so the hash verifies; Python's json reads another integer
      expect(recordHash(JSON.parse(respelled) as object)).toBe(rec.hash)
      expect(verifyChainText(text(["", respelled]))).toEqual({
        ok: false,
        records: 0,
        index: 1,
        message:
          "record 1: number 10000000000000001 at line 2 is not in canonical form (10000000000000000) " +
          "(refused: the hash covers the number JavaScript reads, and JSON readers disagree on its value)",
        torn: false
      })
    }
  })

  it("other non-canonical spellings of the same value are refused too: 1.0, 1e2, -0, 1.50, 1E+2", () => {
    const rec = withArgs({ a: 1, b: 100, c: 0, d: 1.5 })
    const line = canonicalize(rec)
    for (const [from, to] of [
      ['"a":1', '"a":1.0'],
      ['"b":100', '"b":1e2'],
      ['"b":100', '"b":1E+2'],
      ['"c":0', '"c":-0'],
      ['"d":1.5', '"d":1.50']
    ] as const) {
      const respelled = line.replace(from, to)
      expect(recordHash(JSON.parse(respelled) as object)).toBe(rec.hash)
      const v = verifyChainText(text([respelled]))
      expect(v.ok).toBe(false)
      expect(v.message).toContain(`number ${to.slice(4)} at line 1 is not in canonical form (${from.slice(4)})`)
    }
    // digits in strings are not numbers; whitespace and member order stay free
    const spaced = JSON.stringify({ ...(JSON.parse(line) as object), hash: rec.hash }, null, 2).replace(/\n/g, " ")
    expect(verifyChainText(text([spaced])).ok).toBe(true)
  })

  it("what the writer writes always verifies: canonical numbers of any size, e.g. a model's integer beyond 2^53", () => {
    const args = JSON.parse('{"big":12345678901234567890,"neg":-9007199254740993,"tiny":1e-7,"huge":1e21,"f":0.1}') as Record<string, unknown>
    const rec = withArgs(args)
    const line = canonicalize(rec)
    expect(line).toContain('"big":12345678901234567000')
    expect(line).toContain('"huge":1e+21')
    expect(verifyChainText(text([line]))).toMatchObject({ ok: true, records: 1 })
    expect(verifyChainText(text([JSON.stringify(rec)]))).toMatchObject({ ok: true, records: 1 })
    // the same record with the model's own spelling of the integer: refused
    expect(verifyChainText(text([line.replace("12345678901234567000", "12345678901234567890")])).message).toContain(
      "number 12345678901234567890 at line 1 is not in canonical form (12345678901234567000)"
    )
  })
})

describe("verifyAudit: coverage by signed checkpoints", () => {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519")
  const signer = signerFromPem(privateKey.export({ type: "pkcs8", format: "pem" }).toString())
  const trusted = publicKeyFromPem(publicKey.export({ type: "spki", format: "pem" }).toString())
  const recs = chain(5)
  const log = text(lines(recs))
  const checkpoint = (seq: number) =>
    JSON.stringify(makeCheckpoint({ file: "f.jsonl", seq, head: recs[seq - 1]!.hash, ts: "2026-11-30T12:00:00.000Z" }, signer)) + "\n"
  const writer = { lock: "f.jsonl.lock", pid: 4242 }

  it("every record covered by a signed checkpoint: ok; the same without the key: partial", () => {
    expect(verifyAudit("f.jsonl", log, checkpoint(3) + checkpoint(5), trusted)).toMatchObject({
      status: "ok",
      anchor: { status: "ok", message: "2 checkpoint(s) cover all records" },
      signatures: { status: "ok" }
    })
    expect(verifyAudit("f.jsonl", log, checkpoint(3) + checkpoint(5), null).status).toBe("partial")
  })

  it("with the key, records and no checkpoint (no anchor, an empty one) fail; without the key they are not checked", () => {
    for (const anchor of [null, "", "\n"]) {
      const v = verifyAudit("f.jsonl", log, anchor, trusted)
      expect(v.status).toBe("failed")
      expect(v.anchor).toMatchObject({ status: "failed", message: expect.stringMatching(/: none of the 5 records is covered by a signed checkpoint$/) })
      expect(v.signatures.status).toBe("failed")
      // a writer holding the file does not excuse a file with nothing signed
      expect(verifyAudit("f.jsonl", log, anchor, trusted, writer).status).toBe("failed")
      expect(verifyAudit("f.jsonl", log, anchor, null).status).toBe("partial")
    }
    // no record, nothing signed: nothing could be checked
    expect(verifyAudit("f.jsonl", "", null, trusted)).toMatchObject({ status: "partial", anchor: { status: "not-checked" }, signatures: { status: "not-checked" } })
    expect(verifyAudit("f.jsonl", "", "", trusted).status).toBe("partial")
  })

  it("with the key, records after the last checkpoint fail unless a writer holds the file (then partial)", () => {
    const closed = verifyAudit("f.jsonl", log, checkpoint(3), trusted)
    expect(closed.status).toBe("failed")
    expect(closed.anchor.message).toBe(
      "1 checkpoint(s) cover records 1–3; records 4–5 not covered by a signed checkpoint, and no writer holds the file (closing it checkpoints every record): " +
        "checkpoints were removed, or the writer stopped without closing the file"
    )
    expect(closed.signatures.status).toBe("ok")
    const live = verifyAudit("f.jsonl", log, checkpoint(3), trusted, writer)
    expect(live).toMatchObject({
      status: "partial",
      anchor: { status: "not-checked", message: "1 checkpoint(s) cover records 1–3; records 4–5 not covered yet: a writer holds the file (f.jsonl.lock, pid 4242)" },
      signatures: { status: "ok" }
    })
    expect(verifyAudit("f.jsonl", log, checkpoint(4), trusted, { lock: "f.jsonl.lock", pid: null }).anchor.message).toMatch(/record 5 not covered yet: a writer holds the file \(f\.jsonl\.lock\)$/)
    // without the key: not checked either way
    expect(verifyAudit("f.jsonl", log, checkpoint(3), null).anchor).toMatchObject({ status: "not-checked", message: "1 checkpoint(s) cover records 1–3; 2 later record(s) not yet covered" })
  })

  describe("final checkpoints: was the file closed after the last one?", () => {
    const at = (seq: number, final?: boolean) =>
      JSON.stringify(
        makeCheckpoint({ file: "f.jsonl", seq, head: recs[seq - 1]!.hash, ts: "2026-11-30T12:00:00.000Z", ...(final === undefined ? {} : { final }) }, signer)
      ) + "\n"

    it("`final` is written and signed: flipping, adding or removing it breaks the signature", () => {
      const line = at(5, false)
      expect(JSON.parse(line)).toMatchObject({ seq: 5, final: false })
      expect(at(5)).not.toContain('"final"')
      const flipped = line.replace('"final":false', '"final":true')
      const removed = line.replace('"final":false,', "")
      const added = at(5).replace('"count":5,', '"count":5,"final":true,')
      for (const edited of [flipped, removed, added]) {
        expect(edited).not.toBe(line)
        expect(verifyAudit("f.jsonl", log, at(3, true) + edited, trusted).signatures).toMatchObject({
          status: "failed",
          message: "checkpoint 2: signature does not verify (forged or edited)"
        })
      }
    })

    it("the last checkpoint final: ok; an earlier final one, reopened and closed again: ok", () => {
      expect(verifyAudit("f.jsonl", log, at(5, true), trusted)).toMatchObject({ status: "ok", anchor: { message: "1 checkpoint(s) cover all records" } })
      // closed at 3, reopened, a periodic checkpoint at 4, closed again at 5 (and a close right after a periodic one)
      expect(verifyAudit("f.jsonl", log, at(3, true) + at(4, false) + at(5, true), trusted).status).toBe("ok")
      expect(verifyAudit("f.jsonl", log, at(4, false) + at(5, false) + at(5, true), trusted).status).toBe("ok")
    })

    it("the last checkpoint not final and no writer: fails (cut back to it); partial while a writer holds the file", () => {
      // the file and its anchor cut back to the periodic checkpoint at 4: every remaining record is covered
      const cut = text(lines(recs.slice(0, 4)))
      const anchor = at(2, true) + at(4, false)
      expect(verifyAudit("f.jsonl", cut, anchor + at(5, true), trusted).anchor.status).toBe("failed") // (truncated)
      const v = verifyAudit("f.jsonl", cut, anchor, trusted)
      expect(v).toMatchObject({ status: "failed", records: 4, chain: { ok: true }, signatures: { status: "ok" } })
      expect(v.anchor).toEqual({
        status: "failed",
        message:
          "2 checkpoint(s) cover all records, but checkpoint 2, the last, is not final: the file was not closed by its writer after this checkpoint: " +
          "records may have been cut (no writer holds the file, and closing it writes a final checkpoint)"
      })
      // a duplicate checkpoint of the same seq, the final one dropped: the same
      expect(verifyAudit("f.jsonl", log, at(5, false) + at(5, true), trusted).status).toBe("ok")
      expect(verifyAudit("f.jsonl", log, at(5, false), trusted).status).toBe("failed")
      // a writer holds the file: not checked (a lock is not signed: it never makes this ok)
      expect(verifyAudit("f.jsonl", cut, anchor, trusted, writer)).toMatchObject({
        status: "partial",
        anchor: {
          status: "not-checked",
          message: "2 checkpoint(s) cover all records, but checkpoint 2, the last, is not final: a writer holds the file (f.jsonl.lock, pid 4242) and has not closed it yet"
        }
      })
      // without the key: not checked
      expect(verifyAudit("f.jsonl", cut, anchor, null)).toMatchObject({ status: "partial", anchor: { status: "not-checked" } })
      // records after the last (final) checkpoint: the rule for uncovered records, as before
      expect(verifyAudit("f.jsonl", log, at(4, true), trusted).anchor.message).toMatch(/^1 checkpoint\(s\) cover records 1–4; record 5 not covered by a signed checkpoint/)
    })

    it("checkpoints without the field (written before it existed) are judged as before; the last checkpoint decides", () => {
      expect(verifyAudit("f.jsonl", log, at(3) + at(5), trusted)).toMatchObject({ status: "ok", anchor: { message: "2 checkpoint(s) cover all records" } })
      // an old anchor continued by a new writer, and the other way round
      expect(verifyAudit("f.jsonl", log, at(3) + at(5, true), trusted).status).toBe("ok")
      expect(verifyAudit("f.jsonl", log, at(3) + at(5, false), trusted).status).toBe("failed")
      expect(verifyAudit("f.jsonl", log, at(3, false) + at(5), trusted).status).toBe("ok")
    })

    it("a `final` that is not a boolean is refused", () => {
      const odd = JSON.stringify({ ...(JSON.parse(at(5)) as object), final: "yes" }) + "\n"
      expect(verifyAudit("f.jsonl", log, odd, trusted).anchor).toEqual({ status: "failed", message: "checkpoint 1: final is not a boolean" })
    })
  })

  it("a checkpoint with a duplicate key is refused", () => {
    const forged = checkpoint(5).replace("{", '{"seq":3,')
    expect(verifyAudit("f.jsonl", log, forged, trusted)).toMatchObject({
      status: "failed",
      anchor: { status: "failed", message: 'checkpoint 1: duplicate key "seq" (refused: JSON readers disagree on which value counts)' }
    })
  })
})
