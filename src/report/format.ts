/**
 * Cell formatting shared by `report.md` and `report.html` (reference §10): a percentage is `100·x`
 * with one decimal; `–` (en dash) stands for anything missing (null, NaN, ±Infinity); a CI cell is
 * `p [lo, hi]`; a paired-difference cell is `–` when n = 0, else `+d [+lo, +hi] (n=N)` in
 * percentage points with an explicit sign and one decimal. An interval that cannot be estimated is
 * said so instead of printed: fewer than `MIN_PAIRS` pairs (`+d (n=N: too few pairs for an
 * interval)`), an interval of one point (`(…: no interval, …)`), a metric with no units to count
 * (`– (nothing flagged)`). Latencies carry their unit: µs below 1 ms, one decimal below 10 ms,
 * whole ms above.
 */
import { MIN_CLUSTERS } from "../scoring/agentdojo.js"
import { MIN_PAIRS } from "../scoring/headline.js"
import type { ClusteredDiff, Estimate, Num, PairedDiff, Proportion, SafeRate, Tokens } from "../scoring/summary-types.js"

export const DASH = "–"

export const finiteOrNull = (x: Num | undefined): number | null => (typeof x === "number" && Number.isFinite(x) ? x : null)

/** `100·x` with one decimal, `–` when missing. */
export const pct = (x: Num | undefined): string => {
  const v = finiteOrNull(x)
  return v === null ? DASH : (v * 100).toFixed(1)
}

/** Percentage points with an explicit sign: `+12.5`, `-3.0`, `+0.0`. */
export const signedPp = (x: Num | undefined): string => {
  const v = finiteOrNull(x)
  if (v === null) return DASH
  const s = (v * 100).toFixed(1)
  const zero = Number(s) === 0
  return zero ? "+0.0" : v > 0 ? `+${s}` : s
}

/** `p [lo, hi]` in percent; `–` when p is missing. */
export const ciCell = (p: Num | undefined, lo: Num | undefined, hi: Num | undefined): string =>
  finiteOrNull(p) === null ? DASH : `${pct(p)} [${pct(lo)}, ${pct(hi)}]`

export const rateCell = (r: Proportion | SafeRate | null | undefined): string => (r == null ? DASH : ciCell(r.p, r.lo, r.hi))

/**
 * `p [lo, hi]`; `– (why)` when the metric is undefined and `why` says why (e.g. nothing flagged);
 * `p (no interval)` when every resample gave the same value.
 */
export const estimateCell = (e: Estimate | null | undefined, why?: string): string => {
  if (e == null || finiteOrNull(e.value) === null) return why === undefined ? DASH : `${DASH} (${why})`
  if (e.lo !== null && e.lo === e.hi) return `${pct(e.value)} (no interval: every resample the same)`
  return ciCell(e.value, e.lo, e.hi)
}

/**
 * `+d [+lo, +hi] (n=N)` in percentage points; `–` when there is no pair; no interval below
 * `MIN_PAIRS` pairs or when it is a single point.
 */
export const deltaCell = (d: PairedDiff | null | undefined): string => {
  if (d == null || d.n === 0 || finiteOrNull(d.d) === null) return DASH
  if (d.n < MIN_PAIRS) return `${signedPp(d.d)} (n=${d.n}: too few pairs for an interval)`
  if (d.lo !== null && d.lo === d.hi) return `${signedPp(d.d)} (n=${d.n}: no interval, every pair alike)`
  return `${signedPp(d.d)} [${signedPp(d.lo)}, ${signedPp(d.hi)}] (n=${d.n})`
}

/**
 * A paired difference clustered by user task (AgentDojo): as `deltaCell`, with the user tasks
 * (clusters) in the parenthesis — `+d [+lo, +hi] (n=N, K user tasks)` — and no interval below
 * `MIN_CLUSTERS` user tasks.
 */
export const clusteredCell = (d: ClusteredDiff | null | undefined): string => {
  if (d == null || d.n === 0 || finiteOrNull(d.d) === null) return DASH
  if (d.n < MIN_PAIRS) return deltaCell(d)
  const tasks = `${d.clusters} user task${d.clusters === 1 ? "" : "s"}`
  if (d.clusters < MIN_CLUSTERS || d.lo === null || d.hi === null) return `${signedPp(d.d)} (n=${d.n}, ${tasks}: too few clusters for an interval)`
  if (d.lo === d.hi) return `${signedPp(d.d)} (n=${d.n}, ${tasks}: no interval, every user task alike)`
  return `${signedPp(d.d)} [${signedPp(d.lo)}, ${signedPp(d.hi)}] (n=${d.n}, ${tasks})`
}

/** A latency in ms with its unit: `0.4 µs`, `150 µs`, `4.2 ms`, `413 ms`; `< 1 µs` for 0; `–` when missing. */
export const latencyCell = (x: Num | undefined): string => {
  const v = finiteOrNull(x)
  if (v === null) return DASH
  if (v <= 0) return "< 1 µs"
  if (v < 1) {
    const us = v * 1000
    return `${us < 10 ? us.toFixed(1) : String(Math.round(us))} µs`
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v).toLocaleString("en-US")} ms`
}

/** `12,345` */
export const intCell = (n: number): string => Math.round(n).toLocaleString("en-US")

/** `1,234 in / 56 out` */
export const tokensCell = (t: Tokens | null | undefined): string => (t == null ? DASH : `${intCell(t.prompt_tokens)} in / ${intCell(t.completion_tokens)} out`)

/** USD: two significant digits below $1 (`$0.013`, `$0.00067`), else cents (`$1.08`); `–` when missing. */
export const usdCell = (x: Num | undefined): string => {
  const v = finiteOrNull(x)
  if (v === null) return DASH
  return v !== 0 && Math.abs(v) < 1 ? `$${Number(v.toPrecision(2))}` : `$${v.toFixed(2)}`
}

/** `k/n (p%)`, or `0/0`. */
export const countCell = (r: Proportion): string => (r.n === 0 ? "0/0" : `${r.k}/${r.n} (${pct(r.p)}%)`)
