/**
 * AuditSink: appends sealed, hash-chained audit records, one JSONL file per run id.
 *
 * - `AuditSink.layerFile(dir)`: durable files `<dir>/<run id>.jsonl` (`adhoc.jsonl` for a null run id).
 *   A run id picks a file name, so only ids of the grammar in src/domain/run-id.ts are accepted: any
 *   other fails with an `AuditWriteError` naming the grammar, and no file is touched.
 *   Files are opened lazily on a run's first append. At most `maxOpenFiles` (`audit.max_open_files`)
 *   are kept open: past that the least recently used idle file is closed (after a final checkpoint of
 *   its records, `final: true`, as on close) and reopened by its next append; the rest are closed when
 *   the layer's scope closes. On every open the tail of an existing file is read to continue `seq` and the
 *   chain; a torn last line is moved to `<file>.torn-<epoch ms>`, the file is truncated to its last
 *   complete line and a warning is logged (see `repairTornTail`). The anchor file's torn last line is
 *   repaired the same way (the same code) before its last checkpoint is read.
 *   Appends to one file are queued and written by one writer at a time (group commit: concurrent appends
 *   share one `write` + `datasync`; `fsync: always` syncs each record alone, `never` leaves it to the OS).
 *   No append completes before its record is durable. After a failed write the file is re-recovered
 *   from disk on the next append.
 *   The records of a file are the leaves of an RFC 9162 Merkle tree (leaf entry = a record's `hash`): the
 *   writer keeps the tree's right edge per file (the roots of its perfect subtrees; O(log n) per append)
 *   and each checkpoint carries the root at its `seq` and, signed, the same tree head as a C2SP
 *   checkpoint (src/domain/checkpoint.ts). A file opened in a new process is read once to rebuild the
 *   edge; reopening a file this sink closed for being idle reuses the edge it kept.
 *   One writer per file: `<file>.lock` (holding the pid) is taken on a run's first open and removed when
 *   the scope closes (it is kept while the file is closed for being idle: the sink may reopen it);
 *   another live process or another `layerFile` instance in this process is refused, and a lock left
 *   by a dead process is taken over (see `acquireLock`).
 * - `AuditSink.layerMemory`: the same chains kept in memory; also provides `AuditMemory` to read them.
 */
import { Context, Data, Effect, Either, Layer, Runtime } from "effect"
import type { Scope } from "effect"
import * as fs from "node:fs/promises"
import type { FileHandle } from "node:fs/promises"
import * as path from "node:path"
import { defaultAuditSettings } from "../src/config/settings.js"
import { GENESIS_TIP, lastRecordOf, preparedRecord, prepareEntry, recordLine, sealPrepared, sealRecord } from "../src/domain/audit-chain.js"
import type { VerifyResult } from "../src/domain/chain-verify.js"
import { readShared, verifyChainParallel } from "./chain-workers.js"
import { readFailure } from "./file-errors.js"
import type { ChainTip } from "../src/domain/audit-chain.js"
import type { AuditEntry, AuditRecord } from "../src/domain/audit-record.js"
import { ANCHOR_SCHEMA, makeCheckpoint, type Signer } from "../src/domain/checkpoint.js"
import { EMPTY_EDGE, edgeRoot, type MerkleEdge, MerkleEdgeBuilder } from "../src/domain/merkle.js"
import { recordHashesOf } from "../src/domain/record-hashes.js"
import { auditFileName, RUN_ID_GRAMMAR, runIdProblem } from "../src/domain/run-id.js"

interface AuditErrorFields {
  readonly file: string
  readonly reason: string
  readonly cause?: unknown
}

/** Appending failed; `message` is `<reason> (<file>)`. */
export class AuditWriteError extends Data.TaggedError("AuditWriteError")<AuditErrorFields> {
  constructor(fields: AuditErrorFields) {
    super(fields)
    this.message = `${fields.reason} (${fields.file})`
  }
}

/** Reading a file to verify it failed (e.g. reason "file not found"); `message` is `<reason> (<file>)`. */
export class AuditReadError extends Data.TaggedError("AuditReadError")<AuditErrorFields> {
  constructor(fields: AuditErrorFields) {
    super(fields)
    this.message = `${fields.reason} (${fields.file})`
  }
}

export interface AuditSinkShape {
  /**
   * Seal `entry` as the next record of the run's chain and append it durably. The file sink reads the
   * entry (plain data) when its writer takes it, before the append completes: leave it unchanged until then.
   */
  readonly append: (runId: string | null, entry: AuditEntry) => Effect.Effect<AuditRecord, AuditWriteError>
  /**
   * Absolute path of the run's file (`memory:<name>.jsonl` for the memory sink). The file sink throws
   * an `AuditWriteError` for a run id outside the grammar (`isRunId`), as its `append` and `checkpoint`
   * fail with one.
   */
  readonly fileFor: (runId: string | null) => string
  /**
   * Write a checkpoint for the run now (after the records appended so far), if it has new records. It says
   * `final: false`: the file stays open (closing the sink, or an idle file, writes the final one).
   */
  readonly checkpoint: (runId: string | null) => Effect.Effect<void, AuditWriteError>
}

