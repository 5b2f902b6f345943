/**
 * Chart primitives for `report.html`: pure functions from plain numbers to standalone SVG strings
 * (inline attributes, no CSS, no scripts, no external fonts). Every piece of text is escaped.
 *
 * - `forestPlot`: paired differences with their 95% CIs, in percentage points, around a zero line;
 * - `groupedBars`: horizontal bars (percent, with CI whiskers) per category, one bar per series;
 * - `latencyBoxes`: one row per judge: median bar and p95 marker joined by a line.
 *
 * Missing values (null, NaN, ±Infinity) are drawn as "–", never as a mark at zero. Colours are the
 * Okabe–Ito palette (distinguishable with the common colour-vision deficiencies), and the markers
 * differ in shape as well as colour.
 *
 * Below `COMPACT_WIDTH` (a phone: the report draws each chart twice and shows this one under
 * 640 px) each chart lays its rows out in two lines — label and value text above, the mark below
 * across the whole width — and no text is smaller than 11 units, so drawn at about its own width
 * the smallest text stays at least 10 px.
 */

// ---------------------------------------------------------------------------------------------
// text and numbers

/** Escape text for XML/HTML content and attribute values. */
export const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === '"' ? "&quot;" : "&#39;"))

export const isFiniteNumber = (x: number | null | undefined): x is number => typeof x === "number" && Number.isFinite(x)

/** Okabe–Ito, without yellow (too light on white). Index 0 is a neutral grey for the baseline. */
export const PALETTE: ReadonlyArray<string> = ["#6B6B6B", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]

export const seriesColor = (i: number): string => PALETTE[((i % PALETTE.length) + PALETTE.length) % PALETTE.length] ?? "#000000"

export const INK = "#1F2328"
export const MUTED = "#57606A"
export const GRID = "#E3E6EA"
export const BAND = "#F6F8FA"
const FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"

/** Round for SVG coordinates (two decimals, no "-0"). */
export const r = (x: number): string => {
  const v = Math.round(x * 100) / 100
  return Object.is(v, -0) ? "0" : String(v)
}

const signed1 = (x: number): string => {
  const s = Math.abs(x).toFixed(1)
  return `${x < 0 && Number(s) !== 0 ? "−" : "+"}${s}`
}

/** 1–2–5 steps: about `count` ticks covering [lo, hi]. */
export const niceTicks = (lo: number, hi: number, count = 6): Array<number> => {
  if (!(hi > lo)) return [lo]
  const raw = (hi - lo) / Math.max(1, count)
  const mag = 10 ** Math.floor(Math.log10(raw))
  const norm = raw / mag
  const step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 2.5 ? 2.5 : norm <= 5 ? 5 : 10) * mag
  const out: Array<number> = []
  for (let t = Math.ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) out.push(Math.abs(t) < step * 1e-9 ? 0 : Number(t.toPrecision(12)))
  return out
}

/** Extend [lo, hi] outwards to multiples of the nice step. */
const niceDomain = (lo: number, hi: number, count = 6): [number, number] => {
  if (!(hi > lo)) return [lo - 1, hi + 1]
  const ticks = niceTicks(lo, hi, count)
  const step = ticks.length > 1 ? (ticks[1] ?? 0) - (ticks[0] ?? 0) : 1
  return [Math.floor(lo / step + 1e-9) * step, Math.ceil(hi / step - 1e-9) * step]
}

export const fmtTick = (t: number): string => {
  const s = Number(t.toPrecision(6))
  return Math.abs(s) >= 1000 ? s.toLocaleString("en-US") : String(s).replace("-", "−")
}

/** Charts narrower than this use the compact (two-line row) layout. */
export const COMPACT_WIDTH = 600

/** The compact layout's width: a 390 px phone's content area, drawn at about 1:1. */
export const NARROW_WIDTH = 360

/** A latency in ms for a chart label: `150 µs`, `4.2`, `413` (ms). */
const msText = (v: number): string =>
  v < 1 ? `${v * 1000 < 10 ? (v * 1000).toFixed(1) : Math.round(v * 1000)} µs` : v < 10 ? v.toFixed(1) : Math.round(v).toLocaleString("en-US")

/** Crude width of text at a font size (system sans ≈ 0.56 em per character). */
export const textWidth = (s: string, size: number): number => s.length * size * 0.56

/** Shorten to at most `max` characters with an ellipsis. */
export const clip = (s: string, max: number): string => (s.length <= max ? s : `${s.slice(0, Math.max(1, max - 1))}…`)

