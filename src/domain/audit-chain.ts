/**
 * The audit hash chain (architecture decision 7), pure.
 *
 * `hash` = lowercase hex SHA-256 of the UTF-8 bytes of `HASH_PREFIX + canonicalize(record without "hash")`,
 * so `prev_hash` (and `seq`, `ts`, `schema`) are covered. The first record's `prev_hash` is
 * `GENESIS_HASH`; `seq` is 1 for the first record of a file and increases by exactly 1.
 * The written line is the canonical text of the whole record, `hash` included ({@link recordLine}), so
 * the hashed text is the line with its `hash` member cut out. Verification does not rely on it: a
 * line in any other spelling of the same record (files written before lines were canonical, or a
 * record re-serialised by a tool) verifies the same way, only slower.
 *
 * Sealing in two steps (what the file sink does): {@link prepareEntry} canonicalizes everything but
 * the chain members, into pieces it does not flatten; {@link sealPrepared} joins them with `prev_hash`,
 * `seq` and `ts` into the hashed text, hashes it (which flattens it, once) and cuts the line from it
 * with `hash` spliced in. The result is byte for byte what {@link sealRecord} + {@link recordLine} give.
 */
import { createHash, hash as sha256Once } from "node:crypto"
import { AUDIT_SCHEMA, GENESIS_HASH, HASH_PREFIX } from "./audit-record.js"
import type { AuditEntry, Sealed } from "./audit-record.js"
import { canonicalize, canonicalizeAround, canonicalizeWithout, quoteJson } from "./canonical-json.js"
import { isObject } from "./is-object.js"

/** Lowercase hex SHA-256 of the UTF-8 bytes of `text`, or of bytes (one-shot `crypto.hash` where Node has it). */
export const sha256Hex: (data: string | Uint8Array) => string =
  typeof sha256Once === "function"
    ? (data) => sha256Once("sha256", data, "hex")
    : (data) => (typeof data === "string" ? createHash("sha256").update(data, "utf8") : createHash("sha256").update(data)).digest("hex")

/**
 * Hash of a record: any `hash` key present is ignored.
 * @throws CanonicalJsonError when the record holds a non-finite number or another non-JSON value.
 */
export const recordHash = (record: object): string =>
  sha256Hex(HASH_PREFIX + (Object.prototype.hasOwnProperty.call(record, "hash") ? canonicalizeWithout(record, "hash") : canonicalize(record)))

export interface ChainPosition {
  readonly seq: number
  /** ISO 8601 UTC with milliseconds */
  readonly ts: string
  readonly prev_hash: string
}

/** The reference sealing: the record as a spread, hashed with {@link recordHash}. */
const sealSpread = <E extends AuditEntry>(entry: E, at: ChainPosition): Sealed<E> => {
  const body = { schema: AUDIT_SCHEMA as typeof AUDIT_SCHEMA, seq: at.seq, ts: at.ts, ...entry, prev_hash: at.prev_hash }
  return { ...body, hash: recordHash(body) } as Sealed<E>
}

/** An entry made ready to seal at any chain position (see {@link prepareEntry}). */
export interface PreparedEntry<E extends AuditEntry = AuditEntry> {
  /** the entry (copied when it is sealed the reference way) */
  readonly entry: E
  /**
   * The record to be, built when the entry was canonicalized (so both see the same members), its chain
   * members left to fill in; null when the entry is sealed the reference way.
   */
  readonly record: Sealed<E> | null
  /**
   * The canonical text of the record without `hash`, around its other chain members: `parts[0] + parts[1]
   * + prev_hash + parts[2] + seq + parts[3] + ts + parts[4]` (values as JSON) is the hashed text, and
   * `hash` goes between `parts[0]` and `parts[1]` in the line. Unflattened pieces. Null when the entry
   * has a member that would clash with the chain's (`schema`, `seq`, `ts`, `prev_hash`, `hash`), an own
   * `toJSON`, or an array-index key: such an entry is sealed the reference way.
   */
  readonly parts: RecordParts | null
}

/** The canonical text of a record around its chain members (see {@link PreparedEntry}). */
export type RecordParts = readonly [string, string, string, string, string]

/**
 * The chain members in canonical order: `hash` is a mark (the hashed text goes without it), null is
 * filled in at sealing (prev_hash, seq, ts).
 */
