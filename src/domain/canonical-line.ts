/**
 * Reading a record line that is already in canonical form (RFC 8785, as `canonicalize` writes it),
 * straight from the file's bytes and without building its value: what verification does with the
 * lines the file sink writes.
 *
 * A line is accepted only when it is ASCII and exactly `canonicalize(JSON.parse(line))`: one JSON
 * object, no whitespace, members sorted by code units with no duplicate, every string spelled as
 * `JSON.stringify` spells it, every number as `String(number)` spells it. For such a line, the
 * canonical text of the record without its top-level `hash` member is the line with that member
 * (and one adjacent comma) cut out, so the record's hash is one SHA-256 over two slices of the line.
 *
 * Anything else (non-ASCII bytes, another member order, whitespace, `1.0`, escapes JSON.stringify
 * would not write, keys with escapes, deep nesting) gives null, and the caller takes the general
 * path (decode, parse, canonicalize). The reader is conservative, never approximate: when it
 * answers, the answer is the one the general path would give.
 *
 * A line with a duplicate key (in any object) is refused everywhere, not only here: JSON parsers
 * disagree on which of the values counts (`JSON.parse` keeps the last, others the first or fail),
 * so the record a reader sees need not be the record that was hashed. The general path asks
 * {@link duplicateKey} and fails such a line, naming the key.
 */

/** Nesting deeper than this is left to the general path (which has its own limit). */
const MAX_LINE_DEPTH = 64

/** Byte ranges of one canonical record line (`[start, end)` offsets into the buffer). */
export interface CanonicalRecordLine {
  /** the top-level `hash` member with one adjacent comma: the line without it is the hashed text */
  readonly cutFrom: number
  readonly cutTo: number
  /** the JSON text of the top-level `hash`, `prev_hash` and `seq` values; -1 when absent */
  readonly hashStart: number
  readonly hashEnd: number
  readonly prevStart: number
  readonly prevEnd: number
  readonly seqStart: number
  readonly seqEnd: number
}

/** Thrown inside the reader when the line is not canonical (caught at the top; never escapes). */
const NOT_CANONICAL: unique symbol = Symbol("not canonical")
const reject = (): never => {
  throw NOT_CANONICAL
}

// byte classes inside a string: 0 a character written as it stands, 1 `"`, 2 `\`, 3 a control or non-ASCII byte
const PLAIN = 0
const QUOTE = 1
const BACKSLASH = 2
const STRING_CLASS = new Uint8Array(256).map((_, b) => (b === 0x22 ? QUOTE : b === 0x5c ? BACKSLASH : b < 0x20 || b >= 0x80 ? 3 : PLAIN))
/** the short escapes JSON.stringify writes: \" \\ \b \f \n \r \t */
const SHORT_ESCAPE = new Uint8Array(256).map((_, b) => (b === 0x22 || b === 0x5c || b === 0x62 || b === 0x66 || b === 0x6e || b === 0x72 || b === 0x74 ? 1 : 0))

const hexValue = (b: number): number => (b >= 48 && b <= 57 ? b - 48 : b >= 97 && b <= 102 ? b - 87 : -1)

/** The end (offset after the closing quote) of the canonical string starting at `i` (a `"`). */
const stringEnd = (s: Buffer, i: number, end: number): number => {
  let k = i + 1
  for (;;) {
    while (k < end && STRING_CLASS[s[k]!] === PLAIN) k++
    if (k >= end) return reject()
    const c = STRING_CLASS[s[k]!]
    if (c === QUOTE) return k + 1
    if (c !== BACKSLASH) return reject()
    const e = s[k + 1]!
    if (SHORT_ESCAPE[e] === 1) {
      k += 2
      continue
    }
    // \u00xx (lowercase hex) only for the controls without a short escape; \uXXXX for surrogates is left to the general path
    if (e === 0x75 && s[k + 2] === 48 && s[k + 3] === 48 && (s[k + 4] === 48 || s[k + 4] === 49) && k + 6 <= end) {
      const low = hexValue(s[k + 5]!)
      const code = (s[k + 4]! - 48) * 16 + low
      if (low >= 0 && code !== 8 && code !== 9 && code !== 10 && code !== 12 && code !== 13) {
        k += 6
        continue
      }
    }
    return reject()
  }
}

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 48 && c <= 57

/**
 * `[first, end)` (its point at `dot`) is `int.frac` as `String(number)` writes it: at most 15
 * significant digits (so it is the only such decimal for its double, hence the shortest), no trailing
 * zero, and for `0.…` at most 5 zeros after the point (from 1e-7 on, numbers are written with an
 * exponent). False leaves it to `String(Number(text))`.
 */
const shortDecimal = (s: Buffer, first: number, dot: number, end: number): boolean => {
  if (s[end - 1] === 48) return false
  if (s[first] !== 48) return end - first - 1 <= 15
  let z = dot + 1
  while (s[z] === 48) z++
  return z - dot - 1 <= 5 && end - z <= 15
}

