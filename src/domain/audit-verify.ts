/**
 * Full verification of one audit file (pure): the hash chain, the anchor's checkpoints (truncation
 * and rewrites), and the checkpoints' signatures. A check that cannot be made is reported as such,
 * never as success.
 *
 * With a trusted key the promise is coverage: every record is covered by a checkpoint signed by that
 * key. A checkpoint can be deleted from the anchor without a trace, so records after the last
 * checkpoint are only excusable while the file is being written: the writer checkpoints every record
 * when it closes the file. Hence, with a trusted key:
 * - a file with records and no checkpoint (no anchor, or an empty one) fails: nothing signed covers it;
 * - records after the last checkpoint fail when no writer holds the file (its `<file>.lock`: the caller
 *   says, {@link WriterLock}), and are "not checked" (partial) while one does.
 * Cutting the file and its anchor back to an earlier checkpoint leaves no record uncovered, so a
 * checkpoint also says (signed) whether the writer closed the file with it (`final`). When the last
 * checkpoint carries the field (the format since it exists: a writer writes it in every checkpoint), it
 * must be final:
 * - a last checkpoint with `final: false` fails when no writer holds the file (the writer did not close
 *   the file there: records after it may have been cut), and is "not checked" while one does (the lock
 *   is not signed: it never turns a failure into ok);
 * - a last checkpoint without the field (written before it existed) is judged as before: it cannot say.
 * Without the key nobody can add, flip or remove the field of a checkpoint; dropping checkpoint lines
 * leaves a last line that carries it. What stays undetectable: a cut back to an earlier final checkpoint
 * (the file was closed there, then reopened), or to a checkpoint written before the field existed.
 * Without a trusted key nothing is authenticated: the result is partial at best, and every gap in
 * coverage is "not checked".
 */
import { verifyChain, type VerifyResult } from "./chain-verify.js"
import { duplicateKey } from "./canonical-line.js"
import { ANCHOR_SCHEMA, type Checkpoint, type CheckpointKey, signatureValid } from "./checkpoint.js"
import { isObject } from "./is-object.js"

export type CheckStatus = "ok" | "failed" | "not-checked"

export interface Check {
  readonly status: CheckStatus
  readonly message: string
}

/**
 * A writer holds the file now: its lock file (`<file>.lock`, name only) exists, holding `pid` (null when
 * it holds no pid). Read by the caller; pass null when there is none.
 */
export interface WriterLock {
  readonly lock: string
  readonly pid: number | null
}

export interface FileVerification {
  /** ok: every check made and passed; partial: none failed but some could not be made; failed */
  readonly status: "ok" | "partial" | "failed"
  readonly records: number
  readonly chain: VerifyResult
  readonly anchor: Check
  readonly signatures: Check
}

/** The `hash` member of one record line, "" when the line is not a record with a string hash. */
const hashOfLine = (line: string): string => {
  try {
    const r: unknown = JSON.parse(line)
    return isObject(r) && typeof r.hash === "string" ? r.hash : ""
  } catch {
    return ""
  }
}

/** The chain check and the hash of each record that verified (what {@link verifyChain} gives). */
export interface ChainCheck {
  readonly chain: VerifyResult
  readonly hashes: Array<string>
}

/**
 * The hash of each record by position (as written; the chain check says whether to trust them). The
 * records that verified give their hash from the check itself; only the lines after a failure are
 * parsed again, from the file's `lines`.
 */
const allHashes = (checked: ChainCheck, lines: () => ReadonlyArray<string>): Array<string> => {
  const { chain, hashes } = checked
  if (chain.ok) return hashes
  const all = [...hashes]
  const records = lines().filter((l) => l.trim() !== "")
  for (let i = all.length; i < records.length; i++) all.push(hashOfLine(records[i]!))
  return all
}

