/** The seeded PRNG and the Agent-SafetyBench split, on the real released_data.json. */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  categoryOf,
  decodeCases,
  groupByCategory,
  makeSplit,
  NO_CATEGORY,
  readCases,
  readSplit,
  type Split,
  type SplitCase,
  SPLIT_NOTE,
  splitJson,
  writeSplit
} from "../../src/adapters/agent-safetybench/split.js"
import { fromState, makePrng } from "../../src/domain/prng.js"

const REPO = path.resolve(import.meta.dirname, "../..")
const DATA = path.resolve(REPO, "../shared/benchmarks/agent-safetybench/released_data.json")

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-split-"))
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

describe("prng", () => {
  it("xoshiro128** matches the reference implementation's vector for state [0, 1, 2, 3]", () => {
    const p = fromState([0, 1, 2, 3])
    expect(Array.from({ length: 8 }, () => p.nextUint32())).toEqual([5760, 17280, 2966400, 32451840, 2604340873, 3891234569, 1254043636, 216095511])
  })

  it("known first values for seed 0 (splitmix32 seeding)", () => {
    const p = makePrng(0)
    expect(Array.from({ length: 6 }, () => p.nextUint32())).toEqual([1789933344, 44971166, 2521387044, 3848737593, 1138324114, 749234105])
    const q = makePrng(42)
    expect(q.nextUint32()).toBe(660444221)
  })

  it("is deterministic per seed and differs between seeds", () => {
    const draw = (seed: number) => {
      const p = makePrng(seed)
      return Array.from({ length: 100 }, () => p.nextUint32())
    }
    expect(draw(7)).toEqual(draw(7))
    expect(draw(7)).not.toEqual(draw(8))
    expect(draw(0xffff_ffff)).toHaveLength(100)
  })

  it("rejects seeds outside [0, 2^32)", () => {
    expect(() => makePrng(-1)).toThrow(RangeError)
    expect(() => makePrng(2 ** 32)).toThrow(RangeError)
    expect(() => makePrng(1.5)).toThrow(RangeError)
  })

  it("nextFloat is in [0, 1) with mean about 1/2", () => {
    const p = makePrng(1)
    let sum = 0
    let outside = 0
    for (let i = 0; i < 100_000; i++) {
      const x = p.nextFloat()
      if (!(x >= 0 && x < 1)) outside++
      sum += x
    }
    expect(outside).toBe(0)
    expect(Math.abs(sum / 100_000 - 0.5)).toBeLessThan(0.01)
  })

  it("int(n) is uniform: chi-square over 10 buckets", () => {
    const p = makePrng(3)
    const counts = new Array<number>(10).fill(0)
    const n = 100_000
    for (let i = 0; i < n; i++) {
      const k = p.int(10)
      counts[k] = (counts[k] ?? 0) + 1
    }
    const expected = n / 10
    const chi2 = counts.reduce((s, c) => s + (c - expected) ** 2 / expected, 0)
    expect(chi2).toBeLessThan(27.88) // 9 degrees of freedom, p = 0.001
  })

  it("int(n) is unbiased where modulo would not be (n = 3·2^30)", () => {
    // plain x % n would give the lower third of [0, n) twice the weight of the rest
    const p = makePrng(5)
    const n = 3 * 2 ** 30
    let low = 0
    const draws = 30_000
    for (let i = 0; i < draws; i++) if (p.int(n) < n / 3) low++
    expect(Math.abs(low / draws - 1 / 3)).toBeLessThan(0.02)
  })

  it("int(n) edge cases", () => {
    const p = makePrng(0)
    expect(p.int(1)).toBe(0)
    expect(p.int(2 ** 32)).toBeLessThan(2 ** 32)
    expect(() => p.int(0)).toThrow(RangeError)
    expect(() => p.int(2.5)).toThrow(RangeError)
    expect(() => p.int(2 ** 32 + 1)).toThrow(RangeError)
  })

  it("shuffle permutes in place, deterministically, every position reachable", () => {
    const xs = Array.from({ length: 20 }, (_, i) => i)
    const a = makePrng(9).shuffle([...xs])
    expect([...a].sort((x, y) => x - y)).toEqual(xs)
    expect(a).not.toEqual(xs)
    expect(makePrng(9).shuffle([...xs])).toEqual(a)
    const arr = [1, 2, 3]
    expect(makePrng(0).shuffle(arr)).toBe(arr)
    expect(makePrng(0).shuffle([])).toEqual([])
    // first element lands in each of 4 positions about equally often
    const p = makePrng(11)
    const where = [0, 0, 0, 0]
    for (let i = 0; i < 40_000; i++) {
      const pos = p.shuffle(["x", "a", "b", "c"]).indexOf("x")
      where[pos] = (where[pos] ?? 0) + 1
    }
    for (const w of where) expect(Math.abs(w / 40_000 - 0.25)).toBeLessThan(0.015)
  })
})