/** Read access to what `AuditSink.layerMemory` recorded. */
export interface AuditMemoryShape {
  /** every record, in append order */
  readonly records: Effect.Effect<ReadonlyArray<AuditRecord>>
  /** the records of one run's chain */
  readonly recordsFor: (runId: string | null) => Effect.Effect<ReadonlyArray<AuditRecord>>
  /** the JSONL text the file sink would hold for the run (verify it with `verifyChainText`) */
  readonly textFor: (runId: string | null) => Effect.Effect<string>
}

export class AuditMemory extends Context.Tag("vetobench/AuditMemory")<AuditMemory, AuditMemoryShape>() {}

/** Why `runId` cannot name an audit file, naming the grammar; null for a run id or null (`adhoc`). */
const runIdError = (dir: string, runId: string | null): AuditWriteError | null => {
  if (runId === null) return null
  const problem = runIdProblem(runId)
  if (problem === null) return null
  return new AuditWriteError({ file: dir, reason: problem.includes(RUN_ID_GRAMMAR) ? problem : `${problem}: a run id is ${RUN_ID_GRAMMAR}` })
}

/** A cause as text: a tagged error's `reason`, an Error's message, or String(cause). */
const reasonOf = (cause: unknown): string => {
  if (typeof cause === "object" && cause !== null) {
    const { reason, message } = cause as { reason?: unknown; message?: unknown }
    if (typeof reason === "string") return reason
    if (typeof message === "string" && message !== "") return message
  }
  return String(cause)
}
const codeOf = (cause: unknown): unknown =>
  typeof cause === "object" && cause !== null ? (cause as { code?: unknown }).code : undefined

// ---------------------------------------------------------------------------------------------
// Recovery of an existing file's tail

export interface TornRepair {
  readonly repaired: boolean
  /** bytes moved out of the file */
  readonly bytes: number
  /** the side file holding them */
  readonly savedTo: string | null
}

const NO_REPAIR: TornRepair = { repaired: false, bytes: 0, savedTo: null }
const CHUNK = 64 * 1024

const readAt = async (fh: FileHandle, buf: Buffer, position: number): Promise<void> => {
  let done = 0
  while (done < buf.length) {
    const { bytesRead } = await fh.read(buf, done, buf.length - done, position + done)
    if (bytesRead === 0) throw new Error(`unexpected end of file at byte ${position + done}`)
    done += bytesRead
  }
}

const removeQuietly = (file: string): Promise<void> => fs.rm(file, { force: true }).catch(() => undefined)

/** A new file holding `data` (not empty), durably; on any failure nothing of it is left behind. */
const writeNewFile = async (file: string, data: Buffer): Promise<void> => {
  if (data.length === 0) throw new Error(`refusing to create the empty file ${file}`)
  const fh = await fs.open(file, "wx")
  try {
    await fh.writeFile(data)
    await fh.datasync()
  } catch (cause) {
    await fh.close().catch(() => undefined)
    await removeQuietly(file)
    throw cause
  }
  try {
    await fh.close()
  } catch (cause) {
    await removeQuietly(file)
    throw cause
  }
}

/**
 * Reads the file's tail backwards (never the whole file) to find its last complete line; moves a torn
 * last line to a side file and truncates. Returns the repair and the last complete non-blank line's
 * text block (`tail` ends with "\n" or is ""). Used for audit files and anchor files alike.
 *
 * A failed repair leaves no side file as long as the file still holds the torn bytes (it is retried on
 * the next open): the side file is removed when writing it or truncating the file fails. Once the
 * truncation is done the side file is the only copy and stays, even if the final sync fails.
 */
const recoverTail = async (file: string): Promise<{ readonly repair: TornRepair; readonly tail: string }> => {
  let fh: FileHandle
  try {
    fh = await fs.open(file, "r+")
  } catch (cause) {
    if (codeOf(cause) === "ENOENT") return { repair: NO_REPAIR, tail: "" }
    throw cause
  }
  try {
    const size = (await fh.stat()).size
    let pos = size // `buf` holds the bytes [pos, size)
    let buf = Buffer.alloc(0)
    let lastNl = -1
    let tail = ""
    for (;;) {
      if (pos > 0) {
        const chunk = Buffer.alloc(Math.min(CHUNK, pos))
        pos -= chunk.length
        await readAt(fh, chunk, pos)
        buf = Buffer.concat([chunk, buf])
      }
      lastNl = buf.lastIndexOf(10)
      if (lastNl >= 0) {
        // before pos > 0 the first line in buf may be partial: start after its newline
        tail = buf.toString("utf8", pos === 0 ? 0 : buf.indexOf(10) + 1, lastNl + 1)
        if (pos === 0 || /\S/.test(tail)) break
      } else if (pos === 0) break
    }
    const keep = lastNl >= 0 ? pos + lastNl + 1 : 0
    if (keep === size) return { repair: NO_REPAIR, tail }
    const savedTo = `${file}.torn-${Date.now()}`
    await writeNewFile(savedTo, buf.subarray(keep - pos))
    try {
      await fh.truncate(keep)
    } catch (cause) {
      await removeQuietly(savedTo) // the file still holds the bytes: the next open repairs it again
      throw cause
    }
    await fh.datasync()
    return { repair: { repaired: true, bytes: size - keep, savedTo }, tail }
  } finally {
    await fh.close()
  }
}