/** Split a label into at most two lines of about `max` characters, at a space if possible. */
const wrap2 = (s: string, max: number): Array<string> => {
  if (s.length <= max) return [s]
  const cut = s.lastIndexOf(" ", max)
  const at = cut > max / 3 ? cut : max
  return [s.slice(0, at).trimEnd(), clip(s.slice(at).trimStart(), max)]
}

export interface Frame {
  readonly id: string
  readonly title: string
  readonly desc: string
  readonly width: number
  readonly height: number
  readonly body: ReadonlyArray<string>
}

export const svgFrame = (f: Frame): string =>
  [
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="${esc(f.id)}" role="img" aria-labelledby="${esc(f.id)}-t ${esc(f.id)}-d"` +
      ` width="${r(f.width)}" height="${r(f.height)}" viewBox="0 0 ${r(f.width)} ${r(f.height)}"` +
      ` font-family="${esc(FONT)}" font-size="12" fill="${INK}">`,
    `<title id="${esc(f.id)}-t">${esc(f.title)}</title>`,
    `<desc id="${esc(f.id)}-d">${esc(f.desc)}</desc>`,
    `<rect width="100%" height="100%" fill="#FFFFFF"/>`,
    ...f.body,
    `</svg>`
  ].join("\n")

export const text = (x: number, y: number, s: string, attrs = ""): string => `<text x="${r(x)}" y="${r(y)}"${attrs === "" ? "" : ` ${attrs}`}>${esc(s)}</text>`

export const line = (x1: number, y1: number, x2: number, y2: number, attrs: string): string =>
  `<line x1="${r(x1)}" y1="${r(y1)}" x2="${r(x2)}" y2="${r(y2)}" ${attrs}/>`

/** Marker shapes by series index, so series differ by shape as well as colour. */
export const marker = (i: number, x: number, y: number, size: number, color: string): string => {
  const s = size
  switch (((i % 4) + 4) % 4) {
    case 0:
      return `<rect x="${r(x - s)}" y="${r(y - s)}" width="${r(2 * s)}" height="${r(2 * s)}" fill="${color}" stroke="#FFFFFF" stroke-width="1"/>`
    case 1:
      return `<circle cx="${r(x)}" cy="${r(y)}" r="${r(s * 1.1)}" fill="${color}" stroke="#FFFFFF" stroke-width="1"/>`
    case 2:
      return `<path d="M${r(x)} ${r(y - s * 1.3)} L${r(x + s * 1.3)} ${r(y)} L${r(x)} ${r(y + s * 1.3)} L${r(x - s * 1.3)} ${r(y)} Z" fill="${color}" stroke="#FFFFFF" stroke-width="1"/>`
    default:
      return `<path d="M${r(x)} ${r(y - s * 1.3)} L${r(x + s * 1.25)} ${r(y + s * 0.9)} L${r(x - s * 1.25)} ${r(y + s * 0.9)} Z" fill="${color}" stroke="#FFFFFF" stroke-width="1"/>`
  }
}

interface Legend {
  readonly svg: Array<string>
  readonly height: number
}

/** Legend entries (swatch + name) laid out in rows starting at (x, y) within `width`. */
interface LegendEntry {
  readonly name: string
  readonly color: string
  readonly shape?: number
  /** draws the swatch centred at (x, y) instead of a marker */
  readonly glyph?: (x: number, y: number) => string
}

const legend = (entries: ReadonlyArray<LegendEntry>, x: number, y: number, width: number): Legend => {
  const out: Array<string> = [`<g class="legend">`]
  let cx = x
  let cy = y
  for (const [i, e] of entries.entries()) {
    const label = clip(e.name, 40)
    const w = 18 + textWidth(label, 12) + 18
    if (cx > x && cx + w > x + width) {
      cx = x
      cy += 18
    }
    out.push(e.glyph === undefined ? marker(e.shape ?? i, cx + 6, cy + 6, 5, e.color) : e.glyph(cx + 6, cy + 6), text(cx + 16, cy + 10, label))
    cx += w
  }
  out.push(`</g>`)
  return { svg: out, height: entries.length === 0 ? 0 : cy - y + 18 }
}

/** A linear x-axis with grid lines over [top, bottom], ticks and labels below. */
const xAxis = (ticks: ReadonlyArray<number>, sx: (v: number) => number, top: number, bottom: number, label: string, fmt: (t: number) => string = fmtTick): Array<string> => {
  const out: Array<string> = [`<g class="axis">`]
  for (const t of ticks) {
    const x = sx(t)
    out.push(line(x, top, x, bottom, `stroke="${GRID}" stroke-width="1"`))
    out.push(line(x, bottom, x, bottom + 4, `stroke="${MUTED}" stroke-width="1"`))
    out.push(text(x, bottom + 16, fmt(t), `text-anchor="middle" fill="${MUTED}" font-size="11"`))
  }
  const left = sx(ticks[0] ?? 0)
  const right = sx(ticks[ticks.length - 1] ?? 0)
  out.push(line(Math.min(left, right), bottom, Math.max(left, right), bottom, `stroke="${MUTED}" stroke-width="1"`))
  out.push(text((left + right) / 2, bottom + 34, label, `text-anchor="middle" fill="${INK}" font-size="12"`))
  out.push(`</g>`)
  return out
}

// ---------------------------------------------------------------------------------------------
// forest plot

export interface ForestRow {
  readonly label: string
  /** second, smaller line under the label (e.g. the model) */
  readonly sublabel?: string
  /** paired difference and its CI, in percentage points; null/NaN = not computed */
  readonly d: number | null
  readonly lo: number | null
  readonly hi: number | null
  /** pairs */
  readonly n: number
  /** palette index for colour and marker shape */
  readonly series?: number
}

export interface ForestGroup {
  readonly title: string
  readonly rows: ReadonlyArray<ForestRow>
}

export interface ForestOptions {
  readonly id: string
  readonly title: string
  readonly xLabel: string
  /** text under the left / right end of the axis, e.g. "← less safe", "safer →" */
  readonly leftNote?: string
  readonly rightNote?: string
  readonly width?: number
}

/** Paired Δ per row with its CI as a horizontal whisker, a dashed zero line and the values as text. */
export const forestPlot = (groups: ReadonlyArray<ForestGroup>, opts: ForestOptions): string => {
  const width = opts.width ?? 1000
  if (width < COMPACT_WIDTH) return forestCompact(groups, { ...opts, width })
  const rowH = 30
  const groupH = 26
  const labelW = 230
  const valueW = 200
  const top = 34
  const plotL = labelW + 10
  const plotR = width - valueW - 10
  const rows = groups.flatMap((g) => g.rows)
  const ends = rows.flatMap((row) => [row.d, row.lo, row.hi]).filter(isFiniteNumber)
  const [dlo, dhi] = niceDomain(Math.min(0, ...ends), Math.max(0, ...ends), 6)
  const lo = ends.length === 0 ? -10 : dlo
  const hi = ends.length === 0 ? 10 : dhi
  const ticks = niceTicks(lo, hi, 6)
  const sx = (v: number) => plotL + ((v - lo) / (hi - lo)) * (plotR - plotL)
  const bodyH = groups.reduce((h, g) => h + groupH + Math.max(1, g.rows.length) * rowH, 0)
  const bottom = top + bodyH
  const hasNotes = opts.leftNote !== undefined || opts.rightNote !== undefined
  const height = bottom + 44 + (hasNotes ? 18 : 0)
  const body: Array<string> = [
    text(0, 16, opts.title, `font-size="14" font-weight="600"`),
    text(width, 16, "Δ [95% CI] (n pairs)", `text-anchor="end" fill="${MUTED}" font-size="11"`)
  ]
  body.push(...xAxis(ticks, sx, top, bottom, opts.xLabel, (t) => (t === 0 ? "0" : signed1(t).replace(".0", ""))))
  let y = top
  for (const g of groups) {
    body.push(text(0, y + 18, g.title, `font-size="12" font-weight="600" fill="${MUTED}"`))
    y += groupH
    if (g.rows.length === 0) {
      body.push(text(plotL, y + rowH / 2 + 4, "no rows", `fill="${MUTED}" font-style="italic"`))
      y += rowH
      continue
    }
    for (const [i, row] of g.rows.entries()) {
      const cy = y + rowH / 2
      if (i % 2 === 0) body.push(`<rect x="0" y="${r(y)}" width="${r(width)}" height="${rowH}" fill="${BAND}"/>`)
      const color = seriesColor(row.series ?? 1)
      const labelY = row.sublabel === undefined ? cy + 4 : cy - 1
      body.push(text(8, labelY, clip(row.label, 34), `class="row-label"`))
      if (row.sublabel !== undefined) body.push(text(8, cy + 11, clip(row.sublabel, 40), `fill="${MUTED}" font-size="10"`))
      const ok = isFiniteNumber(row.d) && row.n > 0
      if (ok && isFiniteNumber(row.lo) && isFiniteNumber(row.hi)) {
        body.push(line(sx(row.lo), cy, sx(row.hi), cy, `stroke="${color}" stroke-width="2" class="ci"`))
        body.push(line(sx(row.lo), cy - 5, sx(row.lo), cy + 5, `stroke="${color}" stroke-width="2"`))
        body.push(line(sx(row.hi), cy - 5, sx(row.hi), cy + 5, `stroke="${color}" stroke-width="2"`))
      }
      if (ok) body.push(marker(row.series ?? 1, sx(row.d as number), cy, 5, color))
      const value = ok
        ? `${signed1(row.d as number)} [${isFiniteNumber(row.lo) ? signed1(row.lo) : "–"}, ${isFiniteNumber(row.hi) ? signed1(row.hi) : "–"}] (n=${row.n})`
        : "– (no pairs)"
      body.push(text(width - 4, cy + 4, value, `text-anchor="end" font-variant-numeric="tabular-nums"${ok ? "" : ` fill="${MUTED}"`}`))
      y += rowH
    }
  }
  if (lo <= 0 && hi >= 0) body.push(line(sx(0), top, sx(0), bottom, `stroke="${INK}" stroke-width="1" stroke-dasharray="4 3" class="zero"`))
  if (hasNotes) {
    if (opts.leftNote !== undefined) body.push(text(plotL, height - 4, opts.leftNote, `fill="${MUTED}" font-size="11"`))
    if (opts.rightNote !== undefined) body.push(text(plotR, height - 4, opts.rightNote, `text-anchor="end" fill="${MUTED}" font-size="11"`))
  }
  return svgFrame({
    id: opts.id,
    title: opts.title,
    desc: `Forest plot of ${rows.length} paired differences in percentage points with 95% confidence intervals.`,
    width,
    height,
    body
  })
}

const forestValue = (row: ForestRow): string => {
  const ok = isFiniteNumber(row.d) && row.n > 0
  return ok
    ? `${signed1(row.d as number)} [${isFiniteNumber(row.lo) ? signed1(row.lo) : "–"}, ${isFiniteNumber(row.hi) ? signed1(row.hi) : "–"}] (n=${row.n})`
    : "– (no pairs)"
}

/** The title in one or two lines of at most `max` characters; returns the lines and the y below them. */
export const titleLines = (title: string, width: number): { readonly svg: Array<string>; readonly bottom: number } => {
  const lines = wrap2(title, Math.floor(width / (14 * 0.56)))
  return { svg: lines.map((l, i) => text(0, 16 + i * 18, l, `font-size="14" font-weight="600"`)), bottom: 16 + (lines.length - 1) * 18 }
}

/** The forest plot for a phone: label and value on one line, the whisker across the width below. */
const forestCompact = (groups: ReadonlyArray<ForestGroup>, opts: ForestOptions & { readonly width: number }): string => {
  const width = opts.width
  const rowH = 46
  const groupH = 24
  const plotL = 12
  const plotR = width - 12
  const rows = groups.flatMap((g) => g.rows)
  const ends = rows.flatMap((row) => [row.d, row.lo, row.hi]).filter(isFiniteNumber)
  const [dlo, dhi] = niceDomain(Math.min(0, ...ends), Math.max(0, ...ends), 4)
  const lo = ends.length === 0 ? -10 : dlo
  const hi = ends.length === 0 ? 10 : dhi
  const ticks = niceTicks(lo, hi, 4)
  const sx = (v: number) => plotL + ((v - lo) / (hi - lo)) * (plotR - plotL)
  const head = titleLines(opts.title, width)
  const top = head.bottom + 12
  const bodyH = groups.reduce((h, g) => h + groupH + Math.max(1, g.rows.length) * rowH, 0)
  const bottom = top + bodyH
  const hasNotes = opts.leftNote !== undefined || opts.rightNote !== undefined
  const height = bottom + 44 + (hasNotes ? 36 : 0)
  const body: Array<string> = [...head.svg]
  body.push(...xAxis(ticks, sx, top, bottom, opts.xLabel, (t) => (t === 0 ? "0" : signed1(t).replace(".0", ""))))
  let y = top
  for (const g of groups) {
    body.push(text(0, y + 17, clip(g.title, Math.floor(width / 7)), `font-size="12" font-weight="600" fill="${MUTED}"`))
    y += groupH
    if (g.rows.length === 0) {
      body.push(text(plotL, y + 20, "no rows", `fill="${MUTED}" font-style="italic"`))
      y += rowH
      continue
    }
    for (const [i, row] of g.rows.entries()) {
      if (i % 2 === 0) body.push(`<rect x="0" y="${r(y)}" width="${r(width)}" height="${rowH}" fill="${BAND}"/>`)
      const color = seriesColor(row.series ?? 1)
      const value = forestValue(row)
      const ok = value !== "– (no pairs)"
      body.push(text(4, y + 16, clip(row.label, Math.max(8, Math.floor((width - textWidth(value, 11) - 16) / 6.7))), `class="row-label"`))
      body.push(text(width - 4, y + 16, value, `text-anchor="end" font-size="11" font-variant-numeric="tabular-nums"${ok ? "" : ` fill="${MUTED}"`}`))
      const cy = y + 32
      if (ok && isFiniteNumber(row.lo) && isFiniteNumber(row.hi)) {
        body.push(line(sx(row.lo), cy, sx(row.hi), cy, `stroke="${color}" stroke-width="2" class="ci"`))
        body.push(line(sx(row.lo), cy - 5, sx(row.lo), cy + 5, `stroke="${color}" stroke-width="2"`))
        body.push(line(sx(row.hi), cy - 5, sx(row.hi), cy + 5, `stroke="${color}" stroke-width="2"`))
      }
      // the zero line runs through the mark's line only, never through the text above it
      if (lo <= 0 && hi >= 0) body.push(line(sx(0), cy - 9, sx(0), cy + 9, `stroke="${INK}" stroke-width="1" stroke-dasharray="3 2" class="zero"`))
      if (ok) body.push(marker(row.series ?? 1, sx(row.d as number), cy, 5, color))
      y += rowH
    }
  }
  if (opts.leftNote !== undefined) body.push(text(plotL, bottom + 60, opts.leftNote, `fill="${MUTED}" font-size="11"`))
  if (opts.rightNote !== undefined) body.push(text(plotR, bottom + 76, opts.rightNote, `text-anchor="end" fill="${MUTED}" font-size="11"`))
  return svgFrame({
    id: opts.id,
    title: opts.title,
    desc: `Forest plot of ${rows.length} paired differences in percentage points with 95% confidence intervals.`,
    width,
    height,
    body
  })
}

// ---------------------------------------------------------------------------------------------
// grouped horizontal bars

/** A rate in [0, 1] with its CI; null/NaN parts are missing. */
export interface Rate {
  readonly p: number | null
  readonly lo: number | null
  readonly hi: number | null
  readonly n?: number
}

export interface BarSeries {
  readonly name: string
  /** palette index */
  readonly series?: number
}

export interface BarCategory {
  readonly label: string
  /** one per series, in series order; null = not measured */
  readonly values: ReadonlyArray<Rate | null>
}

export interface BarOptions {
  readonly id: string
  readonly title: string
  readonly xLabel: string
  readonly width?: number
}

/** Rates in percent as horizontal bars, grouped by category, CI whiskers, value text at the right. */
export const groupedBars = (series: ReadonlyArray<BarSeries>, categories: ReadonlyArray<BarCategory>, opts: BarOptions): string => {
  const width = opts.width ?? 1000
  if (width < COMPACT_WIDTH) return barsCompact(series, categories, { ...opts, width })
  const labelW = 230
  const valueW = 64
  const barH = 12
  const barGap = 3
  const groupGap = 12
  const plotL = labelW + 10
  const plotR = width - valueW - 8
  const lg = legend(series.map((s, i) => ({ name: s.name, color: seriesColor(s.series ?? i), shape: s.series ?? i })), 0, 26, width)
  const top = 26 + lg.height + 8
  const groupH = Math.max(1, series.length) * (barH + barGap) - barGap + groupGap
  const bottom = top + Math.max(1, categories.length) * groupH
  const height = bottom + 44
  const sx = (v: number) => plotL + (Math.max(0, Math.min(100, v)) / 100) * (plotR - plotL)
  const body: Array<string> = [text(0, 16, opts.title, `font-size="14" font-weight="600"`), ...lg.svg]
  body.push(...xAxis(niceTicks(0, 100, 5), sx, top, bottom, opts.xLabel))
  if (categories.length === 0) body.push(text(plotL, top + groupH / 2, "no categories", `fill="${MUTED}" font-style="italic"`))
  for (const [ci, cat] of categories.entries()) {
    const y0 = top + ci * groupH + groupGap / 2
    if (ci % 2 === 0) body.push(`<rect x="0" y="${r(top + ci * groupH)}" width="${r(plotL - 4)}" height="${r(groupH)}" fill="${BAND}"/>`)
    const lines = wrap2(cat.label, 36)
    const mid = y0 + (groupH - groupGap) / 2
    lines.forEach((l, k) => body.push(text(8, mid + 4 + (k - (lines.length - 1) / 2) * 14, l, `class="row-label"`)))
    body.push(...barRows(series, cat, { y0, barH, barGap, plotL, width, sx, baseline: 2 }))
  }
  return svgFrame({
    id: opts.id,
    title: opts.title,
    desc: `Grouped bar chart: ${categories.length} categories × ${series.length} series, percent with 95% confidence intervals.`,
    width,
    height,
    body
  })
}

/** One category's bars, one per series from `y0` down: the bar with its interval whisker and value, or dashes when there is no value. */
const barRows = (
  series: ReadonlyArray<BarSeries>,
  cat: BarCategory,
  g: { readonly y0: number; readonly barH: number; readonly barGap: number; readonly plotL: number; readonly width: number; readonly sx: (v: number) => number; readonly baseline: number }
): Array<string> => {
  const { barH, plotL, width, sx } = g
  const out: Array<string> = []
  for (const [si, s] of series.entries()) {
    const v = cat.values[si] ?? null
    const y = g.y0 + si * (barH + g.barGap)
    const textY = y + barH - g.baseline
    if (v === null || !isFiniteNumber(v.p)) {
      out.push(text(plotL + 4, textY, "–", `fill="${MUTED}" font-size="11"`))
      out.push(text(width - 4, textY, "–", `text-anchor="end" fill="${MUTED}" font-size="11"`))
      continue
    }
    const p = v.p * 100
    out.push(
      `<rect class="bar" x="${r(plotL)}" y="${r(y)}" width="${r(Math.max(1, sx(p) - plotL))}" height="${barH}" fill="${seriesColor(s.series ?? si)}" fill-opacity="0.85">` +
        `<title>${esc(`${cat.label} · ${s.name}: ${p.toFixed(1)}%${v.n === undefined ? "" : ` (n=${v.n})`}`)}</title></rect>`
    )
    if (isFiniteNumber(v.lo) && isFiniteNumber(v.hi)) {
      const cy = y + barH / 2
      out.push(line(sx(v.lo * 100), cy, sx(v.hi * 100), cy, `stroke="${INK}" stroke-width="1.2"`))
      out.push(line(sx(v.lo * 100), cy - 3, sx(v.lo * 100), cy + 3, `stroke="${INK}" stroke-width="1.2"`))
      out.push(line(sx(v.hi * 100), cy - 3, sx(v.hi * 100), cy + 3, `stroke="${INK}" stroke-width="1.2"`))
    }
    out.push(text(width - 4, textY, `${p.toFixed(1)}%`, `text-anchor="end" font-size="11" font-variant-numeric="tabular-nums"`))
  }
  return out
}

/** Grouped bars for a phone: each category's label on its own line above its bars. */
const barsCompact = (series: ReadonlyArray<BarSeries>, categories: ReadonlyArray<BarCategory>, opts: BarOptions & { readonly width: number }): string => {
  const width = opts.width
  const valueW = 52
  const barH = 12
  const barGap = 3
  const labelH = 18
  const groupGap = 10
  const plotL = 4
  const plotR = width - valueW - 6
  const head = titleLines(opts.title, width)
  const lg = legend(series.map((s, i) => ({ name: s.name, color: seriesColor(s.series ?? i), shape: s.series ?? i })), 0, head.bottom + 10, width)
  const top = head.bottom + 10 + lg.height + 8
  const groupH = labelH + Math.max(1, series.length) * (barH + barGap) - barGap + groupGap
  const bottom = top + Math.max(1, categories.length) * groupH
  const height = bottom + 44
  const sx = (v: number) => plotL + (Math.max(0, Math.min(100, v)) / 100) * (plotR - plotL)
  const body: Array<string> = [...head.svg, ...lg.svg]
  body.push(...xAxis(niceTicks(0, 100, 4), sx, top, bottom, opts.xLabel))
  if (categories.length === 0) body.push(text(plotL, top + 20, "no categories", `fill="${MUTED}" font-style="italic"`))
  for (const [ci, cat] of categories.entries()) {
    const y0 = top + ci * groupH
    if (ci % 2 === 0) body.push(`<rect x="0" y="${r(y0)}" width="${r(width)}" height="${r(groupH)}" fill="${BAND}"/>`)
    body.push(text(4, y0 + 13, clip(cat.label, Math.floor(width / 6.7)), `class="row-label" font-size="12"`))
    body.push(...barRows(series, cat, { y0: y0 + labelH, barH, barGap, plotL, width, sx, baseline: 1 }))
  }
  return svgFrame({
    id: opts.id,
    title: opts.title,
    desc: `Grouped bar chart: ${categories.length} categories × ${series.length} series, percent with 95% confidence intervals.`,
    width,
    height,
    body
  })
}

// ---------------------------------------------------------------------------------------------
// latency

export interface LatencyStats {
  readonly label: string
  readonly sublabel?: string
  /** calls the statistics are over */
  readonly n: number
  readonly p50: number | null
  readonly p95: number | null
  readonly series?: number
}

export interface LatencyOptions {
  readonly id: string
  readonly title: string
  readonly xLabel?: string
  readonly width?: number
}

/** Pick a scale: log10 when the positive values span more than 20×, else linear from 0. */
const latencyScale = (values: ReadonlyArray<number>, l: number, rr: number) => {
  const pos = values.filter((v) => v > 0)
  const vmax = pos.length === 0 ? 1 : Math.max(...pos)
  const vmin = pos.length === 0 ? 1 : Math.min(...pos)
  if (vmax / vmin > 20) {
    // 1-2-5 ticks from the decade below the smallest value to the first tick at or above the largest
    const ticks: Array<number> = []
    for (let e = Math.floor(Math.log10(vmin)); ticks.length === 0 || (ticks[ticks.length - 1] ?? 0) < vmax; e++) {
      for (const m of [1, 2, 5]) if ((ticks[ticks.length - 1] ?? 0) < vmax) ticks.push(m * 10 ** e)
    }
    const lo = Math.log10(ticks[0] ?? 1)
    const hi = Math.log10(ticks[ticks.length - 1] ?? 10)
    return { log: true, ticks, sx: (v: number) => l + ((Math.log10(Math.max(v, 10 ** lo)) - lo) / (hi - lo)) * (rr - l) }
  }
  const [, dhi] = niceDomain(0, vmax, 6)
  return { log: false, ticks: niceTicks(0, dhi, 6), sx: (v: number) => l + (Math.max(0, v) / dhi) * (rr - l) }
}

const p95Glyph = (x: number, y: number): string =>
  `<path class="p95" d="M${r(x)} ${r(y - 6)} L${r(x + 6)} ${r(y)} L${r(x)} ${r(y + 6)} L${r(x - 6)} ${r(y)} Z" fill="#FFFFFF" stroke="${INK}" stroke-width="1.5"/>`

/** One row per judge/variant: median bar, p95 diamond joined by a line, values as text. */
export const latencyBoxes = (rows: ReadonlyArray<LatencyStats>, opts: LatencyOptions): string => {
  const width = opts.width ?? 1000
  if (width < COMPACT_WIDTH) return latencyCompact(rows, { ...opts, width })
  const rowH = 32
  const labelW = 260
  const valueW = 170
  const plotL = labelW + 10
  const plotR = width - valueW - 10
  const lg = legend(
    [
      { name: "median (p50)", color: INK, glyph: (x: number, y: number) => line(x, y - 6, x, y + 6, `stroke="${INK}" stroke-width="2.5"`) },
      { name: "95th percentile", color: INK, glyph: (x: number, y: number) => p95Glyph(x, y) },
      { name: "p50 to p95", color: MUTED, glyph: (x: number, y: number) => line(x - 6, y, x + 6, y, `stroke="${MUTED}" stroke-width="4" stroke-linecap="round" stroke-opacity="0.6"`) }
    ],
    0,
    26,
    width
  )
  const top = 26 + lg.height + 8
  const bottom = top + Math.max(1, rows.length) * rowH
  const height = bottom + 44
  const values = rows.flatMap((s) => [s.p50, s.p95]).filter(isFiniteNumber)
  const sc = latencyScale(values, plotL, plotR)
  const body: Array<string> = [
    text(0, 16, opts.title, `font-size="14" font-weight="600"`),
    text(width, 16, "p50 / p95 ms (calls)", `text-anchor="end" fill="${MUTED}" font-size="11"`),
    ...lg.svg
  ]
  body.push(...xAxis(sc.ticks, sc.sx, top, bottom, opts.xLabel ?? `latency, ms${sc.log ? " (log scale)" : ""}`))
  if (rows.length === 0) body.push(text(plotL, top + rowH / 2 + 4, "no judged calls", `fill="${MUTED}" font-style="italic"`))
  for (const [i, s] of rows.entries()) {
    const y = top + i * rowH
    const cy = y + rowH / 2
    if (i % 2 === 0) body.push(`<rect x="0" y="${r(y)}" width="${r(width)}" height="${rowH}" fill="${BAND}"/>`)
    body.push(text(8, s.sublabel === undefined ? cy + 4 : cy - 1, clip(s.label, 38), `class="row-label"`))
    if (s.sublabel !== undefined) body.push(text(8, cy + 11, clip(s.sublabel, 46), `fill="${MUTED}" font-size="10"`))
    const color = seriesColor(s.series ?? 1)
    if (isFiniteNumber(s.p50) && isFiniteNumber(s.p95)) {
      body.push(line(sc.sx(s.p50), cy, sc.sx(s.p95), cy, `stroke="${color}" stroke-width="4" stroke-linecap="round" stroke-opacity="0.6" class="spread"`))
    }
    if (isFiniteNumber(s.p50)) body.push(line(sc.sx(s.p50), cy - 9, sc.sx(s.p50), cy + 9, `stroke="${INK}" stroke-width="2.5" class="median"`))
    if (isFiniteNumber(s.p95)) body.push(p95Glyph(sc.sx(s.p95), cy))
    body.push(text(width - 4, cy + 4, latencyValue(s), `text-anchor="end" font-variant-numeric="tabular-nums"`))
  }
  return svgFrame({
    id: opts.id,
    title: opts.title,
    desc: `Latency of ${rows.length} judges: median and 95th percentile in milliseconds.`,
    width,
    height,
    body
  })
}

/** `150 µs / 1.2 (n=40)`: p50 / p95 in ms (µs below 1 ms). */
const latencyValue = (s: LatencyStats): string => {
  const ms = (v: number | null) => (isFiniteNumber(v) ? msText(v) : "–")
  return `${ms(s.p50)} / ${ms(s.p95)} (n=${s.n})`
}

/** Latency for a phone: label and values above, sublabel, then the mark across the width. */
const latencyCompact = (rows: ReadonlyArray<LatencyStats>, opts: LatencyOptions & { readonly width: number }): string => {
  const width = opts.width
  const rowH = 58
  const plotL = 12
  const plotR = width - 12
  const head = titleLines(opts.title, width)
  const lg = legend(
    [
      { name: "median (p50)", color: INK, glyph: (x: number, y: number) => line(x, y - 6, x, y + 6, `stroke="${INK}" stroke-width="2.5"`) },
      { name: "95th percentile", color: INK, glyph: (x: number, y: number) => p95Glyph(x, y) }
    ],
    0,
    head.bottom + 10,
    width
  )
  const top = head.bottom + 10 + lg.height + 8
  const bottom = top + Math.max(1, rows.length) * rowH
  const height = bottom + 44
  const values = rows.flatMap((s) => [s.p50, s.p95]).filter(isFiniteNumber)
  const sc = latencyScale(values, plotL, plotR)
  const ticks = sc.ticks.length > 6 ? sc.ticks.filter((_, i) => i % 2 === 0) : sc.ticks
  const body: Array<string> = [...head.svg, ...lg.svg]
  body.push(...xAxis(ticks, sc.sx, top, bottom, opts.xLabel ?? `latency, ms${sc.log ? " (log scale)" : ""}`))
  if (rows.length === 0) body.push(text(plotL, top + 20, "no judged calls", `fill="${MUTED}" font-style="italic"`))
  for (const [i, s] of rows.entries()) {
    const y = top + i * rowH
    if (i % 2 === 0) body.push(`<rect x="0" y="${r(y)}" width="${r(width)}" height="${rowH}" fill="${BAND}"/>`)
    const value = latencyValue(s)
    body.push(text(4, y + 15, clip(s.label, Math.max(8, Math.floor((width - textWidth(value, 11) - 16) / 6.7))), `class="row-label"`))
    body.push(text(width - 4, y + 15, value, `text-anchor="end" font-size="11" font-variant-numeric="tabular-nums"`))
    if (s.sublabel !== undefined) body.push(text(4, y + 29, clip(s.sublabel, Math.floor(width / 6.2)), `fill="${MUTED}" font-size="11"`))
    const cy = y + 45
    const color = seriesColor(s.series ?? 1)
    if (isFiniteNumber(s.p50) && isFiniteNumber(s.p95)) {
      body.push(line(sc.sx(s.p50), cy, sc.sx(s.p95), cy, `stroke="${color}" stroke-width="4" stroke-linecap="round" stroke-opacity="0.6" class="spread"`))
    }
    if (isFiniteNumber(s.p50)) body.push(line(sc.sx(s.p50), cy - 8, sc.sx(s.p50), cy + 8, `stroke="${INK}" stroke-width="2.5" class="median"`))
    if (isFiniteNumber(s.p95)) body.push(p95Glyph(sc.sx(s.p95), cy))
  }
  return svgFrame({
    id: opts.id,
    title: opts.title,
    desc: `Latency of ${rows.length} judges: median and 95th percentile in milliseconds.`,
    width,
    height,
    body
  })
}
