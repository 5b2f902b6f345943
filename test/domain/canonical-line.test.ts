/**
 * `readCanonicalRecordLine` against the reference: when it answers, the line is exactly the canonical
 * text of its parsed value and `withoutHash` is the canonical text of that value without `hash`; it
 * answers on every canonical record line it is meant to read; it refuses everything else.
 * `duplicateKey` finds a key written twice in one object, at any depth and in any spelling.
 * `nonCanonicalNumber` finds a number not spelled as JCS spells it, and nothing in what JCS writes.
 */
import { FastCheck as fc } from "effect"
import { describe, expect, it } from "vitest"
import { recordLine, sealRecord } from "../../src/domain/audit-chain.js"
import { GENESIS_HASH } from "../../src/domain/audit-record.js"
import { canonicalizeReference } from "../../src/domain/canonical-json.js"
import { asciiSlice, duplicateKey, nonCanonicalNumber, readCanonicalRecordLine } from "../../src/domain/canonical-line.js"
import { decided } from "../../src/domain/verdict.js"
import { callEntry } from "../support/audit-entry.js"
import { JSON_PIECES, mangledLine } from "../support/mangle.js"
import { isObject } from "../../src/domain/is-object.js"

/** The reference answer: what the reader must say when it answers at all. */
const expected = (line: string) => {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return null
  }
  if (!isObject(value) || !Object.prototype.hasOwnProperty.call(value, "hash") || canonicalizeReference(value) !== line) return null
  const { hash, ...rest } = value
  const text = (v: unknown) => (v === undefined ? undefined : canonicalizeReference(v))
  return { withoutHash: canonicalizeReference(rest), hash: text(hash), prevHash: text(value.prev_hash), seq: text(value.seq) }
}

const plainKeys = (v: unknown): boolean =>
  Array.isArray(v) ? v.every(plainKeys) : isObject(v) ? Object.entries(v).every(([k, x]) => !/["\\\u0000-\u001f\ud800-\udfff]/.test(k) && plainKeys(x)) : true

/** The reader on `line` placed between other bytes in a buffer, its ranges as texts. */
const read = (line: string) => {
  const bytes = Buffer.from(`x\n${line}\n{"hash":"next"}`, "utf8")
  const start = 2
  const end = bytes.length - '\n{"hash":"next"}'.length
  const r = readCanonicalRecordLine(bytes, start, end)
  if (r === null) return null
  const text = (from: number, to: number) => (from < 0 ? undefined : asciiSlice(bytes, from, to))
  return {
    withoutHash: bytes.toString("latin1", start, r.cutFrom) + bytes.toString("latin1", r.cutTo, end),
    hash: text(r.hashStart, r.hashEnd),
    prevHash: text(r.prevStart, r.prevEnd),
    seq: text(r.seqStart, r.seqEnd)
  }
}

/** Exact or null, never a different answer. */
const check = (line: string) => {
  const got = read(line)
  if (got !== null) expect(got, line).toEqual(expected(line))
  return got
}

const keyArb = fc.oneof(fc.string({ maxLength: 5 }), fc.constantFrom("hash", "prev_hash", "seq", "a", "z", "__proto__", "10", "2", "é", "\u20ac"))
const { value: valueArb } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom(null, true, false, 0, -0, 1.5, 1e21, 1e-7, -3, 2 ** 53 + 2, 123456789012345, 1234567890123456, 0.1 + 0.2),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.string({ maxLength: 8 }),
    fc.constantFrom("", "é\"\\\n\t\b\f\r", "\u0000\u001f\u007f", "\u2028\u2029", "\ud83d\ude00", "a\\u0041"),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(keyArb, tie("value"), { maxKeys: 5 })
  )
}))
const recordArb = fc.tuple(fc.dictionary(keyArb, valueArb, { maxKeys: 6 }), fc.oneof(fc.hexaString({ minLength: 64, maxLength: 64 }), valueArb)).map(
  ([members, hash]) => ({ ...members, hash })
)

