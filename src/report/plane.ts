/**
 * The utility/ASR plane (the picture AgentDojo's field reads): one point per variant, x = targeted
 * attack success rate, y = utility under attack, both in percent with their 95 % intervals as
 * whiskers both ways. The top-left corner is where a defense wants to be (attacks fail, tasks still
 * get done). A standalone SVG string like the other charts (`svg.ts`): inline attributes only,
 * every text escaped, a value that is missing is listed as "–" and not drawn.
 *
 * Below `COMPACT_WIDTH` the plot is drawn square across the width, and the list of variants with
 * their values goes under it, one variant per two lines; no text is smaller than 11 units.
 */
import {
  BAND,
  clip,
  COMPACT_WIDTH,
  esc,
  fmtTick,
  GRID,
  INK,
  isFiniteNumber,
  line,
  marker,
  MUTED,
  r,
  type Rate,
  seriesColor,
  svgFrame,
  text,
  titleLines
} from "./svg.js"

export interface PlanePoint {
  readonly label: string
  /** targeted ASR in [0, 1] with its interval */
  readonly x: Rate
  /** utility under attack in [0, 1] with its interval */
  readonly y: Rate
  /** palette index for colour and marker shape */
  readonly series?: number
}

export interface PlaneOptions {
  readonly id: string
  readonly title: string
  readonly xLabel: string
  readonly yLabel: string
  readonly width?: number
}

const TICKS = [0, 20, 40, 60, 80, 100]

const pctText = (v: Rate): string => {
  if (!isFiniteNumber(v.p)) return "–"
  const ci = isFiniteNumber(v.lo) && isFiniteNumber(v.hi) ? ` [${(v.lo * 100).toFixed(1)}, ${(v.hi * 100).toFixed(1)}]` : ""
  return `${(v.p * 100).toFixed(1)}%${ci}`
}

/** `ASR 12.0% [5.1, 24.0] · utility 61.0% [50.2, 70.9] (n=40)` */
export const planeValue = (pt: PlanePoint): string => `ASR ${pctText(pt.x)} · utility ${pctText(pt.y)}${pt.x.n === undefined ? "" : ` (n=${pt.x.n})`}`

/** Grid, axes, whiskers and points inside the box [l, rr] × [t, b]. */
const plot = (points: ReadonlyArray<PlanePoint>, l: number, rr: number, t: number, b: number, opts: PlaneOptions): Array<string> => {
  const sx = (v: number) => l + (Math.max(0, Math.min(100, v)) / 100) * (rr - l)
  const sy = (v: number) => b - (Math.max(0, Math.min(100, v)) / 100) * (b - t)
  const out: Array<string> = [`<g class="axis">`]
  // the corner a defense aims for
  out.push(`<rect x="${r(l)}" y="${r(t)}" width="${r((rr - l) / 2)}" height="${r((b - t) / 2)}" fill="${BAND}"/>`)
  out.push(text(l + 6, t + 16, "attacks fail, tasks done", `fill="${MUTED}" font-size="11"`))
  for (const tk of TICKS) {
    out.push(line(sx(tk), t, sx(tk), b, `stroke="${GRID}" stroke-width="1"`))
    out.push(line(l, sy(tk), rr, sy(tk), `stroke="${GRID}" stroke-width="1"`))
    out.push(text(sx(tk), b + 16, fmtTick(tk), `text-anchor="middle" fill="${MUTED}" font-size="11"`))
    out.push(text(l - 6, sy(tk) + 4, fmtTick(tk), `text-anchor="end" fill="${MUTED}" font-size="11"`))
  }
  out.push(line(l, b, rr, b, `stroke="${MUTED}" stroke-width="1"`), line(l, t, l, b, `stroke="${MUTED}" stroke-width="1"`))
  out.push(text((l + rr) / 2, b + 34, opts.xLabel, `text-anchor="middle" font-size="12"`))
  out.push(text(0, 0, opts.yLabel, `text-anchor="middle" font-size="12" transform="translate(${r(l - 34)} ${r((t + b) / 2)}) rotate(-90)"`))
  out.push(`</g>`)
  for (const [i, pt] of points.entries()) {
    if (!isFiniteNumber(pt.x.p) || !isFiniteNumber(pt.y.p)) continue
    const color = seriesColor(pt.series ?? i)
    const cx = sx(pt.x.p * 100)
    const cy = sy(pt.y.p * 100)
    const g: Array<string> = [`<g class="point">`, `<title>${esc(`${pt.label}: ${planeValue(pt)}`)}</title>`]
    if (isFiniteNumber(pt.x.lo) && isFiniteNumber(pt.x.hi)) {
      g.push(line(sx(pt.x.lo * 100), cy, sx(pt.x.hi * 100), cy, `stroke="${color}" stroke-width="2" class="ci-x"`))
      g.push(line(sx(pt.x.lo * 100), cy - 4, sx(pt.x.lo * 100), cy + 4, `stroke="${color}" stroke-width="2"`))
      g.push(line(sx(pt.x.hi * 100), cy - 4, sx(pt.x.hi * 100), cy + 4, `stroke="${color}" stroke-width="2"`))
    }
    if (isFiniteNumber(pt.y.lo) && isFiniteNumber(pt.y.hi)) {
      g.push(line(cx, sy(pt.y.lo * 100), cx, sy(pt.y.hi * 100), `stroke="${color}" stroke-width="2" class="ci-y"`))
      g.push(line(cx - 4, sy(pt.y.lo * 100), cx + 4, sy(pt.y.lo * 100), `stroke="${color}" stroke-width="2"`))
      g.push(line(cx - 4, sy(pt.y.hi * 100), cx + 4, sy(pt.y.hi * 100), `stroke="${color}" stroke-width="2"`))
    }
    g.push(marker(pt.series ?? i, cx, cy, 6, color), `</g>`)
    out.push(...g)
  }
  return out
}

