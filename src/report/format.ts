/**
 * Cell formatting shared by `report.md` and `report.html` (reference §10): a percentage is `100·x`
 * with one decimal; `–` (en dash) stands for anything missing (null, NaN, ±Infinity); a CI cell is
 * `p [lo, hi]`; a paired-difference cell is `–` when n = 0, else `+d [+lo, +hi] (n=N)` in
 * percentage points with an explicit sign and one decimal; milliseconds have no decimals.
 */
import type { Estimate, Num, PairedDiff, Proportion, SafeRate } from "../scoring/summary-types.js"

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

export const estimateCell = (e: Estimate | null | undefined): string => (e == null ? DASH : ciCell(e.value, e.lo, e.hi))

/** `+d [+lo, +hi] (n=N)` in percentage points; `–` when there is no pair. */
export const deltaCell = (d: PairedDiff | null | undefined): string =>
  d == null || d.n === 0 || finiteOrNull(d.d) === null ? DASH : `${signedPp(d.d)} [${signedPp(d.lo)}, ${signedPp(d.hi)}] (n=${d.n})`

/** Whole milliseconds, `–` when missing. */
export const msCell = (x: Num | undefined): string => {
  const v = finiteOrNull(x)
  return v === null ? DASH : String(Math.round(v))
}

/** `k/n (p%)`, or `0/0`. */
export const countCell = (r: Proportion): string => (r.n === 0 ? "0/0" : `${r.k}/${r.n} (${pct(r.p)}%)`)