const parseAnchor = (text: string): Array<Checkpoint> | string => {
  const out: Array<Checkpoint> = []
  const lines = text.split("\n").filter((l) => l.trim() !== "")
  for (const [i, line] of lines.entries()) {
    let c: unknown
    try {
      c = JSON.parse(line)
    } catch {
      return `checkpoint ${i + 1}: not valid JSON`
    }
    if (!isObject(c) || c.schema !== ANCHOR_SCHEMA || typeof c.seq !== "number" || typeof c.head !== "string") {
      return `checkpoint ${i + 1}: not a ${ANCHOR_SCHEMA} checkpoint`
    }
    if ("final" in c && typeof c.final !== "boolean") return `checkpoint ${i + 1}: final is not a boolean`
    const dup = duplicateKey(line)
    if (dup !== null) return `checkpoint ${i + 1}: duplicate key ${JSON.stringify(dup)} (refused: JSON readers disagree on which value counts)`
    out.push(c as unknown as Checkpoint)
  }
  return out
}

/** How the records after the last checkpoint (or all of them, without one) are judged. */
interface Coverage {
  /** a trusted key was given: every record must be covered by a signed checkpoint */
  readonly required: boolean
  readonly writer: WriterLock | null
}

const recordsText = (from: number, to: number): string => (from === to ? `record ${from}` : `records ${from}–${to}`)

const writerText = (w: WriterLock): string => `a writer holds the file (${w.lock}${w.pid === null ? "" : `, pid ${w.pid}`})`

/** The file has records and no checkpoint: failed when coverage is required, else not checked. */
const uncheckpointed = (records: number, why: string, coverage: Coverage): Check =>
  records === 0
    ? { status: "not-checked", message: `${why}, and no record` }
    : coverage.required
      ? { status: "failed", message: `${why}: none of the ${records} records is covered by a signed checkpoint` }
      : { status: "not-checked", message: `${why}: a truncated tail cannot be detected` }

const checkAnchor = (fileName: string, hashes: ReadonlyArray<string>, checkpoints: ReadonlyArray<Checkpoint>, coverage: Coverage): Check => {
  if (checkpoints.length === 0) return uncheckpointed(hashes.length, "the anchor holds no checkpoint", coverage)
  let last = 0
  for (const [i, c] of checkpoints.entries()) {
    const n = i + 1
    if (c.file !== fileName) return { status: "failed", message: `checkpoint ${n} is for ${c.file}, not ${fileName}` }
    if (c.seq < last) return { status: "failed", message: `checkpoint ${n}: seq ${c.seq} goes back (after ${last})` }
    if (c.count !== c.seq) return { status: "failed", message: `checkpoint ${n}: count ${c.count} differs from seq ${c.seq}` }
    if (c.seq > hashes.length) {
      return { status: "failed", message: `truncated: checkpoint ${n} covers ${c.seq} records but the file has ${hashes.length}` }
    }
    if (c.seq > 0 && hashes[c.seq - 1] !== c.head) {
      return { status: "failed", message: `checkpoint ${n}: record ${c.seq} differs from the checkpointed head (file rewritten)` }
    }
    last = c.seq
  }
  const uncovered = hashes.length - last
  if (uncovered === 0) return closedCheck(checkpoints, coverage)
  const covered = `${checkpoints.length} checkpoint(s) cover records 1–${last}`
  const tail = recordsText(last + 1, hashes.length)
  if (coverage.writer !== null) {
    return { status: "not-checked", message: `${covered}; ${tail} not covered yet: ${writerText(coverage.writer)}` }
  }
  return coverage.required
    ? {
        status: "failed",
        message:
          `${covered}; ${tail} not covered by a signed checkpoint, and no writer holds the file (closing it checkpoints every record): ` +
          `checkpoints were removed, or the writer stopped without closing the file`
      }
    : { status: "not-checked", message: `${covered}; ${uncovered} later record(s) not yet covered` }
}

/**
 * The checkpoints cover every record: was the file closed after the last one? A last checkpoint with
 * `final: false` was written while the file stayed open: the records after it may have been cut (with
 * the checkpoints that covered them) unless a writer still holds the file. One without the field
 * (written before it existed) cannot say, and is judged as before.
 */
