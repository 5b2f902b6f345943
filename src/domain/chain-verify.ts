/**
 * Verifying an audit file's hash chain (the recipe of docs/audit-format.md), pure.
 *
 * Two passes over the file's bytes. {@link scanLines} reads each line on its own: a line in canonical
 * form (what the sink writes) is read without decoding (`readCanonicalRecordLine`) and its hash is
 * recomputed and compared with the one it carries; nothing in it depends on other lines, so ranges of
 * a file can be scanned in parallel (layers/chain-workers.ts). {@link linkLines} then walks the lines
 * in order: `seq` and the link to the previous record for the canonical lines, and the reference check
 * (JSON.parse + `recordHash`, after the fast text reader) for every other line, which also gives every
 * failure its message, and refuses a number not spelled canonically (a canonical line has none). The
 * result is the reference verification's, line for line.
 */
import { recordHash, sha256Hex } from "./audit-chain.js"
import { GENESIS_HASH, HASH_PREFIX } from "./audit-record.js"
import { canonicalizeObjectText } from "./canonical-json.js"
import { asciiSlice, duplicateKey, nonCanonicalNumber, readCanonicalRecordLine } from "./canonical-line.js"
import { isObject } from "./is-object.js"

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

const failAt = (n: number, message: string, torn = false): VerifyResult => ({
  ok: false,
  records: n - 1,
  index: n,
  message: `record ${n}: ${message}`,
  torn
})

const TORN = "torn last line (incomplete write)"

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

/**
 * A record line's text (line `lineNo` of the file, 1-based, blank lines counted) checked at position `n`
 * after `prev`: its hash, or why it fails. A line with a duplicate key is refused: which of its values
 * counts depends on the reader (`JSON.parse` keeps the last), so what it shows need not be what was hashed.
 * So is a record whose hash verifies but one of whose numbers is not spelled canonically (`1.0`,
 * `10000000000000001`): the hash is over the number JavaScript reads, and other readers read another.
 */
const checkLine = (line: string, n: number, prev: string, lineNo: number): { readonly hash: string } | string => {
  const checked = checkLineHash(line, n, prev, lineNo)
  if (typeof checked === "string") return checked
  const respelled = nonCanonicalNumber(line)
  const shown = (t: string) => (t.length > 40 ? `${t.slice(0, 40)}…` : t)
  return respelled === null
    ? checked
    : `number ${shown(respelled.literal)} at line ${lineNo} is not in canonical form (${shown(respelled.canonical)}) ` +
        `(refused: the hash covers the number JavaScript reads, and JSON readers disagree on its value)`
}

/** {@link checkLine} but for the spelling of numbers. */
const checkLineHash = (line: string, n: number, prev: string, lineNo: number): { readonly hash: string } | string => {
  const fast = verifiedHash(line, n, prev)
  if (fast !== null) return { hash: fast }
  let rec: unknown
  try {
    rec = JSON.parse(line)
  } catch {
    return "not valid JSON"
  }
  if (!isObject(rec)) return "not a JSON object"
  const dup = duplicateKey(line)
  if (dup !== null) return `duplicate key ${JSON.stringify(dup)} at line ${lineNo} (refused: JSON readers disagree on which value counts)`
  return checkRecord(rec, n, prev) ?? { hash: rec.hash as string }
}

// ---------------------------------------------------------------------------------------------
// Pass 1: each line on its own

/** What a line is, as far as it can be told without the lines before it. */
export const LINE_BLANK = 0
/** canonical, and it carries its own hash: only `seq` and the link remain to check */
export const LINE_SEALED = 1
/** anything else: checked the reference way in pass 2 */
export const LINE_OTHER = 2

