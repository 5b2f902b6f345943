import { isObject } from "../domain/is-object.js"
/**
 * The small JSONPath-like language of scenario files, pure: paths, `{{ path }}` templates and
 * conditions (`equals` / `regex` / `range` / `exists` / `one_of`). Used by the checks (root = a
 * call's arguments) and by the sandbox (root = `{args, state, call}`).
 *
 * Path grammar: an optional leading `$` (the root), then segments `.name`, `[0]`, `["any key"]`
 * or `[other.path]` (a key computed from another path, evaluated against the same root). The
 * first segment may be written without a dot: `amount`, `$.amount`, `items[0].sku`,
 * `state.orders[args.order_id].refunded`.
 */

export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

export type Segment =
  | { readonly _tag: "key"; readonly key: string }
  | { readonly _tag: "index"; readonly index: number }
  | { readonly _tag: "ref"; readonly path: Path }

export interface Path {
  /** the path as written */
  readonly text: string
  readonly segments: ReadonlyArray<Segment>
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_-]*/

/** Parse a path; returns an error message (a string) when it is not one. */
export const parsePath = (text: string): Path | string => {
  let i = 0
  const s = text.trim()
  const parse = (stopAtBracket: boolean): Array<Segment> | string => {
    const segs: Array<Segment> = []
    if (s[i] === "$") i++
    let first = true
    while (i < s.length) {
      const c = s[i]
      if (stopAtBracket && c === "]") return segs
      if (c === ".") {
        i++
        const m = IDENT.exec(s.slice(i))
        if (m === null) return `expected a name after '.' at ${i}`
        segs.push({ _tag: "key", key: m[0] })
        i += m[0].length
      } else if (c === "[") {
        i++
        const rest = s.slice(i)
        const num = /^(\d+)\]/.exec(rest)
        const quoted = /^("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\]/.exec(rest)
        if (num !== null) {
          segs.push({ _tag: "index", index: Number(num[1]) })
          i += num[0].length
        } else if (quoted !== null) {
          const q = quoted[1] ?? ""
          const inner = q.slice(1, -1).replace(/\\(.)/g, "$1")
          segs.push({ _tag: "key", key: inner })
          i += quoted[0].length
        } else {
          const start = i
          const inner = parse(true)
          if (typeof inner === "string") return inner
          if (s[i] !== "]") return `missing ']' after position ${start}`
          if (inner.length === 0) return `empty '[]' at ${start}`
          segs.push({ _tag: "ref", path: { text: s.slice(start, i), segments: inner } })
          i++
        }
      } else if (first && IDENT.test(s.slice(i))) {
        const m = IDENT.exec(s.slice(i))
        const key = m?.[0] ?? ""
        segs.push({ _tag: "key", key })
        i += key.length
      } else {
        return `unexpected '${c}' at ${i}`
      }
      first = false
    }
    return segs
  }
  if (s === "") return "empty path"
  const segments = parse(false)
  if (typeof segments === "string") return `bad path ${JSON.stringify(text)}: ${segments}`
  if (i !== s.length) return `bad path ${JSON.stringify(text)}: unexpected ']' at ${i}`
  return { text: s, segments }
}

/** A path known to be valid (for code and tests); throws on a bad path. */
export const path = (text: string): Path => {
  const p = parsePath(text)
  if (typeof p === "string") throw new Error(p)
  return p
}

const keyOf = (v: unknown): string | number | undefined =>
  typeof v === "string" ? v : typeof v === "number" && Number.isInteger(v) ? v : undefined

/** The concrete keys of `p` (refs evaluated against `root`); undefined when a ref does not resolve to a key. */
const concreteKeys = (p: Path, root: unknown): Array<string | number> | undefined => {
  const out: Array<string | number> = []
  for (const seg of p.segments) {
    if (seg._tag === "key") out.push(seg.key)
    else if (seg._tag === "index") out.push(seg.index)
    else {
      const k = keyOf(getPath(seg.path, root))
      if (k === undefined) return undefined
      out.push(k)
    }
  }
  return out
}

/** The value at `p` under `root`; undefined when any step is missing. */
export const getPath = (p: Path, root: unknown): unknown => {
  const keys = concreteKeys(p, root)
  if (keys === undefined) return undefined
  let cur: unknown = root
  for (const k of keys) {
    if (Array.isArray(cur) && typeof k === "number") cur = cur[k]
    else if (isObject(cur)) cur = Object.hasOwn(cur, String(k)) ? cur[String(k)] : undefined
    else return undefined
  }
  return cur
}

/**
 * Set the value at `p` under `root` (mutating), creating missing objects on the way. Returns an
 * error message when the path cannot be written (a ref that does not resolve, a scalar in the way).
 */
export const setPath = (p: Path, root: Record<string, unknown>, value: unknown): string | null => {
  const keys = concreteKeys(p, root)
  if (keys === undefined || keys.length === 0) return `cannot resolve ${p.text}`
  let cur: unknown = root
  for (const [i, k] of keys.entries()) {
    const last = i === keys.length - 1
    if (Array.isArray(cur) && typeof k === "number") {
      if (last) cur[k] = value
      else {
        if (cur[k] === undefined || cur[k] === null) cur[k] = {}
        cur = cur[k]
      }
    } else if (isObject(cur)) {
      const key = String(k)
      if (last) cur[key] = value
      else {
        if (cur[key] === undefined || cur[key] === null) cur[key] = {}
        cur = cur[key]
      }
    } else return `cannot write ${p.text}: ${keys.slice(0, i).join(".") || "$"} is not an object`
  }
  return null
}