const recover = (file: string) =>
  Effect.tryPromise({
    try: () => recoverTail(file),
    catch: (cause) => new AuditWriteError({ file, reason: `cannot recover the file's tail: ${reasonOf(cause)}`, cause })
  }).pipe(
    Effect.tap(({ repair }) =>
      repair.repaired
        ? Effect.logWarning(
            `audit: torn last line in ${file}: moved ${repair.bytes} bytes to ${repair.savedTo}, truncated to the last complete line`
          ).pipe(Effect.annotateLogs({ file, bytes: repair.bytes, savedTo: repair.savedTo }))
        : Effect.void
    )
  )

/**
 * If the file's last line has no trailing newline (an interrupted write), move those bytes to
 * `<file>.torn-<epoch ms>`, truncate the file to its last complete line and log a warning.
 * A missing file needs no repair.
 */
export const repairTornTail = (file: string): Effect.Effect<TornRepair, AuditWriteError> =>
  Effect.map(recover(file), (r) => r.repair)

// ---------------------------------------------------------------------------------------------
// Anchor file and single-writer lock

/** `<dir>/<name>.anchor.jsonl` for `<dir>/<name>.jsonl`. */
export const anchorFileFor = (file: string): string => file.replace(/\.jsonl$/, "") + ".anchor.jsonl"

interface LastCheckpoint {
  readonly seq: number
  readonly keyId: string | null
  /** the writer closed the file with it (`final: true`); false for a periodic one, or one without the field */
  readonly final: boolean
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** seq and key id of one anchor line, or null when the line is not a checkpoint. */
const checkpointOfLine = (line: string): LastCheckpoint | null => {
  let c: unknown
  try {
    c = JSON.parse(line)
  } catch {
    return null
  }
  if (!isObject(c) || c.schema !== ANCHOR_SCHEMA || typeof c.head !== "string") return null
  if (typeof c.seq !== "number" || !Number.isSafeInteger(c.seq) || c.seq < 0) return null
  const final = c.final === true
  if (c.key === null) return { seq: c.seq, keyId: null, final }
  return isObject(c.key) && typeof c.key.key_id === "string" ? { seq: c.seq, keyId: c.key.key_id, final } : null
}

/**
 * seq and signing key id of the anchor's last checkpoint (0 and null when there is none). A torn last
 * line is repaired first, as an audit file's is (`recover`). A complete last line that is not a
 * checkpoint is refused: it is not what an interrupted write leaves, and reading it as "no checkpoint"
 * would let a sink without the anchor's key continue it.
 */
const lastCheckpoint = (anchor: string): Effect.Effect<LastCheckpoint, AuditWriteError> =>
  Effect.flatMap(recover(anchor), ({ tail }) => {
    const last = tail.trimEnd().split("\n").pop() ?? ""
    if (last.trim() === "") return Effect.succeed({ seq: 0, keyId: null, final: false })
    const c = checkpointOfLine(last)
    return c !== null
      ? Effect.succeed(c)
      : Effect.fail(
          new AuditWriteError({
            file: anchor,
            reason: "the anchor's last line is not a checkpoint; its checkpoints cannot be continued (run verify-audit)"
          })
        )
  })

const appendDurably = (file: string, text: string, sync: boolean): Effect.Effect<void, AuditWriteError> =>
  Effect.tryPromise({
    try: async () => {
      const fh = await fs.open(file, "a")
      try {
        await fh.write(text)
        if (sync) await fh.datasync()
      } finally {
        await fh.close()
      }
    },
    catch: (cause) => new AuditWriteError({ file, reason: `cannot append: ${reasonOf(cause)}`, cause })
  })

/** Why a lock could not be taken: another writer (a live process, or another sink here) holds it. */
export class LockHeld extends Error {}

/** files this process holds the lock of */
const heldLocks = new Set<string>()

const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return codeOf(e) === "EPERM"
  }
}

/**
 * One writer per file: `<file>.lock` holds the writer's pid. A lock held by a live process (or by
 * another sink in this process) is a clear error; a stale lock (dead pid) is taken over.
 */
const acquireLock = (file: string): Effect.Effect<void, AuditWriteError> =>
  Effect.tryPromise({
    try: async () => {
      if (heldLocks.has(file)) throw new LockHeld("another audit sink in this process is writing this file")
      const lock = `${file}.lock`
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          await fs.writeFile(lock, `${process.pid}\n`, { flag: "wx" })
          heldLocks.add(file)
          return
        } catch (e) {
          if (codeOf(e) !== "EEXIST") throw e
          const pid = Number((await fs.readFile(lock, "utf8").catch(() => "")).trim())
          if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && pidAlive(pid)) {
            throw new LockHeld(`another process (pid ${pid}) is writing this file; remove ${lock} only if it is gone`)
          }
          await fs.rm(lock, { force: true }) // stale: its writer is gone
        }
      }
      throw new Error(`cannot take ${lock}`)
    },
    catch: (cause) => new AuditWriteError({ file, reason: reasonOf(cause), cause })
  })

