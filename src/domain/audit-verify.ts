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
 *
 * The log is also an RFC 9162 Merkle tree over the records' hashes (./merkle.ts). A checkpoint with a
 * `root` must carry the root of the tree over the records it covers; a signed one also carries the same
 * tree head as a C2SP signed checkpoint (`note`), which must say the same (origin, size, root) and be
 * signed by the checkpoint's key. Checkpoints written before the tree have neither, and verify as before.
 * With a checkpoint kept elsewhere (`since`: an old C2SP checkpoint, or a receipt's), the file's first
 * records must still have that checkpoint's root (else the history was rewritten, whatever else was
 * recomputed and re-signed), and the consistency proof from it to the anchor's latest root must verify.
 */
import { verifyChain, type VerifyResult } from "./chain-verify.js"
import { duplicateKey } from "./canonical-line.js"
import { ANCHOR_SCHEMA, type Checkpoint, type CheckpointKey, signatureValid } from "./checkpoint.js"
import { isObject } from "./is-object.js"
import { edgeRoot, MerkleEdgeBuilder, MerkleTree, verifyConsistency } from "./merkle.js"
import { checkpointSignatureProblem, originFor, originParts, parseSignedCheckpoint, type SignedCheckpoint } from "./tlog-checkpoint.js"

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

/**
 * A checkpoint of the log kept elsewhere (by a third party), to check that the log only grew since: an
 * old C2SP checkpoint, or the one of a receipt (with the receipt's record, which must still be there).
 */
export interface SinceCheckpoint {
  readonly checkpoint: SignedCheckpoint
  /** a receipt's record: its seq and hash */
  readonly record: { readonly seq: number; readonly hash: string } | null
}