/** The lines of one range of a file (offsets into the file's bytes). */
export interface LineTable {
  readonly count: number
  readonly start: Float64Array
  readonly end: Float64Array
  readonly kind: Uint8Array
  /** for sealed lines: where the 64 hex digits of `hash` and of `prev_hash` start, and `seq` */
  readonly hashAt: Float64Array
  readonly prevAt: Float64Array
  readonly seq: Float64Array
  /** the range ends with bytes after its last newline (a torn last line, in the file's last range) */
  readonly tail: boolean
}

const PREFIX_BYTES = Buffer.from(HASH_PREFIX, "utf8")
let scratch = Buffer.alloc(1 << 16)
/**
 * A string value of 64 bytes between its quotes at `[from, to)` (the reader accepted it as JSON).
 * Whether those bytes are the right hex digits is what the hash comparison and the link check decide:
 * both compare them byte for byte with lowercase hex, which an escape can never equal.
 */
const isQuoted64 = (bytes: Buffer, from: number, to: number): boolean => to - from === 66 && bytes[from] === 0x22

/** A short canonical integer at `[from, to)` as a number, else NaN. */
const smallInteger = (bytes: Buffer, from: number, to: number): number => {
  if (to - from > 15 || to <= from) return Number.NaN
  let v = 0
  for (let i = from; i < to; i++) {
    const d = bytes[i]! - 48
    if (d < 0 || d > 9) return Number.NaN
    v = v * 10 + d
  }
  return v
}

/**
 * Pass 1 over the lines that start in `[from, to)` (`from` a line start; `to` a line start or the end
 * of `bytes`). A sealed line is one in canonical form whose hash, recomputed over the line without its
 * `hash` member, is the one it carries.
 */
export const scanLines = (bytes: Buffer, from: number, to: number): LineTable => {
  let capacity = 1024
  let start = new Float64Array(capacity)
  let end = new Float64Array(capacity)
  let kind = new Uint8Array(capacity)
  let hashAt = new Float64Array(capacity)
  let prevAt = new Float64Array(capacity)
  let seq = new Float64Array(capacity)
  let count = 0
  let at = from
  for (;;) {
    const e = bytes.indexOf(10, at)
    if (e < 0 || e >= to) break
    if (count === capacity) {
      capacity *= 2
      const grow = <T extends Float64Array | Uint8Array>(a: T, b: T): T => (b.set(a), b)
      start = grow(start, new Float64Array(capacity))
      end = grow(end, new Float64Array(capacity))
      kind = grow(kind, new Uint8Array(capacity))
      hashAt = grow(hashAt, new Float64Array(capacity))
      prevAt = grow(prevAt, new Float64Array(capacity))
      seq = grow(seq, new Float64Array(capacity))
    }
    start[count] = at
    end[count] = e
    kind[count] = LINE_OTHER
    // a record line starts with "{"; anything else may be blank
    if (bytes[at] !== 123) {
      if (bytes.toString("utf8", at, e).trim() === "") kind[count] = LINE_BLANK
    } else {
      const r = readCanonicalRecordLine(bytes, at, e)
      if (r !== null && isQuoted64(bytes, r.hashStart, r.hashEnd) && isQuoted64(bytes, r.prevStart, r.prevEnd)) {
        const size = PREFIX_BYTES.length + (e - at) - (r.cutTo - r.cutFrom)
        if (scratch.length < size) scratch = Buffer.alloc(Math.max(size, scratch.length * 2))
        PREFIX_BYTES.copy(scratch, 0)
        let n = PREFIX_BYTES.length
        n += bytes.copy(scratch, n, at, r.cutFrom)
        n += bytes.copy(scratch, n, r.cutTo, e)
        if (sha256Hex(scratch.subarray(0, n)) === asciiSlice(bytes, r.hashStart + 1, r.hashEnd - 1)) {
          kind[count] = LINE_SEALED
          hashAt[count] = r.hashStart + 1
          prevAt[count] = r.prevStart + 1
          seq[count] = r.seqStart < 0 ? Number.NaN : smallInteger(bytes, r.seqStart, r.seqEnd)
        }
      }
    }
    count++
    at = e + 1
  }
  return { count, start, end, kind, hashAt, prevAt, seq, tail: at < to }
}