const closedCheck = (checkpoints: ReadonlyArray<Checkpoint>, coverage: Coverage): Check => {
  const n = checkpoints.length
  const lastFinal = checkpoints[n - 1]!.final
  const all = `${n} checkpoint(s) cover all records`
  if (lastFinal !== false) return { status: "ok", message: all }
  const notFinal = `${all}, but checkpoint ${n}, the last, is not final`
  if (coverage.writer !== null) {
    return { status: "not-checked", message: `${notFinal}: ${writerText(coverage.writer)} and has not closed it yet` }
  }
  return coverage.required
    ? {
        status: "failed",
        message:
          `${notFinal}: the file was not closed by its writer after this checkpoint: records may have been cut ` +
          `(no writer holds the file, and closing it writes a final checkpoint)`
      }
    : { status: "not-checked", message: `${notFinal}: the file was not closed by its writer after it; later records may have been cut` }
}

const checkSignatures = (checkpoints: ReadonlyArray<Checkpoint>, trusted: CheckpointKey | null, records: number): Check => {
  if (checkpoints.length === 0) {
    return { status: trusted === null || records === 0 ? "not-checked" : "failed", message: `no checkpoint: nothing signed${trusted === null ? "" : ` by ${trusted.key_id}`}` }
  }
  if (checkpoints.every((c) => c.sig === null)) {
    return { status: trusted === null ? "not-checked" : "failed", message: "checkpoints are unsigned" }
  }
  for (const [i, c] of checkpoints.entries()) {
    const n = i + 1
    const valid = signatureValid(c)
    if (valid === null) return { status: "failed", message: `checkpoint ${n} is unsigned among signed checkpoints` }
    if (!valid) return { status: "failed", message: `checkpoint ${n}: signature does not verify (forged or edited)` }
    if (trusted !== null && c.key!.public_key !== trusted.public_key) {
      return { status: "failed", message: `checkpoint ${n}: signed by key ${c.key!.key_id}, not by the given key ${trusted.key_id}` }
    }
  }
  const ids = [...new Set(checkpoints.map((c) => c.key!.key_id))].join(", ")
  return trusted === null
    ? { status: "not-checked", message: `signatures valid under the recorded key ${ids}, but the signer is not authenticated (give --pubkey)` }
    : { status: "ok", message: `signed by ${trusted.key_id}` }
}

/**
 * Verify `text` (the audit file) against `anchorText` (its `.anchor.jsonl`, or null when there is
 * none) and, when given, the trusted public key; `writer` says whether a writer holds the file now.
 */
export const verifyAudit = (
  fileName: string,
  text: string,
  anchorText: string | null,
  trusted: CheckpointKey | null,
  writer: WriterLock | null = null
): FileVerification => {
  const hashes: Array<string> = []
  const chain = verifyChain(text, hashes)
  return verifyAuditChecked(fileName, { chain, hashes }, () => text.split("\n"), anchorText, trusted, writer)
}

/**
 * {@link verifyAudit} with the chain already checked (by `verifyChainParallel`, say); `lines` gives the
 * file's lines, read only when the chain failed.
 */
export const verifyAuditChecked = (
  fileName: string,
  checked: ChainCheck,
  lines: () => ReadonlyArray<string>,
  anchorText: string | null,
  trusted: CheckpointKey | null,
  writer: WriterLock | null = null
): FileVerification => {
  const chain = checked.chain
  const hashes = allHashes(checked, lines)
  const coverage: Coverage = { required: trusted !== null, writer }
  let anchor: Check
  let signatures: Check
  if (anchorText === null) {
    anchor = uncheckpointed(hashes.length, "no anchor file", coverage)
    signatures = { status: trusted === null || hashes.length === 0 ? "not-checked" : "failed", message: "no anchor file: nothing signed to check" }
  } else {
    const parsed = parseAnchor(anchorText)
    if (typeof parsed === "string") {
      anchor = { status: "failed", message: parsed }
      signatures = { status: "not-checked", message: "anchor unreadable" }
    } else {
      anchor = checkAnchor(fileName, hashes, parsed, coverage)
      signatures = checkSignatures(parsed, trusted, hashes.length)
    }
  }
  const checks = [chain.ok ? "ok" : "failed", anchor.status, signatures.status]
  const status = checks.includes("failed") ? "failed" : checks.includes("not-checked") ? "partial" : "ok"
  return { status, records: hashes.length, chain, anchor, signatures }
}
