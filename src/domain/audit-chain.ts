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
 * the chain members, off the writer's serial section; {@link sealPrepared} then only splices `hash`,
 * `prev_hash`, `seq` and `ts` into the prepared text and hashes. The result is byte for byte what
 * {@link sealRecord} + {@link recordLine} give.
 */
import { createHash, hash as sha256Once } from "node:crypto"
import { AUDIT_SCHEMA, GENESIS_HASH, HASH_PREFIX } from "./audit-record.js"
import type { AuditEntry, Sealed } from "./audit-record.js"
import { canonicalize, canonicalizeAround, canonicalizeObjectText, canonicalizeWithout, quoteJson } from "./canonical-json.js"
import { asciiSlice, readCanonicalRecordLine } from "./canonical-line.js"

/** Lowercase hex SHA-256 of the UTF-8 bytes of `text` (one-shot `crypto.hash` where Node has it). */
const sha256Hex: (text: string) => string =
  typeof sha256Once === "function"
    ? (text) => sha256Once("sha256", text, "hex")
    : (text) => createHash("sha256").update(text, "utf8").digest("hex")

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
  /** the entry's own enumerable members, copied once (what the record spreads) */
  readonly entry: E
  /**
   * The canonical text of the record around its chain members: `parts[0] + hash + parts[1] + prev_hash +
   * parts[2] + seq + parts[3] + ts + parts[4]` (values as JSON) is the record's line. Null when the entry
   * has a member that would clash with the chain's (`schema`, `seq`, `ts`, `prev_hash`, `hash`), an own
   * `toJSON`, or an array-index key: such an entry is sealed the reference way.
   */
  readonly parts: readonly [string, string, string, string, string] | null
  /** `parts[0]` and `parts[1]` without the `hash` member: the hashed text's first two pieces */
  readonly bare: readonly [string, string] | null
}

const RESERVED = new Set(["schema", "seq", "ts", "prev_hash", "hash", "toJSON"])
/** the chain members in canonical order; null: filled in at sealing (hash, prev_hash, seq, ts) */
const CHAIN_MEMBERS: ReadonlyArray<readonly [string, string | null]> = [
  ["hash", null],
  ["prev_hash", null],
  ["schema", JSON.stringify(AUDIT_SCHEMA)],
  ["seq", null],
  ["ts", null]
]
const HASH_HEAD = '"hash":'

const notPrepared = <E extends AuditEntry>(entry: E): PreparedEntry<E> => ({ entry, parts: null, bare: null })

/**
 * Canonicalize an entry for sealing later, at a position not yet known.
 * @throws CanonicalJsonError as {@link recordHash} would when sealing it.
 */
export const prepareEntry = <E extends AuditEntry>(entry: E): PreparedEntry<E> => {
  const copy = { ...entry }
  const keys = Object.keys(copy)
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!
    const c = k.charCodeAt(0)
    if (RESERVED.has(k) || (c >= 48 && c <= 57)) return notPrepared(copy)
  }
  const cut = canonicalizeAround(copy, CHAIN_MEMBERS)
  if (cut === null) return notPrepared(copy)
  const parts = cut as unknown as readonly [string, string, string, string, string]
  // parts[0] ends with `,"hash":` (or is `{"hash":` when no member sorts before it); parts[1] starts with `,"`
  const head = parts[0].slice(0, parts[0].length - HASH_HEAD.length)
  const bare: readonly [string, string] = head === "{" ? [head, parts[1].slice(1)] : [head.slice(0, -1), parts[1]]
  return { entry: copy, parts, bare }
}

const fastAt = (at: ChainPosition): boolean =>
  typeof at.seq === "number" && Number.isFinite(at.seq) && typeof at.ts === "string" && typeof at.prev_hash === "string"

