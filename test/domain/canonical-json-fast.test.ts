/**
 * The fast canonicalizers against the reference implementation (`canonicalizeReference`, the plain
 * transcription of RFC 8785 + JSON.stringify's value model): same text, same errors, on random values,
 * on real audit records, and on JSON texts (including mangled ones) for the text reader.
 */
import { FastCheck as fc } from "effect"
import { describe, expect, it } from "vitest"
import {
  CanonicalJsonError,
  canonicalize,
  canonicalizeAround,
  canonicalizeObjectText,
  canonicalizeReference,
  canonicalizeWithout,
  MAX_DEPTH
} from "../../src/domain/canonical-json.js"
import { sealRecord } from "../../src/domain/audit-chain.js"
import type { CallEntry } from "../../src/domain/audit-record.js"
import { GENESIS_HASH } from "../../src/domain/audit-record.js"
import { decided, failed } from "../../src/domain/verdict.js"
import { mangledLine } from "../support/mangle.js"

/** The outcome of a call: its text, or the class and reason of what it threw. */
const outcome = (f: () => string): string => {
  try {
    return `ok ${f()}`
  } catch (e) {
    return e instanceof CanonicalJsonError ? `CanonicalJsonError ${e.reason}` : `throws ${String(e)}`
  }
}

const sameAsReference = (value: unknown): void => {
  expect(outcome(() => canonicalize(value))).toBe(outcome(() => canonicalizeReference(value)))
}

/** Keys that exercise the ordering: array indices, `__proto__`, non-ASCII, astral, escapes, empty. */
const keyArb = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom("0", "1", "10", "2", "01", "-1", "__proto__", "toJSON", "", "é", "\u20ac", "\ud83d\ude00", "a\"b", "\\", "\n", "\ud800"),
  fc.fullUnicodeString({ maxLength: 4 })
)

/** an array with a hole (JSON.stringify writes null for it) */
const sparse: Array<number> = [1, 2, 3]
delete sparse[1]

/** JSON.stringify's value model, beyond JSON: undefined, functions, symbols, toJSON, boxed values, -0, sparse arrays. */
const { value: anyValueArb } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom(null, true, false, 0, -0, 1.5, 1e21, 1e-7, -3, Number.MAX_SAFE_INTEGER, undefined, "", "x"),
    fc.double(),
    fc.integer(),
    fc.fullUnicodeString({ maxLength: 8 }),
    fc.string({ maxLength: 8 }),
    fc.constantFrom(
      () => 1,
      Symbol("s"),
      new Date(0),
      new Number(4.5),
      new String("boxed"),
      new Boolean(false),
      { toJSON: (k: string) => `key:${k}` },
      { toJSON: () => undefined },
      sparse
    ),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(keyArb, tie("value"), { maxKeys: 6 })
  )
}))

