/**
 * The paired bootstrap's outputs pinned for fixed seeds (issue 23: made faster, results unchanged).
 * The figures were taken from the implementation before its resampling loop was rewritten; the
 * same seed must keep giving exactly these intervals.
 */
import { describe, expect, it } from "vitest"
import { pairedBootstrap } from "../../src/scoring/stats.js"

/** n tasks with scores in {0, ¼, ½, ¾, 1} (baseline) and {0, ½, 1} (treatment), varied by `salt` */
const tasks = (n: number, salt: number) => {
  const a = new Map<string, number>(), b = new Map<string, number>()
  for (let i = 0; i < n; i++) {
    a.set(`task-${i}`, ((i * 7 + salt) % 5) / 4)
    b.set(`task-${i}`, ((i * 11 + salt * 3) % 3) / 2)
  }
  return [a, b] as const
}

describe("paired bootstrap: pinned outputs for fixed seeds", () => {
  it.each([
    // tasks, iterations, seed, confidence, expected
    [2000, 2000, 0, 0.95, { n: 2000, d: 0, lo: -0.02225, hi: 0.023625 }],
    [37, 5000, 12345, 0.9, { n: 37, d: -0.013513513513513514, lo: -0.1554054054054054, hi: 0.12837837837837837 }],
    [3, 1000, 4294967295, 0.5, { n: 3, d: 0.08333333333333333, lo: -0.25, hi: 0.3333333333333333 }],
    [1000, 3000, 99, 0.99, { n: 1000, d: -0.0005, lo: -0.0445, hi: 0.0435 }]
  ] as const)("%i tasks × %i resamples, seed %i, level %f", (n, iterations, seed, confidence, expected) => {
    const [a, b] = tasks(n, n % 13)
    expect(pairedBootstrap(a, b, { iterations, seed, confidence })).toEqual(expected)
  })

  it("2,000 tasks × the default 10,000 resamples, seed 0", () => {
    const [a, b] = tasks(2000, 1)
    expect(pairedBootstrap(a, b)).toEqual({ n: 2000, d: 0, lo: -0.02325, hi: 0.023875 })
  })
})
