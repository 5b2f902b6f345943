/**
 * JSONL files read as streams: each line with its byte offset and length, so an index of offsets
 * can be built in one pass without holding the file, and one line read back later by offset.
 * Lines are never longer than `MAX_LINE_BYTES` in memory (a longer one is skipped whole).
 */
import { Data, Effect } from "effect"
import * as fs from "node:fs"
import { isObject } from "../domain/is-object.js"

export class ViewReadError extends Data.TaggedError("ViewReadError")<{ readonly file: string; readonly reason: string }> {
  override get message(): string {
    return `${this.file}: ${this.reason}`
  }
}

/** A line is at most this long (64 MiB): a longer one is skipped, as a torn line would be. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024

export interface Line {
  readonly offset: number
  readonly bytes: number
  readonly text: string
}

const reason = (e: unknown) => (e instanceof Error ? e.message : String(e))

export interface ReadFrom {
  /** the byte offset to start at (a line start); default 0 */
  readonly from?: number
  /** hand on a last line without its newline (default true); false when a writer may still be writing it */
  readonly unterminated?: boolean
}

/** What is at `file` (symlinks followed): a regular file, nothing, or something else. */
export const fileKind = (file: string): "file" | "absent" | "other" => {
  try {
    return fs.statSync(file).isFile() ? "file" : "other"
  } catch (e) {
    return isObject(e) && e.code === "ENOENT" ? "absent" : "other"
  }
}

/**
 * Calls `each` for every non-blank line of `file` from `from`, in order, streaming it; nothing
 * when the file is absent, a `ViewReadError` when it is not a regular file. Resolves to the offset after the last line handed on (where a later
 * read of an appended file continues).
 */
export const forEachLine = (file: string, each: (line: Line) => void, opts: ReadFrom = {}): Effect.Effect<number, ViewReadError> =>
  Effect.async<number, ViewReadError>((resume) => {
    const from = opts.from ?? 0
    const kind = fileKind(file)
    if (kind === "absent") return resume(Effect.succeed(from))
    // a folder, a FIFO or a device (a link to /dev/zero) would fail or never end
    if (kind === "other") return resume(Effect.fail(new ViewReadError({ file, reason: "cannot read: not a regular file" })))
    const stream = fs.createReadStream(file, { highWaterMark: 1 << 20, start: from })
    let parts: Array<Buffer> = []
    let held = 0
    let start = from
    let pos = from
    let skipping = false
    const emit = (end: number) => {
      if (!skipping) {
        const buf = parts.length === 1 ? parts[0]! : Buffer.concat(parts)
        const text = buf.toString("utf8")
        if (text.trim() !== "") each({ offset: start, bytes: end - start, text })
      }
      parts = []
      held = 0
      skipping = false
    }
    stream.on("data", (chunk) => {
      const b = typeof chunk === "string" ? Buffer.from(chunk) : chunk
      let from = 0
      for (;;) {
        const nl = b.indexOf(10, from)
        if (nl === -1) break
        if (!skipping) parts.push(b.subarray(from, nl))
        emit(pos + nl)
        start = pos + nl + 1
        from = nl + 1
      }
      if (from < b.length && !skipping) {
        held += b.length - from
        if (held > MAX_LINE_BYTES) {
          skipping = true
          parts = []
        } else parts.push(Buffer.from(b.subarray(from)))
      }
      pos += b.length
    })
    stream.on("error", (e) => resume(Effect.fail(new ViewReadError({ file, reason: `cannot read: ${reason(e)}` }))))
    stream.on("end", () => {
      if (opts.unterminated === false) return resume(Effect.succeed(start))
      if (parts.length > 0 || skipping) emit(pos)
      resume(Effect.succeed(pos))
    })
    return Effect.sync(() => stream.destroy())
  })

/** The text of the line at `offset` (`bytes` long), read without the rest of the file. */
export const readLineAt = (file: string, offset: number, bytes: number): Effect.Effect<string, ViewReadError> =>
  Effect.try({
    try: () => {
      const fd = fs.openSync(file, "r")
      try {
        const buf = Buffer.alloc(bytes)
        const n = fs.readSync(fd, buf, 0, bytes, offset)
        return buf.subarray(0, n).toString("utf8")
      } finally {
        fs.closeSync(fd)
      }
    },
    catch: (e) => new ViewReadError({ file, reason: `cannot read: ${reason(e)}` })
  })

/** `[size, mtime]` of a file as a cache key, or null when it does not exist. */
export const fileStamp = (file: string): string | null => {
  try {
    const s = fs.statSync(file)
    return `${s.size}:${s.mtimeMs}`
  } catch {
    return null
  }
}