/** The end of the canonical number starting at `i`. */
const numberEnd = (s: Buffer, i: number, end: number): number => {
  let k = i
  if (s[k] === 45) k++
  const first = k
  while (k < end && isDigit(s[k])) k++
  if (k === first || (s[first] === 48 && k - first > 1)) return reject()
  let dot = -1
  if (k < end && s[k] === 46) {
    dot = k
    k++
    while (k < end && isDigit(s[k])) k++
    if (k === dot + 1) return reject()
  }
  let exponent = false
  if (k < end && (s[k] === 101 || s[k] === 69)) {
    exponent = true
    k++
    if (k < end && (s[k] === 43 || s[k] === 45)) k++
    const f = k
    while (k < end && isDigit(s[k])) k++
    if (k === f) return reject()
  }
  if (!exponent) {
    // short integers are canonical as they stand, except -0
    if (dot < 0 && k - first <= 15) return k - i === 2 && s[i] === 45 && s[first] === 48 ? reject() : k
    if (dot >= 0 && shortDecimal(s, first, dot, k)) return k
  }
  // anything else must be String(Number(text))
  const text = s.toString("latin1", i, k)
  return String(Number(text)) === text ? k : reject()
}

/** `word` (ASCII) at offset `i`. */
const bytesAre = (s: Buffer, i: number, end: number, word: string): boolean => {
  if (i + word.length > end) return false
  for (let j = 0; j < word.length; j++) if (s[i + j] !== word.charCodeAt(j)) return false
  return true
}

/** The end of the canonical value starting at `i`. */
const valueEnd = (s: Buffer, i: number, end: number, depth: number): number => {
  const c = s[i]
  if (c === 0x22) return stringEnd(s, i, end)
  if (c === 0x7b) return objectEnd(s, i, end, depth + 1)
  if (c === 0x5b) return arrayEnd(s, i, end, depth + 1)
  if (c === 45 || isDigit(c)) return numberEnd(s, i, end)
  if (c === 0x74) return bytesAre(s, i, end, "true") ? i + 4 : reject()
  if (c === 0x66) return bytesAre(s, i, end, "false") ? i + 5 : reject()
  if (c === 0x6e) return bytesAre(s, i, end, "null") ? i + 4 : reject()
  return reject()
}

const arrayEnd = (s: Buffer, i: number, end: number, depth: number): number => {
  if (depth > MAX_LINE_DEPTH) return reject()
  let k = i + 1
  if (s[k] === 0x5d && k < end) return k + 1
  for (;;) {
    k = valueEnd(s, k, end, depth)
    const c = s[k]
    if (c === 0x5d && k < end) return k + 1
    if (c !== 0x2c || k >= end) return reject()
    k++
  }
}

/** A key at `k` (a `"`): its end; keys with escapes are left to the general path (their order needs the decoded text). */
const keyEnd = (s: Buffer, k: number, end: number): number => {
  if (s[k] !== 0x22) return reject()
  let j = k + 1
  while (j < end && STRING_CLASS[s[j]!] === PLAIN) j++
  return j < end && s[j] === 0x22 ? j + 1 : reject()
}

/** Keys `[a, aEnd)` < `[b, bEnd)` by code units (ASCII bytes compare as code units). */
const keyBefore = (s: Buffer, a: number, aEnd: number, b: number, bEnd: number): boolean => {
  const n = Math.min(aEnd - a, bEnd - b)
  for (let j = 0; j < n; j++) {
    const x = s[a + j]!
    const y = s[b + j]!
    if (x !== y) return x < y
  }
  return aEnd - a < bEnd - b
}

/**
 * Walk an object's members from `i` (its `{`): keys strictly increasing (sorted, no duplicate);
 * `member(keyStart, keyEnd, valueStart, valueEnd)` sees each one (keys with their quotes). Returns
 * the offset after the `}`.
 */
const walkObject = (
  s: Buffer,
  i: number,
  end: number,
  depth: number,
  member: ((keyStart: number, keyEnd: number, valueStart: number, valueEnd: number) => void) | null
): number => {
  if (depth > MAX_LINE_DEPTH) return reject()
  let k = i + 1
  if (s[k] === 0x7d && k < end) return k + 1
  let prevKey = -1
  let prevKeyEnd = -1
  for (;;) {
    const ke = keyEnd(s, k, end)
    if (prevKey >= 0 && !keyBefore(s, prevKey + 1, prevKeyEnd - 1, k + 1, ke - 1)) return reject()
    prevKey = k
    prevKeyEnd = ke
    if (s[ke] !== 0x3a) return reject()
    const ve = valueEnd(s, ke + 1, end, depth)
    if (member !== null) member(k, ke, ke + 1, ve)
    const c = s[ve]
    if (c === 0x7d && ve < end) return ve + 1
    if (c !== 0x2c || ve >= end) return reject()
    k = ve + 1
  }
}

const objectEnd = (s: Buffer, i: number, end: number, depth: number): number => walkObject(s, i, end, depth, null)

