/**
 * Results bound to the log (docs/audit-format.md, "Results log"): at the end of `run`, `score`, `replay`
 * and `report`, the outputs' hashes are appended as a `manifest` record to the experiment's results log,
 * `<run_dir>/results.jsonl` — an audit log like any other (chain, Merkle tree, anchor with signed
 * checkpoints, signed with `audit.signing_key`) — and the command closes it, so a final checkpoint covers
 * the record. The manifest also names the audit logs the results come from, each with its Merkle tree
 * head at that moment (records and root), so a later rewrite of their history shows.
 *
 * Why a log of its own, not the runs' audit logs: those are held by the proxy (one writer per file) while
 * it runs, and an experiment's `report` spans all of them.
 *
 * `verify-results <run_dir>` ({@link checkResults}) verifies the results log, recomputes every file's
 * sha256 (the latest manifest naming a path is what it must match) and each bound log's tree head.
 */
import { lstatSync, readdirSync, readFileSync, statSync } from "node:fs"
import * as path from "node:path"
import { Console, Data, Effect, Schedule } from "effect"
import { auditFileName } from "../domain/run-id.js"
import { AuditSink, LockHeld } from "../../layers/AuditSink.js"
import type { FileSinkOptions } from "../../layers/AuditSink.js"
import type { AuditSettings } from "../config/settings.js"
import { sha256Hex } from "../domain/audit-chain.js"
import type { AuditRecord, ManifestEntry } from "../domain/audit-record.js"
import type { CheckpointKey } from "../domain/checkpoint.js"
import { signerFromPem } from "../domain/checkpoint.js"
import { edgeRoot, MerkleEdgeBuilder, MerkleTree } from "../domain/merkle.js"
import { verifyChain } from "../domain/chain-verify.js"
import { type FileReport, verifyFile } from "./verify-files.js"
import type { ManifestRecord } from "./manifest-records.js"

/** the results log's run id: its file is `<run_dir>/results.jsonl` */
export const RESULTS_RUN = "results"

/** `<run_dir>/results.jsonl` */
export const resultsLogFor = (runDir: string): string => path.join(runDir, auditFileName(RESULTS_RUN))

/** Binding or checking results failed; `message` is `<file>: <reason>`. */
export class ResultsError extends Data.TaggedError("ResultsError")<{ readonly file: string; readonly reason: string }> {
  override get message() {
    return `${this.file}: ${this.reason}`
  }
}

const reasonOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/**
 * A path as the manifest records it: relative to the run directory, with `/` (`../audit/<run>.jsonl` for
 * the proxy's audit directory beside it), so the experiment and its audit logs can be moved together.
 */
const recordedPath = (runDir: string, file: string): string => {
  const rel = path.relative(path.resolve(runDir), path.resolve(file))
  return path.isAbsolute(rel) ? rel : rel.split(path.sep).join("/")
}

/** A recorded path back to a file (relative ones against the run directory). */
const fileOf = (runDir: string, recorded: string): string => (path.isAbsolute(recorded) ? recorded : path.join(runDir, ...recorded.split("/")))

/** The results log's own files: never bound (they change with every binding). */
const isResultsLogFile = (runDir: string, file: string): boolean => {
  const base = path.basename(file)
  return path.dirname(path.resolve(file)) === path.resolve(runDir) && /^results\.(?:anchor\.)?jsonl(?:$|\.lock$|\.torn-)/.test(base)
}

/** Every regular file under `dir` (recursively, sorted), but the results log's own; none when `dir` does not exist. */
export const filesUnder = (dir: string): Array<string> => {
  const out: Array<string> = []
  const walk = (d: string): void => {
    let entries: Array<string>
    try {
      entries = readdirSync(d).sort()
    } catch {
      return
    }
    for (const name of entries) {
      const f = path.join(d, name)
      // a symlink is followed to a file, never to a directory (a link to a parent would recurse without end)
      const link = lstatSync(f, { throwIfNoEntry: false })?.isSymbolicLink() === true
      const st = statSync(f, { throwIfNoEntry: false })
      if (st?.isDirectory() && !link) walk(f)
      else if (st?.isFile() && !isResultsLogFile(dir, f)) out.push(f)
    }
  }
  walk(dir)
  return out
}