/** The list of variants under (compact) or beside (wide) the plot: marker, name, values. */
const listing = (points: ReadonlyArray<PlanePoint>, x: number, y: number, width: number, twoLines: boolean): { readonly svg: Array<string>; readonly height: number } => {
  const out: Array<string> = [`<g class="legend">`]
  const rowH = twoLines ? 36 : 20
  for (const [i, pt] of points.entries()) {
    const cy = y + i * rowH
    const drawn = isFiniteNumber(pt.x.p) && isFiniteNumber(pt.y.p)
    out.push(marker(pt.series ?? i, x + 6, cy + 6, 5, seriesColor(pt.series ?? i)))
    const value = planeValue(pt)
    if (twoLines) {
      out.push(text(x + 18, cy + 10, clip(pt.label, Math.floor((width - 20) / 6.7)), `class="row-label" font-size="12"`))
      out.push(text(x + 18, cy + 26, value, `fill="${drawn ? INK : MUTED}" font-size="11" font-variant-numeric="tabular-nums"`))
    } else {
      out.push(text(x + 18, cy + 10, `${clip(pt.label, 28)}: ${value}`, `fill="${drawn ? INK : MUTED}" font-size="12" font-variant-numeric="tabular-nums"`))
    }
  }
  out.push(`</g>`)
  return { svg: out, height: points.length * rowH }
}

/** The plane as an SVG string (see the module doc). */
export const planePlot = (points: ReadonlyArray<PlanePoint>, opts: PlaneOptions): string => {
  const width = opts.width ?? 1000
  const compact = width < COMPACT_WIDTH
  const head = titleLines(opts.title, compact ? width : 2 * width)
  const body: Array<string> = [...head.svg]
  let height: number
  if (compact) {
    const t = head.bottom + 18
    const l = 44
    const rr = width - 10
    const b = t + (rr - l)
    body.push(...plot(points, l, rr, t, b, opts))
    const list = listing(points, 0, b + 50, width, true)
    body.push(...list.svg)
    height = b + 50 + list.height + 8
  } else {
    const t = head.bottom + 18
    const l = 60
    const side = Math.min(420, width * 0.5)
    const rr = l + side
    const b = t + side
    body.push(...plot(points, l, rr, t, b, opts))
    const list = listing(points, rr + 30, t, width - rr - 30, false)
    body.push(...list.svg)
    height = Math.max(b + 44, t + list.height) + 8
  }
  if (points.length === 0) body.push(text(width / 2, head.bottom + 60, "no variants", `text-anchor="middle" fill="${MUTED}" font-style="italic"`))
  return svgFrame({
    id: opts.id,
    title: opts.title,
    desc: `Scatter plot of ${points.length} variants: targeted attack success rate (x) against utility under attack (y), in percent with 95% confidence intervals both ways.`,
    width,
    height,
    body
  })
}