const releaseLock = (file: string): Effect.Effect<void> =>
  Effect.promise(async () => {
    if (!heldLocks.delete(file)) return
    await fs.rm(`${file}.lock`, { force: true }).catch(() => undefined)
  })

// ---------------------------------------------------------------------------------------------
// File sink

/** `always`: one write + datasync per record; `group`: concurrent appends share one write + datasync; `never`: no sync. */
export type FsyncMode = "always" | "group" | "never"

type Outcome = Effect.Effect<AuditRecord, AuditWriteError>

/**
 * One queued append. The writer canonicalizes the entry when it takes the batch (so what waits in the
 * queue is small), seals it, and completes it once through `resume`; `record` is set once it is sealed.
 */
interface Pending {
  readonly entry: AuditEntry
  readonly resume: (outcome: Outcome) => void
  record: AuditRecord | null
  done: boolean
}

const complete = (p: Pending, outcome: Outcome): void => {
  if (p.done) return
  p.done = true
  p.resume(outcome)
}

export interface FileSinkOptions {
  readonly fsync?: FsyncMode
  /** write a checkpoint after this many new records (0 = only when the file is closed) */
  readonly checkpointEvery?: number
  /** signs checkpoints; without one they are written unsigned */
  readonly signer?: Signer | null
  /**
   * files kept open at most (an integer ≥ 1; default {@link DEFAULT_MAX_OPEN_FILES}): past that the
   * least recently used idle file is closed, after a checkpoint of its uncovered records
   */
  readonly maxOpenFiles?: number
  /**
   * keep the Merkle tree (default true): checkpoints carry its root and the signed C2SP checkpoint. false
   * writes checkpoints as before the tree existed (what `bench/audit --no-tree` measures against)
   */
  readonly merkle?: boolean
}

/** `audit.max_open_files`'s default */
export const DEFAULT_MAX_OPEN_FILES = defaultAuditSettings.max_open_files

/** A batch written to the file whose sync is under way. */
interface InFlight {
  /** its appends, each with its record */
  readonly sealed: ReadonlyArray<Pending>
  /** the file's tip after this batch */
  readonly tip: ChainTip
  /** the tree's right edge after this batch (null without the tree) */
  readonly edge: MerkleEdge | null
  /** null once the batch is durable, else why its sync failed */
  readonly synced: Promise<unknown>
}

/** syncs under way at once per file (group commit pipelined three deep) */
const MAX_IN_FLIGHT = 3
/**
 * records per batch at most: appenders that all wait for one sync all come back at once and would
 * otherwise queue as one batch again, leaving this thread idle during every sync; smaller batches keep
 * some appenders preparing while others' batches sync
 */
const MAX_BATCH = 64

interface FileState {
  readonly file: string
  /** `<name>.anchor.jsonl` beside the file */
  readonly anchor: string
  /** seq covered by the last checkpoint */
  checkpointed: number
  /** the last checkpoint is a final one (`final: true`: the file was closed with it) */
  lastFinal: boolean
  /** the newest durable tip whose checkpoint is due and not yet being written */
  due: TreeTip | null
  /** seq of the newest checkpoint written or due (what "every N records" counts from) */
  scheduled: number
  /** a fiber is writing the file's checkpoints */
  checkpointing: boolean
  handle: FileHandle | null
  tip: ChainTip
  /** the Merkle tree's right edge after the records up to `tip` (null without the tree); `EMPTY_EDGE` until the file is opened */
  edge: MerkleEdge | null
  /** the `hash` of the record the edge ends with ("" for none): the edge is reused on a reopen only when it ends at the file's tip */
  edgeHead: string
  lastMs: number
  /** appends waiting for the next batch */
  queue: Array<Pending>
  /**
   * a fiber owns the file: a writer draining `queue`, `checkpoint()`, or the closing of an idle file
   * (appends then only queue; whoever clears it starts a writer for what queued meanwhile)
   */
  writing: boolean
  /**
   * this sink holds `<file>.lock` (taken on the first open, kept across re-opens and while the file is
   * closed for being idle, released on close)
   */
  locked: boolean
}

/** A chain tip and the tree's right edge at it (null without the tree): what a checkpoint is written of. */
interface TreeTip {
  readonly tip: ChainTip
  readonly edge: MerkleEdge | null
}

const closeQuietly = (fh: FileHandle): Effect.Effect<void> => Effect.promise(() => fh.close().catch(() => undefined))

/**
 * The file sink over `dir` (created if missing); files are closed when the scope closes.
 * Appends to one file go through a queue drained by one writer at a time: each batch is sealed in
 * order (the chain), written with one `write` and made durable per `fsync` before any of its
 * appends completes.
 */
