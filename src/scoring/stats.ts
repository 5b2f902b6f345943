/**
 * Statistics for the report (reference §9.4, architecture decision 10): Wilson intervals, the
 * paired bootstrap by task for arm differences, the cluster (episode) bootstrap for call-level
 * judge metrics, nearest-rank percentiles, binary classification metrics.
 *
 * Every bootstrap is seeded and uses our own PRNG (`src/domain/prng.ts`); bit-compatibility with
 * CPython's `random` is not a goal, so bootstrap bounds differ from the Python reference's while
 * the point estimates agree. Functions return NaN for undefined values; `finite` turns them into
 * null at the edge, so NaN never reaches JSON.
 *
 * Bootstrap percentile interval over `B` resample statistics (sorted, NaN resamples dropped, `m`
 * left): lo = s[⌊(α/2)·m⌋], hi = s[⌊(1 − α/2)·m⌋ − 1] (clamped to [0, m − 1]); with m = B = 2000
 * these are the reference's indices 50 and 1949.
 */
import { makePrng, type Prng } from "../domain/prng.js"
import type { Confusion, Estimate, Num, PairedDiff, Proportion, SafeRate } from "./summary-types.js"

export const Z95 = 1.96
export const DEFAULT_ITERATIONS = 10_000
export const DEFAULT_SEED = 0

const TWO_32 = 0x1_0000_0000

/** A finite number as is; NaN and ±Infinity as null. */
export const finite = (x: number): Num => (Number.isFinite(x) ? x : null)

export interface Interval {
  readonly p: number
  readonly lo: number
  readonly hi: number
}

/**
 * Wilson score interval for k of n (z = 1.96): n = 0 → NaN × 3; `d = 1 + z²/n`,
 * `centre = (p + z²/2n)/d`, `half = z·√(p(1−p)/n + z²/4n²)/d`, clamped to [0, 1].
 */
export const wilson = (k: number, n: number, z = Z95): Interval => {
  if (n <= 0) return { p: NaN, lo: NaN, hi: NaN }
  const p = k / n
  const z2 = z * z
  const d = 1 + z2 / n
  const centre = (p + z2 / (2 * n)) / d
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / d
  return { p, lo: Math.max(0, centre - half), hi: Math.min(1, centre + half) }
}

/** k of n with its Wilson interval, null where undefined. */
export const proportion = (k: number, n: number): Proportion => {
  const w = wilson(k, n)
  return { n, k, p: finite(w.p), lo: finite(w.lo), hi: finite(w.hi) }
}

/** safe of n (the Agent-SafetyBench safety score) with its Wilson interval. */
export const safeRate = (safe: number, n: number): SafeRate => {
  const w = wilson(safe, n)
  return { n, safe, p: finite(w.p), lo: finite(w.lo), hi: finite(w.hi) }
}

/** Nearest-rank percentile (q in [0, 100]): sorted[min(n−1, max(0, ⌈q/100·n⌉ − 1))]; empty → NaN. */
export const percentile = (xs: ReadonlyArray<number>, q: number): number => {
  if (xs.length === 0) return NaN
  const s = Float64Array.from(xs).sort()
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((q / 100) * s.length) - 1))
  return s[i]!
}

export interface BootstrapOptions {
  /** resamples (default 10,000) */
  readonly iterations?: number
  /** PRNG seed (default 0) */
  readonly seed?: number
  /** two-sided level (default 0.95) */
  readonly confidence?: number
}

/** lo/hi of the percentile interval over resample statistics (NaN dropped); NaN when none are left. */
export const percentileInterval = (stats: ArrayLike<number>, confidence = 0.95): { readonly lo: number; readonly hi: number } => {
  const valid: Array<number> = []
  for (let i = 0; i < stats.length; i++) {
    const x = stats[i]!
    if (!Number.isNaN(x)) valid.push(x)
  }
  const m = valid.length
  if (m === 0) return { lo: NaN, hi: NaN }
  const s = Float64Array.from(valid).sort()
  const alpha = 1 - confidence
  const clamp = (i: number) => Math.min(m - 1, Math.max(0, i))
  return { lo: s[clamp(Math.floor((alpha / 2) * m))]!, hi: s[clamp(Math.floor((1 - alpha / 2) * m) - 1)]! }
}

export interface PairedResult {
  readonly n: number
  readonly d: number
  readonly lo: number
  readonly hi: number
}

/**
 * Paired bootstrap of `treatment − baseline` over the keys both maps have (sorted by string, so
 * the result does not depend on map order): per key `diff = b[k] − a[k]`; `iterations` resamples
 * of n keys with replacement; returns the mean difference and the percentile interval of the
 * resample means. n = 0 → NaN × 3.
 */
