/**
 * The manifest records among the lines of a JSONL log (an audit file, a run's `results.jsonl`): what
 * `verify-audit`/`verify-results` check files against. One reader for both.
 *
 * Only lines that can be a manifest record are parsed: a JSON text whose `type` is the string
 * `manifest` contains `manifest` literally or spells a letter of it with a `\u` escape (no other
 * escape yields a letter). Every other line is skipped unparsed, found by searching the bytes, so
 * a large audit file is neither decoded whole nor parsed line by line. `manifestRecordsSlow` parses
 * every line; test/audit/manifest-records.test.ts checks the two agree on generated logs.
 */
import { isObject } from "../domain/is-object.js"

export interface ManifestRecord {
  readonly seq: number
  readonly command: string | null
  /** the well-formed `files` entries */
  readonly files: ReadonlyArray<{ readonly path: string; readonly sha256: string }>
  /** how many entries `files` has, well-formed or not */
  readonly listed: number
  /** the well-formed `logs` entries */
  readonly logs: ReadonlyArray<{ readonly path: string; readonly records: number; readonly root: string }>
}

export interface ManifestReadOptions {
  /** skip a last line without its newline (a record being written): audit files; default false */
  readonly completeLinesOnly?: boolean
}

const recordOf = (line: string): ManifestRecord | null => {
  let r: unknown
  try {
    r = JSON.parse(line)
  } catch {
    return null // not JSON: the chain check says so
  }
  if (!isObject(r) || r.type !== "manifest" || typeof r.seq !== "number" || !Array.isArray(r.files)) return null
  const files = r.files.filter((f): f is { path: string; sha256: string } => isObject(f) && typeof f.path === "string" && typeof f.sha256 === "string")
  const logs = Array.isArray(r.logs)
    ? r.logs.filter(
        (l): l is { path: string; records: number; root: string } =>
          isObject(l) && typeof l.path === "string" && Number.isSafeInteger(l.records) && (l.records as number) >= 0 && typeof l.root === "string" && /^[0-9a-f]{64}$/.test(l.root)
      )
    : []
  return { seq: r.seq, command: typeof r.command === "string" ? r.command : null, files, listed: r.files.length, logs }
}

const NEEDLES = [Buffer.from("manifest"), Buffer.from("\\u")]

/** [start, end) of every line of `bytes` that contains a needle, in order; a last line without its newline only when `withTorn`. */
const candidateLines = (bytes: Buffer, withTorn: boolean): Array<readonly [number, number]> => {
  const starts = new Set<number>()
  for (const needle of NEEDLES) {
    let lineEnd = -1
    for (let hit = bytes.indexOf(needle); hit >= 0; hit = bytes.indexOf(needle, lineEnd + 1)) {
      const start = bytes.lastIndexOf(10, hit) + 1
      lineEnd = bytes.indexOf(10, hit)
      starts.add(start)
      if (lineEnd < 0) break
    }
  }
  const out: Array<readonly [number, number]> = []
  for (const start of [...starts].sort((a, b) => a - b)) {
    const end = bytes.indexOf(10, start)
    if (end >= 0) out.push([start, end])
    else if (withTorn) out.push([start, bytes.length])
  }
  return out
}

const asBytes = (log: Buffer | string): Buffer => (typeof log === "string" ? Buffer.from(log, "utf8") : log)

/** The manifest records of a log (its bytes or text), in order. */
export const manifestRecordsIn = (log: Buffer | string, opts: ManifestReadOptions = {}): Array<ManifestRecord> => {
  const bytes = asBytes(log)
  return candidateLines(bytes, opts.completeLinesOnly !== true).flatMap(([start, end]) => {
    const r = recordOf(bytes.toString("utf8", start, end))
    return r === null ? [] : [r]
  })
}

/** {@link manifestRecordsIn} without the shortcut: every line parsed (the reference the tests compare with). */
export const manifestRecordsSlow = (log: Buffer | string, opts: ManifestReadOptions = {}): Array<ManifestRecord> => {
  const lines = asBytes(log).toString("utf8").split("\n")
  const last = lines.pop() // "" after a final newline; otherwise a line being written
  if (last !== undefined && last !== "" && opts.completeLinesOnly !== true) lines.push(last)
  return lines.flatMap((line) => {
    const r = recordOf(line)
    return r === null ? [] : [r]
  })
}