// ---------------------------------------------------------------------------------------------
// templates

const WHOLE = /^\s*\{\{\s*([^{}]+?)\s*\}\}\s*$/
const EMBEDDED = /\{\{\s*([^{}]+?)\s*\}\}/g

/** Every `{{ path }}` in a template value (strings inside objects and lists included). */
export const templatePaths = (value: unknown): Array<string> => {
  if (typeof value === "string") return [...value.matchAll(EMBEDDED)].map((m) => m[1] ?? "")
  if (Array.isArray(value)) return value.flatMap(templatePaths)
  if (isObject(value)) return Object.values(value).flatMap(templatePaths)
  return []
}

const show = (v: unknown): string => (typeof v === "string" ? v : v === undefined ? "" : JSON.stringify(v))

/**
 * Expand a template value against `root`: a string that is exactly `{{ path }}` becomes the value
 * there (any type; null when missing); `{{ path }}` inside a longer string is replaced by its text;
 * objects and lists are expanded recursively; other values are kept.
 */
export const expand = (value: unknown, root: unknown): unknown => {
  if (typeof value === "string") {
    const whole = WHOLE.exec(value)
    if (whole !== null) {
      const p = parsePath(whole[1] ?? "")
      return typeof p === "string" ? value : (getPath(p, root) ?? null)
    }
    return value.replace(EMBEDDED, (m, inner: string) => {
      const p = parsePath(inner)
      return typeof p === "string" ? m : show(getPath(p, root))
    })
  }
  if (Array.isArray(value)) return value.map((v) => expand(v, root))
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v, root)]))
  return value
}

// ---------------------------------------------------------------------------------------------
// values and conditions

/** A number, or a string that is a plain decimal number (models often send `"50"`); else undefined. */
export const asNumber = (v: unknown): number | undefined => {
  if (typeof v === "number" && Number.isFinite(v)) return v
  if (typeof v === "string" && /^\s*-?(\d+(\.\d*)?|\.\d+)\s*$/.test(v)) return Number(v)
  return undefined
}

/** Deep equality of JSON values; a number also equals the same number written as a string. */
export const jsonEquals = (a: unknown, b: unknown): boolean => {
  if (typeof a === "number" || typeof b === "number") {
    const x = asNumber(a)
    const y = asNumber(b)
    return x !== undefined && y !== undefined && x === y
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => jsonEquals(v, b[i]))
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a)
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEquals(a[k], b[k]))
  }
  return a === b
}

/**
 * A test on the value at `path`. Every predicate given must hold. Operands may be `{{ path }}`
 * templates, expanded against the same root as `path`.
 */
export interface Condition {
  readonly path: Path
  readonly equals?: unknown
  readonly one_of?: ReadonlyArray<unknown>
  /** matched against the value's text (JSON for non-strings) */
  readonly regex?: { readonly source: string; readonly flags: string }
  /** inclusive bounds; the value must be a number (or a numeric string) */
  readonly range?: { readonly min?: unknown; readonly max?: unknown }
  /** true: the path must hold a non-null value; false: it must be missing or null */
  readonly exists?: boolean
}

/** Why the condition does not hold, or null when it holds. */
export const conditionProblem = (c: Condition, root: unknown): string | null => {
  const v = getPath(c.path, root)
  const at = c.path.text
  if (c.exists !== undefined) {
    const present = v !== undefined && v !== null
    if (present !== c.exists) return c.exists ? `${at} is missing` : `${at} is present (${show(v)})`
  }
  if (c.equals !== undefined) {
    const want = expand(c.equals, root)
    if (!jsonEquals(v, want)) return `${at} = ${show(v) || "(missing)"}, expected ${show(want)}`
  }
  if (c.one_of !== undefined) {
    const options = c.one_of.map((o) => expand(o, root))
    if (!options.some((o) => jsonEquals(v, o))) return `${at} = ${show(v) || "(missing)"}, expected one of ${JSON.stringify(options)}`
  }
  if (c.regex !== undefined) {
    if (v === undefined || v === null) return `${at} is missing`
    if (!new RegExp(c.regex.source, c.regex.flags).test(show(v))) return `${at} = ${show(v)} does not match /${c.regex.source}/${c.regex.flags}`
  }
  if (c.range !== undefined) {
    const n = asNumber(v)
    if (n === undefined) return `${at} = ${show(v) || "(missing)"} is not a number`
    const min = c.range.min === undefined ? undefined : asNumber(expand(c.range.min, root))
    const max = c.range.max === undefined ? undefined : asNumber(expand(c.range.max, root))
    if (c.range.min !== undefined && min === undefined) return `${at}: the range's min is not a number`
    if (c.range.max !== undefined && max === undefined) return `${at}: the range's max is not a number`
    if (min !== undefined && n < min) return `${at} = ${n} is below ${min}`
    if (max !== undefined && n > max) return `${at} = ${n} is above ${max}`
  }
  return null
}

export const holds = (c: Condition, root: unknown): boolean => conditionProblem(c, root) === null