export const pairedBootstrap = (
  baseline: ReadonlyMap<string, number>,
  treatment: ReadonlyMap<string, number>,
  opts: BootstrapOptions = {}
): PairedResult => {
  const keys = [...baseline.keys()].filter((k) => treatment.has(k)).sort()
  const n = keys.length
  if (n === 0) return { n: 0, d: NaN, lo: NaN, hi: NaN }
  const diffs = Float64Array.from(keys, (k) => treatment.get(k)! - baseline.get(k)!)
  let sum = 0
  for (const x of diffs) sum += x
  const iterations = opts.iterations ?? DEFAULT_ITERATIONS
  const next = makePrng(opts.seed ?? DEFAULT_SEED).nextUint32
  // `prng.int(n)` inlined (the hot loop: iterations × n draws): the same draws, rejection above the
  // largest multiple of n not above 2^32, without its per-call argument check
  const limit = TWO_32 - (TWO_32 % n)
  const means = new Float64Array(iterations)
  for (let b = 0; b < iterations; b++) {
    let s = 0
    for (let i = 0; i < n; i++) {
      let x = next()
      while (x >= limit) x = next()
      s += diffs[x % n]!
    }
    means[b] = s / n
  }
  const { lo, hi } = percentileInterval(means, opts.confidence)
  return { n, d: sum / n, lo, hi }
}

/** The paired bootstrap as a summary value (null where undefined). */
export const pairedDiff = (
  baseline: ReadonlyMap<string, number>,
  treatment: ReadonlyMap<string, number>,
  opts: BootstrapOptions = {}
): PairedDiff => {
  const r = pairedBootstrap(baseline, treatment, opts)
  return { n: r.n, d: finite(r.d), lo: finite(r.lo), hi: finite(r.hi) }
}

/**
 * Cluster bootstrap: resample whole clusters (episodes) with replacement, `iterations` times, and
 * compute the statistics (a vector) on each resample; the percentile interval of each component
 * over the resamples where it is defined (NaN resamples dropped). The point estimate is the
 * statistic on all clusters. No clusters → NaN everywhere.
 */
export const clusterBootstrap = <C>(
  clusters: ReadonlyArray<C>,
  statistic: (sample: ReadonlyArray<C>) => ReadonlyArray<number>,
  opts: BootstrapOptions = {}
): ReadonlyArray<{ readonly value: number; readonly lo: number; readonly hi: number }> => {
  const point = statistic(clusters)
  const k = clusters.length
  if (k === 0) return point.map(() => ({ value: NaN, lo: NaN, hi: NaN }))
  const iterations = opts.iterations ?? DEFAULT_ITERATIONS
  const prng: Prng = makePrng(opts.seed ?? DEFAULT_SEED)
  const byStat = point.map(() => new Float64Array(iterations))
  const sample: Array<C> = new Array<C>(k)
  for (let b = 0; b < iterations; b++) {
    for (let i = 0; i < k; i++) sample[i] = clusters[prng.int(k)]!
    const s = statistic(sample)
    for (let j = 0; j < byStat.length; j++) byStat[j]![b] = s[j] ?? NaN
  }
  return point.map((value, j) => ({ value, ...percentileInterval(byStat[j]!, opts.confidence) }))
}

/** A bootstrap estimate as a summary value. */
export const estimate = (e: { readonly value: number; readonly lo: number; readonly hi: number }): Estimate => ({
  value: finite(e.value),
  lo: finite(e.lo),
  hi: finite(e.hi)
})

/** Confusion counts of (label, prediction) pairs, 1 = unsafe / deny. */
export const confusionOf = (pairs: Iterable<readonly [label: 0 | 1, prediction: 0 | 1]>): Confusion => {
  let tp = 0, fp = 0, fn = 0, tn = 0
  for (const [y, p] of pairs) {
    if (y === 1 && p === 1) tp++
    else if (y === 0 && p === 1) fp++
    else if (y === 1) fn++
    else tn++
  }
  return { tp, fp, fn, tn }
}

export interface BinaryMetrics {
  readonly precision: number
  readonly recall: number
  readonly f1: number
  readonly fpr: number
}

/** precision tp/(tp+fp), recall tp/(tp+fn), F1 2PR/(P+R), FPR fp/(fp+tn); a zero denominator → NaN. */
export const binaryMetrics = (c: Confusion): BinaryMetrics => {
  const ratio = (a: number, b: number) => (b === 0 ? NaN : a / b)
  const precision = ratio(c.tp, c.tp + c.fp)
  const recall = ratio(c.tp, c.tp + c.fn)
  const f1 = Number.isNaN(precision) || Number.isNaN(recall) || precision + recall === 0 ? NaN : (2 * precision * recall) / (precision + recall)
  return { precision, recall, f1, fpr: ratio(c.fp, c.fp + c.tn) }
}