describe("canonicalize (fast) equals canonicalizeReference", () => {
  it("on random JSON values", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => sameAsReference(value)),
      { numRuns: 500 }
    )
  })

  it("on random values of JSON.stringify's model (toJSON, undefined, boxed, -0, odd keys)", () => {
    fc.assert(
      fc.property(anyValueArb, (value) => sameAsReference(value)),
      { numRuns: 1000 }
    )
  })

  it("on objects of one key set in different orders, and on many shapes (the shape cache)", () => {
    fc.assert(
      fc.property(fc.uniqueArray(keyArb, { maxLength: 12 }), fc.integer(), (keys, seed) => {
        const a = Object.fromEntries(keys.map((k, i) => [k, i]))
        const shuffled = [...keys].sort((x, y) => ((x.length * 31 + seed) % 7) - ((y.length * 31 + seed) % 7))
        const b = Object.fromEntries(shuffled.map((k) => [k, keys.indexOf(k)]))
        sameAsReference(a)
        sameAsReference(b)
        expect(canonicalize(a)).toBe(canonicalize(b))
      }),
      { numRuns: 500 }
    )
    // more shapes than the cache holds: it is dropped and rebuilt, results stay right
    for (let i = 0; i < 30_000; i++) {
      const o = { [`k${i}`]: i, [`j${i % 97}`]: [i], a: { [`n${i}`]: null } }
      if (i % 1000 === 0) sameAsReference(o)
      else canonicalize(o)
    }
    sameAsReference({ k1: 1, j1: [1], a: { n1: null } })
    // objects with more keys than are cached
    const wide = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`w${(i * 71) % 200}`, { i, s: `v${i}` }]))
    sameAsReference(wide)
  })

  it("throws the same errors", () => {
    const cyclic: Record<string, unknown> = { a: 1 }
    cyclic.self = { back: cyclic }
    let deep: unknown = 1
    for (let i = 0; i < MAX_DEPTH + 5; i++) deep = i % 2 === 0 ? [deep] : { d: deep }
    const cases: ReadonlyArray<unknown> = [
      { z: 1, a: [1, Number.NaN] },
      { b: Infinity, a: -Infinity },
      { a: { n: 1n } },
      [1n],
      undefined,
      () => 1,
      Symbol("x"),
      cyclic,
      deep,
      new Number(Number.NaN),
      { toJSON: () => Number.POSITIVE_INFINITY },
      { a: { toJSON: () => 2n } }
    ]
    for (const c of cases) sameAsReference(c)
    expect(() => canonicalize({ a: Number.NaN })).toThrow(CanonicalJsonError)
  })

  it("an object written twice in one value is written the same both times, and never past the depth limit", () => {
    // an object of many members (remembered once written) with nesting of its own
    const many: Record<string, unknown> = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, { n: { m: [i] } }]))
    const nest = (levels: number, inner: unknown): unknown => {
      let v = inner
      for (let i = 0; i < levels; i++) v = { d: v }
      return v
    }
    const around = (v: Record<string, unknown>) => canonicalizeAround(v, [["zz", null]])?.join("|") ?? "null"
    for (const value of [
      { a: many, b: [many], c: many },
      // written shallow first, then where it would pass the limit: the reference fails, and so must this
      { a: many, b: nest(MAX_DEPTH - 3, many) },
      // deep first (fails there), shallow after
      { a: nest(MAX_DEPTH - 3, many), b: many },
      // just inside the limit, both ways
      { a: many, b: nest(MAX_DEPTH - 6, many) },
      { a: nest(MAX_DEPTH - 6, many), b: many }
    ]) {
      sameAsReference(value)
      expect(outcome(() => around(value))).toBe(outcome(() => canonicalizeReference(value).slice(0, -1) + ',"zz":|}'))
    }
    // a later call sees the object as it is then
    const changing: Record<string, unknown> = { ...many }
    const first = canonicalize({ x: changing, y: changing })
    changing.k0 = "changed"
    expect(canonicalize({ x: changing, y: changing })).not.toBe(first)
    sameAsReference({ x: changing, y: changing })
  })

  it("honours toJSON with the member key or index, and a toJSON that canonicalizes", () => {
    const keyed = { toJSON: (k: string) => ({ got: k }) }
    sameAsReference({ x: keyed, y: [keyed, keyed] })
    const nested = { toJSON: () => canonicalize({ b: 1, a: [2, { d: 3, c: 4 }] }) }
    sameAsReference({ z: nested, a: [nested, { q: nested }] })
  })

  it("on real audit records (a shared verdict object, unicode, an LLM judge's raw answer)", () => {
    const params = { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
    for (let i = 0; i < 200; i++) {
      const verdict =
        i % 3 === 0
          ? failed({ judge: "llm", kind: "llm_json", model: "m", version: "sha256:0123" }, "timeout", `timed out — ünï ${i}`)
          : decided({ judge: "llm", kind: "llm_json", model: "m", version: "sha256:0123" }, i % 2 === 0 ? "deny" : "allow", {
              reason: `rule ${i} \ud83d\ude00`,
              raw: JSON.stringify({ reason: `r"${i}"\n`, decision: "deny" }),
              probability: i / 7,
              usage: { prompt_tokens: i, completion_tokens: 3, total_tokens: i + 3 }
            })
      const entry: CallEntry = {
        type: "call",
        run_id: `run-${i % 3}`,
        request_id: `req-${i}`,
        episode_id: null,
        session_id: null,
        principal: i % 5 === 0 ? "alice" : null,
        agent_model: "qwen",
        arm: "enforce",
        judge: "llm",
        stream: i % 2 === 0,
        choice_index: 0,
        call_index: i,
        tool_call_id: `call_${i}`,
        tool: { name: "read_file", description: "Read a file.", parameters: params, arguments: i % 4 === 0 ? "not json {" : { path: `/tmp/${i}` } },
        verdict,
        layers: [verdict],
        effective_decision: verdict.decision,
        blocked: false,
        fail_policy: "closed",
        approval: "automatic",
        outcome: null,
        gate_ms: 1.25 * i
      }
      const record = sealRecord(entry, { seq: i + 1, ts: "2026-11-30T12:00:00.000Z", prev_hash: GENESIS_HASH })
      sameAsReference(entry)
      sameAsReference(record)
      sameAsReference(JSON.parse(JSON.stringify(record)))
      const { hash: _h, ...body } = record
      expect(canonicalizeWithout(record, "hash")).toBe(canonicalizeReference(body))
      const line = JSON.stringify(record)
      const read = canonicalizeObjectText(line, "hash", ["hash", "seq"])
      // surrogates (the emoji) are left to JSON.parse
      if (/[\ud800-\udfff]/.test(line)) expect(read).toBeNull()
      else
        expect(read).toEqual({
          canonical: canonicalizeReference(body),
          picked: [JSON.stringify(record.hash), String(record.seq)]
        })
    }
  })
})