/** The record sealed from a prepared entry: what {@link sealRecord} returns. */
export const preparedRecord = <E extends AuditEntry>(p: PreparedEntry<E>, at: ChainPosition, hash: string): Sealed<E> =>
  ({ schema: AUDIT_SCHEMA, seq: at.seq, ts: at.ts, ...p.entry, prev_hash: at.prev_hash, hash }) as Sealed<E>

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
  const parts = p.parts
  const bare = p.bare
  if (parts === null || bare === null || !fastAt(at)) {
    const record = sealSpread(p.entry, at)
    return { hash: record.hash, line: recordLine(record) }
  }
  const rest = quoteJson(at.prev_hash) + parts[2] + at.seq + parts[3] + quoteJson(at.ts) + parts[4]
  const hash = sha256Hex(HASH_PREFIX + bare[0] + bare[1] + rest)
  return { hash, line: parts[0] + '"' + hash + '"' + parts[1] + rest }
}

/** The hash alone of a prepared entry sealed at `at`. */
const preparedHash = (p: PreparedEntry, at: ChainPosition): string => {
  const parts = p.parts!
  const bare = p.bare!
  return sha256Hex(HASH_PREFIX + bare[0] + bare[1] + quoteJson(at.prev_hash) + parts[2] + at.seq + parts[3] + quoteJson(at.ts) + parts[4])
}

/**
 * The full record for `entry` at a chain position (members in this order: schema, seq, ts, the entry's
 * members, prev_hash, hash; its line, {@link recordLine}, is canonical whatever the order).
 * @throws CanonicalJsonError (see {@link recordHash}).
 */
