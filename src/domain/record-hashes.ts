/**
 * The `hash` of every record of an audit file, by position: the leaves of the log's Merkle tree
 * (src/domain/merkle.ts). Read, not verified (the chain check says whether to trust them): a line in
 * canonical form gives its top-level `hash` without being decoded, any other line is parsed. Blank
 * lines are skipped; a last line without its newline (a torn write) is not a record.
 */
import { asciiSlice, readCanonicalRecordLine } from "./canonical-line.js"
import { isObject } from "./is-object.js"
import { isRecordHash } from "./merkle.js"

/** A line that is not a record with a `hash` of 64 lowercase hex digits. */
export interface NotARecord {
  /** 1-based, among the non-blank lines */
  readonly record: number
  readonly problem: string
}

/** The `hash` of one record line (`[start, end)` of `bytes`), or why the line has none. */
const hashOfLine = (bytes: Buffer, start: number, end: number): string | null => {
  const c = readCanonicalRecordLine(bytes, start, end)
  if (c !== null) {
    const text = asciiSlice(bytes, c.hashStart, c.hashEnd)
    return text.length === 66 && isRecordHash(text.slice(1, -1)) ? text.slice(1, -1) : null
  }
  try {
    const rec: unknown = JSON.parse(bytes.toString("utf8", start, end))
    return isObject(rec) && isRecordHash(rec.hash) ? rec.hash : null
  } catch {
    return null
  }
}

/** The record hashes of a file's bytes, in order, or the first line that is not a record with a hash. */
export const recordHashesOf = (bytes: Buffer): Array<string> | NotARecord => {
  const hashes: Array<string> = []
  let at = 0
  for (let nl = bytes.indexOf(10, at); nl >= 0; nl = bytes.indexOf(10, at)) {
    if (bytes[at] === 0x7b || bytes.toString("utf8", at, nl).trim() !== "") {
      const h = hashOfLine(bytes, at, nl)
      if (h === null) return { record: hashes.length + 1, problem: "not a record with a hash of 64 lowercase hex digits" }
      hashes.push(h)
    }
    at = nl + 1
  }
  return hashes
}