describe("readCanonicalRecordLine", () => {
  it("reads the canonical text of any record with a hash member, exactly", () => {
    fc.assert(
      fc.property(recordArb, (record) => {
        const line = canonicalizeReference(record)
        const got = check(line)
        // it refuses only non-ASCII lines, keys with escapes, and very deep values
        if (plainKeys(record) && /^[\u0020-\u007f]*$/.test(line)) expect(got, line).not.toBeNull()
      }),
      { numRuns: 1500 }
    )
  })

  it("is exact or null on other spellings of the same records", () => {
    fc.assert(
      fc.property(recordArb, fc.constantFrom(0, 1), (record, indent) => {
        check(JSON.stringify(record, null, indent))
        check(JSON.stringify({ ...record, zz: 1, a: 0 }))
        check(JSON.stringify(Object.fromEntries(Object.entries(record).reverse())))
      }),
      { numRuns: 500 }
    )
  })

  it("reads a sealed call record's line, and refuses the spellings it must not trust", () => {
    const verdict = decided({ judge: "j", kind: "llm_json", model: "m", version: "v" }, "deny", { reason: 'rm "x"\n', raw: '{"decision":"deny"}' })
    const record = sealRecord(
      callEntry(7, "r", null, {
        arm: "enforce",
        judge: "j",
        tool: { name: "t", description: "d", parameters: null, arguments: { hash: "nested", seq: 9, cmd: "a\u0001b" } },
        verdict,
        layers: [verdict],
        effective_decision: "deny",
        blocked: true,
        gate_ms: 1.25
      }),
      { seq: 7, ts: "2026-11-30T12:00:00.000Z", prev_hash: GENESIS_HASH }
    )
    const line = recordLine(record)
    const got = check(line)
    expect(got).toMatchObject({ hash: `"${record.hash}"`, prevHash: `"${GENESIS_HASH}"`, seq: "7" })
    // the nested "hash" and "seq" of the arguments are not the record's
    expect(got!.withoutHash).toContain('"hash":"nested"')
    const refused = [
      line.replace('"gate_ms":1.25', '"gate_ms":1.250'),
      line.replace('"seq":7', '"seq":7.0'),
      line.replace('"seq":7', '"seq":-0'),
      line.replace('"call_index":0', '"call_index":-0'),
      line.replace('"call_index":0', '"call_index":00'),
      line.replace('"blocked":true', '"blocked" : true'),
      line.replace(/,"blocked":true/, "").replace('"approval"', '"blocked":true,"approval"'),
      line.replace('"arm":"enforce"', '"arm":"enforce","arm":"enforce"'),
      line.replace('"arm":"enforce"', '"arm":"\\u0065nforce"'),
      line.replace('"arm":"enforce"', '"\\u0061rm":"enforce"'),
      line.replace("a\\u0001b", "a\u0001b"),
      line.replace("a\\u0001b", "a\\u001Fb"),
      line.replace('\\n"', '\\u000a"'),
      line.replace('"d"', '"\\/"'),
      line.replace('"d"', '"\ud800"'),
      line.replace('"d"', '"\\ud800"'),
      line + " ",
      line + "\r",
      " " + line,
      line.slice(0, -1),
      line.replace(/"hash":"[0-9a-f]{64}",/, "")
    ]
    for (const bad of refused) {
      expect(bad, "the variant differs from the line").not.toBe(line)
      expect(check(bad), bad).toBeNull()
    }
    // non-ASCII text is canonical as it stands, but left to the general path
    expect(check(line.replace('"d"', '"\ud83d\ude00 é"'))).toBeNull()
    // DEL is written as it stands
    expect(check(line.replace('"d"', '"\u007f"'))).not.toBeNull()
    // the hash member first, last, alone
    expect(check(`{"hash":"h","prev_hash":"p"}`)).toMatchObject({ withoutHash: `{"prev_hash":"p"}` })
    expect(check(`{"a":1,"hash":"h"}`)).toMatchObject({ withoutHash: `{"a":1}` })
    expect(check(`{"hash":"h"}`)).toMatchObject({ withoutHash: `{}`, prevHash: undefined, seq: undefined })
    expect(check(`{"a":1}`)).toBeNull()
    // deep values are left to the general path
    expect(check(`{"a":${"[".repeat(100)}${"]".repeat(100)},"hash":"h"}`)).toBeNull()
  })

  it("never answers differently from the reference on mangled lines", () => {
    const line = canonicalizeReference({ a: [1, -2.5, "x\"y"], hash: "h", n: { k: null, l: true }, prev_hash: "p", seq: 12, z: "é\n" })
    fc.assert(
      fc.property(mangledLine(line, [...JSON_PIECES, "E", "+", "\ud800"]), (s) => void check(s)),
      { numRuns: 3000 }
    )
  })
})

/** A JSON value as written: objects as member lists, so that a key may occur twice. */
type Tree =
  | { readonly o: ReadonlyArray<readonly [string, Tree]> }
  | { readonly a: ReadonlyArray<Tree> }
  | { readonly v: string | number | boolean | null }

const { tree: treeArb } = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.record({ v: fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.boolean(), fc.constant(null), fc.constantFrom('"a":1', '{"b":2,"b":3}', "\\", "}", ",")) }),
    fc.record({ a: fc.array(tie("tree"), { maxLength: 3 }) }),
    fc.record({ o: fc.array(fc.tuple(fc.constantFrom("a", "b", 'a"', "é", "\u0000", "__proto__", "", "\\"), tie("tree")), { maxLength: 4 }) })
  )
}))

