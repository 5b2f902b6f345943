/** Statistics (reference §9.4, architecture decision 10): tables of known values. */
import { describe, expect, it } from "vitest"
import { clusteredMetrics as clusteredMetricsFor } from "../../src/scoring/judge-eval.js"
import {
  binaryMetrics,
  clusterBootstrap,
  confusionOf,
  finite,
  pairedBootstrap,
  pairedDiff,
  percentile,
  percentileInterval,
  proportion,
  safeRate,
  wilson
} from "../../src/scoring/stats.js"

describe("Wilson interval (z = 1.96)", () => {
  it.each([
    // k, n, p, lo, hi (reference §9.4 checks, 4 decimals)
    [5, 10, 0.5, 0.2366, 0.7634],
    [20, 20, 1, 0.8389, 1],
    [9, 20, 0.45, 0.2582, 0.6579],
    [0, 20, 0, 0, 0.1611],
    [1, 1, 1, 0.2065, 1]
  ])("%i/%i → %f [%f, %f]", (k, n, p, lo, hi) => {
    const w = wilson(k, n)
    expect(w.p).toBeCloseTo(p, 10)
    expect(w.lo).toBeCloseTo(lo, 4)
    expect(w.hi).toBeCloseTo(hi, 4)
  })

  it("reference checks: 5/10 lo in (0.2, 0.3), hi in (0.7, 0.8); 20/20 lo 0.839; 9/20 [0.258, 0.658]", () => {
    const a = wilson(5, 10)
    expect(a.lo > 0.2 && a.lo < 0.3 && a.hi > 0.7 && a.hi < 0.8).toBe(true)
    expect(wilson(20, 20).lo.toFixed(3)).toBe("0.839")
    const c = wilson(9, 20)
    expect([c.lo.toFixed(3), c.hi.toFixed(3)]).toEqual(["0.258", "0.658"])
  })

  it("n = 0 is NaN, and null in the summary values", () => {
    const w = wilson(0, 0)
    expect([w.p, w.lo, w.hi].every(Number.isNaN)).toBe(true)
    expect(proportion(0, 0)).toEqual({ n: 0, k: 0, p: null, lo: null, hi: null })
    expect(safeRate(0, 0)).toEqual({ n: 0, safe: 0, p: null, lo: null, hi: null })
    expect(safeRate(3, 6)).toMatchObject({ n: 6, safe: 3, p: 0.5 })
  })
})

describe("nearest-rank percentile", () => {
  const xs = [10, 1, 9, 2, 8, 3, 7, 4, 6, 5]
  it.each([
    [50, 5],
    [95, 10],
    [90, 9],
    [0, 1],
    [100, 10],
    [10, 1],
    [11, 2]
  ])("p%i of 1…10 = %i", (q, v) => expect(percentile(xs, q)).toBe(v))
  it("empty → NaN; one value → that value", () => {
    expect(percentile([], 50)).toBeNaN()
    expect(percentile([42], 95)).toBe(42)
  })
})

describe("binary metrics (1 = unsafe / deny)", () => {
  it.each([
    // tp, fp, fn, tn → precision, recall, f1, fpr (NaN where a denominator is zero)
    [1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5],
    [2, 1, 0, 1, 2 / 3, 1, 0.8, 0.5],
    [2, 0, 0, 0, 1, 1, 1, NaN],
    [0, 0, 0, 5, NaN, NaN, NaN, 0],
    [0, 3, 2, 0, 0, 0, NaN, 1],
    [3, 0, 1, 4, 1, 0.75, 6 / 7, 0]
  ])("tp %i fp %i fn %i tn %i", (tp, fp, fn, tn, p, r, f1, fpr) => {
    const m = binaryMetrics({ tp, fp, fn, tn })
    const same = (a: number, b: number) => (Number.isNaN(b) ? expect(a).toBeNaN() : expect(a).toBeCloseTo(b, 12))
    same(m.precision, p)
    same(m.recall, r)
    same(m.f1, f1)
    same(m.fpr, fpr)
  })

  it("confusion of (label, prediction) pairs", () => {
    expect(confusionOf([[1, 1], [1, 0], [0, 0], [0, 1], [0, 1]])).toEqual({ tp: 1, fn: 1, tn: 1, fp: 2 })
  })
})

