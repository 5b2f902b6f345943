/**
 * Reading a record line that is already in canonical form (RFC 8785, as `canonicalize` writes it),
 * without building its value: what verification does with the lines the file sink writes.
 *
 * A line is accepted only when it is exactly `canonicalize(JSON.parse(line))`: one JSON object, no
 * whitespace, members sorted by UTF-16 code units with no duplicate, every string spelled as
 * `JSON.stringify` spells it, every number as `String(number)` spells it. For such a line, the
 * canonical text of the record without its top-level `hash` member is the line with that member cut
 * out, so the record's hash is one SHA-256 over a slice of the line.
 *
 * Anything else (another member order, whitespace, `1.0`, escapes JSON.stringify would not write,
 * surrogates, keys with escapes, deep nesting) gives null, and the caller takes the general path
 * (parse, canonicalize). The reader is conservative, never approximate: when it answers, the answer
 * is the one the general path would give.
 */

/** Nesting deeper than this is left to the general path (which has its own limit). */
const MAX_LINE_DEPTH = 64

/** The top-level members a record line is read for, as text ranges of the line. */
export interface CanonicalRecordLine {
  /** the line without its top-level `hash` member: the canonical text of the record without `hash` */
  readonly withoutHash: string
  /** the JSON text of the top-level `hash`, `prev_hash` and `seq` values (undefined when absent) */
  readonly hash: string | undefined
  readonly prevHash: string | undefined
  readonly seq: string | undefined
}

/** Thrown inside the reader when the line is not canonical (caught at the top; never escapes). */
const NOT_CANONICAL: unique symbol = Symbol("not canonical")
const reject = (): never => {
  throw NOT_CANONICAL
}

/** The end (index after the closing quote) of the canonical string starting at `i` (a `"`). */
const stringEnd = (s: string, i: number): number => {
  let k = i + 1
  const n = s.length
  while (k < n) {
    const c = s.charCodeAt(k)
    if (c === 34) return k + 1
    if (c < 32) return reject()
    if (c === 92) {
      const e = s.charCodeAt(k + 1)
      // the short escapes JSON.stringify writes: \" \\ \b \f \n \r \t
      if (e === 34 || e === 92 || e === 98 || e === 102 || e === 110 || e === 114 || e === 116) {
        k += 2
        continue
      }
      // \u00xx (lowercase hex) only for the controls without a short escape; lone surrogates are left to the general path
      if (e === 117 && s.charCodeAt(k + 2) === 48 && s.charCodeAt(k + 3) === 48) {
        const hi = s.charCodeAt(k + 4)
        const lo = s.charCodeAt(k + 5)
        const low = lo >= 48 && lo <= 57 ? lo - 48 : lo >= 97 && lo <= 102 ? lo - 87 : -1
        if ((hi === 48 || hi === 49) && low >= 0) {
          const code = (hi - 48) * 16 + low
          if (code !== 8 && code !== 9 && code !== 10 && code !== 12 && code !== 13) {
            k += 6
            continue
          }
        }
      }
      return reject()
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      // a pair is written literally; a lone surrogate would have been escaped
      const d = s.charCodeAt(k + 1)
      if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        k += 2
        continue
      }
      return reject()
    }
    k++
  }
  return reject()
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57

/** The end of the canonical number starting at `i`. */
const numberEnd = (s: string, i: number): number => {
  let k = i
  if (s.charCodeAt(k) === 45) k++
  const first = k
  while (isDigit(s.charCodeAt(k))) k++
  if (k === first || (s.charCodeAt(first) === 48 && k - first > 1)) return reject()
  let plain = true
  if (s.charCodeAt(k) === 46) {
    plain = false
    k++
    const f = k
    while (isDigit(s.charCodeAt(k))) k++
    if (k === f) return reject()
  }
  const e = s.charCodeAt(k)
  if (e === 101 || e === 69) {
    plain = false
    k++
    const sign = s.charCodeAt(k)
    if (sign === 43 || sign === 45) k++
    const f = k
    while (isDigit(s.charCodeAt(k))) k++
    if (k === f) return reject()
  }
  // short integers are canonical as they stand, except -0; anything else must be String(Number(text))
  if (plain && k - first <= 15) {
    if (k - i === 2 && s.charCodeAt(i) === 45 && s.charCodeAt(first) === 48) return reject()
    return k
  }
  const text = s.slice(i, k)
  return String(Number(text)) === text ? k : reject()
}