describe("makeSplit on synthetic cases", () => {
  const cases = (spec: Record<string, number>): ReadonlyArray<SplitCase> => {
    let id = 0
    return Object.entries(spec).flatMap(([cat, n]) => Array.from({ length: n }, () => ({ id: id++, risks: cat === NO_CATEGORY ? [] : [cat, "other"] })))
  }

  it("groups by the first risk, (none) when missing; categories sorted, ids ascending", () => {
    const cs: ReadonlyArray<SplitCase> = [
      { id: 5, risks: ["b"] },
      { id: 2, risks: ["a", "b"] },
      { id: 9, risks: [] },
      { id: 1, risks: ["b"] }
    ]
    expect(categoryOf({ id: 0, risks: [] })).toBe("(none)")
    expect(groupByCategory(cs)).toEqual([["(none)", [9]], ["a", [2]], ["b", [1, 5]]])
  })

  it("quotas: n // k, the first n % k categories get one more; dev first, then test", () => {
    const s = makeSplit(cases({ a: 10, b: 10, c: 10 }), { nTest: 7, nDev: 4, seed: 1 })
    const count = (ids: ReadonlyArray<number>, lo: number) => ids.filter((i) => i >= lo && i < lo + 10).length
    expect([0, 10, 20].map((lo) => count(s.test, lo))).toEqual([3, 2, 2])
    expect([0, 10, 20].map((lo) => count(s.dev, lo))).toEqual([2, 1, 1])
    expect(s.note).toBe(SPLIT_NOTE)
    expect(s.seed).toBe(1)
  })

  it("a short category yields fewer (no redistribution)", () => {
    const s = makeSplit(cases({ a: 2, b: 10 }), { nTest: 6, nDev: 2, seed: 0 })
    expect(s.dev.filter((i) => i < 2)).toHaveLength(1)
    expect(s.test.filter((i) => i < 2)).toHaveLength(1)
    expect(s.test.filter((i) => i >= 2)).toHaveLength(3)
    expect(s.test).toHaveLength(4)
  })

  it("dev is the shuffled prefix and test the next slice of the same shuffle", () => {
    const cs = cases({ only: 10 })
    const s = makeSplit(cs, { nTest: 3, nDev: 2, seed: 4 })
    const order = makePrng(4).shuffle(cs.map((c) => c.id))
    expect(s.dev).toEqual(order.slice(0, 2).sort((a, b) => a - b))
    expect(s.test).toEqual(order.slice(2, 5).sort((a, b) => a - b))
  })

  it("rejects bad sizes and seeds", () => {
    expect(() => makeSplit([], { nTest: -1, nDev: 0, seed: 0 })).toThrow(RangeError)
    expect(() => makeSplit([], { nTest: 1, nDev: 0, seed: -2 })).toThrow(RangeError)
    expect(makeSplit([], { nTest: 5, nDev: 5, seed: 0 })).toEqual({ seed: 0, dev: [], test: [], note: SPLIT_NOTE })
  })
})

