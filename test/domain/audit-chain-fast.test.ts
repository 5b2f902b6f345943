/**
 * The fast sealing and verification paths against the reference algorithms they replace: sealing as
 * a spread hashed over `canonicalizeReference`, and verification that parses every line and
 * recomputes every hash that way. Same records, same bytes, same verdicts and messages.
 */
import { createHash } from "node:crypto"
import { FastCheck as fc } from "effect"
import { describe, expect, it } from "vitest"
import { preparedRecord, prepareEntry, sealPrepared, recordLine, sealRecord, type ChainPosition } from "../../src/domain/audit-chain.js"
import { verifyChain, verifyChainText, type VerifyResult } from "../../src/domain/chain-verify.js"
import { AUDIT_SCHEMA, GENESIS_HASH, HASH_PREFIX, type AuditEntry, type CallEntry } from "../../src/domain/audit-record.js"
import { verifyAudit } from "../../src/domain/audit-verify.js"
import { CanonicalJsonError, canonicalizeReference } from "../../src/domain/canonical-json.js"
import { makeCheckpoint } from "../../src/domain/checkpoint.js"
import { decided, failed } from "../../src/domain/verdict.js"
import { isObject } from "../../src/domain/is-object.js"

// ---------------------------------------------------------------------------------------------
// The reference algorithms (as they were before the fast paths)

const referenceHash = (record: object): string => {
  let body: object = record
  if (Object.prototype.hasOwnProperty.call(record, "hash")) {
    const { hash: _ignored, ...rest } = record as Record<string, unknown>
    body = rest
  }
  return createHash("sha256").update(HASH_PREFIX, "utf8").update(canonicalizeReference(body), "utf8").digest("hex")
}

const referenceSeal = (entry: object, at: ChainPosition): Record<string, unknown> => {
  const body = { schema: AUDIT_SCHEMA, seq: at.seq, ts: at.ts, ...entry, prev_hash: at.prev_hash }
  return { ...body, hash: referenceHash(body) }
}

/** The first key (in text order) an object of the valid JSON `text` repeats, read by plain recursive descent; or null. */
const referenceDuplicate = (text: string): string | null => {
  let i = 0
  let found: string | null = null
  const ws = () => {
    while (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r") i++
  }
  const str = (): string => {
    const start = i++
    while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1
    i++
    return JSON.parse(text.slice(start, i)) as string
  }
  const value = (): void => {
    ws()
    const c = text[i]
    if (c === "{" || c === "[") {
      const seen = c === "{" ? new Set<string>() : null
      i++
      ws()
      if (text[i] === "}" || text[i] === "]") {
        i++
        return
      }
      for (;;) {
        if (seen !== null) {
          ws()
          const k = str()
          if (seen.has(k)) found ??= k
          seen.add(k)
          ws()
          i++ // ":"
        }
        value()
        ws()
        if (text[i++] !== ",") return
      }
    }
    if (c === '"') str()
    else while (i < text.length && !",}] \t\n\r".includes(text[i]!)) i++
  }
  value()
  return found
}

/** The first number of the valid JSON `text` not spelled as `String(Number(literal))`, with that spelling; or null. */
const referenceRespelled = (text: string): [string, string] | null => {
  const outsideStrings = text.replace(/"(?:[^"\\]|\\.)*"/g, '""')
  for (const [literal] of outsideStrings.matchAll(/-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g)) {
    const canonical = Number.isFinite(Number(literal)) ? String(Number(literal)) : "null"
    if (canonical !== literal) return [literal, canonical]
  }
  return null
}

const referenceVerify = (text: string): VerifyResult => {
  const failAt = (n: number, message: string, torn = false): VerifyResult => ({ ok: false, records: n - 1, index: n, message: `record ${n}: ${message}`, torn })
  const lines = text.split("\n")
  const tail = lines.pop() ?? ""
  let prev = GENESIS_HASH
  let n = 0
  for (const [i, line] of lines.entries()) {
    if (line.trim() === "") continue
    n++
    let rec: unknown
    try {
      rec = JSON.parse(line)
    } catch {
      return failAt(n, "not valid JSON")
    }
    if (!isObject(rec)) return failAt(n, "not a JSON object")
    // a key written twice: which value counts depends on the reader, so the line is refused
    const dup = referenceDuplicate(line)
    if (dup !== null) return failAt(n, `duplicate key ${JSON.stringify(dup)} at line ${i + 1} (refused: JSON readers disagree on which value counts)`)
    if (rec.prev_hash !== prev) return failAt(n, "prev_hash does not match previous record (deleted, inserted or reordered record)")
    let hash: string
    try {
      hash = referenceHash(rec)
    } catch {
      return failAt(n, "hash mismatch (record was modified)")
    }
    if (rec.hash !== hash) return failAt(n, "hash mismatch (record was modified)")
    if (rec.seq !== n) return failAt(n, `seq ${JSON.stringify(rec.seq) ?? "missing"}, expected ${n}`)
    // a number spelled otherwise than JCS spells it: readers disagree on its value, the hash is over JavaScript's
    const respelled = referenceRespelled(line)
    if (respelled !== null) {
      const shown = (t: string) => (t.length > 40 ? `${t.slice(0, 40)}…` : t)
      return failAt(
        n,
        `number ${shown(respelled[0])} at line ${i + 1} is not in canonical form (${shown(respelled[1])}) ` +
          `(refused: the hash covers the number JavaScript reads, and JSON readers disagree on its value)`
      )
    }
    prev = rec.hash as string
  }
  if (tail !== "") return failAt(n + 1, "torn last line (incomplete write)", true)
  return { ok: true, records: n, index: null, message: "ok", torn: false }
}

