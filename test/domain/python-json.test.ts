import { execFileSync } from "node:child_process"
import { describe, expect, it } from "vitest"
import {
  parsePythonJson,
  PyFloat,
  pyFloatRepr,
  PyJsonError,
  pyJson,
  pyJsonDumps,
  pyString
} from "../../src/domain/python-json.js"

/** Run a Python snippet that reads JSON from stdin and prints JSON (one value) to stdout. */
const python = (code: string, input: unknown): unknown =>
  JSON.parse(execFileSync("python3", ["-c", code], { input: JSON.stringify(input), encoding: "utf8" }))

/** For each JSON text: Python's `json.dumps(json.loads(text))`, or null when Python rejects the text. */
const pythonRoundTrips = (texts: ReadonlyArray<string>, kwargs = ""): Array<string | null> =>
  python(
    `import json, sys
out = []
for t in json.load(sys.stdin):
    try:
        out.append(json.dumps(json.loads(t)${kwargs === "" ? "" : ", " + kwargs}))
    except ValueError:
        out.append(None)
print(json.dumps(out))`,
    texts
  ) as Array<string | null>

const TRICKY_TEXTS: ReadonlyArray<string> = [
  `{"a": 1, "b": [true, false, null], "c": {}}`,
  `[]`,
  `{}`,
  `[[], {}, [[]], {"x": {}}]`,
  `"plain"`,
  `"quote \\" backslash \\\\ slash \\/ done"`,
  `"\\n\\r\\t\\b\\f"`,
  `"\\u0000\\u0001\\u001f\\u007f\\u0080"`,
  `"Küche – naïve café ☃"`,
  `"emoji 😀 and 🌡 (non-BMP)"`,
  `"\\ud83d\\ude00 as an escaped pair"`,
  `"lone \\ud800 high and \\udc00 low"`,
  `"line\\u2028sep\\u2029para"`,
  `"<script>&amp;'single'"`,
  `0`,
  `-0`,
  `7`,
  `-123456789`,
  `9007199254740991`,
  `1.0`,
  `-0.0`,
  `0.0`,
  `100.0`,
  `1e2`,
  `1E400`,
  `-1e400`,
  `0.1`,
  `0.30000000000000004`,
  `1.5`,
  `-2.25`,
  `3.141592653589793`,
  `0.0001`,
  `0.00001`,
  `1.234e-7`,
  `5e-324`,
  `1.7976931348623157e308`,
  `123456789012345.6`,
  `1234567890123456.7`,
  `1e15`,
  `1e16`,
  `1.5e16`,
  `2.5e21`,
  `NaN`,
  `Infinity`,
  `-Infinity`,
  `[NaN, Infinity, -Infinity, 1.0, 2]`,
  `{"nested": {"deep": [1, 2.5, {"k": "v\\u00e9"}]}, "é": "key non-ascii"}`,
  ` \t\n {"spaces" : [ 1 , 2 ] } \r\n`,
  `{"dup": 1, "dup": 2}`,
  `{"__proto__": {"x": 1}, "after": true}`,
  `{"b": 1, "a": 2, "c": 3}`
]

const REJECTED_TEXTS: ReadonlyArray<string> = [
  ``,
  `[1,]`,
  `{"a": 1,}`,
  `{'a': 1}`,
  `01`,
  `1.`,
  `.5`,
  `+1`,
  `"tab\there"`,
  `"bad \\x escape"`,
  `"\\u12"`,
  `[1 2]`,
  `1 2`,
  `nul`,
  `{"a" 1}`,
  `"unterminated`,
  `-`,
  `-NaN`
]

