/**
 * Resumable result files: append-only JSONL (one write + fsync per record, serialised; a torn last
 * line is cut off when the file is opened), JSONL reading (last line per id wins) and atomic JSON
 * writes (temp file + rename).
 *
 * JSON is read and written the way Python's `json` module does it (`parsePythonJson`,
 * `pyJsonDumps` with `ensure_ascii=False`), so a float such as `21.0` in a case's parameters stays a
 * float through `gen_res.jsonl` / `gen_res.json` into ShieldAgent's `env_info`, as upstream.
 */
import { Data, Effect, type Scope } from "effect"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { parsePythonJson, pyJsonDumps } from "../domain/python-json.js"
import { isObject } from "../domain/is-object.js"

/** One JSONL line: Python JSON on one line, non-ASCII kept (control characters are escaped). */
export const jsonLine = (record: unknown): string => `${pyJsonDumps(record, { ensureAscii: false })}\n`

export class StoreError extends Data.TaggedError("StoreError")<{ readonly file: string; readonly reason: string }> {
  override get message(): string {
    return `${this.file}: ${this.reason}`
  }
}

const reasonOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/**
 * The JSON objects of a JSONL file, in file order; [] when the file does not exist. Blank lines
 * and unreadable lines (a torn last line after a crash) are skipped.
 */
export const readJsonl = (file: string): Effect.Effect<Array<Record<string, unknown>>, StoreError> =>
  Effect.try({
    try: () => (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""),
    catch: (e) => new StoreError({ file, reason: `cannot read: ${reasonOf(e)}` })
  }).pipe(
    Effect.map((text) => {
      const out: Array<Record<string, unknown>> = []
      for (const line of text.split("\n")) {
        if (line.trim() === "") continue
        try {
          const v: unknown = parsePythonJson(line)
          if (isObject(v)) out.push(v)
        } catch {
          // a torn line: the record was never acknowledged, so it is re-done
        }
      }
      return out
    })
  )

/** Last record per numeric `id` (file order: later lines win). */
export const lastById = (records: ReadonlyArray<Record<string, unknown>>): Map<number, Record<string, unknown>> => {
  const byId = new Map<number, Record<string, unknown>>()
  for (const r of records) if (typeof r.id === "number") byId.set(r.id, r)
  return byId
}

export interface Appender<A = unknown> {
  /** one line, one write, one fsync; concurrent calls are serialised */
  readonly append: (record: A) => Effect.Effect<void, StoreError>
}

/** Bytes read at a time from the end of a file while looking for its last newline. */
const TAIL_CHUNK = 64 * 1024

/**
 * Cut an unterminated last line (a write interrupted by a crash) so the next append starts clean.
 * Reads the file from its end, only as far back as the last newline.
 */
const truncateTornTail = (file: string) => {
  if (!fs.existsSync(file)) return
  const fd = fs.openSync(file, "r")
  let keep = -1
  try {
    const size = fs.fstatSync(fd).size
    const buf = Buffer.alloc(Math.min(TAIL_CHUNK, size))
    for (let end = size; end > 0 && keep < 0; end -= buf.length) {
      const start = Math.max(0, end - buf.length)
      const n = fs.readSync(fd, buf, 0, end - start, start)
      if (end === size && buf[n - 1] === 0x0a) return
      const i = buf.subarray(0, n).lastIndexOf(0x0a)
      if (i >= 0) keep = start + i + 1
      else if (start === 0) keep = 0
    }
  } finally {
    fs.closeSync(fd)
  }
  if (keep >= 0) fs.truncateSync(file, keep)
}

/**
 * Open `file` for appending (directories created) for the life of the scope; `serialize` gives a
 * record's line, newline included (default `jsonLine`).
 */
export const openAppender = <A = unknown>(
  file: string,
  serialize: (record: A) => string = jsonLine
): Effect.Effect<Appender<A>, StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const handle = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          await fsp.mkdir(path.dirname(file), { recursive: true })
          truncateTornTail(file)
          return fsp.open(file, "a")
        },
        catch: (e) => new StoreError({ file, reason: `cannot open for appending: ${reasonOf(e)}` })
      }),
      (h) => Effect.promise(() => h.close()).pipe(Effect.ignore)
    )
    const lock = yield* Effect.makeSemaphore(1)
    return {
      append: (record) =>
        lock.withPermits(1)(
          // not interruptible: a line is written whole (or, after a crash, cut on the next open)
          Effect.uninterruptible(
            Effect.tryPromise({
              try: async () => {
                await handle.write(serialize(record))
                await handle.datasync()
              },
              catch: (e) => new StoreError({ file, reason: `cannot append: ${reasonOf(e)}` })
            })
          )
        )
    }
  })

/** Write `text` to `file` atomically (temp file in the same directory, fsync, rename). */
export const writeFileAtomic = (file: string, text: string): Effect.Effect<void, StoreError> =>
  Effect.tryPromise({
    try: async () => {
      await fsp.mkdir(path.dirname(file), { recursive: true })
      const tmp = `${file}.tmp-${process.pid}`
      const h = await fsp.open(tmp, "w")
      try {
        await h.writeFile(text, "utf8")
        await h.datasync()
      } finally {
        await h.close()
      }
      await fsp.rename(tmp, file)
    },
    catch: (e) => new StoreError({ file, reason: `cannot write: ${reasonOf(e)}` })
  })

/** Read and parse a JSON file (as Python's `json.load`). */
export const readJsonFile = (file: string): Effect.Effect<unknown, StoreError> =>
  Effect.try({
    try: () => parsePythonJson(fs.readFileSync(file, "utf8")),
    catch: (e) => {
      const code = isObject(e) && typeof e.code === "string" ? e.code : undefined
      return new StoreError({ file, reason: code === "ENOENT" ? "not found" : `cannot read: ${reasonOf(e)}` })
    }
  })