/**
 * The line `[start, end)` of `bytes` read as a canonical record line, or null when it is not exactly
 * the canonical form (in ASCII) of a JSON object with a top-level `hash` member.
 */
export const readCanonicalRecordLine = (bytes: Buffer, start: number, end: number): CanonicalRecordLine | null => {
  if (end - start < 2 || bytes[start] !== 0x7b) return null
  let cutFrom = -1
  let cutTo = -1
  let hashStart = -1
  let hashEnd = -1
  let prevStart = -1
  let prevEnd = -1
  let seqStart = -1
  let seqEnd = -1
  try {
    const after = walkObject(bytes, start, end, 1, (k, ke, v, ve) => {
      const length = ke - k
      if (length === 6 && bytesAre(bytes, k, ke, '"hash"')) {
        hashStart = v
        hashEnd = ve
        // cut the member with the comma before it; the first member takes the comma after it
        const first = k === start + 1
        cutFrom = first ? k : k - 1
        cutTo = first && bytes[ve] === 0x2c ? ve + 1 : ve
      } else if (length === 11 && bytesAre(bytes, k, ke, '"prev_hash"')) {
        prevStart = v
        prevEnd = ve
      } else if (length === 5 && bytesAre(bytes, k, ke, '"seq"')) {
        seqStart = v
        seqEnd = ve
      }
    })
    if (after !== end || cutFrom < 0) return null
  } catch (e) {
    if (e === NOT_CANONICAL) return null
    throw e
  }
  return { cutFrom, cutTo, hashStart, hashEnd, prevStart, prevEnd, seqStart, seqEnd }
}

/** The bytes `[from, to)` as a string (the line is ASCII where the reader answered). */
export const asciiSlice = (bytes: Buffer, from: number, to: number): string => (from < 0 ? "" : bytes.toString("latin1", from, to))

/**
 * The first key that occurs twice in one object of the JSON text `text` (at any depth), decoded
 * (`"\u0062locked"` is `blocked`), or null when every object's keys are distinct. `text` must be valid
 * JSON (parse it first): the scan only follows its strings and brackets.
 */
export const duplicateKey = (text: string): string | null => {
  // one entry per open object or array: the object's keys so far, or null for an array
  const open: Array<Set<string> | null> = []
  // the next string in the innermost object is a key (after "{" or ",")
  let expectKey = false
  const n = text.length
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      let j = i + 1
      let escaped = false
      for (;;) {
        const d = text.charCodeAt(j)
        if (d === 0x22 || Number.isNaN(d)) break
        if (d === 0x5c) {
          escaped = true
          j += 2
        } else j++
      }
      const keys = open.length > 0 ? open[open.length - 1]! : null
      if (expectKey && keys !== null) {
        const key = escaped ? (JSON.parse(text.slice(i, j + 1)) as string) : text.slice(i + 1, j)
        if (keys.has(key)) return key
        keys.add(key)
        expectKey = false
      }
      i = j
    } else if (c === 0x7b) {
      open.push(new Set())
      expectKey = true
    } else if (c === 0x5b) {
      open.push(null)
      expectKey = false
    } else if (c === 0x7d || c === 0x5d) {
      open.pop()
      expectKey = false
    } else if (c === 0x2c) {
      expectKey = open.length > 0 && open[open.length - 1] !== null
    }
  }
  return null
}

/**
 * The first number literal of the JSON text `text` that is not spelled as the canonical form (RFC 8785:
 * `JSON.stringify`) spells the number `JSON.parse` reads from it, with that canonical spelling; null when
 * every number is canonical. `text` must be valid JSON (parse it first): the scan only skips its strings.
 *
 * The hash covers the canonical text of the parsed record, so every spelling of a number that parses to
 * the same double gives the same hash: `10000000000000001` reads as 1e16 in JavaScript (hashed as
 * `10000000000000000`) but as the integer 10000000000000001 in Python. Our writer writes canonical
 * numbers only, so a record line may hold no other spelling (`1.0`, `1e2`, `-0`, `0.10`, digits beyond
 * a double's precision): the literal is then the very text that was hashed, whatever a reader makes of it.
 */
export const nonCanonicalNumber = (text: string): { readonly literal: string; readonly canonical: string } | null => {
  const n = text.length
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      // skip the string: to its closing quote, over escapes
      let j = i + 1
      for (;;) {
        const q = text.indexOf('"', j)
        if (q < 0) return null
        let backslashes = 0
        while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++
        j = q + 1
        if (backslashes % 2 === 0) break
      }
      i = j - 1
    } else if (c === 0x2d || (c >= 48 && c <= 57)) {
      let j = i + 1
      for (; j < n; j++) {
        const d = text.charCodeAt(j)
        // digits, ".", "e", "E", "+", "-": the rest of the literal
        if (!((d >= 48 && d <= 57) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d)) break
      }
      const literal = text.slice(i, j)
      const canonical = JSON.stringify(Number(literal))
      if (canonical !== literal) return { literal, canonical }
      i = j - 1
    }
  }
  return null
}
