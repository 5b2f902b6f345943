/**
 * RFC 8785 JSON Canonicalization Scheme (JCS).
 *
 * - object keys sorted by UTF-16 code units (the default `Array.prototype.sort` order), at every level;
 * - no whitespace; strings and numbers serialised exactly as ECMAScript `JSON.stringify` does (that is
 *   JCS's number format: `1e+30`, `4.5`, `-0` → `0`; non-ASCII emitted literally);
 * - the value model is `JSON.stringify`'s: `toJSON` is honoured, `undefined` / function / symbol
 *   properties are omitted and become `null` inside arrays. So
 *   `canonicalize(JSON.parse(JSON.stringify(v))) === canonicalize(v)` for every value it accepts,
 *   which is what lets a verifier re-hash a written (non-canonical) JSONL line.
 * - non-finite numbers, bigints and nesting deeper than {@link MAX_DEPTH} (cycles) throw
 *   {@link CanonicalJsonError} (`JSON.stringify` would write `null` or throw an untyped error).
 *
 * Lone surrogates are escaped (`\udXXX`) as ES2019 `JSON.stringify` does; JCS requires I-JSON input and
 * does not define them, so callers that need strict interoperability should not pass them.
 */
import { Data } from "effect"

export class CanonicalJsonError extends Data.TaggedError("CanonicalJsonError")<{
  readonly reason: string
}> {
  constructor(fields: { readonly reason: string }) {
    super(fields)
    this.message = fields.reason
  }
}

export const MAX_DEPTH = 512

interface Out {
  s: string
}

/** Strings JSON.stringify would escape: `"`, `\`, controls, and surrogates (lone ones are escaped; pairs take the slow path). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/
const str = (s: string): string => (NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : '"' + s + '"')

/** Keys by UTF-16 code units (`<` on strings compares code units); insertion sort for the usual few keys. */
const sortKeys = (keys: string[]): string[] => {
  if (keys.length > 48) return keys.sort()
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i]!
    let j = i - 1
    while (j >= 0 && keys[j]! > k) {
      keys[j + 1] = keys[j]!
      j--
    }
    keys[j + 1] = k
  }
  return keys
}

const fail = (reason: string): never => {
  throw new CanonicalJsonError({ reason })
}

/** `JSON.stringify`'s `toJSON` step. */
const prepare = (value: unknown, key: string | number): unknown =>
  value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON === "function"
    ? (value as { toJSON: (k: string) => unknown }).toJSON(String(key))
    : value

/** JSON.stringify omits these as object members and writes `null` for them in arrays. */
const isOmitted = (v: unknown): boolean => v === undefined || typeof v === "function" || typeof v === "symbol"

/** Append the canonical form of a prepared, non-omitted `value` to `out`. */
const write = (out: Out, value: unknown, key: string | number, depth: number): void => {
  switch (typeof value) {
    case "string":
      out.s += str(value)
      return
    case "number":
      if (!Number.isFinite(value)) fail(`non-finite number ${String(value)} at key ${JSON.stringify(String(key))}`)
      out.s += JSON.stringify(value)
      return
    case "boolean":
      out.s += value ? "true" : "false"
      return
    case "object": {
      if (value === null) {
        out.s += "null"
        return
      }
      if (depth >= MAX_DEPTH) fail(`nesting deeper than ${MAX_DEPTH} (cyclic value?)`)
      if (value instanceof Number || value instanceof String || value instanceof Boolean) {
        // boxed primitives, unwrapped as JSON.stringify does
        return write(out, value.valueOf(), key, depth)
      }
      if (Array.isArray(value)) {
        out.s += "["
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out.s += ","
          const v = prepare(value[i], i)
          if (isOmitted(v)) out.s += "null"
          else write(out, v, i, depth + 1)
        }
        out.s += "]"
        return
      }
      const obj = value as Record<string, unknown>
      const keys = sortKeys(Object.keys(obj))
      out.s += "{"
      let first = true
      for (const k of keys) {
        const v = prepare(obj[k], k)
        if (isOmitted(v)) continue
        out.s += first ? str(k) + ":" : "," + str(k) + ":"
        first = false
        write(out, v, k, depth + 1)
      }
      out.s += "}"
      return
    }
    default:
      // bigint (undefined, function and symbol never get here)
      fail(`${typeof value} at key ${JSON.stringify(String(key))} is not JSON`)
  }
}

/**
 * The RFC 8785 canonical JSON text of `value`.
 * @throws CanonicalJsonError on non-finite numbers, bigints, too deep / cyclic values, or a top-level
 *   value that JSON cannot represent (undefined, function, symbol).
 */
export const canonicalize = (value: unknown): string => {
  const out: Out = { s: "" }
  const v = prepare(value, "")
  if (isOmitted(v)) fail(`top-level value of type ${typeof v} is not JSON`)
  write(out, v, "", 0)
  return out.s
}
