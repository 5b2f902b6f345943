/**
 * Coverage by simulation (seeded, small): Wilson intervals and paired-bootstrap intervals should
 * contain the true value about 95 % of the time. Bounds leave room for the Monte Carlo error of a
 * few hundred trials and for the known small-sample behaviour of both methods.
 */
import { describe, expect, it } from "vitest"
import { makePrng } from "../../src/domain/prng.js"
import { pairedBootstrap, wilson } from "../../src/scoring/stats.js"

describe("coverage near 95 %", () => {
  it.each([
    [0.1, 40],
    [0.3, 50],
    [0.5, 30],
    [0.85, 60]
  ])("Wilson: p = %f, n = %i", (p, n) => {
    const prng = makePrng(2024)
    const trials = 2000
    let covered = 0
    for (let t = 0; t < trials; t++) {
      let k = 0
      for (let i = 0; i < n; i++) if (prng.nextFloat() < p) k++
      const w = wilson(k, n)
      if (w.lo <= p && p <= w.hi) covered++
    }
    const coverage = covered / trials
    expect(coverage).toBeGreaterThan(0.92)
    expect(coverage).toBeLessThan(0.985)
  })

  it("paired bootstrap: correlated binary outcomes per task, true Δ = +0.15", () => {
    // joint law of (baseline, treatment) per task: (0,0) .40, (0,1) .25, (1,0) .10, (1,1) .25
    const prng = makePrng(99)
    const draw = (): readonly [number, number] => {
      const u = prng.nextFloat()
      return u < 0.4 ? [0, 0] : u < 0.65 ? [0, 1] : u < 0.75 ? [1, 0] : [1, 1]
    }
    const truth = 0.25 - 0.1
    const trials = 300
    const n = 60
    let covered = 0
    for (let t = 0; t < trials; t++) {
      const a = new Map<string, number>(), b = new Map<string, number>()
      for (let i = 0; i < n; i++) {
        const [x, y] = draw()
        a.set(`task${i}`, x)
        b.set(`task${i}`, y)
      }
      const r = pairedBootstrap(a, b, { iterations: 500, seed: t })
      expect(r.n).toBe(n)
      if (r.lo <= truth && truth <= r.hi) covered++
    }
    const coverage = covered / trials
    expect(coverage).toBeGreaterThan(0.9)
    expect(coverage).toBeLessThan(0.99)
  })
})