/** The Merkle tree head of an audit log now (its complete records), or why there is none. */
export const logHead = (file: string): { readonly records: number; readonly root: string } | string => {
  let bytes: Buffer
  try {
    bytes = readFileSync(file)
  } catch (e) {
    return reasonOf(e)
  }
  const hashes = verifiedHashes(bytes)
  if (typeof hashes === "string") return hashes
  const b = new MerkleEdgeBuilder()
  for (const h of hashes) b.appendRecord(h)
  return { records: hashes.length, root: edgeRoot(b.snapshot()).toString("hex") }
}

/**
 * The hashes of a log's records as the chain check recomputes them (never the `hash` fields as
 * written: a record whose body was edited and whose `hash` was left alone must not count as
 * unchanged). A torn last line (a write in progress) ends the list; any other break is the reason.
 */
const verifiedHashes = (bytes: Buffer): Array<string> | string => {
  const hashes: Array<string> = []
  const chain = verifyChain(bytes.toString("utf8"), hashes)
  return chain.ok || chain.torn ? hashes : `the chain is broken: ${chain.message}`
}

export interface BindOptions {
  /** the experiment's run directory: the results log is there */
  readonly runDir: string
  /** the command whose outputs these are (`run`, `score`, `replay`, `report`, `demo`) */
  readonly command: string
  /** the output files (missing ones are left out: a run that wrote nothing binds nothing) */
  readonly files: ReadonlyArray<string>
  /** the audit logs the results come from (missing ones are left out) */
  readonly logs: ReadonlyArray<string>
  /** the settings' audit section: signing key, fsync, checkpoints */
  readonly audit: AuditSettings
}

export interface Bound {
  /** the results log */
  readonly log: string
  readonly record: AuditRecord
  readonly files: number
  readonly logs: number
}

/** how long a binding waits for another process binding to the same results log (parallel shards) */
const LOCK_RETRY = Schedule.spaced("250 millis").pipe(Schedule.intersect(Schedule.recurs(480)))

/**
 * Append the manifest of `files` (and the tree heads of `logs`) to the experiment's results log and close
 * it (a final checkpoint covers it). Nothing is appended when there is no file and no log to bind (null).
 */