// ---------------------------------------------------------------------------------------------
// Pass 2: the chain, in order

/**
 * Pass 2 over the tables of consecutive ranges that cover a file, in order. Pushes the hash of each
 * record that verified onto `hashes` when given.
 */
export const linkLines = (bytes: Buffer, tables: ReadonlyArray<LineTable>, hashes: Array<string> | null): VerifyResult => {
  let n = 0
  // the file's line number (blank lines counted), for messages
  let lineNo = 0
  // the previous record's hash: as 64 hex bytes of the file at `prevHashAt`, or as a string
  let prevHashAt = -1
  let prevText: string | null = GENESIS_HASH
  const prevHash = (): string => prevText ?? (prevText = asciiSlice(bytes, prevHashAt, prevHashAt + 64))
  for (const t of tables) {
    for (let i = 0; i < t.count; i++) {
      lineNo++
      const kind = t.kind[i]!
      if (kind === LINE_BLANK) continue
      n++
      if (kind === LINE_SEALED && t.seq[i] === n) {
        const p = t.prevAt[i]!
        const linked =
          prevHashAt >= 0 && prevText === null ? bytes.compare(bytes, prevHashAt, prevHashAt + 64, p, p + 64) === 0 : asciiSlice(bytes, p, p + 64) === prevHash()
        if (linked) {
          prevHashAt = t.hashAt[i]!
          prevText = null
          hashes?.push(prevHash())
          continue
        }
      }
      const checked = checkLine(bytes.toString("utf8", t.start[i]!, t.end[i]!), n, prevHash(), lineNo)
      if (typeof checked === "string") return failAt(n, checked)
      prevText = checked.hash
      prevHashAt = -1
      hashes?.push(checked.hash)
    }
  }
  if (tables.length > 0 && tables[tables.length - 1]!.tail) return failAt(n + 1, TORN, true)
  return { ok: true, records: n, index: null, message: "ok", torn: false }
}

// ---------------------------------------------------------------------------------------------

/**
 * {@link verifyChain} over a file's bytes (UTF-8), on this thread. Lines that are not canonical are
 * decoded as `fs.readFile(file, "utf8")` would and checked as text.
 */
export const verifyChainBytes = (bytes: Buffer, hashes: Array<string> | null): VerifyResult =>
  linkLines(bytes, [scanLines(bytes, 0, bytes.length)], hashes)

/**
 * Verify a whole audit file's text from genesis. Blank lines are skipped; a last line without a
 * trailing newline fails as torn (after every complete record before it verified).
 */
export const verifyChainText = (text: string): VerifyResult => verifyChain(text, null)

/**
 * {@link verifyChainText}, also pushing the hash of each record that verified onto `hashes` (in order:
 * `hashes[i]` is record i + 1's, for the `records` that verified).
 */
export const verifyChain = (text: string, hashes: Array<string> | null): VerifyResult =>
  // a text with lone surrogates has no UTF-8 form: its lines are checked as text
  text.isWellFormed() ? verifyChainBytes(Buffer.from(text, "utf8"), hashes) : verifyChainLines(text, hashes)

const verifyChainLines = (text: string, hashes: Array<string> | null): VerifyResult => {
  const lines = text.split("\n")
  // the segment after the last "\n" is "" for a well-terminated file, else a torn line
  const tail = lines.pop() ?? ""
  let prev = GENESIS_HASH
  let n = 0
  for (const [i, line] of lines.entries()) {
    if (line.charCodeAt(0) !== 123 && line.trim() === "") continue
    n++
    const checked = checkLine(line, n, prev, i + 1)
    if (typeof checked === "string") return failAt(n, checked)
    prev = checked.hash
    hashes?.push(prev)
  }
  if (tail !== "") return failAt(n + 1, TORN, true)
  return { ok: true, records: n, index: null, message: "ok", torn: false }
}