export const makeFile = (dir: string, options: FileSinkOptions = {}): Effect.Effect<AuditSinkShape, AuditWriteError, Scope.Scope> =>
  Effect.gen(function* () {
    const fsync = options.fsync ?? "group"
    const every = options.checkpointEvery ?? 100
    const signer = options.signer ?? null
    const maxOpen = options.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES
    const merkle = options.merkle ?? true
    const root = path.resolve(dir)
    if (!Number.isSafeInteger(maxOpen) || maxOpen < 1) {
      return yield* new AuditWriteError({ file: root, reason: `maxOpenFiles must be an integer of at least 1, got ${maxOpen}` })
    }
    yield* Effect.tryPromise({
      try: () => fs.mkdir(root, { recursive: true }),
      catch: (cause) => new AuditWriteError({ file: root, reason: `cannot create the audit directory: ${reasonOf(cause)}`, cause })
    })
    /**
     * One small state per file touched (its tip, checkpoint position and lock), kept for the sink's
     * lifetime even while the file is closed: it is what the final checkpoint and the lock release on
     * close need. Open handles are bounded separately ({@link openFiles}).
     */
    const states = new Map<string, FileState>()
    /** the files with an open handle, least recently used first (at most `maxOpen` of them when idle) */
    const openFiles = new Map<string, FileState>()
    let closed = false
    // each file's writer is started from inside an append (a daemon: it outlives the appender's fiber)
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        closed = true
        // let batches in flight finish (bounded), then close the files
        for (let i = 0; i < 1000 && [...states.values()].some((st) => st.writing || st.checkpointing); i++) yield* Effect.sleep("5 millis")
        // a final checkpoint for every file with records not yet covered, then release the files
        yield* Effect.forEach(
          states.values(),
          (st) =>
            writeCheckpoint(st, true).pipe(
              Effect.catchAll((e) => Effect.logError(`audit: final checkpoint of ${st.file} failed: ${e.reason}`)),
              Effect.zipRight(st.handle === null ? Effect.void : closeQuietly(st.handle)),
              Effect.zipRight(st.locked ? releaseLock(st.file) : Effect.void)
            ),
          { discard: true }
        )
      })
    )

    /** the run's file, or why the run id cannot name one (nothing is cached per run id) */
    const resolve = (runId: string | null): Either.Either<string, AuditWriteError> => {
      const bad = runIdError(root, runId)
      return bad === null ? Either.right(path.join(root, auditFileName(runId))) : Either.left(bad)
    }
    const fileFor = (runId: string | null): string =>
      Either.getOrThrowWith(resolve(runId), (e) => e)

    const stateFor = (file: string): FileState => {
      let st = states.get(file)
      if (st === undefined) {
        st = {
          file,
          anchor: anchorFileFor(file),
          checkpointed: 0,
          lastFinal: false,
          due: null,
          scheduled: 0,
          checkpointing: false,
          handle: null,
          tip: GENESIS_TIP,
          edge: merkle ? EMPTY_EDGE : null,
          edgeHead: "",
          lastMs: 0,
          queue: [],
          writing: false,
          locked: false
        }
        states.set(file, st)
      }
      return st
    }

    const fail = (st: FileState, reason: string, cause?: unknown) =>
      new AuditWriteError({ file: st.file, reason, ...(cause !== undefined ? { cause } : {}) })

    /**
     * The tree's right edge over every record of the file (read once, when a process opens a file it has
     * not written): its record count must be the tip's seq, or the tree cannot be continued.
     */
    const edgeOfFile = (st: FileState, tip: ChainTip): Effect.Effect<MerkleEdge, AuditWriteError> =>
      Effect.gen(function* () {
        if (tip.seq === 0) return EMPTY_EDGE
        const bytes = yield* Effect.tryPromise({
          try: () => fs.readFile(st.file),
          catch: (cause) => fail(st, `cannot read the file to continue its Merkle tree: ${reasonOf(cause)}`, cause)
        })
        const hashes = recordHashesOf(bytes)
        if (!Array.isArray(hashes)) {
          return yield* fail(st, `record ${hashes.record} is ${hashes.problem}; the Merkle tree cannot be continued (run verify-audit)`)
        }
        if (hashes.length !== tip.seq || hashes[hashes.length - 1] !== tip.hash) {
          return yield* fail(st, `the file holds ${hashes.length} records but its last says seq ${tip.seq}; the Merkle tree cannot be continued (run verify-audit)`)
        }
        const b = new MerkleEdgeBuilder()
        for (const h of hashes) b.appendRecord(h)
        return b.snapshot()
      })

    const open = (st: FileState) =>
      Effect.gen(function* () {
        if (!st.locked) {
          yield* acquireLock(st.file)
          st.locked = true
        }
        const { tail } = yield* recover(st.file)
        const tip = lastRecordOf(tail)
        if (tip === null) {
          return yield* fail(st, "the last line is not an audit record; the chain cannot be continued (run verify-audit)")
        }
        const last = yield* lastCheckpoint(st.anchor)
        // never mix: an anchor signed by one key is continued only with that key
        if (last.keyId !== null && last.keyId !== (signer?.key.key_id ?? null)) {
          return yield* fail(
            st,
            signer === null
              ? `its checkpoints are signed by key ${last.keyId}; configure that key (audit.signing_key, or --key) to append`
              : `its checkpoints are signed by key ${last.keyId}, not by the configured key ${signer.key.key_id}`
          )
        }
        // the tree's edge: kept from an earlier open by this sink when it ends at the same record, else read
        if (merkle && !(st.edge !== null && st.edge.size === tip.seq && st.edgeHead === (tip.seq === 0 ? "" : tip.hash))) {
          st.edge = yield* edgeOfFile(st, tip)
        }
        st.edgeHead = tip.seq === 0 ? "" : tip.hash
        yield* closeIdle(maxOpen - 1) // room for this one
        const handle = yield* Effect.tryPromise({
          try: () => fs.open(st.file, "a"),
          catch: (cause) => fail(st, `cannot open for append: ${reasonOf(cause)}`, cause)
        })
        st.handle = handle
        openFiles.set(st.file, st)
        st.tip = tip
        st.lastMs = tip.ts === "" ? 0 : Date.parse(tip.ts) || 0
        st.checkpointed = last.seq
        st.lastFinal = last.final
        st.scheduled = last.seq
        return handle
      })

    /**
     * Append a checkpoint of `tip` (by default the file's, all of it durable) to the anchor file. `final`:
     * the file is being closed with it (on the sink's close, or an idle file's): it says so (signed), and
     * is written even when the last checkpoint covers the tip already, unless that one is final too: a
     * verifier then knows the writer closed the file there and no record was cut after it. Otherwise
     * (every N records, `checkpoint()`), nothing when already covered.
     */
    const writeCheckpoint = (st: FileState, final: boolean, at: TreeTip = { tip: st.tip, edge: st.edge }): Effect.Effect<void, AuditWriteError> =>
      Effect.suspend(() => {
        const { tip, edge } = at
        if (tip.seq === 0 || tip.seq < st.checkpointed || (tip.seq === st.checkpointed && (!final || st.lastFinal))) return Effect.void
        if (edge !== null && edge.size !== tip.seq) {
          return Effect.fail(fail(st, `the Merkle tree holds ${edge.size} records, not the ${tip.seq} to checkpoint (a bug: the checkpoint is not written)`))
        }
        const c = makeCheckpoint(
          { file: path.basename(st.file), seq: tip.seq, head: tip.hash, ts: new Date().toISOString(), final, ...(edge === null ? {} : { root: edgeRoot(edge) }) },
          signer
        )
        return appendDurably(st.anchor, JSON.stringify(c) + "\n", fsync !== "never").pipe(
          Effect.map(() => {
            st.checkpointed = c.seq
            st.lastFinal = final
            st.scheduled = Math.max(st.scheduled, c.seq)
          })
        )
      })

    /**
     * Checkpoint `tip` (durable records) beside the appends, not in their way: checkpoints are written one
     * at a time per file, in order, and those that fall due while one is being written are merged into
     * the next (it covers them all). The records are durable already: a failed checkpoint is reported,
     * not turned into a lost append.
     */
    const scheduleCheckpoint = (st: FileState, at: TreeTip): Effect.Effect<void> =>
      Effect.suspend(() => {
        st.due = at
        st.scheduled = at.tip.seq
        if (st.checkpointing) return Effect.void
        st.checkpointing = true
        const loop = Effect.gen(function* () {
          while (st.due !== null) {
            const next = st.due
            st.due = null
            yield* writeCheckpoint(st, false, next).pipe(Effect.catchAll((e) => Effect.logError(`audit: checkpoint of ${st.file} failed: ${e.reason}`)))
          }
        }).pipe(Effect.ensuring(Effect.sync(() => void (st.checkpointing = false))), Effect.zipRight(trim))
        return Effect.asVoid(Effect.forkDaemon(loop))
      })

    /** forget the open handle: the next append recovers the file from disk */
    const reset = (st: FileState) =>
      Effect.suspend(() => {
        const fh = st.handle
        st.handle = null
        openFiles.delete(st.file)
        return fh === null ? Effect.void : closeQuietly(fh)
      })

    /** Start a writer for the file's queue (the caller has seen `writing` false). */
    const startWriter = (st: FileState): void => {
      st.writing = true
      // scheduled, not run here: the appends of the same burst queue first and share the batch
      runFork(drain(st).pipe(Effect.zipRight(trim)), { immediate: false })
    }

    /** Give the file up after owning it (`writing`): a writer takes over what queued meanwhile. */
    const release = (st: FileState): Effect.Effect<void> =>
      Effect.sync(() => {
        st.writing = false
        if (st.queue.length > 0) startWriter(st) // (once the sink is closed, the writer fails them)
      })

    const idle = (st: FileState): boolean => !st.writing && !st.checkpointing && st.queue.length === 0 && st.handle !== null

    /**
     * Close an idle file: a final checkpoint of its records (as closing the sink does, so closing loses
     * no coverage and the anchor says the file was closed there), then close its handle. It keeps its
     * state and its lock; its next append reopens it (`open` recovers the tail and reads the anchor
     * again). The caller has marked it owned (`writing`) and taken it out of `openFiles` in the same
     * synchronous step that found it idle, so an append queues meanwhile and is written once it is closed.
     */
    const closeFile = (st: FileState): Effect.Effect<void> =>
      Effect.suspend(() =>
        writeCheckpoint(st, true).pipe(
          Effect.catchAll((e) => Effect.logError(`audit: checkpoint of ${st.file} before closing it failed: ${e.reason}`)),
          Effect.zipRight(reset(st)),
          Effect.ensuring(release(st)),
          Effect.uninterruptible
        )
      )

    /**
     * Close least recently used idle files until at most `limit` are open. Busy files are skipped;
     * they are closed once idle (every writer and checkpoint loop ends with {@link trim}).
     */
    const closeIdle = (limit: number): Effect.Effect<void> =>
      Effect.gen(function* () {
        // once the sink is closing, its finalizer checkpoints and closes every file
        while (openFiles.size > limit && !closed) {
          let victim: FileState | undefined
          for (const st of openFiles.values()) {
            if (idle(st)) {
              victim = st
              break
            }
          }
          if (victim === undefined) return
          victim.writing = true
          openFiles.delete(victim.file)
          yield* closeFile(victim)
        }
      })

    /** back to at most `maxOpen` open files, if some are idle */
    const trim: Effect.Effect<void> = Effect.suspend(() => (openFiles.size > maxOpen ? closeIdle(maxOpen) : Effect.void))

    /**
     * Seal and write one batch, and start its sync: the batch in flight, or null when none of it was
     * written (its appends are then completed with the error).
     */
    const writeBatch = (st: FileState, batch: ReadonlyArray<Pending>): Effect.Effect<InFlight | null> =>
      Effect.gen(function* () {
        if (closed) return yield* fail(st, "the audit sink is closed")
        const handle = st.handle ?? (yield* open(st))
        const sealed: Array<Pending> = []
        const lines: Array<string> = []
        let tip = st.tip
        const tree = st.edge === null ? null : new MerkleEdgeBuilder(st.edge)
        const ms = Math.max(Date.now(), st.lastMs)
        const ts = new Date(ms).toISOString()
        for (const p of batch) {
          const at = { seq: tip.seq + 1, ts, prev_hash: tip.hash }
          try {
            const prepared = prepareEntry(p.entry)
            const { hash, line } = sealPrepared(prepared, at)
            p.record = preparedRecord(prepared, at, hash)
            sealed.push(p)
            lines.push(line, "\n")
            tree?.appendRecord(hash)
            tip = { seq: at.seq, hash, ts }
          } catch (cause) {
            complete(p, Effect.fail(fail(st, `record cannot be hashed: ${reasonOf(cause)}`, cause)))
          }
        }
        if (sealed.length === 0) return null
        const bytes = Buffer.from(lines.join(""), "utf8")
        yield* Effect.tryPromise({
          try: async () => {
            const { bytesWritten } = await handle.write(bytes, 0, bytes.length, null)
            if (bytesWritten !== bytes.length) throw new Error(`short write: ${bytesWritten} of ${bytes.length} bytes`)
          },
          catch: (cause) => fail(st, `write failed: ${reasonOf(cause)}`, cause)
        })
        const edge = tree === null ? null : tree.snapshot()
        st.tip = tip
        st.edge = edge
        st.edgeHead = tip.hash
        st.lastMs = ms
        // the sync starts now and runs while the next batch is sealed and written
        const synced: Promise<unknown> = fsync === "never" ? Promise.resolve(null) : handle.datasync().then(() => null, (cause: unknown) => cause ?? "fdatasync failed")
        return { sealed, tip, edge, synced }
      }).pipe(
        Effect.catchAll((e) =>
          Effect.sync(() => {
            for (const p of batch) complete(p, Effect.fail(e))
            return null
          })
        )
      )

    /** Wait for a batch's sync, checkpoint if due, and complete its appends. */
    const finish = (st: FileState, f: InFlight): Effect.Effect<boolean> =>
      Effect.gen(function* () {
        const cause = yield* Effect.promise(() => f.synced)
        if (cause !== null) {
          const e = fail(st, `write failed: ${reasonOf(cause)}`, cause)
          for (const p of f.sealed) complete(p, Effect.fail(e))
          return false
        }
        if (every > 0 && f.tip.seq - st.scheduled >= every) yield* scheduleCheckpoint(st, { tip: f.tip, edge: f.edge })
        for (let i = 0; i < f.sealed.length; i++) {
          const p = f.sealed[i]!
          complete(p, Effect.succeed(p.record!))
        }
        return true
      })

    /**
     * Drain the queue batch by batch (at most {@link MAX_BATCH} records each); stops (and clears
     * `writing`) when it is empty and nothing is in flight. Group commit is pipelined: while one batch
     * syncs, the next is sealed and written (at most {@link MAX_IN_FLIGHT} syncs at once); each batch
     * completes only after its own sync. A failed
     * sync fails every batch in flight after it and reopens the file from what is on disk.
     */
    const drain = (st: FileState): Effect.Effect<void> =>
      Effect.gen(function* () {
        const inFlight: Array<InFlight> = []
        const finishAll = Effect.gen(function* () {
          let ok = true
          while (inFlight.length > 0) {
            const f = inFlight.shift()!
            if (ok) ok = yield* finish(st, f)
            else for (const p of f.sealed) complete(p, Effect.fail(fail(st, "write failed: an earlier batch could not be synced")))
          }
          if (!ok) yield* reset(st)
        })
        while (true) {
          let batch: Array<Pending>
          if (fsync === "always") {
            batch = st.queue.splice(0, 1)
          } else if (st.queue.length <= MAX_BATCH) {
            batch = st.queue
            st.queue = []
          } else {
            batch = st.queue.splice(0, MAX_BATCH)
          }
          if (batch.length === 0) {
            if (inFlight.length === 0) {
              st.writing = false
              return
            }
            // nothing new yet: complete the oldest batch, whose appenders then append again
            const f = inFlight.shift()!
            if (!(yield* finish(st, f))) yield* finishAll
            continue
          }
          if (inFlight.length >= MAX_IN_FLIGHT) {
            const f = inFlight.shift()!
            if (!(yield* finish(st, f))) yield* finishAll
          }
          const f = yield* writeBatch(st, batch)
          if (f !== null) inFlight.push(f)
          else {
            // the write failed: settle what was written before it, then reopen from disk
            yield* finishAll
            yield* reset(st)
          }
        }
      }).pipe(Effect.uninterruptible)

    const append = (runId: string | null, entry: AuditEntry): Effect.Effect<AuditRecord, AuditWriteError> =>
      Either.match(resolve(runId), {
        onLeft: (e) => Effect.fail(e),
        onRight: (file) =>
          Effect.async<AuditRecord, AuditWriteError>((resume) => {
            const st = stateFor(file)
            if (openFiles.has(file)) {
              // most recently used
              openFiles.delete(file)
              openFiles.set(file, st)
            }
            st.queue.push({ entry, resume, record: null, done: false })
            if (!st.writing) startWriter(st)
          })
      })

    /** Queue nothing: wait for the file to go idle, then checkpoint its tip (owning the file meanwhile). */
    const checkpoint = (runId: string | null): Effect.Effect<void, AuditWriteError> =>
      Effect.gen(function* () {
        const st = stateFor(yield* resolve(runId))
        while (st.writing || st.checkpointing) yield* Effect.sleep("1 millis")
        st.writing = true
        yield* Effect.gen(function* () {
          if (st.handle === null && st.tip.seq === 0) yield* open(st)
          yield* writeCheckpoint(st, false)
        }).pipe(Effect.ensuring(release(st)), Effect.uninterruptible)
        yield* trim
      })

    return { append, fileFor, checkpoint } as const
  })

