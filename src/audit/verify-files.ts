/**
 * Read an audit file, its anchor, its writer's lock and a trusted public key, and verify them (see
 * domain/audit-verify); tell audit files from anchor files among the FILE arguments.
 */
import { closeSync, existsSync, openSync, readFileSync, readSync } from "node:fs"
import * as path from "node:path"
import { Data, Effect } from "effect"
import { anchorFileFor } from "../../layers/AuditSink.js"
import { readShared, verifyChainParallel } from "../../layers/chain-workers.js"
import { readFailure } from "../../layers/file-errors.js"
import { AUDIT_SCHEMA } from "../domain/audit-record.js"
import { type SinceCheckpoint, verifyAuditChecked, type FileVerification, type WriterLock } from "../domain/audit-verify.js"
import { type CheckpointKey, publicKeyFromPem } from "../domain/checkpoint.js"
import { isObject } from "../domain/is-object.js"
import { type ManifestRecord, manifestRecordsIn } from "./manifest-records.js"

export class AuditInputError extends Data.TaggedError("AuditInputError")<{ readonly file: string; readonly reason: string }> {
  override get message() {
    return `${this.file}: ${this.reason}`
  }
}

const readError = (file: string, e: unknown): AuditInputError => new AuditInputError({ file, reason: readFailure(e) })

const read = (file: string) => Effect.try({ try: () => readFileSync(file, "utf8"), catch: (e) => readError(file, e) })

/** A file's lines (split at "\n", as the chain check reads them), each decoded on its own: no one string holds the file. */
const linesOf = (bytes: Buffer): Array<string> => {
  const lines: Array<string> = []
  let start = 0
  for (let end = bytes.indexOf(10); end >= 0; end = bytes.indexOf(10, start)) {
    lines.push(bytes.toString("utf8", start, end))
    start = end + 1
  }
  lines.push(bytes.toString("utf8", start))
  return lines
}

export const loadPublicKey = (file: string): Effect.Effect<CheckpointKey, AuditInputError> =>
  read(file).pipe(
    Effect.flatMap((pem) =>
      Effect.try({
        try: () => publicKeyFromPem(pem),
        catch: (e) => new AuditInputError({ file, reason: `not an Ed25519 public key: ${e instanceof Error ? e.message : String(e)}` })
      })
    )
  )

export interface FileReport extends FileVerification {
  readonly file: string
  /** the anchor file used, or null */
  readonly anchorFile: string | null
  /** the writer holding the file when it was verified (its lock file), or null */
  readonly writer: WriterLock | null
  /** the manifest records of the bytes verified (`verify-results` checks their files) */
  readonly manifests: ReadonlyArray<ManifestRecord>
}

/** The manifest records among `bytes`' complete lines (src/audit/manifest-records.ts). */
export const manifestsOf = (bytes: Buffer): Array<ManifestRecord> => manifestRecordsIn(bytes, { completeLinesOnly: true })

/** `<file>.lock`: where the file's one writer keeps its pid while it holds the file (layers/AuditSink.ts). */
export const lockFileFor = (file: string): string => `${file}.lock`

/** The writer holding `file` now: its lock file exists (a lock that cannot be read still counts). */
const writerOf = (file: string): Effect.Effect<WriterLock | null> =>
  Effect.sync(() => {
    const lock = lockFileFor(file)
    if (!existsSync(lock)) return null
    let pid: number | null = null
    try {
      const n = Number(readFileSync(lock, "utf8").trim())
      pid = Number.isInteger(n) && n > 0 ? n : null
    } catch {
      pid = null
    }
    return { lock: path.basename(lock), pid }
  })

/**
 * Verify one file; the anchor is `anchor` when given, else `<name>.anchor.jsonl` beside it when present.
 * The file is read before its anchor (a checkpoint written meanwhile covers records already read), and
 * the lock is looked for before and after both: a writer that closes the file (final checkpoint, then
 * lock removed) or opens it while they are read is seen.
 */
export const verifyFile = (
  file: string,
  anchor: string | null,
  trusted: CheckpointKey | null,
  since: SinceCheckpoint | null = null
): Effect.Effect<FileReport, AuditInputError> =>
  Effect.gen(function* () {
    const writerBefore = yield* writerOf(file)
    const bytes = yield* Effect.tryPromise({ try: () => readShared(file), catch: (e) => readError(file, e) })
    const anchorFile = anchor ?? (existsSync(anchorFileFor(file)) ? anchorFileFor(file) : null)
    const anchorText = anchorFile === null ? null : yield* read(anchorFile)
    const writer = writerBefore ?? (yield* writerOf(file))
    const hashes: Array<string> = []
    const chain = yield* Effect.promise(() => verifyChainParallel(bytes, hashes))
    const verified = verifyAuditChecked(path.basename(file), { chain, hashes }, () => linesOf(bytes), anchorText, trusted, writer, since)
    return { ...verified, file, anchorFile, writer, manifests: manifestsOf(bytes) }
  })