describe("canonicalizeWithout and canonicalizeAround", () => {
  it("canonicalizeWithout is canonicalize of the copy without the member", () => {
    fc.assert(
      fc.property(fc.dictionary(keyArb, anyValueArb, { maxKeys: 6 }), keyArb, (obj, omit) => {
        const { [omit]: _omitted, ...rest } = obj
        expect(outcome(() => canonicalizeWithout(obj, omit))).toBe(outcome(() => canonicalizeReference(rest)))
      }),
      { numRuns: 500 }
    )
    // an own toJSON is kept by the copy, a prototype's is not
    const own = { a: 1, hash: "h", toJSON: () => ({ replaced: true }) }
    expect(canonicalizeWithout(own, "hash")).toBe(`{"replaced":true}`)
    class WithProto {
      a = 1
      hash = "h"
      toJSON() {
        return { replaced: true }
      }
    }
    expect(canonicalizeWithout(new WithProto(), "hash")).toBe(`{"a":1}`)
  })

  it("canonicalizeAround cuts the canonical text at the members filled in later", () => {
    fc.assert(
      fc.property(
        fc.dictionary(keyArb, anyValueArb, { maxKeys: 6 }),
        fc.string({ maxLength: 5 }),
        fc.integer(),
        fc.string({ maxLength: 5 }),
        (obj, a, b, c) => {
          const copy = { ...obj }
          // the chain's members, and an own toJSON (which canonicalizeAround does not apply: prepareEntry never passes one)
          for (const k of ["prev_hash", "schema", "seq", "ts", "toJSON"]) delete copy[k]
          const merged = { ...copy, prev_hash: a, schema: "v2", seq: b, ts: c }
          const assembled = outcome(() => {
            const parts = canonicalizeAround(copy, [
              ["prev_hash", null],
              ["schema", '"v2"'],
              ["seq", null],
              ["ts", null]
            ])
            if (parts === null) throw new Error("unexpected clash")
            expect(parts).toHaveLength(4)
            return `${parts[0]}${JSON.stringify(a)}${parts[1]}${b}${parts[2]}${JSON.stringify(c)}${parts[3]}`
          })
          expect(assembled).toBe(outcome(() => canonicalizeReference(merged)))
        }
      ),
      { numRuns: 500 }
    )
    expect(canonicalizeAround({ seq: 1 }, [["seq", null]])).toBeNull()
    expect(canonicalizeAround({}, [["a", null]])).toEqual(['{"a":', "}"])
  })

  it("canonicalizeAround cuts at a mark (text \"\") without writing it", () => {
    const extra: ReadonlyArray<readonly [string, string | null]> = [
      ["hash", ""],
      ["seq", null]
    ]
    fc.assert(
      fc.property(fc.dictionary(keyArb, anyValueArb, { maxKeys: 6 }), fc.integer(), (obj, seq) => {
        const copy = { ...obj }
        for (const k of ["hash", "seq", "toJSON"]) delete copy[k]
        const assembled = outcome(() => {
          const parts = canonicalizeAround(copy, extra)
          if (parts === null) throw new Error("unexpected clash")
          expect(parts).toHaveLength(3)
          // the mark sits where "hash" sorts: everything before it is in parts[0]
          const before = Object.keys(copy).filter((k) => k < "hash" && copy[k] !== undefined && typeof copy[k] !== "function")
          if (before.length === 0) expect(parts[0]).toBe("{")
          return `${parts[0]}${parts[1]}${seq}${parts[2]}`
        })
        expect(assembled).toBe(outcome(() => canonicalizeReference({ ...copy, seq })))
      }),
      { numRuns: 300 }
    )
    expect(canonicalizeAround({ a: 1, z: 2 }, extra)).toEqual(['{"a":1', ',"seq":', ',"z":2}'])
    expect(canonicalizeAround({ z: 2 }, extra)).toEqual(["{", '"seq":', ',"z":2}'])
    // the cached merge follows the list it is given
    expect(canonicalizeAround({ a: 1, z: 2 }, [["seq", null]])).toEqual(['{"a":1,"seq":', ',"z":2}'])
    expect(canonicalizeAround({ a: 1, z: 2 }, extra, (k) => k === "z")).toBeNull()
  })
})

