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
 *
 * {@link canonicalizeReference} is the plain transcription of these rules; {@link canonicalize} is the
 * same function made fast (the sorted order and quoted keys of each key list are cached, values are
 * read with `Object.values`), and the tests check that the two agree on random values. The cache is
 * module state, bounded (objects with many keys are not cached; a full cache is dropped).
 * Built on the same machinery: {@link canonicalizeWithout} (a record without its `hash`, no copy),
 * {@link canonicalizeAround} (a record's text around members filled in later: sealing) and
 * {@link canonicalizeObjectText} (the canonical text read straight from JSON text: verification).
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

/** `JSON.stringify(s)` for a string (which is also its canonical form), with a fast path for strings that need no escape. */
export const quoteJson = str

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
const writeRef = (out: Out, value: unknown, key: string | number, depth: number): void => {
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
        return writeRef(out, value.valueOf(), key, depth)
      }
      if (Array.isArray(value)) {
        out.s += "["
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out.s += ","
          const v = prepare(value[i], i)
          if (isOmitted(v)) out.s += "null"
          else writeRef(out, v, i, depth + 1)
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
        writeRef(out, v, k, depth + 1)
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
 * The reference implementation: a direct transcription of the rules above, kept as the
 * specification of {@link canonicalize} (the tests check that both agree). Same result, same errors.
 */
export const canonicalizeReference = (value: unknown): string => {
  const out: Out = { s: "" }
  const v = prepare(value, "")
  if (isOmitted(v)) fail(`top-level value of type ${typeof v} is not JSON`)
  writeRef(out, v, "", 0)
  return out.s
}

// ---------------------------------------------------------------------------------------------
// Fast path: the same rules, with the sorted key order and the quoted keys of each key shape cached

/** The canonical order of one key list (the own enumerable keys of an object, in their own order). */
interface Shape {
  /** canonical position j → index of that key in the object's own order */
  readonly order: ReadonlyArray<number>
  /** the keys in canonical order */
  readonly keys: ReadonlyArray<string>
  /** `"key":` in canonical order */
  readonly heads: ReadonlyArray<string>
  /** `,"key":` in canonical order */
  readonly commaHeads: ReadonlyArray<string>
  /** a key occurs twice (only possible in JSON text) */
  readonly duplicate: boolean
  /** this shape merged with the last list of extra members it was used with ({@link canonicalizeAround}) */
  around: AroundPlan | null
}

/** How a shape merges with a list of extra members: the extras that go before each of its keys. */
interface AroundPlan {
  readonly extra: ReadonlyArray<readonly [string, string | null]>
  readonly refused: ((key: string) => boolean) | null
  /** the shape has one of the extra keys, or a refused key */
  readonly clash: boolean
  /** `groups[j]`: the extras that sort before key j (`groups[n]`: after the last key) */
  readonly groups: ReadonlyArray<ReadonlyArray<AroundMember>>
}

interface AroundMember {
  /** `"key":` */
  readonly head: string
  /** `,"key":` */
  readonly commaHead: string
  /** the value's text; null: cut after the head; "": a mark (cut where the member would go, nothing written) */
  readonly value: string | null
}

/** A node of the shape cache: the key lists seen so far, as a trie over their keys in own order. */
interface ShapeNode {
  readonly key: string
  /** `"key"` when that is also how JSON text writes the key (nothing to escape), else "" */
  readonly quoted: string
  readonly parent: ShapeNode | null
  /** the first few children, searched linearly (keys from `Object.keys` compare by pointer) */
  readonly kids: Array<ShapeNode>
  /** every child, once there are more than `KIDS` */
  more: Map<string, ShapeNode> | null
  shape: Shape | null
}

const KIDS = 8
/** objects with more keys than this are not cached (dictionaries with data as keys) */
const MAX_SHAPE_KEYS = 64
/** the cache is dropped and rebuilt when it grows beyond this many nodes plus cached shape keys (a few MB) */
const MAX_SHAPE_NODES = 20_000

const newNode = (key: string, parent: ShapeNode | null): ShapeNode => ({
  key,
  // joined, not concatenated: a flat string compares faster
  quoted: NEEDS_ESCAPE.test(key) ? "" : ['"', key, '"'].join(""),
  parent,
  kids: [],
  more: null,
  shape: null
})
let shapeRoot = newNode("", null)
let shapeNodes = 0

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

const makeShape = (ownOrder: ReadonlyArray<string>): Shape => {
  const order = ownOrder.map((_, i) => i).sort((a, b) => byCodeUnits(ownOrder[a]!, ownOrder[b]!))
  const keys = order.map((i) => ownOrder[i]!)
  const heads = keys.map((k) => str(k) + ":")
  const duplicate = keys.some((k, j) => j > 0 && k === keys[j - 1])
  return { order, keys, heads, commaHeads: heads.map((h) => "," + h), duplicate, around: null }
}

/** A shape to keep in the cache: its keys count against the cache's size. */
const cachedShape = (ownOrder: ReadonlyArray<string>): Shape => {
  shapeNodes += ownOrder.length
  return makeShape(ownOrder)
}

const childOf = (node: ShapeNode, key: string): ShapeNode | null => {
  const kids = node.kids
  for (let i = 0; i < kids.length; i++) if (kids[i]!.key === key) return kids[i]!
  const found = node.more?.get(key)
  if (found !== undefined) return found
  if (shapeNodes >= MAX_SHAPE_NODES) return null
  shapeNodes++
  const child = newNode(key, node)
  if (kids.length < KIDS) kids.push(child)
  else (node.more ??= new Map()).set(key, child)
  return child
}

/** The shape of an own key list (from `Object.keys`): cached, or built for this object alone. */
const shapeOf = (keys: ReadonlyArray<string>): Shape => {
  if (keys.length > MAX_SHAPE_KEYS) return makeShape(keys)
  let node: ShapeNode | null = shapeRoot
  for (let i = 0; i < keys.length && node !== null; i++) node = childOf(node, keys[i]!)
  if (node === null) {
    // full: start a fresh cache (the shapes in use come back on their next use)
    shapeRoot = newNode("", null)
    shapeNodes = 0
    return makeShape(keys)
  }
  return (node.shape ??= cachedShape(keys))
}

/** The canonical text of `value` (already through `toJSON`, not omitted). */
const canon = (value: unknown, key: string | number, depth: number): string => {
  switch (typeof value) {
    case "string":
      return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : '"' + value + '"'
    case "number":
      // String(n) is JSON.stringify(n) for finite numbers (-0 → "0")
      return Number.isFinite(value) ? "" + value : fail(`non-finite number ${String(value)} at key ${JSON.stringify(String(key))}`)
    case "boolean":
      return value ? "true" : "false"
    case "object": {
      if (value === null) return "null"
      if (depth >= MAX_DEPTH) fail(`nesting deeper than ${MAX_DEPTH} (cyclic value?)`)
      const proto: unknown = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) {
        if (value instanceof Number || value instanceof String || value instanceof Boolean) return canon(value.valueOf(), key, depth)
      }
      if (Array.isArray(value)) {
        const n = value.length
        if (n === 0) return "[]"
        let out = "["
        for (let i = 0; i < n; i++) {
          if (i > 0) out += ","
          const v = prepare(value[i], i)
          out += isOmitted(v) ? "null" : canon(v, i, depth + 1)
        }
        return out + "]"
      }
      return canonObject(value, depth, null)
    }
    default:
      // bigint (undefined, function and symbol never get here)
      return fail(`${typeof value} at key ${JSON.stringify(String(key))} is not JSON`)
  }
}

/**
 * The last object of many members written within the current top-level call, and its text: an
 * object written twice in one value (an audit record's verdict is also its only layer) is written
 * once. Reset by every top-level call. Reused no deeper than where it was written, so that the depth
 * limit fails as it would without it. (A getter that answered differently on a second read would be
 * read once; JSON values and the records the gate builds have none.)
 */
let lastObject: object | null = null
let lastText = ""
let lastDepth = 0
const REMEMBER_MIN_KEYS = 8

/** `obj`'s members (without its own member `omit`) as a canonical object; `obj` is already through `toJSON`. */
const canonObject = (obj: object, depth: number, omit: string | null): string => {
  if (obj === lastObject && omit === null && depth <= lastDepth) return lastText
  const ownKeys = Object.keys(obj)
  const n = ownKeys.length
  if (n === 0) return "{}"
  if (n >= REMEMBER_MIN_KEYS && omit === null) {
    const text = canonMembers(obj, ownKeys, depth)
    lastObject = obj
    lastText = text
    lastDepth = depth
    return text
  }
  return canonMembers(obj, ownKeys, depth, omit)
}

const canonMembers = (obj: object, ownKeys: ReadonlyArray<string>, depth: number, omit: string | null = null): string => {
  const n = ownKeys.length
  const shape = shapeOf(ownKeys)
  const values: ReadonlyArray<unknown> = Object.values(obj)
  // a getter that removed a property would misalign the two lists: read by key then
  const aligned = values.length === n
  const order = shape.order
  const keys = shape.keys
  let heads = shape.heads
  let out = "{"
  for (let j = 0; j < n; j++) {
    const k = keys[j]!
    if (k === omit) continue
    const v = prepare(aligned ? values[order[j]!] : (obj as Record<string, unknown>)[k], k)
    if (isOmitted(v)) continue
    out += heads[j]! + canon(v, k, depth + 1)
    heads = shape.commaHeads
  }
  return out + "}"
}

/**
 * The RFC 8785 canonical JSON text of `value`.
 * @throws CanonicalJsonError on non-finite numbers, bigints, too deep / cyclic values, or a top-level
 *   value that JSON cannot represent (undefined, function, symbol).
 */
export const canonicalize = (value: unknown): string => {
  lastObject = null
  const v = prepare(value, "")
  if (isOmitted(v)) fail(`top-level value of type ${typeof v} is not JSON`)
  return canon(v, "", 0)
}

/**
 * `canonicalize` of a copy of `obj` without its member `omit` (`const { [omit]: _, ...rest } = obj`), made
 * without the copy. Like the copy, it ignores `obj`'s prototype; an own enumerable `toJSON` function (which
 * the copy would keep and honour) is honoured the same way.
 * @throws CanonicalJsonError as {@link canonicalize}.
 */
export const canonicalizeWithout = (obj: object, omit: string): string => {
  lastObject = null
  if (Object.prototype.propertyIsEnumerable.call(obj, "toJSON") && typeof (obj as { toJSON?: unknown }).toJSON === "function") {
    const { [omit]: _omitted, ...rest } = obj as Record<string, unknown>
    return canonicalize(rest)
  }
  return canonObject(obj, 0, omit)
}

const aroundPlan = (
  shape: Shape,
  extra: ReadonlyArray<readonly [string, string | null]>,
  refused: ((key: string) => boolean) | null
): AroundPlan => {
  const cached = shape.around
  if (cached !== null && cached.extra === extra && cached.refused === refused) return cached
  const keys = shape.keys
  const clash = extra.some(([k]) => keys.includes(k)) || (refused !== null && keys.some(refused))
  const groups: Array<Array<AroundMember>> = []
  let x = 0
  for (let j = 0; j <= keys.length; j++) {
    const group: Array<AroundMember> = []
    for (; x < extra.length && (j === keys.length || extra[x]![0] < keys[j]!); x++) {
      const [key, value] = extra[x]!
      const head = str(key) + ":"
      group.push({ head, commaHead: "," + head, value })
    }
    groups.push(group)
  }
  return (shape.around = { extra, refused, clash, groups })
}

/**
 * The canonical text of `obj` (taken as a top-level object; its own `toJSON` is not applied) merged with
 * the members `extra` (keys `obj` does not have, in canonical order), cut at each extra member whose
 * text is null: the texts around those values, one more than there are null members and marks. Putting
 * each such member's value (as canonical JSON) between the texts gives the canonical text of the merged
 * object. A member whose text is "" is a mark: the text is cut where it would go and it is not written
 * (so the pieces joined give the text without it). The pieces are not flattened: one concatenation
 * of them is, when it is first read as a whole (hashed). Null when `obj` has one of the extra keys,
 * or a key `refused` answers true for. Pass the
 * same `extra` array (and `refused` function) on every call: how they merge with each key list is
 * cached.
 * @throws CanonicalJsonError as {@link canonicalize}.
 */
export const canonicalizeAround = (
  obj: object,
  extra: ReadonlyArray<readonly [string, string | null]>,
  refused: ((key: string) => boolean) | null = null
): Array<string> | null => {
  lastObject = null
  const ownKeys = Object.keys(obj)
  const shape = shapeOf(ownKeys)
  const plan = aroundPlan(shape, extra, refused)
  if (plan.clash) return null
  const keys = shape.keys
  const n = keys.length
  const values: ReadonlyArray<unknown> = Object.values(obj)
  const aligned = values.length === n
  const order = shape.order
  const groups = plan.groups
  const cuts: Array<string> = []
  let out = "{"
  let comma = false
  for (let j = 0; ; j++) {
    const group = groups[j]!
    for (let x = 0; x < group.length; x++) {
      const m = group[x]!
      if (m.value === "") {
        // a mark: cut where the member would go, write nothing
        cuts.push(out)
        out = ""
        continue
      }
      out += comma ? m.commaHead : m.head
      comma = true
      if (m.value !== null) out += m.value
      else {
        cuts.push(out)
        out = ""
      }
    }
    if (j === n) break
    const k = keys[j]!
    const v = prepare(aligned ? values[order[j]!] : (obj as Record<string, unknown>)[k], k)
    if (isOmitted(v)) continue
    out += (comma ? shape.commaHeads[j]! : shape.heads[j]!) + canon(v, k, 1)
    comma = true
  }
  cuts.push(out + "}")
  return cuts
}

// ---------------------------------------------------------------------------------------------
// Canonical text straight from JSON text (verification): no value is built

/** Thrown inside the reader when the text is outside what it handles; the caller then parses. */
const UNHANDLED: unique symbol = Symbol("unhandled")

/** Characters that send a whole text to `JSON.parse`: controls (raw ones are invalid inside strings) and surrogates. */
const TEXT_UNHANDLED = /[\u0000-\u001f\ud800-\udfff]/

/** Position after the value just read. */
let readEnd = 0
/** Index of the next backslash at or after the read position (-1: none left). */
let nextBackslash = -1

const unhandled = (): never => {
  throw UNHANDLED
}

/** The first position at or after `i` that is not JSON whitespace (callers test `<= 32` first: most texts have none). */
const skipWs = (s: string, i: number): number => {
  let c = s.charCodeAt(i)
  while (c === 32 || c === 10 || c === 13 || c === 9) c = s.charCodeAt(++i)
  return i
}

/** The string token at `i` (its opening quote): its canonical text; sets `readEnd`. */
const readString = (s: string, i: number): string => {
  const q = s.indexOf('"', i + 1)
  if (q < 0) unhandled()
  if (nextBackslash < 0 || q < nextBackslash) {
    // no escape inside, and no control character or surrogate in the text: already canonical
    readEnd = q + 1
    return s.slice(i, q + 1)
  }
  return str(readEscapedString(s, i))
}

/** The value of a string token with escapes at `i`; sets `readEnd` and moves `nextBackslash` past it. */
const readEscapedString = (s: string, i: number): string => {
  let j = i + 1
  for (;;) {
    if (j >= s.length) unhandled()
    const c = s.charCodeAt(j)
    if (c === 34) break
    j += c === 92 ? 2 : 1
  }
  readEnd = j + 1
  nextBackslash = s.indexOf("\\", readEnd)
  let value: unknown
  try {
    value = JSON.parse(s.slice(i, j + 1))
  } catch {
    unhandled()
  }
  return value as string
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57

/** The number token at `i`: its canonical text; sets `readEnd`. */
const readNumber = (s: string, i: number): string => {
  let j = i
  let c = s.charCodeAt(j)
  if (c === 45) c = s.charCodeAt(++j)
  if (c === 48) c = s.charCodeAt(++j)
  else if (isDigit(c)) {
    do c = s.charCodeAt(++j)
    while (isDigit(c))
  } else unhandled()
  let integer = true
  if (c === 46) {
    integer = false
    if (!isDigit(s.charCodeAt(++j))) unhandled()
    do c = s.charCodeAt(++j)
    while (isDigit(c))
  }
  if (c === 101 || c === 69) {
    integer = false
    c = s.charCodeAt(++j)
    if (c === 43 || c === 45) c = s.charCodeAt(++j)
    if (!isDigit(c)) unhandled()
    do c = s.charCodeAt(++j)
    while (isDigit(c))
  }
  readEnd = j
  const token = s.slice(i, j)
  // up to 15 characters an integer is exact and already canonical (no leading zero, no "+"), but for -0
  if (integer && j - i <= 15) return token === "-0" ? "0" : token
  const n = Number(token)
  if (!Number.isFinite(n)) unhandled()
  return "" + n
}

/** The value at `i`, whose first character is `c`: its canonical text; sets `readEnd`. */
const readValue = (s: string, i: number, c: number, depth: number): string => {
  switch (c) {
    case 34:
      return readString(s, i)
    case 123:
      return readObject(s, i, depth, null, null)
    case 91:
      return readArray(s, i, depth)
    case 116:
      if (s.startsWith("true", i)) {
        readEnd = i + 4
        return "true"
      }
      return unhandled()
    case 102:
      if (s.startsWith("false", i)) {
        readEnd = i + 5
        return "false"
      }
      return unhandled()
    case 110:
      if (s.startsWith("null", i)) {
        readEnd = i + 4
        return "null"
      }
      return unhandled()
    default:
      return readNumber(s, i)
  }
}

const readArray = (s: string, i: number, depth: number): string => {
  if (depth >= MAX_DEPTH) unhandled()
  let c = s.charCodeAt(++i)
  if (c <= 32) c = s.charCodeAt((i = skipWs(s, i)))
  if (c === 93) {
    readEnd = i + 1
    return "[]"
  }
  let out = "["
  for (;;) {
    out += readValue(s, i, c, depth + 1)
    c = s.charCodeAt((i = readEnd))
    if (c <= 32) c = s.charCodeAt((i = skipWs(s, i)))
    if (c === 93) {
      readEnd = i + 1
      return out + "]"
    }
    if (c !== 44) unhandled()
    out += ","
    c = s.charCodeAt(++i)
    if (c <= 32) c = s.charCodeAt((i = skipWs(s, i)))
  }
}

/** The key token at `i` (its opening quote) as the next node of the shape trie; sets `readEnd`. */
const readKey = (s: string, i: number, node: ShapeNode): ShapeNode => {
  // the keys of the shapes seen before, matched in place
  const kids = node.kids
  const first = s.charCodeAt(i + 1)
  for (let k = 0; k < kids.length; k++) {
    const q = kids[k]!.quoted
    if (q !== "" && q.charCodeAt(1) === first && s.slice(i, i + q.length) === q) {
      readEnd = i + q.length
      return kids[k]!
    }
  }
  let key: string
  const q = s.indexOf('"', i + 1)
  if (q < 0) unhandled()
  if (nextBackslash < 0 || q < nextBackslash) {
    key = s.slice(i + 1, q)
    readEnd = q + 1
  } else key = readEscapedString(s, i)
  const child = childOf(node, key)
  if (child === null) {
    // the cache is full: start a fresh one, and leave this text to JSON.parse
    shapeRoot = newNode("", null)
    shapeNodes = 0
    unhandled()
  }
  return child!
}

/**
 * The object at `i`: its canonical text; sets `readEnd`. At the top (`omit` not null) the member `omit`
 * is left out, and the canonical texts of the members named in `pick` are stored in `picked`.
 */
const readObject = (
  s: string,
  i: number,
  depth: number,
  omit: string | null,
  picked: { readonly names: ReadonlyArray<string>; readonly values: Array<string | undefined> } | null
): string => {
  if (depth >= MAX_DEPTH) unhandled()
  let c = s.charCodeAt(++i)
  if (c <= 32) c = s.charCodeAt((i = skipWs(s, i)))
  if (c === 125) {
    readEnd = i + 1
    return "{}"
  }
  const values: Array<string> = []
  let node = shapeRoot
  for (;;) {
    if (c !== 34) unhandled()
    node = readKey(s, i, node)
    c = s.charCodeAt((i = readEnd))
    if (c <= 32) c = s.charCodeAt((i = skipWs(s, i)))
    if (c !== 58) unhandled()
    c = s.charCodeAt(++i)
    if (c <= 32) c = s.charCodeAt((i = skipWs(s, i)))
    values.push(readValue(s, i, c, depth + 1))
    if (values.length > MAX_SHAPE_KEYS) unhandled()
    c = s.charCodeAt((i = readEnd))
    if (c <= 32) c = s.charCodeAt((i = skipWs(s, i)))
    if (c === 125) break
    if (c !== 44) unhandled()
    c = s.charCodeAt(++i)
    if (c <= 32) c = s.charCodeAt((i = skipWs(s, i)))
  }
  readEnd = i + 1
  let shape = node.shape
  if (shape === null) {
    const ownOrder: Array<string> = []
    for (let n: ShapeNode = node; n.parent !== null; n = n.parent) ownOrder.push(n.key)
    shape = node.shape = cachedShape(ownOrder.reverse())
  }
  // JSON.parse keeps the last of duplicate keys; not worth handling here
  if (shape.duplicate) unhandled()
  const order = shape.order
  let out = "{"
  let heads = shape.heads
  for (let j = 0; j < order.length; j++) {
    const value = values[order[j]!]!
    if (picked !== null) {
      const k = picked.names.indexOf(shape.keys[j]!)
      if (k >= 0) picked.values[k] = value
      if (shape.keys[j] === omit) continue
    }
    out += heads[j]! + value
    heads = shape.commaHeads
  }
  return out + "}"
}

/** What {@link canonicalizeObjectText} read. */
export interface ObjectText {
  /** the canonical text of the object without its member `omit` */
  readonly canonical: string
  /** the canonical texts of the members named in `pick`, in that order (undefined when absent) */
  readonly picked: ReadonlyArray<string | undefined>
}

/**
 * Reads the JSON object in `text` and returns its canonical text without the top-level member `omit`
 * (as `canonicalize` of `JSON.parse(text)` minus that member), plus the canonical texts of the top-level
 * members named in `pick`, without building the value.
 *
 * It handles the JSON that JSON.stringify writes and returns null for anything else: a text that is
 * not one JSON object, control characters (raw tabs and carriage returns included) or surrogates anywhere,
 * duplicate keys, numbers that are not finite doubles, nesting deeper than {@link MAX_DEPTH}, objects
 * with many keys. When it returns a result, `JSON.parse(text)` succeeds and the result is exact; on null,
 * parse the text and use {@link canonicalize}.
 */
export const canonicalizeObjectText = (text: string, omit: string, pick: ReadonlyArray<string>): ObjectText | null => {
  if (TEXT_UNHANDLED.test(text)) return null
  const picked = { names: pick, values: pick.map((): string | undefined => undefined) }
  nextBackslash = text.indexOf("\\")
  try {
    const i = skipWs(text, 0)
    if (text.charCodeAt(i) !== 123) return null
    const canonical = readObject(text, i, 0, omit, picked)
    return skipWs(text, readEnd) === text.length ? { canonical, picked: picked.values } : null
  } catch (e) {
    if (e === UNHANDLED) return null
    throw e
  }
}