// ---------------------------------------------------------------------------------------------
// Memory sink

const makeMemory = (): Context.Context<AuditSink | AuditMemory> => {
  const all: Array<{ readonly name: string; readonly record: AuditRecord }> = []
  const tips = new Map<string, ChainTip>()
  const fileFor = (runId: string | null): string => `memory:${auditFileName(runId)}`
  const append = (runId: string | null, entry: AuditEntry): Effect.Effect<AuditRecord, AuditWriteError> =>
    Effect.try({
      // synchronous, hence atomic: no other append can interleave
      try: () => {
        const name = fileFor(runId)
        const tip = tips.get(name) ?? GENESIS_TIP
        const record = sealRecord(entry, { seq: tip.seq + 1, ts: new Date().toISOString(), prev_hash: tip.hash })
        tips.set(name, { seq: record.seq, hash: record.hash, ts: record.ts })
        all.push({ name, record })
        return record
      },
      catch: (cause) => new AuditWriteError({ file: fileFor(runId), reason: `record cannot be hashed: ${reasonOf(cause)}`, cause })
    })
  const recordsOf = (runId: string | null) => {
    const name = fileFor(runId)
    return all.filter((r) => r.name === name).map((r) => r.record)
  }
  const memory: AuditMemoryShape = {
    records: Effect.sync(() => all.map((r) => r.record)),
    recordsFor: (runId) => Effect.sync(() => recordsOf(runId)),
    textFor: (runId) => Effect.sync(() => recordsOf(runId).map((r) => recordLine(r) + "\n").join(""))
  }
  return Context.make(AuditSink, { append, fileFor, checkpoint: () => Effect.void } as const).pipe(Context.add(AuditMemory, memory))
}