// ---------------------------------------------------------------------------------------------
// The text reader

const PICK = ["hash", "prev_hash", "seq"] as const

/** What the reader must return for `text`: null is always allowed; a result must be exact. */
const checkText = (text: string, omit = "hash"): ReturnType<typeof canonicalizeObjectText> => {
  const read = canonicalizeObjectText(text, omit, PICK)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    expect(read, `accepted invalid JSON ${JSON.stringify(text)}`).toBeNull()
    return read
  }
  if (read === null) return read
  expect(typeof parsed === "object" && parsed !== null && !Array.isArray(parsed), `accepted a non-object ${text}`).toBe(true)
  const obj = parsed as Record<string, unknown>
  const { [omit]: _omitted, ...rest } = obj
  expect(read.canonical).toBe(canonicalizeReference(rest))
  expect(read.picked).toEqual(PICK.map((k) => (Object.prototype.hasOwnProperty.call(obj, k) ? canonicalizeReference(obj[k]) : undefined)))
  return read
}

/** An object that JSON.stringify writes and the reader must handle (ASCII, no control characters). */
const plainArb = fc
  .dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 8 })
  .filter((o) => !/[\u0000-\u001f\ud800-\udfff]/.test(JSON.stringify(o)))

describe("canonicalizeObjectText (canonical text read from JSON text)", () => {
  it("equals canonicalizeReference(JSON.parse(text)) on what JSON.stringify writes", () => {
    fc.assert(
      fc.property(plainArb, (obj) => {
        const text = JSON.stringify(obj)
        // null once when the shape cache is full (it is then started afresh)
        expect(checkText(text) ?? checkText(text), text).not.toBeNull()
      }),
      { numRuns: 1000 }
    )
  })

  it("is exact or null on any JSON value, and with whitespace, escapes and other spellings", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(0, 1, 2), (value, indent) => {
        checkText(JSON.stringify(value, null, indent))
        checkText(JSON.stringify({ v: value }, null, indent))
        // every character escaped as \uXXXX: same values, other text
        const escaped = JSON.stringify({ v: value }).replace(/"((?:[^"\\]|\\.)*)"/g, (_m, body: string) =>
          `"${[...(JSON.parse(`"${body}"`) as string)].map((ch) => [...ch].map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")).join("")}"`
        )
        checkText(escaped)
      }),
      { numRuns: 500 }
    )
  })

  it("handles the JSON forms it meets in the middle of a line", () => {
    const cases = [
      `{}`,
      ` { "a" : 1 , "b" : [ 1 , 2 ] } `,
      `{"a":1.0,"b":1e2,"c":-0,"d":0.1e-7,"e":123456789012345678,"f":-1.5E+3,"g":0,"h":-0.0}`,
      `{"s":"\\/\\u00e9\\n\\"","\\u0061":1,"k\\"q":2}`,
      `{"__proto__":{"x":1},"a":[]}`,
      `{"1":1,"10":2,"2":3,"b":4,"a":5}`,
      `{"hash":"h","prev_hash":"p","seq":1,"x":[true,false,null]}`,
      `{"hash":{"a":1},"seq":"1"}`,
      `{"e":"","n":{"":{"":[]}}}`
    ]
    for (const c of cases) expect(checkText(c), c).not.toBeNull()
    // outside what it reads, or not JSON: null (never a wrong answer)
    const refused = [
      `{"a":1,"a":2}`,
      `{"a":1e400}`,
      `{"a":01}`,
      `{"a":1.}`,
      `{"a":.5}`,
      `{"a":+1}`,
      `{"a":-}`,
      `{"a":tru}`,
      `{"a":nul}`,
      `{"a":1,}`,
      `{,"a":1}`,
      `{"a" 1}`,
      `{'a':1}`,
      `{"a":1}x`,
      `{"a":1}}`,
      `\ufeff{"a":1}`,
      `{"a":"tab\there"}`,
      `{"a":"\ud800"}`,
      `{"a":"\\x41"}`,
      `{"a":"\\u00"}`,
      `{"a":"unterminated}`,
      `[1]`,
      `"s"`,
      `1`,
      ``,
      `{"a":[1,2}`,
      `{"a":{"b":1]}`,
      `{"a":1}\t`,
      `{"a":\\"x"}`
    ]
    for (const c of refused) expect(checkText(c), c).toBeNull()
    const deep = `{"a":${"[".repeat(MAX_DEPTH + 1)}${"]".repeat(MAX_DEPTH + 1)}}`
    expect(checkText(deep)).toBeNull()
    expect(checkText(`{"a":${"[".repeat(MAX_DEPTH - 2)}${"]".repeat(MAX_DEPTH - 2)}}`)).not.toBeNull()
    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i])))
    checkText(wide)
  })

  it("never answers differently from JSON.parse on mangled record lines", () => {
    const record = sealRecord(
      {
        type: "outcome",
        run_id: "r",
        ref: { seq: 1, hash: GENESIS_HASH, request_id: "q", tool_call_id: null },
        outcome: "executed",
        source: "x \"y\" é"
      },
      { seq: 2, ts: "2026-11-30T12:00:00.000Z", prev_hash: GENESIS_HASH }
    )
    const line = JSON.stringify(record)
    fc.assert(
      fc.property(mangledLine(line), (s) => void checkText(s)),
      { numRuns: 3000 }
    )
  })
})