/** `key` with every character written as a \uXXXX escape. */
const escapedKey = (key: string): string => '"' + [...key].map((c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0")).join("") + '"'

const written = (t: Tree, escape: boolean, ws: string): string =>
  "o" in t
    ? "{" + ws + t.o.map(([k, v]) => (escape ? escapedKey(k) : JSON.stringify(k)) + ws + ":" + ws + written(v, escape, ws)).join(ws + "," + ws) + ws + "}"
    : "a" in t
      ? "[" + ws + t.a.map((v) => written(v, escape, ws)).join(ws + "," + ws) + ws + "]"
      : JSON.stringify(t.v)

/** The first key (in text order) that repeats a key of its object. */
const firstDuplicate = (t: Tree): string | null => {
  if ("v" in t) return null
  if ("a" in t) {
    for (const v of t.a) {
      const d = firstDuplicate(v)
      if (d !== null) return d
    }
    return null
  }
  const seen = new Set<string>()
  for (const [k, v] of t.o) {
    if (seen.has(k)) return k
    seen.add(k)
    const d = firstDuplicate(v)
    if (d !== null) return d
  }
  return null
}

describe("duplicateKey", () => {
  it("names the key an object of the text repeats, at any depth and in any spelling; null when there is none", () => {
    fc.assert(
      fc.property(treeArb, fc.boolean(), fc.constantFrom("", " ", "\n\t"), (tree, escape, ws) => {
        const text = written(tree, escape, ws)
        expect(() => JSON.parse(text), text).not.toThrow()
        expect(duplicateKey(text), text).toBe(firstDuplicate(tree))
      }),
      { numRuns: 3000 }
    )
  })

  it("finds the forgery that JSON.parse hides (the last value wins), and nothing in a sealed record", () => {
    const record = sealRecord(callEntry(3, "r"), { seq: 3, ts: "2026-11-30T12:00:00.000Z", prev_hash: GENESIS_HASH })
    const line = recordLine(record)
    expect(duplicateKey(line)).toBeNull()
    const forged = line.replace("{", '{"blocked":true,')
    expect((JSON.parse(forged) as { blocked: boolean }).blocked).toBe(false)
    expect(duplicateKey(forged)).toBe("blocked")
    // the canonical reader refuses it too (the general path then fails it)
    expect(readCanonicalRecordLine(Buffer.from(forged), 0, forged.length)).toBeNull()
    expect(duplicateKey(line.replace('"name":"read_file"', '"name":"read_file","name":"rm"'))).toBe("name")
    expect(duplicateKey('{"a":1,"\\u0061":2}')).toBe("a")
    expect(duplicateKey('{"a":{"a":1},"b":[{"a":1},{"a":2}]}')).toBeNull()
    expect(duplicateKey('{"s":"\\"a\\":1,\\"a\\":2","a":[1,{"x":"}","x":2}]}')).toBe("x")
  })
})

describe("nonCanonicalNumber", () => {
  it("nothing in canonical text (what the writer writes), whatever the numbers and strings", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), fc.double({ noNaN: true, noDefaultInfinity: true }), (v, d) => {
        const text = canonicalizeReference({ v, d, third: d / 3, tiny: d * 1e-300 })
        expect(nonCanonicalNumber(text), text).toBeNull()
        // nor in the insertion-order text JSON.stringify writes, with whitespace
        expect(nonCanonicalNumber(JSON.stringify({ v, d }, null, 2))).toBeNull()
      }),
      { numRuns: 2000 }
    )
  })

  it("names the first number spelled otherwise, with its canonical spelling; digits in strings and keys are not numbers", () => {
    expect(nonCanonicalNumber('{"a":10000000000000001}')).toEqual({ literal: "10000000000000001", canonical: "10000000000000000" })
    expect(nonCanonicalNumber('{"a":12345678901234567890}')).toEqual({ literal: "12345678901234567890", canonical: "12345678901234567000" })
    expect(nonCanonicalNumber('{"a":12345678901234567000}')).toBeNull()
    expect(nonCanonicalNumber('{"a":9007199254740993}')).toEqual({ literal: "9007199254740993", canonical: "9007199254740992" })
    expect(nonCanonicalNumber("[1.0]")).toEqual({ literal: "1.0", canonical: "1" })
    expect(nonCanonicalNumber("[1e2]")).toEqual({ literal: "1e2", canonical: "100" })
    expect(nonCanonicalNumber("[1e21]")).toEqual({ literal: "1e21", canonical: "1e+21" })
    expect(nonCanonicalNumber("[-0]")).toEqual({ literal: "-0", canonical: "0" })
    expect(nonCanonicalNumber("[0.10]")).toEqual({ literal: "0.10", canonical: "0.1" })
    expect(nonCanonicalNumber("[1e400]")).toEqual({ literal: "1e400", canonical: "null" })
    expect(nonCanonicalNumber('[1,"1.0","\\\\",2.50]')).toEqual({ literal: "2.50", canonical: "2.5" })
    expect(nonCanonicalNumber('{"1.0":"\\\"1.0\\\\",  "x" : [ true, false, null, -1.5e-7, 1e+21 ]}')).toBeNull()
    for (const text of ['{"a":"\\\\"}', '["\\"", 1.5]', '{"k\\u0031.0":[-2,0.5]}']) {
      expect(() => JSON.parse(text), text).not.toThrow()
      expect(nonCanonicalNumber(text), text).toBeNull()
    }
  })
})