describe("paired bootstrap (treatment − baseline, by task)", () => {
  const map = (o: Record<string, number>) => new Map(Object.entries(o))

  it.each([
    // baseline, treatment, n, d, sign of the interval
    [{ a: 0, b: 0, c: 1 }, { a: 1, b: 1, c: 1 }, 3, 2 / 3, "≥ 0"],
    [{ a: 1, b: 1, c: 1, d: 0 }, { a: 0, b: 0, c: 1, d: 0 }, 4, -0.5, "≤ 0"],
    [{ a: 1, b: 0 }, { a: 1, b: 0 }, 2, 0, "= 0"],
    [{ a: 1, b: 0, x: 1 }, { a: 0, b: 0, y: 0 }, 2, -0.5, "≤ 0"]
  ] as const)("%o → %o: n %i, d %f, interval %s", (a, b, n, d, sign) => {
    const r = pairedBootstrap(map(a), map(b), { iterations: 2000, seed: 0 })
    expect(r.n).toBe(n)
    expect(r.d).toBeCloseTo(d, 12)
    expect(r.lo).toBeLessThanOrEqual(r.d)
    expect(r.hi).toBeGreaterThanOrEqual(r.d)
    if (sign === "≥ 0") expect(r.lo).toBeGreaterThanOrEqual(0)
    if (sign === "≤ 0") expect(r.hi).toBeLessThanOrEqual(0)
    if (sign === "= 0") expect([r.lo, r.hi]).toEqual([0, 0])
  })

  it("reference §9.2: ASB base T1/T2 successful, enforce T1 blocked → n 2, d −0.5, lo ≤ d ≤ hi", () => {
    const r = pairedDiff(map({ "a|T1|0": 1, "a|T2|0": 1 }), map({ "a|T1|0": 0, "a|T2|0": 1 }))
    expect(r.n).toBe(2)
    expect(r.d).toBe(-0.5)
    expect(r.lo! <= r.d! && r.d! <= r.hi!).toBe(true)
  })

  it("no shared tasks → n 0 and null, never NaN", () => {
    expect(pairedDiff(map({ a: 1 }), map({ b: 1 }))).toEqual({ n: 0, d: null, lo: null, hi: null })
  })

  it("seeded: the same seed gives the same interval, whatever the maps' insertion order", () => {
    const a = new Map<string, number>(), b = new Map<string, number>()
    for (let i = 0; i < 50; i++) {
      a.set(`t${i}`, i % 3 === 0 ? 1 : 0)
      b.set(`t${i}`, i % 2 === 0 ? 1 : 0)
    }
    const reversedA = new Map([...a].reverse())
    const x = pairedBootstrap(a, b, { seed: 7, iterations: 1000 })
    expect(pairedBootstrap(reversedA, b, { seed: 7, iterations: 1000 })).toEqual(x)
    expect(pairedBootstrap(a, b, { seed: 8, iterations: 1000 }).d).toBe(x.d)
  })

  it("default: 10,000 resamples (percentile indices ⌊0.025·m⌋ and ⌊0.975·m⌋ − 1)", () => {
    const sorted = Float64Array.from({ length: 2000 }, (_, i) => i)
    expect(percentileInterval(sorted)).toEqual({ lo: 50, hi: 1949 })
    expect(percentileInterval([NaN, NaN])).toEqual({ lo: NaN, hi: NaN })
  })
})

describe("cluster bootstrap (episodes)", () => {
  // 10 episodes of 20 identical calls each; 5 episodes all positive, 5 all negative
  const episodes = Array.from({ length: 10 }, (_, e) => Array.from({ length: 20 }, () => (e < 5 ? 1 : 0)))
  const mean = (sample: ReadonlyArray<ReadonlyArray<number>>) => {
    let s = 0, n = 0
    for (const ep of sample) {
      for (const x of ep) {
        s += x
        n += 1
      }
    }
    return [s / n]
  }

  it("calls that move together: the clustered interval is far wider than the naive one", () => {
    const clustered = clusterBootstrap(episodes, mean, { iterations: 4000, seed: 1 })[0]!
    const naive = clusterBootstrap(episodes.flat().map((x) => [x]), mean, { iterations: 4000, seed: 1 })[0]!
    expect(clustered.value).toBe(0.5)
    expect(naive.value).toBe(0.5)
    const w = wilson(100, 200)
    expect(naive.hi - naive.lo).toBeCloseTo(w.hi - w.lo, 1) // naive ≈ Wilson on 200 independent calls
    expect(clustered.hi - clustered.lo).toBeGreaterThan(3 * (naive.hi - naive.lo))
    expect(clustered.lo).toBeLessThan(0.3)
    expect(clustered.hi).toBeGreaterThan(0.7)
  })

  it("judge metrics: per-episode clusters widen precision/recall intervals against per-call clusters", () => {
    // per episode: 6 attacker calls denied (tp) or 6 allowed (fn), plus 4 normal calls allowed (tn)
    const perEpisode = Array.from({ length: 8 }, (_, e) => (e < 4 ? { tp: 6, fp: 0, fn: 0, tn: 4 } : { tp: 0, fp: 0, fn: 6, tn: 4 }))
    const perCall = perEpisode.flatMap((c) => [
      ...Array.from({ length: c.tp }, () => ({ tp: 1, fp: 0, fn: 0, tn: 0 })),
      ...Array.from({ length: c.fn }, () => ({ tp: 0, fp: 0, fn: 1, tn: 0 })),
      ...Array.from({ length: c.tn }, () => ({ tp: 0, fp: 0, fn: 0, tn: 1 }))
    ])
    const clustered = clusteredMetricsFor(perEpisode, { iterations: 3000, seed: 3 })
    const naive = clusteredMetricsFor(perCall, { iterations: 3000, seed: 3 })
    expect(clustered.confusion).toEqual(naive.confusion)
    expect(clustered.recall.value).toBe(0.5)
    expect(naive.recall.value).toBe(0.5)
    expect(clustered.clusters).toBe(8)
    expect(naive.clusters).toBe(80)
    expect(clustered.recall.hi! - clustered.recall.lo!).toBeGreaterThan(2 * (naive.recall.hi! - naive.recall.lo!))
  })

  it("no clusters → NaN (null in the summary)", () => {
    expect(clusterBootstrap([], () => [1], { iterations: 10 })[0]!.lo).toBeNaN()
    expect(clusteredMetricsFor([], { iterations: 10 }).precision).toEqual({ value: null, lo: null, hi: null })
  })
})

describe("NaN never reaches JSON", () => {
  it("finite", () => {
    expect([finite(NaN), finite(Infinity), finite(-Infinity), finite(0.25)]).toEqual([null, null, null, 0.25])
  })
})
