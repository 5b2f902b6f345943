/**
 * The audit hash chain (architecture decision 7), pure.
 *
 * `hash` = lowercase hex SHA-256 of the UTF-8 bytes of `HASH_PREFIX + canonicalize(record without "hash")`,
 * so `prev_hash` (and `seq`, `ts`, `schema`) are covered. The first record's `prev_hash` is
 * `GENESIS_HASH`; `seq` is 1 for the first record of a file and increases by exactly 1.
 * The written line is `JSON.stringify(record)` (insertion order); only the hash uses canonical form.
 */
import { createHash } from "node:crypto"
import { AUDIT_SCHEMA, GENESIS_HASH, HASH_PREFIX } from "./audit-record.js"
import type { AuditEntry, Sealed } from "./audit-record.js"
import { canonicalize } from "./canonical-json.js"

/**
 * Hash of a record: any `hash` key present is ignored.
 * @throws CanonicalJsonError when the record holds a non-finite number or another non-JSON value.
 */
export const recordHash = (record: object): string => {
  let body: object = record
  if (Object.prototype.hasOwnProperty.call(record, "hash")) {
    const { hash: _ignored, ...rest } = record as Record<string, unknown>
    body = rest
  }
  return createHash("sha256").update(HASH_PREFIX, "utf8").update(canonicalize(body), "utf8").digest("hex")
}

export interface ChainPosition {
  readonly seq: number
  /** ISO 8601 UTC with milliseconds */
  readonly ts: string
  readonly prev_hash: string
}

/**
 * The full record for `entry` at a chain position. Field order of the written line:
 * schema, seq, ts, the entry's fields, prev_hash, hash.
 * @throws CanonicalJsonError (see {@link recordHash}).
 */
export const sealRecord = <E extends AuditEntry>(entry: E, at: ChainPosition): Sealed<E> => {
  const body = { schema: AUDIT_SCHEMA as typeof AUDIT_SCHEMA, seq: at.seq, ts: at.ts, ...entry, prev_hash: at.prev_hash }
  return { ...body, hash: recordHash(body) } as Sealed<E>
}

export interface VerifyResult {
  readonly ok: boolean
  /** records that verified (all of them when ok) */
  readonly records: number
  /** 1-based index (among non-blank lines) of the first failing record; null when ok */
  readonly index: number | null
  /** "ok", or "record n: …" */
  readonly message: string
  /** the failure is a last line without its newline (an interrupted write) */
  readonly torn: boolean
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

const failAt = (n: number, message: string, torn = false): VerifyResult => ({
  ok: false,
  records: n - 1,
  index: n,
  message: `record ${n}: ${message}`,
  torn
})

/** Check one parsed record against the chain state; returns an error message or null. */
const checkRecord = (rec: Record<string, unknown>, n: number, prev: string): string | null => {
  if (rec.prev_hash !== prev) return "prev_hash does not match previous record (deleted, inserted or reordered record)"
  let hash: string
  try {
    hash = recordHash(rec)
  } catch {
    return "hash mismatch (record was modified)"
  }
  if (rec.hash !== hash) return "hash mismatch (record was modified)"
  if (rec.seq !== n) return `seq ${JSON.stringify(rec.seq) ?? "missing"}, expected ${n}`
  return null
}

/**
 * Verify a whole audit file's text from genesis. Blank lines are skipped; a last line without a
 * trailing newline fails as torn (after every complete record before it verified).
 */
export const verifyChainText = (text: string): VerifyResult => {
  const lines = text.split("\n")
  // the segment after the last "\n" is "" for a well-terminated file, else a torn line
  const tail = lines.pop() ?? ""
  let prev = GENESIS_HASH
  let n = 0
  for (const line of lines) {
    if (line.trim() === "") continue
    n++
    let rec: unknown
    try {
      rec = JSON.parse(line)
    } catch {
      return failAt(n, "not valid JSON")
    }
    if (!isObject(rec)) return failAt(n, "not a JSON object")
    const problem = checkRecord(rec, n, prev)
    if (problem !== null) return failAt(n, problem)
    prev = rec.hash as string
  }
  if (tail !== "") return failAt(n + 1, "torn last line (incomplete write)", true)
  return { ok: true, records: n, index: null, message: "ok", torn: false }
}

/** Where a file's chain stands: what the next record continues from. */
export interface ChainTip {
  readonly seq: number
  readonly hash: string
  /** the last record's ts, "" for an empty chain */
  readonly ts: string
}

export const GENESIS_TIP: ChainTip = { seq: 0, hash: GENESIS_HASH, ts: "" }

/**
 * The tip after the last complete record line of `text`, `GENESIS_TIP` when there is none, or
 * `null` when that line is not a record with a numeric `seq` and a string `hash` (the chain
 * cannot be continued safely). A torn last line (no trailing newline) is ignored.
 */
export const lastRecordOf = (text: string): ChainTip | null => {
  const end = text.lastIndexOf("\n")
  if (end < 0) return GENESIS_TIP
  const lines = text.slice(0, end).split("\n")
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!
    if (line.trim() !== "") return tipOfLine(line)
  }
  return GENESIS_TIP
}

/** The tip that one complete record line leaves, or null when the line is not such a record. */
export const tipOfLine = (line: string): ChainTip | null => {
  let rec: unknown
  try {
    rec = JSON.parse(line)
  } catch {
    return null
  }
  if (!isObject(rec) || typeof rec.seq !== "number" || typeof rec.hash !== "string") return null
  return { seq: rec.seq, hash: rec.hash, ts: typeof rec.ts === "string" ? rec.ts : "" }
}