// ---------------------------------------------------------------------------------------------

const textArb = fc.oneof(fc.string({ maxLength: 12 }), fc.fullUnicodeString({ maxLength: 6 }), fc.constantFrom("", "é\"\\\n\t", "\ud800", "\u2028"))

const entryArb: fc.Arbitrary<CallEntry> = fc
  .record({
    i: fc.nat(10_000),
    reason: textArb,
    raw: textArb,
    args: fc.jsonValue({ maxDepth: 3 }),
    gate: fc.double({ noNaN: true, noDefaultInfinity: true }),
    prob: fc.option(fc.double({ min: 0, max: 1, noNaN: true })),
    fail: fc.boolean(),
    shared: fc.boolean()
  })
  .map(({ i, reason, raw, args, gate, prob, fail, shared }) => {
    const id = { judge: "j", kind: "llm_json", model: "m", version: `sha256:${i}` }
    const verdict = fail ? failed(id, "error", reason) : decided(id, i % 2 === 0 ? "allow" : "deny", { reason, raw, probability: prob, usage: { n: i } })
    return {
      type: "call" as const,
      run_id: `r${i % 3}`,
      request_id: `req-${i}`,
      episode_id: null,
      session_id: reason,
      principal: null,
      agent_model: "m",
      arm: "enforce" as const,
      judge: "j",
      stream: i % 2 === 0,
      choice_index: 0,
      call_index: i,
      tool_call_id: `c${i}`,
      tool: { name: "t", description: raw, parameters: i % 3 === 0 ? null : { type: "object" }, arguments: args },
      verdict,
      layers: shared ? [verdict] : [{ ...verdict }],
      effective_decision: verdict.decision,
      blocked: false,
      fail_policy: "closed" as const,
      approval: "automatic" as const,
      outcome: null,
      gate_ms: gate
    }
  })

const atArb: fc.Arbitrary<ChainPosition> = fc.record({
  seq: fc.integer({ min: 1, max: 2 ** 40 }),
  ts: fc.constantFrom("2026-11-30T12:00:00.000Z", "2026-01-01T00:00:00.001Z", "odd \"ts\""),
  prev_hash: fc.constantFrom(GENESIS_HASH, "ab".repeat(32), "not hex")
})

