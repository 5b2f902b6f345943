/**
 * Python-compatible JSON (reference-behaviour §18 (c)): `json.dumps` / `json.loads` as CPython's `json`
 * module does them, for the texts Agent-SafetyBench puts into episode messages and ShieldAgent prompts.
 *
 * `pyJson(v)` is `json.dumps(v)` with the defaults: `", "` / `": "` separators, `ensure_ascii=True`
 * (every code unit outside `' '…'~'` becomes `\uxxxx`, lowercase hex, so non-BMP characters come out
 * as their surrogate pair), `\"` `\\` `\n` `\r` `\t` `\b` `\f` as named escapes, insertion order,
 * `NaN` / `Infinity` / `-Infinity` for non-finite floats (`allow_nan=True`).
 * `pyJsonDumps(v, options)` adds `ensure_ascii`, `indent`, `separators` and `sort_keys`.
 *
 * Numbers. Python tells `int` from `float`; a JS number does not:
 * - a JS number with an integral value is written as a Python int (`1`, `-0` → `0`, `1e21` → all digits);
 * - any other finite number is written as Python's float `repr` (shortest round-trip digits, which
 *   ECMAScript computes the same way; exponent form when the decimal exponent is < -4 or >= 16, as
 *   `1e-05` / `1.5e+16`);
 * - a {@link PyFloat} is always written as a float (`100.0`, `-0.0`, `1e+16`).
 * So the one residual difference for plain JS values is an integral float: Python's `1.0` read with
 * `JSON.parse` is the number `1` and is written back as `1`. {@link parsePythonJson} avoids that: it
 * keeps integral float literals as `PyFloat`, so `pyJson(parsePythonJson(t))` equals Python's
 * `json.dumps(json.loads(t))` for every `t` Python accepts, except integers beyond 2^53 (JS numbers;
 * the double's exact digits are written) and objects whose keys look like array indices (`"7"`: JS
 * enumerates those first, in numeric order, whatever their position in the text).
 *
 * The value model otherwise follows `JSON.stringify`: `toJSON` is honoured; `undefined`, functions and
 * symbols are left out of objects and written as `null` in arrays (and at the top level); a `bigint` is
 * written as a Python int. Cycles (nesting deeper than {@link MAX_DEPTH}) throw {@link PyJsonError}.
 */
import { Data } from "effect"

export class PyJsonError extends Data.TaggedError("PyJsonError")<{ readonly message: string }> {}

/** Nesting limit for serialising (a cycle is reported as too deep). */
export const MAX_DEPTH = 1000

/**
 * A Python `float` whose value JS would print as an integer (`100.0`). `toJSON` / `valueOf` give the
 * number, so `JSON.stringify` and arithmetic still work (and lose the `.0`, as for any JS number).
 */
export class PyFloat {
  constructor(readonly value: number) {}
  toJSON(): number {
    return this.value
  }
  valueOf(): number {
    return this.value
  }
  toString(): string {
    return pyFloatRepr(this.value)
  }
}

export const isPyFloat = (u: unknown): u is PyFloat => u instanceof PyFloat

/** The number of a JSON-ish numeric value: a number, or the value of a `PyFloat`. */
export const numberOf = (u: unknown): number | undefined =>
  typeof u === "number" ? u : u instanceof PyFloat ? u.value : undefined