export const bindResults = (opts: BindOptions): Effect.Effect<Bound | null, ResultsError> =>
  Effect.gen(function* () {
    const log = resultsLogFor(opts.runDir)
    const fail = (reason: string) => new ResultsError({ file: log, reason })
    const present = [...new Set(opts.files.map((f) => path.resolve(f)))].filter((f) => statSync(f, { throwIfNoEntry: false })?.isFile() === true && !isResultsLogFile(opts.runDir, f))
    const files = yield* Effect.forEach(present, (f) =>
      Effect.try({
        try: () => {
          const bytes = readFileSync(f)
          return { path: recordedPath(opts.runDir, f), sha256: sha256Hex(bytes), bytes: bytes.length }
        },
        catch: (e) => new ResultsError({ file: f, reason: `cannot hash: ${reasonOf(e)}` })
      })
    )
    const logs: Array<{ path: string; records: number; root: string }> = []
    for (const l of [...new Set(opts.logs.map((f) => path.resolve(f)))]) {
      if (statSync(l, { throwIfNoEntry: false })?.isFile() !== true) continue
      const head = logHead(l)
      if (typeof head === "string") return yield* new ResultsError({ file: l, reason: `cannot bind the audit log: ${head}` })
      logs.push({ path: recordedPath(opts.runDir, l), ...head })
    }
    if (files.length === 0 && logs.length === 0) return null
    const signer = opts.audit.signing_key === null
      ? null
      : yield* Effect.try({
          try: () => signerFromPem(readFileSync(opts.audit.signing_key!, "utf8")),
          catch: (e) => fail(`cannot load the signing key ${opts.audit.signing_key}: ${reasonOf(e)}`)
        })
    const sinkOptions: FileSinkOptions = { signer, fsync: opts.audit.fsync, checkpointEvery: opts.audit.checkpoint_every, maxOpenFiles: 1 }
    const entry: ManifestEntry = { type: "manifest", run_id: RESULTS_RUN, command: opts.command, files, ...(logs.length === 0 ? {} : { logs }) }
    // a checkpoint covers the manifest before the sink's scope closes the file (whose final checkpoint
    // only logs a failure): a checkpoint that cannot be written fails the binding, and the command
    const record = yield* Effect.scoped(
      Effect.flatMap(AuditSink, (sink) => Effect.tap(sink.append(RESULTS_RUN, entry), () => sink.checkpoint(RESULTS_RUN)))
    ).pipe(
      Effect.provide(AuditSink.layerFile(opts.runDir, sinkOptions)),
      Effect.retry({ schedule: LOCK_RETRY, while: (e) => e.cause instanceof LockHeld }),
      Effect.mapError((e) => fail(e.reason))
    )
    return { log, record, files: files.length, logs: logs.length }
  })

// ---------------------------------------------------------------------------------------------
// verify-results

export type ResultStatus = "ok" | "changed" | "missing" | "not-checked"

/** One bound file or log, checked now. */
export interface ResultCheck {
  readonly kind: "file" | "log"
  /** as recorded */
  readonly path: string
  readonly status: ResultStatus
  /** the manifest record it was bound by, and its command */
  readonly seq: number
  readonly command: string | null
  readonly message: string
}

export interface ResultsReport {
  readonly dir: string
  readonly log: FileReport
  readonly checks: ReadonlyArray<ResultCheck>
  /** ok: the log is OK and every file and log matches; failed: something changed, is missing, or the log failed */
  readonly status: "ok" | "partial" | "failed"
}

type BoundEntry = ManifestRecord


const short = (h: string) => `${h.slice(0, 16)}…`

/** Check a bound file against its latest manifest. */
const checkFile = (dir: string, recorded: string, sha256: string, by: BoundEntry): ResultCheck => {
  const base = { kind: "file" as const, path: recorded, seq: by.seq, command: by.command }
  const where = `record ${by.seq}${by.command === null ? "" : ` (${by.command})`}`
  let bytes: Buffer
  try {
    bytes = readFileSync(fileOf(dir, recorded))
  } catch {
    return { ...base, status: "missing", message: `missing (bound by ${where})` }
  }
  const now = sha256Hex(bytes)
  return now === sha256
    ? { ...base, status: "ok", message: `matches ${where}` }
    : { ...base, status: "changed", message: `changed since ${where}: sha256 ${short(now)}, bound ${short(sha256)}` }
}

/** Check a bound audit log: its first `records` records must still have the bound root. */
const checkLog = (dir: string, bound: { path: string; records: number; root: string }, by: BoundEntry): ResultCheck => {
  const base = { kind: "log" as const, path: bound.path, seq: by.seq, command: by.command }
  const where = `record ${by.seq}${by.command === null ? "" : ` (${by.command})`}`
  let bytes: Buffer
  try {
    bytes = readFileSync(fileOf(dir, bound.path))
  } catch {
    return { ...base, status: "not-checked", message: `not found here (bound by ${where}); verify it where it is` }
  }
  // the bound prefix must verify; a break after it does not change what was bound
  const hashes: Array<string> = []
  const chain = verifyChain(bytes.toString("utf8"), hashes)
  if (hashes.length < bound.records && !chain.ok && !chain.torn) {
    return { ...base, status: "changed", message: `${chain.message} (records 1–${bound.records} bound by ${where})` }
  }
  if (hashes.length < bound.records) return { ...base, status: "changed", message: `truncated: ${hashes.length} records, ${bound.records} when bound by ${where}` }
  const root = MerkleTree.fromRecordHashes(hashes).root(bound.records).toString("hex")
  return root === bound.root
    ? { ...base, status: "ok", message: `records 1–${bound.records} unchanged since ${where}` }
    : { ...base, status: "changed", message: `history rewritten: records 1–${bound.records} are not those bound by ${where} (Merkle root ${short(root)}, bound ${short(bound.root)})` }
}