// ---------------------------------------------------------------------------------------------

export class AuditSink extends Context.Tag("vetobench/AuditSink")<AuditSink, AuditSinkShape>() {
  /** Durable JSONL files under `dir` (scoped: files are closed on release). */
  static layerFile = (dir: string, options: FileSinkOptions = {}): Layer.Layer<AuditSink, AuditWriteError> =>
    Layer.scoped(AuditSink, makeFile(dir, options))
  /** In-memory chains; also provides `AuditMemory`. Fresh state each time the layer is built. */
  static layerMemory: Layer.Layer<AuditSink | AuditMemory> = Layer.effectContext(Effect.sync(makeMemory))
}

/** Verify one audit file's chain (on every core for a large file). A missing or unreadable file is a typed error, not a crash. */
export const verifyAuditFile = (file: string): Effect.Effect<VerifyResult & { readonly file: string }, AuditReadError> => {
  const abs = path.resolve(file)
  return Effect.tryPromise({
    try: () => readShared(abs),
    catch: (cause) =>
      new AuditReadError({ file: abs, reason: readFailure(cause), cause })
  }).pipe(
    Effect.flatMap((bytes) => Effect.promise(() => verifyChainParallel(bytes, null))),
    Effect.map((result) => ({ ...result, file: abs }))
  )
}