const CHAIN_MEMBERS: ReadonlyArray<readonly [string, string | null]> = [
  ["hash", ""],
  ["prev_hash", null],
  ["schema", JSON.stringify(AUDIT_SCHEMA)],
  ["seq", null],
  ["ts", null]
]

const refusedKey = (k: string): boolean => {
  const c = k.charCodeAt(0)
  return (c >= 48 && c <= 57) || k === "toJSON"
}

const notPrepared = <E extends AuditEntry>(entry: E): PreparedEntry<E> => ({ entry, parts: null, record: null })

/**
 * Canonicalize an entry for sealing later, at a position not yet known.
 * @throws CanonicalJsonError as {@link recordHash} would when sealing it.
 */
export const prepareEntry = <E extends AuditEntry>(entry: E): PreparedEntry<E> => {
  // the canonical text and the record are taken from the entry at once (entries are plain data)
  const cut = canonicalizeAround(entry, CHAIN_MEMBERS, refusedKey)
  if (cut === null) return notPrepared({ ...entry })
  const record = { schema: AUDIT_SCHEMA, seq: 0, ts: "", ...entry, prev_hash: "", hash: "" } as Sealed<E>
  return { entry, parts: cut as unknown as RecordParts, record }
}

const fastAt = (at: ChainPosition): boolean =>
  typeof at.seq === "number" && Number.isFinite(at.seq) && typeof at.ts === "string" && typeof at.prev_hash === "string"

/** The record sealed from a prepared entry: what {@link sealRecord} returns (a prepared entry is sealed once). */
export const preparedRecord = <E extends AuditEntry>(p: PreparedEntry<E>, at: ChainPosition, hash: string): Sealed<E> => {
  if (p.record === null) return { schema: AUDIT_SCHEMA, seq: at.seq, ts: at.ts, ...p.entry, prev_hash: at.prev_hash, hash } as Sealed<E>
  const r = p.record as { seq: number; ts: string; prev_hash: string; hash: string }
  r.seq = at.seq
  r.ts = at.ts
  r.prev_hash = at.prev_hash
  r.hash = hash
  return p.record
}

export interface SealedLine {
  readonly hash: string
  /** the record's line ({@link recordLine}), without the newline */
  readonly line: string
}

/**
 * The JSONL line of a sealed record: its canonical text, `hash` included.
 * @throws CanonicalJsonError (see {@link recordHash}).
 */
export const recordLine = (record: object): string => canonicalize(record)

/**
 * Seal a prepared entry at `at`: its hash and its JSONL line, as `sealRecord` + `recordLine` give.
 * @throws CanonicalJsonError for a position that is not JSON (a non-finite `seq`).
 */
export const sealPrepared = (p: PreparedEntry, at: ChainPosition): SealedLine => {
  if (p.parts === null || !fastAt(at)) {
    const record = sealSpread(p.entry, at)
    return { hash: record.hash, line: recordLine(record) }
  }
  return sealParts(p.parts, at)
}

/**
 * Seal a record's prepared parts at `at` (finite `seq`, string `ts` and `prev_hash`): its hash and its
 * line (what the file sink's writer does for each prepared entry).
 */
export const sealParts = (parts: RecordParts, at: ChainPosition): SealedLine => {
  // the hashed text: one concatenation, flattened once (by the hash); the line is cut from it
  const head = parts[0]
  const hashed = HASH_PREFIX + head + parts[1] + quoteJson(at.prev_hash) + parts[2] + at.seq + parts[3] + quoteJson(at.ts) + parts[4]
  const hash = sha256Hex(hashed)
  const cut = HASH_PREFIX.length + head.length
  // `hash` goes where parts[0] ends: first when nothing sorts before it (then a member follows)
  const member = head.length === 1 ? '"hash":"' + hash + '",' : ',"hash":"' + hash + '"'
  return { hash, line: hashed.slice(HASH_PREFIX.length, cut) + member + hashed.slice(cut) }
}

/**
 * The full record for `entry` at a chain position (members in this order: schema, seq, ts, the entry's
 * members, prev_hash, hash; its line, {@link recordLine}, is canonical whatever the order).
 * @throws CanonicalJsonError (see {@link recordHash}).
 */
export const sealRecord = <E extends AuditEntry>(entry: E, at: ChainPosition): Sealed<E> => {
  if (!fastAt(at)) return sealSpread(entry, at)
  const p = prepareEntry(entry)
  return p.parts === null ? sealSpread(p.entry, at) : preparedRecord(p, at, sealParts(p.parts, at).hash)
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