/**
 * Verify the results log of `dir` (with `trusted`, its signer's key, when given) and check every file and
 * log its manifests bound, each against the latest manifest that names it.
 */
export const checkResults = (dir: string, trusted: CheckpointKey | null): Effect.Effect<ResultsReport, ResultsError> =>
  Effect.gen(function* () {
    const logFile = resultsLogFor(dir)
    if (statSync(logFile, { throwIfNoEntry: false })?.isFile() !== true) {
      return yield* new ResultsError({ file: logFile, reason: "no results log: nothing was bound here (run, score, replay and report bind their outputs)" })
    }
    // the manifests of the very bytes that were verified (one read)
    const log = yield* verifyFile(logFile, null, trusted).pipe(Effect.mapError((e) => new ResultsError({ file: e.file, reason: e.reason })))
    const latestFile = new Map<string, { readonly sha256: string; readonly by: BoundEntry }>()
    const latestLog = new Map<string, { readonly bound: { path: string; records: number; root: string }; readonly by: BoundEntry }>()
    for (const m of log.manifests) {
      for (const f of m.files) latestFile.set(f.path, { sha256: f.sha256, by: m })
      for (const l of m.logs) latestLog.set(l.path, { bound: l, by: m })
    }
    // a manifest after the last checkpoint is bound by nothing signed: anyone can append one to the
    // unkeyed chain, so what it binds is not checked against it
    const beyondCheckpoints = (kind: "file" | "log", recorded: string, by: BoundEntry): ResultCheck | null =>
      by.seq <= log.covered
        ? null
        : {
            kind,
            path: recorded,
            seq: by.seq,
            command: by.command,
            status: "not-checked",
            message: `bound by record ${by.seq}, which no ${trusted === null ? "" : "signed "}checkpoint covers (records 1–${log.covered} are covered)`
          }
    const checks = [
      ...[...latestFile.entries()].map(([p, { by, sha256 }]) => beyondCheckpoints("file", p, by) ?? checkFile(dir, p, sha256, by)),
      ...[...latestLog.values()].map(({ bound, by }) => beyondCheckpoints("log", bound.path, by) ?? checkLog(dir, bound, by))
    ]
    const statuses = [log.status === "ok" ? "ok" : log.status === "partial" ? "not-checked" : "changed", ...checks.map((c) => c.status)]
    const status = statuses.some((s) => s === "changed" || s === "missing") ? "failed" : statuses.includes("not-checked") ? "partial" : "ok"
    return { dir, log, checks, status }
  })

/**
 * {@link bindResults} and one line saying what was bound (nothing when there was nothing to bind): what
 * `run`, `score`, `replay`, `report` and `demo` do at their end.
 */
export const bindResultsAndSay = (opts: BindOptions): Effect.Effect<void, ResultsError> =>
  Effect.flatMap(bindResults(opts), (b) =>
    b === null
      ? Effect.void
      : Console.log(
          `bound ${b.files} result file${b.files === 1 ? "" : "s"}${b.logs === 0 ? "" : ` and ${b.logs} audit log${b.logs === 1 ? "" : "s"}`} to ${b.log} ` +
            `(record ${b.record.seq}, final checkpoint; check them with verify-results)`
        )
  )