const startsAt = (s: string, i: number, word: string): boolean => s.startsWith(word, i)

/** The end of the canonical value starting at `i`. */
const valueEnd = (s: string, i: number, depth: number): number => {
  const c = s.charCodeAt(i)
  if (c === 34) return stringEnd(s, i)
  if (c === 123) return objectEnd(s, i, depth + 1)
  if (c === 91) return arrayEnd(s, i, depth + 1)
  if (c === 45 || isDigit(c)) return numberEnd(s, i)
  if (c === 116) return startsAt(s, i, "true") ? i + 4 : reject()
  if (c === 102) return startsAt(s, i, "false") ? i + 5 : reject()
  if (c === 110) return startsAt(s, i, "null") ? i + 4 : reject()
  return reject()
}

const arrayEnd = (s: string, i: number, depth: number): number => {
  if (depth > MAX_LINE_DEPTH) return reject()
  let k = i + 1
  if (s.charCodeAt(k) === 93) return k + 1
  for (;;) {
    k = valueEnd(s, k, depth)
    const c = s.charCodeAt(k)
    if (c === 93) return k + 1
    if (c !== 44) return reject()
    k++
  }
}

/** A key at `k` (a `"`): its end; keys with escapes are left to the general path (their order needs the decoded text). */
const keyEnd = (s: string, k: number): number => {
  if (s.charCodeAt(k) !== 34) return reject()
  const q = s.indexOf('"', k + 1)
  if (q < 0) return reject()
  for (let j = k + 1; j < q; j++) {
    const c = s.charCodeAt(j)
    if (c === 92 || c < 32 || (c >= 0xd800 && c <= 0xdfff)) return reject()
  }
  return q + 1
}

const objectEnd = (s: string, i: number, depth: number): number => {
  if (depth > MAX_LINE_DEPTH) return reject()
  let k = i + 1
  if (s.charCodeAt(k) === 125) return k + 1
  let prev: string | null = null
  for (;;) {
    const ke = keyEnd(s, k)
    const key = s.slice(k + 1, ke - 1)
    // strictly increasing by code units: sorted, and no duplicate
    if (prev !== null && !(prev < key)) return reject()
    prev = key
    if (s.charCodeAt(ke) !== 58) return reject()
    k = valueEnd(s, ke + 1, depth)
    const c = s.charCodeAt(k)
    if (c === 125) return k + 1
    if (c !== 44) return reject()
    k++
  }
}

/**
 * The record line read as canonical text, or null when `line` is not exactly the canonical form of
 * a JSON object that has a top-level `hash` member.
 */
export const readCanonicalRecordLine = (line: string): CanonicalRecordLine | null => {
  if (line.charCodeAt(0) !== 123) return null
  try {
    let hash: string | undefined
    let prevHash: string | undefined
    let seq: string | undefined
    /** where the hash member starts (its leading comma, or its key for the first member) and ends */
    let cutFrom = -1
    let cutTo = -1
    let k = 1
    if (line.charCodeAt(k) === 125) return null
    let prev: string | null = null
    for (;;) {
      const memberStart = k
      const ke = keyEnd(line, k)
      const key = line.slice(k + 1, ke - 1)
      if (prev !== null && !(prev < key)) return null
      prev = key
      if (line.charCodeAt(ke) !== 58) return null
      const v = ke + 1
      k = valueEnd(line, v, 1)
      if (key === "hash") {
        hash = line.slice(v, k)
        // cut the member with the comma before it; the first member takes the comma after it
        cutFrom = memberStart === 1 ? 1 : memberStart - 1
        cutTo = memberStart === 1 && line.charCodeAt(k) === 44 ? k + 1 : k
      } else if (key === "prev_hash") prevHash = line.slice(v, k)
      else if (key === "seq") seq = line.slice(v, k)
      const c = line.charCodeAt(k)
      if (c === 125) {
        if (k + 1 !== line.length) return null
        break
      }
      if (c !== 44) return null
      k++
    }
    if (cutFrom < 0) return null
    return { withoutHash: line.slice(0, cutFrom) + line.slice(cutTo), hash, prevHash, seq }
  } catch (e) {
    if (e === NOT_CANONICAL) return null
    throw e
  }
}