describe("pyJson / parsePythonJson against Python's json module", () => {
  it("round-trips tricky texts exactly as json.dumps(json.loads(t))", () => {
    const expected = pythonRoundTrips(TRICKY_TEXTS)
    const got = TRICKY_TEXTS.map((t) => pyJson(parsePythonJson(t)))
    expect(got).toEqual(expected)
  })

  it("rejects what Python rejects", () => {
    expect(pythonRoundTrips(REJECTED_TEXTS)).toEqual(REJECTED_TEXTS.map(() => null))
    for (const t of REJECTED_TEXTS) {
      expect(() => parsePythonJson(t), t).toThrow(PyJsonError)
    }
  })

  it("matches json.dumps with ensure_ascii=False, indent and sort_keys", () => {
    const texts = TRICKY_TEXTS.filter((t) => !t.includes("__proto__"))
    const variants: ReadonlyArray<readonly [string, Parameters<typeof pyJsonDumps>[1]]> = [
      ["ensure_ascii=False", { ensureAscii: false }],
      ["indent=2", { indent: 2 }],
      ["indent=1, ensure_ascii=False", { indent: 1, ensureAscii: false }],
      ["indent=0", { indent: 0 }],
      ["indent='\\t'", { indent: "\t" }],
      ["sort_keys=True", { sortKeys: true }],
      ["separators=(',', ':'), sort_keys=True, ensure_ascii=False", { separators: [",", ":"], sortKeys: true, ensureAscii: false }]
    ]
    for (const [kwargs, options] of variants) {
      const expected = pythonRoundTrips(texts, kwargs)
      expect(texts.map((t) => pyJsonDumps(parsePythonJson(t), options)), kwargs).toEqual(expected)
    }
  })

  it("sorts keys by code point as Python does (not by UTF-16 unit)", () => {
    const text = `{"\uffff": 1, "😀": 2, "a": 3, "Z": 4, "": 5}`
    const [expected] = pythonRoundTrips([text], "sort_keys=True")
    expect(pyJsonDumps(parsePythonJson(text), { sortKeys: true })).toBe(expected)
  })

  it("writes floats as Python's repr for many magnitudes", () => {
    // a deterministic spread of doubles: several mantissas over the whole exponent range
    let seed = 12345
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed / 2147483648
    }
    const values: Array<number> = []
    for (let e = -320; e <= 308; e += 7) {
      values.push(Number(`${(1 + rand() * 9).toPrecision(1 + Math.floor(rand() * 17))}e${e}`))
      values.push(-Number(`1e${e}`))
    }
    for (let i = 0; i < 200; i++) values.push((rand() - 0.5) * 10 ** Math.floor(rand() * 40 - 20))
    const finite = values.filter((v) => Number.isFinite(v) && v !== 0)
    const expected = python(
      `import json, sys
print(json.dumps([repr(float(s)) for s in json.load(sys.stdin)]))`,
      finite.map((v) => v.toExponential())
    )
    expect(finite.map(pyFloatRepr)).toEqual(expected)
  })

  it("serialises plain JS values as json.dumps does for the same JSON", () => {
    const values: ReadonlyArray<unknown> = [
      { user: "Zoë", n: 3, ratio: 0.5, tags: ["a", "ü"], none: null, yes: true },
      [1, -1, 0, 1e-7, 123.456, 2 ** 53 - 1],
      "\u0000\u001f\u007f\u2028😀",
      { "": "", " ": " " }
    ]
    const expected = python(
      `import json, sys
print(json.dumps([json.dumps(v) for v in json.load(sys.stdin)]))`,
      values
    )
    expect(values.map((v) => pyJson(v))).toEqual(expected)
  })

  it("marks integral float literals as PyFloat and keeps ints as numbers", () => {
    const parsed = parsePythonJson(`{"i": 1, "f": 1.0, "e": 1e2, "h": 0.5, "z": -0.0}`) as Record<string, unknown>
    expect(parsed.i).toBe(1)
    expect(parsed.f).toBeInstanceOf(PyFloat)
    expect((parsed.f as PyFloat).value).toBe(1)
    expect(parsed.e).toBeInstanceOf(PyFloat)
    expect(parsed.h).toBe(0.5)
    expect(Object.is((parsed.z as PyFloat).value, -0)).toBe(true)
    // JSON.stringify still works on parsed values (the float marker gives its number)
    expect(JSON.stringify(parsed)).toBe(`{"i":1,"f":1,"e":100,"h":0.5,"z":0}`)
    expect(pyJson(new PyFloat(21))).toBe("21.0")
    expect(pyJson(new PyFloat(1e16))).toBe("1e+16")
    expect(pyJson(new PyFloat(-0))).toBe("-0.0")
  })

  it("documents the residual difference for plain JS numbers: an integral float is written as an int", () => {
    expect(pyJson(JSON.parse("1.0"))).toBe("1") // Python writes 1.0; parsePythonJson keeps it
    expect(pyJson(parsePythonJson("1.0"))).toBe("1.0")
  })

  it("follows JSON.stringify's value model for JS-only values", () => {
    expect(pyJson({ a: undefined, b: () => 1, c: 1 })).toBe(`{"c": 1}`)
    expect(pyJson([undefined, () => 1])).toBe(`[null, null]`)
    expect(pyJson(undefined)).toBe("null")
    expect(pyJson(12345678901234567890n)).toBe("12345678901234567890")
    expect(pyJson(1e21)).toBe("1000000000000000000000")
    expect(pyJson({ toJSON: () => ({ x: new PyFloat(2) }) })).toBe(`{"x": 2.0}`)
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    expect(() => pyJson(cyclic)).toThrow(PyJsonError)
  })

  it("escapes strings with lowercase hex as Python does", () => {
    expect(pyString("é\u00ff\uABCD")).toBe(`"\\u00e9\\u00ff\\uabcd"`)
    expect(pyString("é", false)).toBe(`"é"`)
    expect(pyString("\u007f", false)).toBe(`"\u007f"`)
  })
})