export const sealRecord = <E extends AuditEntry>(entry: E, at: ChainPosition): Sealed<E> => {
  if (!fastAt(at)) return sealSpread(entry, at)
  const p = prepareEntry(entry)
  return p.parts === null ? sealSpread(p.entry, at) : preparedRecord(p, at, preparedHash(p, at))
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

const CHECKED_MEMBERS = ["hash", "prev_hash", "seq"] as const

/**
 * The fast check of one record line's text: the record's hash when the line is a record that verifies
 * at position `n` after `prev`, else null (the line is then checked the reference way, which says why).
 * The canonical text is read from the line (`canonicalizeObjectText`, exact where it answers); comparing
 * canonical texts is comparing values: `"<hex>"` is only the string `<hex>`, `n` only the number n.
 * (`prev` is always a lowercase hex hash here, so `'"' + prev + '"'` is its canonical text.)
 */
const verifiedHash = (line: string, n: number, prev: string): string | null => {
  const read = canonicalizeObjectText(line, "hash", CHECKED_MEMBERS)
  if (read === null) return null
  const [hashText, prevText, seqText] = read.picked
  if (prevText !== '"' + prev + '"' || seqText !== String(n)) return null
  const hash = sha256Hex(HASH_PREFIX + read.canonical)
  return hashText === '"' + hash + '"' ? hash : null
}

/** A record line's text checked at position `n` after `prev`: its hash, or why it fails. */
const checkLine = (line: string, n: number, prev: string): { readonly hash: string } | string => {
  const fast = verifiedHash(line, n, prev)
  if (fast !== null) return { hash: fast }
  let rec: unknown
  try {
    rec = JSON.parse(line)
  } catch {
    return "not valid JSON"
  }
  if (!isObject(rec)) return "not a JSON object"
  return checkRecord(rec, n, prev) ?? { hash: rec.hash as string }
}

const PREFIX_BYTES = Buffer.from(HASH_PREFIX, "utf8")
let scratch = Buffer.alloc(1 << 16)

/**
 * The fastest check, for a line written in canonical form (what the sink writes): the hashed text is
 * the line without its `hash` member, hashed from the file's bytes. The hash when the line verifies at
 * `n` after `prev`, else null (the line is then decoded and checked by {@link checkLine}).
 */
const verifiedCanonicalHash = (bytes: Buffer, start: number, end: number, n: number, prev: string): string | null => {
  const r = readCanonicalRecordLine(bytes, start, end)
  if (r === null) return null
  if (r.prevEnd - r.prevStart !== prev.length + 2 || asciiSlice(bytes, r.prevStart + 1, r.prevEnd - 1) !== prev) return null
  if (asciiSlice(bytes, r.seqStart, r.seqEnd) !== String(n)) return null
  const size = PREFIX_BYTES.length + (end - start) - (r.cutTo - r.cutFrom)
  if (scratch.length < size) scratch = Buffer.alloc(Math.max(size, scratch.length * 2))
  PREFIX_BYTES.copy(scratch, 0)
  let at = PREFIX_BYTES.length
  at += bytes.copy(scratch, at, start, r.cutFrom)
  at += bytes.copy(scratch, at, r.cutTo, end)
  const hash = sha256Once === undefined ? createHash("sha256").update(scratch.subarray(0, at)).digest("hex") : sha256Once("sha256", scratch.subarray(0, at), "hex")
  return r.hashEnd - r.hashStart === hash.length + 2 && asciiSlice(bytes, r.hashStart + 1, r.hashEnd - 1) === hash ? hash : null
}

const TORN = "torn last line (incomplete write)"

/**
 * Verify a whole audit file's text from genesis. Blank lines are skipped; a last line without a
 * trailing newline fails as torn (after every complete record before it verified). Pure and on one
 * thread; each line takes the fast checks first and, when they do not confirm it, the reference
 * check (JSON.parse + {@link recordHash}), which gives every failure its message.
 */
export const verifyChainText = (text: string): VerifyResult => verifyChain(text, null)

/**
 * {@link verifyChainText}, also pushing the hash of each record that verified onto `hashes` (in order:
 * `hashes[i]` is record i + 1's, for the `records` that verified).
 */
export const verifyChain = (text: string, hashes: Array<string> | null): VerifyResult =>
  // a text with lone surrogates has no UTF-8 form to read: its lines are checked as text
  text.isWellFormed() ? verifyChainBytes(Buffer.from(text, "utf8"), hashes) : verifyChainLines(text, hashes)

const verifyChainLines = (text: string, hashes: Array<string> | null): VerifyResult => {
  const lines = text.split("\n")
  // the segment after the last "\n" is "" for a well-terminated file, else a torn line
  const tail = lines.pop() ?? ""
  let prev = GENESIS_HASH
  let n = 0
  for (const line of lines) {
    // a record line starts with "{"; anything else may be blank
    if (line.charCodeAt(0) !== 123 && line.trim() === "") continue
    n++
    const checked = checkLine(line, n, prev)
    if (typeof checked === "string") return failAt(n, checked)
    prev = checked.hash
    hashes?.push(prev)
  }
  if (tail !== "") return failAt(n + 1, TORN, true)
  return { ok: true, records: n, index: null, message: "ok", torn: false }
}

/**
 * {@link verifyChain} over a file's bytes (UTF-8), without decoding the lines written in canonical
 * form; other lines are decoded (as `fs.readFile(file, "utf8")` would) and checked as text.
 */
export const verifyChainBytes = (bytes: Buffer, hashes: Array<string> | null): VerifyResult => {
  let prev = GENESIS_HASH
  let n = 0
  let start = 0
  for (;;) {
    const end = bytes.indexOf(10, start)
    if (end < 0) break
    const first = bytes[start]
    // a record line starts with "{"; anything else may be blank
    if (first !== 123 && bytes.toString("utf8", start, end).trim() === "") {
      start = end + 1
      continue
    }
    n++
    let hash = verifiedCanonicalHash(bytes, start, end, n, prev)
    if (hash === null) {
      const checked = checkLine(bytes.toString("utf8", start, end), n, prev)
      if (typeof checked === "string") return failAt(n, checked)
      hash = checked.hash
    }
    prev = hash
    hashes?.push(hash)
    start = end + 1
  }
  if (start < bytes.length) return failAt(n + 1, TORN, true)
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