/** Python's `repr(float(x))` (also what `json.dumps` writes for a float). */
export const pyFloatRepr = (x: number): string => {
  if (Number.isNaN(x)) return "NaN"
  if (x === Infinity) return "Infinity"
  if (x === -Infinity) return "-Infinity"
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0"
  const sci = x.toExponential() // shortest round-trip digits: "-1.2345e+16"
  const cut = sci.indexOf("e")
  const negative = sci.startsWith("-")
  const digits = sci.slice(negative ? 1 : 0, cut).replace(".", "")
  const exp = Number(sci.slice(cut + 1))
  let out: string
  if (exp < -4 || exp >= 16) {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits
    out = `${mantissa}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`
  } else if (exp < 0) {
    out = `0.${"0".repeat(-exp - 1)}${digits}`
  } else if (digits.length <= exp + 1) {
    out = `${digits}${"0".repeat(exp + 1 - digits.length)}.0`
  } else {
    out = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`
  }
  return negative ? `-${out}` : out
}

/** Python's `json.dumps` of an `int` held in a JS number. */
const intText = (n: number): string => (Math.abs(n) < 1e21 ? String(n) : BigInt(n).toString())

/** A JS number as `json.dumps` writes it (integral → int, else float repr). */
export const pyNumber = (n: number): string => (Number.isInteger(n) ? intText(n) : pyFloatRepr(n))

const hex4 = (code: number): string => `\\u${code.toString(16).padStart(4, "0")}`

const NAMED: Readonly<Record<number, string>> = {
  0x22: '\\"',
  0x5c: "\\\\",
  0x0a: "\\n",
  0x0d: "\\r",
  0x09: "\\t",
  0x08: "\\b",
  0x0c: "\\f"
}

const ASCII_SAFE = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/
const UNICODE_SAFE = /^[^\x00-\x1f"\\]*$/

/** `json.dumps` of a str: `ensure_ascii` escapes every code unit outside `' '…'~'`. */
export const pyString = (s: string, ensureAscii = true): string => {
  if ((ensureAscii ? ASCII_SAFE : UNICODE_SAFE).test(s)) return `"${s}"`
  let out = '"'
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    const named = NAMED[c]
    if (named !== undefined) out += named
    else if (c < 0x20 || (ensureAscii && c > 0x7e)) out += hex4(c)
    else out += s[i]
  }
  return out + '"'
}

export interface PyJsonOptions {
  /** default true */
  readonly ensureAscii?: boolean
  /** Python's `indent`: a number of spaces or the indent string; default none (one line) */
  readonly indent?: number | string | null
  /** `(item, key)` separators; default `(", ", ": ")`, or `(",", ": ")` when indenting */
  readonly separators?: readonly [string, string]
  /** sort object keys by code point, as Python sorts str; default false */
  readonly sortKeys?: boolean
}

const isOmitted = (v: unknown): boolean => v === undefined || typeof v === "function" || typeof v === "symbol"

/** Python str order: by code point (JS `<` compares UTF-16 code units, which differs above U+FFFF). */
const compareCodePoints = (a: string, b: string): number => {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!
    const y = b.codePointAt(i)!
    if (x !== y) return x - y
    if (x > 0xffff) i++
  }
  return a.length - b.length
}

/** `json.dumps(value, ensure_ascii=…, indent=…, separators=…, sort_keys=…)`. */
export const pyJsonDumps = (value: unknown, options: PyJsonOptions = {}): string => {
  const ensureAscii = options.ensureAscii ?? true
  const indentUnit =
    options.indent === undefined || options.indent === null
      ? null
      : typeof options.indent === "number"
        ? " ".repeat(Math.max(0, options.indent))
        : options.indent
  const [itemSep, keySep] = options.separators ?? (indentUnit === null ? [", ", ": "] : [",", ": "])
  const sortKeys = options.sortKeys ?? false

  const write = (v: unknown, key: string, depth: number): string => {
    if (depth > MAX_DEPTH) throw new PyJsonError({ message: `nesting deeper than ${MAX_DEPTH} (circular reference?)` })
    if (v instanceof PyFloat) return pyFloatRepr(v.value)
    if (v !== null && typeof v === "object" && typeof (v as { toJSON?: unknown }).toJSON === "function") {
      v = (v as { toJSON: (k: string) => unknown }).toJSON(key)
      if (v instanceof PyFloat) return pyFloatRepr(v.value)
    }
    switch (typeof v) {
      case "string":
        return pyString(v, ensureAscii)
      case "number":
        return pyNumber(v)
      case "bigint":
        return v.toString()
      case "boolean":
        return v ? "true" : "false"
      case "object": {
        if (v === null) return "null"
        const inner = indentUnit === null ? "" : "\n" + indentUnit.repeat(depth + 1)
        const outer = indentUnit === null ? "" : "\n" + indentUnit.repeat(depth)
        if (Array.isArray(v)) {
          if (v.length === 0) return "[]"
          const parts = v.map((x, i) => (isOmitted(x) ? "null" : write(x, String(i), depth + 1)))
          return `[${inner}${parts.join(itemSep + inner)}${outer}]`
        }
        let entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => !isOmitted(x))
        if (entries.length === 0) return "{}"
        if (sortKeys) entries = entries.sort(([a], [b]) => compareCodePoints(a, b))
        const parts = entries.map(([k, x]) => `${pyString(k, ensureAscii)}${keySep}${write(x, k, depth + 1)}`)
        return `{${inner}${parts.join(itemSep + inner)}${outer}}`
      }
      default:
        return "null"
    }
  }
  return write(value, "", 0)
}

/** `json.dumps(value)` with Python's defaults. */
export const pyJson = (value: unknown): string => pyJsonDumps(value)

// ---------------------------------------------------------------------------------------------
// parsing

const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y
const PLAIN_RUN = /[^"\\\x00-\x1f]*/y

const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t"
}

/**
 * `json.loads(text)`: also accepts `NaN`, `Infinity` and `-Infinity`; an integral float literal
 * (`100.0`, `1e2`, `-0.0`) becomes a {@link PyFloat}, every other number a JS number. Throws
 * {@link PyJsonError} (with the offset) on text Python would reject.
 */
export const parsePythonJson = (text: string): unknown => {
  let i = 0
  const fail = (what: string): never => {
    throw new PyJsonError({ message: `${what} at char ${i}` })
  }
  const skipWs = () => {
    for (;;) {
      const c = text.charCodeAt(i)
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++
      else return
    }
  }
  const literal = (word: string, value: unknown): unknown => {
    if (text.startsWith(word, i)) {
      i += word.length
      return value
    }
    return fail("Expecting value")
  }
  const parseString = (): string => {
    i++ // opening quote
    let out = ""
    for (;;) {
      PLAIN_RUN.lastIndex = i
      PLAIN_RUN.exec(text)
      out += text.slice(i, PLAIN_RUN.lastIndex)
      i = PLAIN_RUN.lastIndex
      const c = text[i]
      if (c === '"') {
        i++
        return out
      }
      if (c === undefined) return fail("Unterminated string")
      if (c !== "\\") return fail("Invalid control character")
      const e = text[i + 1]
      if (e === "u") {
        const h = text.slice(i + 2, i + 6)
        if (!/^[0-9a-fA-F]{4}$/.test(h)) {
          i += 1
          return fail("Invalid \\uXXXX escape")
        }
        out += String.fromCharCode(parseInt(h, 16))
        i += 6
      } else {
        const r = e === undefined ? undefined : ESCAPES[e]
        if (r === undefined) return fail("Invalid \\escape")
        out += r
        i += 2
      }
    }
  }
  const parseValue = (depth: number): unknown => {
    if (depth > MAX_DEPTH) fail("nesting too deep")
    skipWs()
    const c = text[i]
    switch (c) {
      case '"':
        return parseString()
      case "{": {
        i++
        const obj: Record<string, unknown> = {}
        skipWs()
        if (text[i] === "}") {
          i++
          return obj
        }
        for (;;) {
          skipWs()
          if (text[i] !== '"') fail("Expecting property name enclosed in double quotes")
          const key = parseString()
          skipWs()
          if (text[i] !== ":") fail("Expecting ':' delimiter")
          i++
          const v = parseValue(depth + 1)
          if (key === "__proto__") Object.defineProperty(obj, key, { value: v, enumerable: true, writable: true, configurable: true })
          else obj[key] = v
          skipWs()
          if (text[i] === ",") {
            i++
            continue
          }
          if (text[i] === "}") {
            i++
            return obj
          }
          return fail("Expecting ',' delimiter")
        }
      }
      case "[": {
        i++
        const arr: Array<unknown> = []
        skipWs()
        if (text[i] === "]") {
          i++
          return arr
        }
        for (;;) {
          arr.push(parseValue(depth + 1))
          skipWs()
          if (text[i] === ",") {
            i++
            continue
          }
          if (text[i] === "]") {
            i++
            return arr
          }
          return fail("Expecting ',' delimiter")
        }
      }
      case "t":
        return literal("true", true)
      case "f":
        return literal("false", false)
      case "n":
        return literal("null", null)
      case "N":
        return literal("NaN", NaN)
      case "I":
        return literal("Infinity", Infinity)
      default: {
        if (c === "-" && text.startsWith("-Infinity", i)) {
          i += 9
          return -Infinity
        }
        NUMBER.lastIndex = i
        const m = NUMBER.exec(text)
        if (m === null) return fail("Expecting value")
        i = NUMBER.lastIndex
        const n = Number(m[0])
        if (m[1] === undefined && m[2] === undefined) return Object.is(n, -0) ? 0 : n
        return Number.isInteger(n) ? new PyFloat(n) : n
      }
    }
  }
  const value = parseValue(0)
  skipWs()
  if (i !== text.length) fail("Extra data")
  return value
}
