import { FastCheck as fc } from "effect"
import { describe, expect, it } from "vitest"
import { CanonicalJsonError, canonicalize } from "../../src/domain/canonical-json.js"

const fromHex = (hex: string): number => {
  const view = new DataView(new ArrayBuffer(8))
  view.setBigUint64(0, BigInt(`0x${hex}`))
  return view.getFloat64(0)
}

const errorOf = (f: () => unknown): unknown => {
  try {
    f()
  } catch (e) {
    return e
  }
  return undefined
}

describe("canonicalize (RFC 8785)", () => {
  it("serialises the RFC 8785 appendix B numbers", () => {
    const table: ReadonlyArray<readonly [string, string]> = [
      ["0000000000000000", "0"],
      ["8000000000000000", "0"],
      ["0000000000000001", "5e-324"],
      ["8000000000000001", "-5e-324"],
      ["7fefffffffffffff", "1.7976931348623157e+308"],
      ["ffefffffffffffff", "-1.7976931348623157e+308"],
      ["4340000000000000", "9007199254740992"],
      ["c340000000000000", "-9007199254740992"],
      ["4430000000000000", "295147905179352830000"],
      ["44b52d02c7e14af5", "9.999999999999997e+22"],
      ["44b52d02c7e14af6", "1e+23"],
      ["44b52d02c7e14af7", "1.0000000000000001e+23"],
      ["444b1ae4d6e2ef4e", "999999999999999700000"],
      ["444b1ae4d6e2ef4f", "999999999999999900000"],
      ["444b1ae4d6e2ef50", "1e+21"],
      ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
      ["3eb0c6f7a0b5ed8d", "0.000001"],
      ["41b3de4355555553", "333333333.3333332"],
      ["41b3de4355555554", "333333333.33333325"],
      ["41b3de4355555555", "333333333.3333333"],
      ["41b3de4355555556", "333333333.3333334"],
      ["41b3de4355555557", "333333333.33333343"],
      ["becbf647612f3696", "-0.0000033333333333333333"],
      ["43143ff3c1cb0959", "1424953923781206.2"]
    ]
    for (const [hex, expected] of table) expect(canonicalize(fromHex(hex)), hex).toBe(expected)
    expect(canonicalize(1e30)).toBe("1e+30")
  })

  it("rejects non-finite numbers with a CanonicalJsonError", () => {
    for (const bad of [fromHex("7fffffffffffffff"), fromHex("7ff0000000000000"), -Infinity]) {
      const e = errorOf(() => canonicalize({ a: [1, bad] }))
      expect(e).toBeInstanceOf(CanonicalJsonError)
      expect((e as CanonicalJsonError)._tag).toBe("CanonicalJsonError")
      expect((e as CanonicalJsonError).reason).toMatch(/non-finite number/)
      expect((e as CanonicalJsonError).message).toBe((e as CanonicalJsonError).reason)
    }
    expect(errorOf(() => canonicalize({ n: 1n }))).toBeInstanceOf(CanonicalJsonError)
    expect(errorOf(() => canonicalize(undefined))).toBeInstanceOf(CanonicalJsonError)
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    expect(errorOf(() => canonicalize(cyclic))).toBeInstanceOf(CanonicalJsonError)
  })

  it("matches the RFC 8785 §3.2.2 example", () => {
    const input = String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`
    const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
    expect(canonicalize(JSON.parse(input))).toBe(expected)
  })

  it("sorts keys by UTF-16 code units (RFC 8785 §3.2.3)", () => {
    const input = {
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }
    const out = canonicalize(input)
    const order = [...out.matchAll(/"([^"]*)":"([^"]*)"/g)].map((m) => m[2])
    expect(order).toEqual([
      "Carriage Return",
      "One",
      "Control",
      "Latin Small Letter O With Diaeresis",
      "Euro Sign",
      "Emoji: Grinning Face",
      "Hebrew Letter Dalet With Dagesh"
    ])
    expect(out.startsWith(String.raw`{"\r":"Carriage Return","1":"One","` + "\u0080")).toBe(true)
    // non-ASCII literal, UTF-8 bytes as in the RFC
    expect(Buffer.from(canonicalize({ "\u20ac": 1 }), "utf8").toString("hex")).toBe("7b22e282ac223a317d")
  })

  it("follows JSON.stringify's value model", () => {
    expect(canonicalize({ b: undefined, a: [undefined, () => 1, Symbol("s")], c: () => 1 })).toBe(`{"a":[null,null,null]}`)
    expect(canonicalize({ d: new Date(0), n: -0, s: new String("x") })).toBe(`{"d":"1970-01-01T00:00:00.000Z","n":0,"s":"x"}`)
    expect(canonicalize({ z: { y: 1, x: [{ b: 2, a: 1 }] }, "": true })).toBe(`{"":true,"z":{"x":[{"a":1,"b":2}],"y":1}}`)
    expect(canonicalize("\ud800")).toBe(JSON.stringify("\ud800"))
    expect(canonicalize("tab\there \u2028 \u007f")).toBe(JSON.stringify("tab\there \u2028 \u007f"))
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${(i * 37) % 100}`, i]))
    expect(Object.keys(JSON.parse(canonicalize(many)))).toEqual(Object.keys(many).sort())
  })

  it("agrees with a naive reference and survives a JSON round trip", () => {
    const reference = (v: unknown): string => {
      if (Array.isArray(v)) return `[${v.map(reference).join(",")}]`
      if (typeof v === "object" && v !== null) {
        const o = v as Record<string, unknown>
        return `{${Object.keys(o)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${reference(o[k])}`)
          .join(",")}}`
      }
      return JSON.stringify(v)
    }
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const v: unknown = JSON.parse(JSON.stringify(value))
        const out = canonicalize(v)
        expect(out).toBe(reference(v))
        expect(canonicalize(JSON.parse(out))).toBe(out)
      }),
      { numRuns: 300 }
    )
  })
})