export interface FileVerification {
  /** ok: every check made and passed; partial: none failed but some could not be made; failed */
  readonly status: "ok" | "partial" | "failed"
  readonly records: number
  /**
   * records 1–covered are covered by the anchor's checkpoints (and, with a trusted key, signed by
   * it); 0 when the anchor or a signature failed. A reader trusting a record's content (a results
   * manifest) trusts it only up to here.
   */
  readonly covered: number
  readonly chain: VerifyResult
  readonly anchor: Check
  readonly signatures: Check
  /** the check against a checkpoint kept elsewhere (`--since`), when one was given */
  readonly since?: Check
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

/** The checkpoints of an anchor file's text, or why it is not one (the first line that is not a checkpoint). */
export const parseAnchor = (text: string): Array<Checkpoint> | string => {
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
    if ("root" in c && (typeof c.root !== "string" || !/^[0-9a-f]{64}$/.test(c.root))) return `checkpoint ${i + 1}: root is not 64 lowercase hex digits`
    if ("note" in c && c.note !== null && typeof c.note !== "string") return `checkpoint ${i + 1}: note is not a string or null`
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
  // the tree over the records, grown to each checkpoint's seq in turn (they never go back)
  const tree = new MerkleEdgeBuilder()
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
    if (c.root !== undefined) {
      while (tree.size < c.seq) tree.appendRecord(hashes[tree.size]!)
      if (c.root !== edgeRoot(tree.snapshot()).toString("hex")) {
        return { status: "failed", message: `checkpoint ${n}: its root is not the Merkle tree root of records 1–${c.seq} (forged or edited)` }
      }
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

/**
 * A signed checkpoint with a root carries the same tree head as a C2SP checkpoint signed by its key; null
 * when it does (or has no root: written before the tree), else what is wrong.
 */
const noteProblem = (fileName: string, c: Checkpoint): string | null => {
  if (c.root === undefined) return c.note === undefined ? null : "a note without a root"
  if (c.key === null) return c.note === null || c.note === undefined ? null : "an unsigned checkpoint with a note"
  if (typeof c.note !== "string") return "signed, with a root, but without its signed note"
  const parsed = parseSignedCheckpoint(c.note)
  if (typeof parsed === "string") return `its note is not a C2SP signed checkpoint: ${parsed}`
  const origin = originFor(fileName, c.key.key_id)
  const h = parsed.head
  if (h.origin !== origin || h.size !== c.seq || h.root.toString("hex") !== c.root) {
    return `its note (origin ${h.origin}, tree size ${h.size}, root ${h.root.toString("hex").slice(0, 16)}…) is not this checkpoint's (origin ${origin}, seq ${c.seq}, root ${c.root.slice(0, 16)}…)`
  }
  const sig = checkpointSignatureProblem(parsed, c.key)
  return sig === null ? null : `its note is ${sig}`
}

const checkSignatures = (fileName: string, checkpoints: ReadonlyArray<Checkpoint>, trusted: CheckpointKey | null, records: number): Check => {
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
    const note = noteProblem(fileName, c)
    if (note !== null) return { status: "failed", message: `checkpoint ${n}: ${note}` }
  }
  const ids = [...new Set(checkpoints.map((c) => c.key!.key_id))].join(", ")
  return trusted === null
    ? { status: "not-checked", message: `signatures valid under the recorded key ${ids}, but the signer is not authenticated (give --pubkey)` }
    : { status: "ok", message: `signed by ${trusted.key_id}` }
}

/**
 * The file against a checkpoint kept elsewhere: of this log, signed by the trusted key (not checked
 * without one), covering no more records than the file has, a receipt's record unchanged, the same root
 * over its records, and a consistency proof from it to `latest` (the anchor's last root, else the file's).
 */
const checkSince = (
  fileName: string,
  hashes: ReadonlyArray<string>,
  since: SinceCheckpoint,
  trusted: CheckpointKey | null,
  latest: number
): Check => {
  const h = since.checkpoint.head
  const parts = originParts(h.origin)
  if (parts === null) return { status: "failed", message: `its origin ${h.origin} is not a vetobench log's (vetobench/<run id>/<key id>)` }
  if (parts.file !== fileName) return { status: "failed", message: `it is a checkpoint of ${parts.file}, not of ${fileName}` }
  if (trusted !== null) {
    const problem = checkpointSignatureProblem(since.checkpoint, trusted)
    if (problem !== null) return { status: "failed", message: `it is ${problem}` }
  }
  if (h.size > hashes.length) return { status: "failed", message: `truncated: it covers ${h.size} records but the file has ${hashes.length}` }
  const r = since.record
  if (r !== null) {
    if (r.seq > hashes.length) return { status: "failed", message: `truncated: the receipt's record ${r.seq} is not in the file (${hashes.length} records)` }
    if (hashes[r.seq - 1] !== r.hash) return { status: "failed", message: `record ${r.seq} differs from the receipt's (changed after the receipt was issued)` }
  }
  const tree = MerkleTree.fromRecordHashes(hashes)
  if (!tree.root(h.size).equals(h.root)) {
    return { status: "failed", message: `history rewritten: records 1–${h.size} are not those it covers (their Merkle root differs from its root)` }
  }
  const to = Math.max(h.size, Math.min(latest, hashes.length))
  const why = verifyConsistency(h.size, to, h.root, tree.root(to), tree.consistencyProof(h.size, to))
  if (why !== null) return { status: "failed", message: why }
  const ok = `${h.size} records with its root ${h.root.toString("hex").slice(0, 16)}…, consistent up to ${to} records`
  return trusted === null ? { status: "not-checked", message: `${ok}, but its signer is not authenticated (give --pubkey)` } : { status: "ok", message: `${ok}; signed by ${trusted.key_id}` }
}

/**
 * Verify `text` (the audit file) against `anchorText` (its `.anchor.jsonl`, or null when there is
 * none) and, when given, the trusted public key; `writer` says whether a writer holds the file now;
 * `since`, a checkpoint kept elsewhere the file must still be consistent with.
 */
export const verifyAudit = (
  fileName: string,
  text: string,
  anchorText: string | null,
  trusted: CheckpointKey | null,
  writer: WriterLock | null = null,
  since: SinceCheckpoint | null = null
): FileVerification => {
  const hashes: Array<string> = []
  const chain = verifyChain(text, hashes)
  return verifyAuditChecked(fileName, { chain, hashes }, () => text.split("\n"), anchorText, trusted, writer, since)
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
  writer: WriterLock | null = null,
  since: SinceCheckpoint | null = null
): FileVerification => {
  const chain = checked.chain
  const hashes = allHashes(checked, lines)
  const coverage: Coverage = { required: trusted !== null, writer }
  let anchor: Check
  let signatures: Check
  let latest = hashes.length
  let lastCheckpoint = 0
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
      lastCheckpoint = parsed.length === 0 ? 0 : Math.min(parsed[parsed.length - 1]!.seq, hashes.length)
      const rooted = parsed.filter((c) => c.root !== undefined)
      if (rooted.length > 0) latest = rooted[rooted.length - 1]!.seq
      signatures = checkSignatures(fileName, parsed, trusted, hashes.length)
    }
  }
  const sinceCheck = since === null ? null : checkSince(fileName, hashes, since, trusted, latest)
  const checks = [chain.ok ? "ok" : "failed", anchor.status, signatures.status, ...(sinceCheck === null ? [] : [sinceCheck.status])]
  const status = checks.includes("failed") ? "failed" : checks.includes("not-checked") ? "partial" : "ok"
  const covered = !chain.ok || anchor.status === "failed" || signatures.status === "failed" ? 0 : lastCheckpoint
  return { status, records: hashes.length, covered, chain, anchor, signatures, ...(sinceCheck === null ? {} : { since: sinceCheck }) }
}