// ---------------------------------------------------------------------------------------------
// FILE arguments: audit files and anchor files (a glob such as `runs/audit/*.jsonl` names both)

const ANCHOR_SUFFIX = ".anchor.jsonl"

/** What one FILE argument is, and what to do with it. */
export type FileTarget =
  /** an audit file: verify it */
  | { readonly _tag: "Audit"; readonly file: string }
  /** the anchor of an audit file that is also an argument: it is checked with that file */
  | { readonly _tag: "AnchorOf"; readonly file: string; readonly audit: string }
  /** an anchor whose audit file does not exist (deleted?): a failure */
  | { readonly _tag: "Orphan"; readonly file: string; readonly audit: string }

/** The first line of `file` (at most 64 KiB of it), "" when it cannot be read. */
const firstLine = (file: string): string => {
  let fd: number | null = null
  try {
    fd = openSync(file, "r")
    const buf = Buffer.alloc(64 * 1024)
    const n = readSync(fd, buf, 0, buf.length, 0)
    const text = buf.toString("utf8", 0, n)
    const nl = text.indexOf("\n")
    return nl < 0 ? text : text.slice(0, nl)
  } catch {
    return ""
  } finally {
    if (fd !== null) closeSync(fd)
  }
}

/** The file begins with an audit record (a run may be named `<x>.anchor`: its audit file is `<x>.anchor.jsonl`). */
const holdsRecords = (file: string): boolean => {
  try {
    const first: unknown = JSON.parse(firstLine(file))
    return isObject(first) && first.schema === AUDIT_SCHEMA
  } catch {
    return false
  }
}

/**
 * The FILE arguments in order, each as an audit file to verify or an anchor file. An existing
 * `<name>.anchor.jsonl` that does not begin with an audit record is the anchor of `<name>.jsonl`: it is
 * checked with that file when that file is an argument too, and stands for it (verified once) when it
 * is not; an anchor whose audit file does not exist is an {@link FileTarget} `Orphan`.
 */
export const fileTargets = (paths: ReadonlyArray<string>): Effect.Effect<Array<FileTarget>> =>
  Effect.sync(() => {
    const isAnchor = (p: string) => p.endsWith(ANCHOR_SUFFIX) && existsSync(p) && !holdsRecords(p)
    const auditOf = (p: string) => p.slice(0, -ANCHOR_SUFFIX.length) + ".jsonl"
    const listed = new Set(paths.filter((p) => !isAnchor(p)).map((p) => path.resolve(p)))
    const added = new Set<string>()
    const targets: Array<FileTarget> = []
    for (const file of paths) {
      if (!isAnchor(file)) {
        targets.push({ _tag: "Audit", file })
        continue
      }
      const audit = auditOf(file)
      const key = path.resolve(audit)
      if (listed.has(key)) targets.push({ _tag: "AnchorOf", file, audit })
      else if (!existsSync(audit)) targets.push({ _tag: "Orphan", file, audit })
      else if (!added.has(key)) {
        added.add(key)
        targets.push({ _tag: "Audit", file: audit })
      }
    }
    return targets
  })

/** One line for a file: status, records, then each check. */
export const reportLine = (r: FileReport): string => {
  const tag = r.status === "ok" ? "OK     " : r.status === "partial" ? "PARTIAL" : "FAIL   "
  const chain = r.chain.ok ? "chain ok" : `chain: ${r.chain.message}`
  const part = (name: string, c: { status: string; message: string }) =>
    c.status === "ok" ? `${name} ok (${c.message})` : c.status === "failed" ? `${name} FAILED: ${c.message}` : `${name} not checked: ${c.message}`
  const since = r.since === undefined ? "" : `; ${part("since", r.since)}`
  const m = r.manifests
  const manifests =
    m.length === 0 ? "" : `; ${m.length} manifest(s): ${m.map((x) => `record ${x.seq} (${x.listed} file${x.listed === 1 ? "" : "s"})`).join(", ")} (check them: verify-results)`
  return `${tag} ${r.file}: ${r.records} records – ${chain}; ${part("anchor", r.anchor)}; ${part("signatures", r.signatures)}${since}${manifests}`
}