describe("fast sealing equals the reference sealing", () => {
  it("sealRecord, and prepareEntry + sealPrepared (hash, line) + preparedRecord", () => {
    fc.assert(
      fc.property(entryArb, atArb, (entry, at) => {
        const expected = referenceSeal(entry, at)
        const sealed = sealRecord(entry, at)
        expect(JSON.stringify(sealed)).toBe(JSON.stringify(expected))
        expect(Object.keys(sealed)).toEqual(Object.keys(expected))
        const prepared = prepareEntry(entry)
        expect(prepared.parts).not.toBeNull()
        const { hash, line } = sealPrepared(prepared, at)
        expect(hash).toBe(expected.hash)
        // the line is the canonical text of the whole record, hash included
        expect(line).toBe(canonicalizeReference(expected))
        expect(recordLine(sealed)).toBe(line)
        const record = preparedRecord(prepared, at, hash)
        expect(Object.keys(record)).toEqual(Object.keys(expected))
        expect(JSON.stringify(record)).toBe(JSON.stringify(expected))
      }),
      { numRuns: 400 }
    )
  })

  it("entries that clash with the chain's members, or have index keys or an own toJSON, are sealed the reference way; hash first or second in the line", () => {
    const base = { type: "outcome", run_id: null, ref: { seq: 1, hash: GENESIS_HASH, request_id: "q", tool_call_id: null }, outcome: "executed", source: "s" }
    const odd: ReadonlyArray<Record<string, unknown>> = [
      { ...base, seq: 99 },
      { ...base, hash: "forged" },
      { ...base, prev_hash: "x", schema: "other", ts: "t" },
      { ...base, 0: "index", 10: "ten" },
      { ...base, toJSON: () => ({ replaced: 1 }) },
      {},
      { type: "outcome", extra: undefined, fn: () => 1 },
      // no member sorts before "hash" (it comes first in the line), or only one does
      { type: "outcome", outcome: "executed" },
      { a: 1, type: "outcome" },
      { a: undefined, type: "outcome" }
    ]
    const at = { seq: 3, ts: "2026-11-30T12:00:00.000Z", prev_hash: GENESIS_HASH }
    for (const entry of odd) {
      const expected = referenceSeal(entry, at)
      const sealed = sealRecord(entry as unknown as AuditEntry, at)
      expect(JSON.stringify(sealed)).toBe(JSON.stringify(expected))
      expect(Object.keys(sealed)).toEqual(Object.keys(expected))
      const prepared = prepareEntry(entry as unknown as AuditEntry)
      const { hash, line } = sealPrepared(prepared, at)
      expect({ hash, line }).toEqual({ hash: expected.hash, line: canonicalizeReference(expected) })
    }
  })

  it("fails like the reference on values that cannot be hashed", () => {
    const bad = { type: "outcome", run_id: null, gate_ms: Number.NaN, nested: { big: 1n } } as unknown as AuditEntry
    const at = { seq: 1, ts: "2026-11-30T12:00:00.000Z", prev_hash: GENESIS_HASH }
    const reason = (f: () => unknown): string => {
      try {
        f()
        return "no error"
      } catch (e) {
        return e instanceof CanonicalJsonError ? e.reason : `not a CanonicalJsonError: ${String(e)}`
      }
    }
    expect(reason(() => sealRecord(bad, at))).toBe(reason(() => referenceSeal(bad, at)))
    expect(reason(() => prepareEntry(bad))).toBe(reason(() => referenceSeal(bad, at)))
    // a non-finite position fails as the reference does, before the entry's own problems
    const nanAt = { ...at, seq: Number.NaN }
    expect(reason(() => sealRecord(bad, nanAt))).toBe(reason(() => referenceSeal(bad, nanAt)))
  })
})

// ---------------------------------------------------------------------------------------------

/** A chain's lines as the sink writes them (canonical), or as files before canonical lines had them (`JSON.stringify`). */
const chainOf = (entries: ReadonlyArray<AuditEntry>, spelling: "canonical" | "insertion" = "canonical"): Array<string> => {
  const lines: Array<string> = []
  let prev = GENESIS_HASH
  entries.forEach((entry, i) => {
    const r = sealRecord(entry, { seq: i + 1, ts: "2026-11-30T12:00:00.000Z", prev_hash: prev })
    prev = r.hash
    lines.push(spelling === "canonical" ? recordLine(r) : JSON.stringify(r))
  })
  return lines
}

const textOf = (lines: ReadonlyArray<string>): string => lines.map((l) => l + "\n").join("")