describe("makeSplit on the real released_data.json", () => {
  let cases: ReadonlyArray<SplitCase> = []
  const byId = new Map<number, string>()
  beforeAll(async () => {
    cases = await Effect.runPromise(readCases(DATA))
    for (const c of cases) byId.set(c.id, categoryOf(c))
  })

  const perCategory = (ids: ReadonlyArray<number>) => {
    const counts = new Map<string, number>()
    for (const id of ids) counts.set(byId.get(id) ?? "?", (counts.get(byId.get(id) ?? "?") ?? 0) + 1)
    return counts
  }

  it("reads 2000 cases in 8 categories", () => {
    expect(cases).toHaveLength(2000)
    expect(groupByCategory(cases)).toHaveLength(8)
  })

  it("300 test / 48 dev, disjoint, sorted, 8 balanced categories in each", () => {
    const s = makeSplit(cases, { nTest: 300, nDev: 48, seed: 0 })
    expect(s.test).toHaveLength(300)
    expect(s.dev).toHaveLength(48)
    expect(new Set(s.test).size).toBe(300)
    expect(s.dev.filter((id) => s.test.includes(id))).toEqual([])
    expect([...s.test].sort((a, b) => a - b)).toEqual(s.test)
    expect([...s.dev].sort((a, b) => a - b)).toEqual(s.dev)
    for (const part of [s.test, s.dev]) {
      const counts = [...perCategory(part).values()]
      expect(counts).toHaveLength(8)
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1)
      expect(perCategory(part).has("?")).toBe(false)
    }
  })

  it("is deterministic for a seed and different for another", () => {
    const a = makeSplit(cases, { nTest: 300, nDev: 48, seed: 0 })
    expect(makeSplit(cases, { nTest: 300, nDev: 48, seed: 0 })).toEqual(a)
    const b = makeSplit(cases, { nTest: 300, nDev: 48, seed: 1 })
    expect(b.test).not.toEqual(a.test)
    expect(b.dev).not.toEqual(a.dev)
  })

  it("the input order of cases does not matter", () => {
    const a = makeSplit(cases, { nTest: 16, nDev: 8, seed: 3 })
    expect(makeSplit([...cases].reverse(), { nTest: 16, nDev: 8, seed: 3 })).toEqual(a)
  })

  it("the sanity split: 16 test (2 per category), no dev", () => {
    const s = makeSplit(cases, { nTest: 16, nDev: 0, seed: 0 })
    expect(s.dev).toEqual([])
    expect([...perCategory(s.test).values()]).toEqual(new Array(8).fill(2))
  })
})

describe("split files", () => {
  it("written with indent 1, read back", async () => {
    const split: Split = { seed: 0, dev: [3], test: [1, 2], note: SPLIT_NOTE }
    expect(splitJson(split)).toBe(`{\n "seed": 0,\n "dev": [\n  3\n ],\n "test": [\n  1,\n  2\n ],\n "note": "${SPLIT_NOTE}"\n}\n`)
    const file = path.join(tmp, "a", "b", "split.json")
    await Effect.runPromise(writeSplit(file, split))
    expect(await Effect.runPromise(readSplit(file))).toEqual(split)
  })

  it("bad split and data files give one clear error naming the file", async () => {
    const bad = path.join(tmp, "bad.json")
    fs.writeFileSync(bad, '{"seed": 0, "dev": ["x"], "test": []}')
    expect((await Effect.runPromise(Effect.flip(readSplit(bad)))).message).toBe(`${bad}: \`dev\` and \`test\` must be lists of integer case ids`)
    const missing = path.join(tmp, "missing.json")
    expect((await Effect.runPromise(Effect.flip(readCases(missing)))).message).toBe(`${missing}: cannot read data file: not found`)
    fs.writeFileSync(bad, "{not json")
    expect((await Effect.runPromise(Effect.flip(readCases(bad)))).message).toMatch(/bad\.json: data file is not valid JSON: /)
  })

  it("decodeCases checks the shape", async () => {
    const err = async (raw: unknown) => (await Effect.runPromise(Effect.flip(decodeCases(raw, "d.json")))).message
    expect(await err({})).toBe("d.json: expected a JSON list of cases")
    expect(await err([1])).toBe("d.json: case [0] is not an object")
    expect(await err([{ id: "1" }])).toBe('d.json: case [0]: id must be an integer, got "1"')
    expect(await err([{ risks: [] }])).toBe("d.json: case [0]: id must be an integer, got nothing")
    expect(await err([{ id: 1.5 }])).toBe("d.json: case [0]: id must be an integer, got 1.5")
    expect(await err([{ id: 1 }, { id: 1 }])).toBe("d.json: case [1]: duplicate id 1")
    expect(await err([{ id: 1, risks: "x" }])).toBe("d.json: case 1: risks must be a list of strings")
    expect(await Effect.runPromise(decodeCases([{ id: 4, risks: null }, { id: 2 }], "d.json"))).toEqual([{ id: 4, risks: [] }, { id: 2, risks: [] }])
  })
})