describe("verifyChainText equals the reference verification", () => {
  it("on intact chains, re-serialised records, blank and padded lines, CRLF", () => {
    fc.assert(
      fc.property(fc.array(entryArb, { maxLength: 8 }), fc.constantFrom("canonical" as const, "insertion" as const), (entries, spelling) => {
        const lines = chainOf(entries, spelling)
        const text = textOf(lines)
        expect(verifyChainText(text)).toEqual(referenceVerify(text))
        expect(verifyChainText(text).ok).toBe(true)
        // other spellings of the same records still verify, through whichever path
        const spelled = lines.map((l, i) =>
          i % 3 === 0 ? JSON.stringify(JSON.parse(l), null, 1).replace(/\n/g, " ") : i % 3 === 1 ? `  ${l}\r` : l.replace(/"type"/, '"\\u0074ype"')
        )
        const t2 = `\n${textOf(spelled)}\n  \n`
        expect(verifyChainText(t2)).toEqual(referenceVerify(t2))
        expect(verifyChainText(t2).ok).toBe(true)
      }),
      { numRuns: 100 }
    )
  })

  it.each(["canonical", "insertion"] as const)("on tampered chains (edited characters, deleted, duplicated, swapped and torn lines, keys written twice; %s lines)", (spelling) => {
    const lines = chainOf(fc.sample(entryArb, { numRuns: 6, seed: 42 }), spelling)
    const edit = fc.oneof(
      fc.record({ kind: fc.constant("char" as const), line: fc.nat(5), at: fc.nat(2000), del: fc.nat(2), ins: fc.constantFrom("", "1", "a", '"', "\\", " ", "}", ",", "\t", "\\u0041", "é", "\ud83d\ude00") }),
      fc.record({ kind: fc.constant("delete" as const), line: fc.nat(5) }),
      fc.record({ kind: fc.constant("duplicate" as const), line: fc.nat(5) }),
      fc.record({ kind: fc.constant("swap" as const), line: fc.nat(4) }),
      fc.record({ kind: fc.constant("torn" as const), at: fc.nat(2000) }),
      fc.record({ kind: fc.constant("dupkey" as const), line: fc.nat(5), key: fc.constantFrom("blocked", "seq", "hash", "arm", "name", "zz") }),
      fc.record({ kind: fc.constant("respell" as const), line: fc.nat(5), nth: fc.nat(8), how: fc.constantFrom(".0", "0", "e0", "1", "E+00") })
    )
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 3 }), (edits) => {
        const ls = [...lines]
        let tail = ""
        for (const e of edits) {
          if (e.kind === "char") {
            const l = ls[e.line % ls.length] ?? ""
            const i = e.at % (l.length + 1)
            ls[e.line % ls.length] = l.slice(0, i) + e.ins + l.slice(i + e.del)
          } else if (e.kind === "delete") ls.splice(e.line % ls.length, 1)
          else if (e.kind === "duplicate") ls.splice(e.line % ls.length, 0, ls[e.line % ls.length] ?? "")
          else if (e.kind === "swap" && ls.length > 1) {
            const i = e.line % (ls.length - 1)
            ;[ls[i], ls[i + 1]] = [ls[i + 1]!, ls[i]!]
          } else if (e.kind === "torn") tail = (lines[0] ?? "").slice(0, e.at % 100)
          else if (e.kind === "dupkey") {
            // the key written again first: JSON.parse keeps the record's own (last) value
            const l = ls[e.line % ls.length] ?? ""
            ls[e.line % ls.length] = l.replace("{", `{"${e.key}":true,`)
          } else if (e.kind === "respell") {
            // a number respelled after a ":" (the nth of the line): the same value, or nearly ("0" after a fraction, "1" after 17 digits)
            const l = ls[e.line % ls.length] ?? ""
            let k = 0
            ls[e.line % ls.length] = l.replace(/:(-?\d+(?:\.\d+)?(?:e[+-]\d+)?)(?=[,}\]])/g, (m, num: string) =>
              k++ === e.nth ? `:${e.how === "0" && !num.includes(".") ? num + ".0" : num.replace(/(e[+-]\d+)?$/, (x) => e.how + x)}` : m
            )
          }
        }
        const text = textOf(ls) + tail
        expect(verifyChainText(text)).toEqual(referenceVerify(text))
      }),
      { numRuns: 2000 }
    )
  })

  it("verifyChain gives the hashes of the records that verified", () => {
    const lines = chainOf(fc.sample(entryArb, { numRuns: 5, seed: 7 }))
    const hashes: Array<string> = []
    expect(verifyChain(textOf(lines), hashes).ok).toBe(true)
    expect(hashes).toEqual(lines.map((l) => (JSON.parse(l) as { hash: string }).hash))
    const broken = [...lines]
    broken[2] = broken[2]!.replace('"stream":', '"stream" :').replace(/"call_index":\d+/, '"call_index":-1')
    const partial: Array<string> = []
    expect(verifyChain(textOf(broken), partial).index).toBe(3)
    expect(partial).toEqual(hashes.slice(0, 2))
  })

  it("verifyAudit still checks the anchor against every record's hash after a failure", () => {
    const lines = chainOf(fc.sample(entryArb, { numRuns: 5, seed: 9 }))
    const head = (JSON.parse(lines[4]!) as { hash: string }).hash
    const anchor = JSON.stringify(makeCheckpoint({ file: "f.jsonl", seq: 5, head, ts: "2026-11-30T12:00:00.000Z" }, null)) + "\n"
    expect(verifyAudit("f.jsonl", textOf(lines), anchor, null)).toMatchObject({ status: "partial", records: 5, anchor: { status: "ok" } })
    const tampered = [...lines]
    tampered[1] = tampered[1]!.replace('"call_index":', '"call_index":1')
    const v = verifyAudit("f.jsonl", textOf(tampered), anchor, null)
    expect(v).toMatchObject({ status: "failed", records: 5, chain: { ok: false, index: 2 }, anchor: { status: "ok" } })
    const rewritten = [...lines]
    rewritten[4] = JSON.stringify({ ...(JSON.parse(rewritten[4]!) as object), hash: "0".repeat(64) })
    expect(verifyAudit("f.jsonl", textOf(rewritten), anchor, null).anchor.status).toBe("failed")
  })
})
