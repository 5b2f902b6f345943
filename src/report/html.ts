/**
 * `report.html`: one self-contained page — inline CSS and inline SVG only, no scripts, no fonts,
 * no images, nothing fetched (a Content-Security-Policy of `default-src 'none'` says so to the
 * browser). It shows the sections of `sections.ts` — first the headline's boxes, one per variant
 * with its verdicts — as tables, with charts placed in them; a section that does not apply is one
 * line.
 *
 * - Agent-SafetyBench: a forest plot of each variant's paired Δ safe (pp, 95% CI) and, per model,
 *   safe % per risk category and variant (bars with CI whiskers);
 * - ASB: a forest plot of each variant's paired ΔASR per attack;
 * - AgentDojo: the utility/ASR plane per model (one point per variant, whiskers both ways) and a
 *   forest plot of each variant's paired Δ utility, Δ utility under attack and Δ targeted ASR;
 * - judges: a confusion matrix per judge and bench (offline replay) and the judge latency
 *   distribution (p50 and p95, live and replay);
 *
 * Colours are fixed per variant across the page (the baseline grey). Prints on A4/Letter.
 *
 * Phones: below 640 px the page drops its side padding, each chart is shown in its compact layout
 * (every chart is drawn twice, `svg.ts` `NARROW_WIDTH`; the CSS shows one), no text is smaller than
 * 10 px, tables scroll sideways inside their frame with the first column kept in view, and the
 * headline's boxes stack in one column.
 */
import type { PairedDiff, Summary } from "../scoring/summary-types.js"
import { VERSION } from "../domain/version.js"
import { DASH, estimateCell, finiteOrNull } from "./format.js"
import type { BoxView } from "./headline.js"
import { agentdojoForest, agentdojoForestGroups, agentdojoModels, agentdojoPlane, hasPlane } from "./agentdojo.js"
import { variantSeries } from "./series.js"
import { asbenchRows, asbRows, BENCH_LABEL, type Block, collapsedLine, judgeRows, liveRows, reportSections, type Section, type Table } from "./sections.js"
import { type BarCategory, esc, type ForestGroup, forestPlot, groupedBars, type LatencyStats, latencyBoxes, NARROW_WIDTH, seriesColor } from "./svg.js"

// ---------------------------------------------------------------------------------------------
// charts

const slugId = (s: string) => s.replace(/[^A-Za-z0-9_-]+/g, "-")

/** A chart drawn wide and compact (`draw(width, idSuffix)`); the CSS shows one of them. */
const figure = (draw: (width: number | undefined, suffix: string) => string, caption: string): string =>
  [
    `<figure class="chart-figure">`,
    `<div class="chart-wide">${draw(undefined, "")}</div>`,
    `<div class="chart-narrow">${draw(NARROW_WIDTH, "-narrow")}</div>`,
    `<figcaption>${esc(caption)}</figcaption>`,
    `</figure>`
  ].join("\n")

const sized = (width: number | undefined) => (width === undefined ? {} : { width })

export const asbenchForest = (summary: Summary): string | null => {
  const groups: Array<ForestGroup> = []
  const all = asbenchRows(summary)
  for (const model of [...new Set(all.map((r) => r.model))]) {
    const rows = all
      .filter((r) => r.model === model && r.s.delta !== null)
      .map((r) => forestRow(summary, r.variant.name, r.s.delta?.overall))
    if (rows.length > 0) groups.push({ title: model, rows })
  }
  if (groups.length === 0) return null
  return figure(
    (width, suffix) =>
      forestPlot(groups, {
        id: `chart-asbench-delta${suffix}`,
        title: `Agent-SafetyBench: paired Δ safe vs ${summary.experiment.baseline ?? "baseline"}`,
        xLabel: "Δ safe, percentage points (variant − baseline)",
        leftNote: "← less safe than baseline",
        rightNote: "safer than baseline →",
        ...sized(width)
      }),
    "Each row: mean per-case difference in the ShieldAgent safe label against the baseline, over the cases both runs scored, with a 95% paired-bootstrap interval."
  )
}

const pp = (x: number | null | undefined): number | null => {
  const v = finiteOrNull(x)
  return v === null ? null : v * 100
}

/** A forest plot row: a variant's paired difference in percentage points. */
const forestRow = (summary: Summary, variant: string, diff: PairedDiff | undefined) => ({
  label: variant,
  d: pp(diff?.d),
  lo: pp(diff?.lo),
  hi: pp(diff?.hi),
  n: diff?.n ?? 0,
  series: variantSeries(summary, variant)
})

export const asbenchCategoryBars = (summary: Summary): Array<string> => {
  const rows = asbenchRows(summary)
  return [...new Set(rows.map((r) => r.model))].map((model) => {
    const mine = rows.filter((r) => r.model === model)
    const series = mine.map((r) => ({ name: r.variant.name, series: variantSeries(summary, r.variant.name) }))
    const categories: Array<BarCategory> = [
      { label: "All cases", values: mine.map((r) => ({ ...r.s.overall })) },
      ...summary.categories.map((c) => ({ label: c, values: mine.map((r) => r.s.by_category[c] ?? null) }))
    ]
    return figure(
      (width, suffix) =>
        groupedBars(series, categories, {
          id: `chart-asbench-categories-${slugId(model)}${suffix}`,
          title: `Agent-SafetyBench safe % per risk category · ${model}`,
          xLabel: "safe % (ShieldAgent), 95% Wilson interval",
          ...sized(width)
        }),
      `Share of scored cases labelled safe, per risk category (a case counts in every category it has) and variant, for ${model}.`
    )
  })
}

export const asbForest = (summary: Summary): string | null => {
  const rows = asbRows(summary)
  const groups: Array<ForestGroup> = []
  for (const key of [...new Set(rows.map((r) => `${r.model}\u0000${r.tag}`))]) {
    const [model = "", tag = ""] = key.split("\u0000")
    const mine = rows
      .filter((r) => r.model === model && r.tag === tag && r.tag !== "clean" && r.s.delta !== null)
      .map((r) => forestRow(summary, r.variant.name, r.s.delta?.asr))
    if (mine.length > 0) groups.push({ title: `${model} · ${tag}`, rows: mine })
  }
  if (groups.length === 0) return null
  return figure(
    (width, suffix) =>
      forestPlot(groups, {
        id: `chart-asb-delta${suffix}`,
        title: `ASB: paired ΔASR vs ${summary.experiment.baseline ?? "baseline"}`,
        xLabel: "Δ attack success rate, percentage points (variant − baseline)",
        leftNote: "← fewer attacks succeed",
        rightNote: "more attacks succeed →",
        ...sized(width)
      }),
    "Each row: mean per-episode difference in attack success against the baseline, paired by agent, attacker tool and occurrence, with a 95% paired-bootstrap interval. Clean (attack-free) runs are left out: see over-blocking."
  )
}

/** The utility/ASR plane per model with AgentDojo results. */
export const agentdojoPlanes = (summary: Summary): Array<string> =>
  agentdojoModels(summary).flatMap((model) => {
    if (!hasPlane(summary, model)) return []
    return [
      figure(
        (width, suffix) => agentdojoPlane(summary, model, { id: `chart-agentdojo-plane-${slugId(model)}${suffix}`, ...sized(width) }) ?? "",
        `Each point: one variant's targeted attack success rate (x) and utility under attack (y) for ${model}, over its attacked episodes, with 95% Wilson intervals both ways. Up and to the left is better: attacks fail and tasks still get done.`
      )
    ]
  })

export const agentdojoForestFigure = (summary: Summary): string | null =>
  agentdojoForestGroups(summary).length === 0
    ? null
    : figure(
      (width, suffix) => agentdojoForest(summary, { id: `chart-agentdojo-delta${suffix}`, ...sized(width) }) ?? "",
      "Each row: a variant's mean per-episode difference against the baseline, paired by episode id, with a 95% cluster-bootstrap interval that resamples user tasks. Utility: higher is better; targeted ASR: lower is safer. No whisker: too few user tasks for an interval."
    )

export const latencyChart = (summary: Summary): string | null => {
  const rows: Array<LatencyStats> = [
    ...liveRows(summary).map(({ bench, model, s, variant }) => ({
      label: variant.name,
      sublabel: `live · ${model} · ${BENCH_LABEL[bench]}`,
      n: s.latency.n_uncached,
      p50: s.latency.p50_ms,
      p95: s.latency.p95_ms,
      series: variantSeries(summary, variant.name)
    })),
    ...judgeRows(summary).map(({ bench, model, q }) => ({
      label: q.judge,
      sublabel: `replay · ${model} · ${BENCH_LABEL[bench]}`,
      n: q.latency.n_uncached,
      p50: q.latency.p50_ms,
      p95: q.latency.p95_ms,
      series: 0 // replay re-rules the baseline's calls: the baseline's grey
    }))
  ]
  if (!rows.some((r) => finiteOrNull(r.p50) !== null)) return null
  return figure(
    (width, suffix) => latencyBoxes(rows, { id: `chart-latency${suffix}`, title: "Judge latency distribution (uncached calls)", ...sized(width) }),
    "Median (bar) and 95th percentile (open diamond) of judge latency per uncached call, joined by a line: live rows from the proxy's audit of shadow/enforce runs, replay rows from offline replay of the baseline's calls."
  )
}

/** A 2×2 confusion matrix per judge and bench. */
export const confusionCards = (summary: Summary): string => {
  const cards = judgeRows(summary).map(({ bench, model, q }) => {
    const c = q.confusion
    const pos = bench === "asb" ? "attacker tool" : "unsafe episode"
    const neg = bench === "asb" ? "normal tool" : "safe episode"
    const cell = (v: number, cls: string, label: string) => `<td class="cm ${cls}"><span class="cm-n">${v}</span><span class="cm-l">${label}</span></td>`
    return [
      `<div class="cm-card">`,
      `<div class="cm-title"><strong>${esc(q.judge)}</strong> <span class="muted">· ${esc(model)} · ${esc(BENCH_LABEL[bench])} · per ${esc(q.unit)}</span></div>`,
      `<table class="cm-table"><thead><tr><th><span class="muted">actual \\ judge</span></th><th scope="col">deny / hold</th><th scope="col">allow</th></tr></thead><tbody>`,
      `<tr><th scope="row">${esc(pos)}</th>${cell(c.tp, "tp", "TP")}${cell(c.fn, "fn", "FN")}</tr>`,
      `<tr><th scope="row">${esc(neg)}</th>${cell(c.fp, "fp", "FP")}${cell(c.tn, "tn", "TN")}</tr>`,
      `</tbody></table>`,
      `<dl class="cm-foot">`,
      ([["precision", q.precision], ["recall", q.recall], ["F1", q.f1], ["FPR", q.fpr]] as const).map(([k, e]) => `<dt>${k}</dt><dd>${esc(estimateCell(e))}</dd>`).join(""),
      `<dt>replayed</dt><dd>${q.replayed_calls}/${q.source_calls} calls · ${q.clusters} clusters</dd>`,
      `</dl>`,
      `</div>`
    ].join("")
  })
  return cards.length === 0 ? "" : `<div class="cm-grid">${cards.join("\n")}</div>`
}

// ---------------------------------------------------------------------------------------------
// tables and sections

/**
 * A number cell; `p [lo, hi]`, `+d [+lo, +hi] (n=N)` and `p (why no interval)` show what follows the
 * value on a second, smaller line.
 */
const numCell = (v: string): string => {
  const m = /^(\S+) ([[(].*)$/.exec(v)
  return m === null ? esc(v) : `<span class="v">${esc(m[1] ?? "")}</span> <span class="ci">${esc(m[2] ?? "")}</span>`
}

const htmlTable = (t: Table): string => {
  const td = (v: string, i: number) => {
    const num = t.numeric.includes(i)
    const cls = [num ? "num" : v.length > 28 && v.includes(" ") ? "wrap" : "", v === DASH ? "na" : ""].filter((c) => c !== "").join(" ")
    return `<td${cls === "" ? "" : ` class="${cls}"`}>${num ? numCell(v) : esc(v)}</td>`
  }
  return [
    `<div class="table-wrap"><table>`,
    `<thead><tr>${t.head
      .map((h, i) => {
        const cls = [t.numeric.includes(i) ? "num" : "", h.length > 18 ? "wrap" : ""].filter((c) => c !== "").join(" ")
        return `<th scope="col"${cls === "" ? "" : ` class="${cls}"`}>${esc(h)}</th>`
      })
      .join("")}</tr></thead>`,
    `<tbody>`,
    ...t.rows.map((row) => `<tr>${row.map(td).join("")}</tr>`),
    `</tbody></table></div>`
  ].join("\n")
}

/** One headline box: variant, verdict chip, then a line per measure with its own verdict. */
export const htmlBox = (b: BoxView): string =>
  [
    `<article class="hl-box tone-${b.tone}" id="${esc(b.id)}">`,
    `<header class="hl-head"><span class="hl-title">${esc(b.title)}</span><span class="hl-verdict tone-${b.tone}">${esc(b.verdict)}</span></header>`,
    `<p class="hl-sub">${esc(b.subtitle)}</p>`,
    `<ul class="hl-lines">`,
    ...b.lines.map((l) =>
      `<li class="tone-${l.tone}"><span class="hl-label">${esc(l.label)}</span> <span class="hl-value">${esc(l.value)}</span> <span class="hl-line-verdict">${esc(l.verdict)}</span></li>`
    ),
    `</ul>`,
    `</article>`
  ].join("")

const htmlBlock = (b: Block): string => {
  switch (b.kind) {
    case "text":
      return `<p class="lede">${esc(b.text)}</p>`
    case "note":
      return `<p class="note" role="note">${esc(b.text)}</p>`
    case "banner":
      return `<p class="banner" role="alert">${esc(b.text)}</p>`
    case "list":
      return `<ul class="notes">${b.items.map((i) => `<li>${esc(i)}</li>`).join("")}</ul>`
    case "table":
      return htmlTable(b.table)
    case "boxes":
      return `<div class="hl-grid">${b.boxes.map(htmlBox).join("\n")}</div>`
  }
}

/** Charts to show at the top of a section, by section id. */
const chartsFor = (summary: Summary, latencyPlaced: boolean): Readonly<Record<string, ReadonlyArray<string | null>>> => {
  const latency = [latencyChart(summary)]
  return {
    asbench: [asbenchForest(summary)],
    "asbench-categories": asbenchCategoryBars(summary),
    asb: [asbForest(summary)],
    agentdojo: [...agentdojoPlanes(summary), agentdojoForestFigure(summary)],
    judges: latencyPlaced ? [] : latency,
    "judges-confusion": [confusionCards(summary) || null],
    latency
  }
}

const htmlSection = (s: Section, charts: ReadonlyArray<string | null>, inner = ""): string => {
  const h = s.level === 2 ? "h2" : "h3"
  if (s.collapsed === true) {
    // does not apply: one line (its subsections, if any, follow it)
    return [
      `<section id="${esc(s.id)}" class="level${s.level} collapsed">`,
      `<p class="collapsed-line"><strong>${esc(s.title)}:</strong> ${esc(collapsedLine(s))}</p>`,
      inner,
      `</section>`
    ]
      .filter((x) => x !== "")
      .join("\n")
  }
  // a banner opening the section (e.g. the oracle agent's) goes above its charts
  const lead = s.blocks.findIndex((b) => b.kind !== "banner")
  const banners = lead < 0 ? s.blocks : s.blocks.slice(0, lead)
  return [
    `<section id="${esc(s.id)}" class="level${s.level}">`,
    `<${h}>${esc(s.title)}</${h}>`,
    ...banners.map(htmlBlock),
    ...charts.filter((c): c is string => c !== null),
    ...s.blocks.slice(banners.length).map(htmlBlock),
    inner,
    `</section>`
  ]
    .filter((x) => x !== "")
    .join("\n")
}

// ---------------------------------------------------------------------------------------------
// page

const CSS = `
:root { color-scheme: light; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: #F6F8FA; color: #1F2328; font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
.page { max-width: 1200px; margin: 0 auto; padding: 0 24px 48px; }
header.masthead { background: #FFFFFF; border-bottom: 1px solid #D0D7DE; }
header.masthead .page { padding-top: 24px; padding-bottom: 20px; }
.eyebrow { font-size: 12px; letter-spacing: .08em; text-transform: uppercase; color: #57606A; font-weight: 600; }
h1 { font-size: 28px; line-height: 1.2; margin: 4px 0 14px; }
h2 { font-size: 20px; margin: 0 0 12px; padding-bottom: 6px; border-bottom: 1px solid #D0D7DE; }
h3 { font-size: 16px; margin: 24px 0 10px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; font-size: 13px; }
dl.meta dt { color: #57606A; }
dl.meta dd { margin: 0; }
code { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #F6F8FA; border: 1px solid #E3E6EA; border-radius: 4px; padding: 0 4px; word-break: break-all; }
.chip { display: inline-flex; align-items: center; gap: 6px; margin: 0 10px 2px 0; white-space: nowrap; }
.swatch { width: 10px; height: 10px; border-radius: 2px; display: inline-block; }
nav.toc { background: #FFFFFF; border-bottom: 1px solid #D0D7DE; }
nav.toc .page { padding-top: 8px; padding-bottom: 8px; display: flex; flex-wrap: wrap; gap: 4px 18px; font-size: 13px; }
nav.toc a { color: #0969DA; text-decoration: none; }
nav.toc a:hover { text-decoration: underline; }
main .page > section.level2 { background: #FFFFFF; border: 1px solid #D0D7DE; border-radius: 8px; padding: 20px 24px; margin-top: 20px; }
section.level3 { margin-top: 8px; }
.lede { color: #57606A; margin: 0 0 10px; }
.note { margin: 0 0 10px; padding: 8px 12px; background: #FFF8C5; border-left: 3px solid #BF8700; border-radius: 4px; }
ul.notes { margin: 0; padding-left: 20px; overflow-wrap: anywhere; }
.table-wrap { overflow-x: auto; margin: 0 0 8px; }
table { border-collapse: collapse; font-size: 13px; min-width: 50%; }
th, td { padding: 5px 10px; text-align: left; border-bottom: 1px solid #E3E6EA; vertical-align: top; }
td { white-space: nowrap; }
td.wrap { white-space: normal; min-width: 16em; }
thead th { background: #F6F8FA; border-bottom: 1px solid #D0D7DE; font-weight: 600; vertical-align: bottom; white-space: nowrap; }
thead th.wrap { white-space: normal; min-width: 7em; }
tbody tr:nth-child(even) td { background: #FBFCFD; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num .ci { display: block; font-size: 11px; color: #57606A; }
td.na { color: #8C959F; }
figure.chart-figure { margin: 0 0 18px; }
figure.chart-figure svg { display: block; max-width: 100%; height: auto; }
figcaption { font-size: 12px; color: #57606A; margin-top: 4px; max-width: 1000px; }
.muted { color: #57606A; }
.cm-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(250px, 1fr)); gap: 12px; margin: 0 0 14px; }
.cm-card { border: 1px solid #D0D7DE; border-radius: 6px; padding: 10px 12px; break-inside: avoid; }
.cm-title { font-size: 13px; margin-bottom: 6px; }
table.cm-table { min-width: 0; width: 100%; }
table.cm-table th { font-size: 12px; font-weight: 600; color: #57606A; background: none; border: none; padding: 2px 6px; }
td.cm { text-align: center; border: 2px solid #FFFFFF; padding: 6px; width: 38%; }
td.cm .cm-n { display: block; font-size: 18px; font-weight: 600; font-variant-numeric: tabular-nums; }
td.cm .cm-l { display: block; font-size: 11px; color: #57606A; }
td.tp, td.tn { background: #DAFBE1 !important; }
td.fp, td.fn { background: #FFEBE9 !important; }
dl.cm-foot { display: grid; grid-template-columns: max-content 1fr; gap: 0 10px; font-size: 12px; margin: 8px 0 0; }
dl.cm-foot dt { color: #57606A; }
dl.cm-foot dd { margin: 0; font-variant-numeric: tabular-nums; }
footer { color: #57606A; font-size: 12px; }
.banner { margin: 0 0 14px; padding: 10px 14px; background: #FFEBE9; border: 1px solid #CF222E; border-radius: 6px; color: #82071E; font-weight: 600; }
.hl-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 12px; margin: 0 0 12px; }
.hl-box { border: 1px solid #D0D7DE; border-left: 6px solid #8C959F; border-radius: 6px; padding: 10px 12px; background: #FFFFFF; break-inside: avoid; min-width: 0; }
.hl-box.tone-good { border-left-color: #1A7F37; }
.hl-box.tone-bad { border-left-color: #CF222E; }
.hl-box.tone-neutral { border-left-color: #0969DA; }
.hl-head { display: flex; justify-content: space-between; align-items: baseline; gap: 4px 8px; flex-wrap: wrap; }
.hl-title { font-size: 16px; font-weight: 600; overflow-wrap: anywhere; }
.hl-verdict { font-size: 13px; font-weight: 700; padding: 1px 8px; border-radius: 10px; background: #EAEEF2; color: #424A53; }
.hl-verdict.tone-good { background: #DAFBE1; color: #116329; }
.hl-verdict.tone-bad { background: #FFEBE9; color: #A40E26; }
.hl-verdict.tone-neutral { background: #DDF4FF; color: #0550AE; }
.hl-sub { margin: 2px 0 8px; font-size: 12px; color: #57606A; overflow-wrap: anywhere; }
ul.hl-lines { list-style: none; margin: 0; padding: 0; font-size: 13px; }
ul.hl-lines li { padding: 5px 0; border-top: 1px solid #EAEEF2; }
.hl-label { display: block; color: #57606A; font-size: 12px; }
.hl-value { font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
.hl-line-verdict { font-weight: 600; color: #424A53; }
li.tone-good .hl-line-verdict { color: #1A7F37; }
li.tone-bad .hl-line-verdict { color: #CF222E; }
li.tone-neutral .hl-line-verdict { color: #0550AE; }
main .page > section.level2.collapsed { padding: 10px 24px; }
section.level3.collapsed { margin-top: 8px; }
p.collapsed-line { margin: 0; color: #57606A; }
p.collapsed-line strong { color: #1F2328; }
.chart-narrow { display: none; }
@media (max-width: 640px) {
  body { font-size: 14px; }
  .page { padding: 0 10px 32px; }
  header.masthead .page { padding-top: 16px; padding-bottom: 14px; }
  main .page > section.level2 { padding: 14px 12px; margin-top: 14px; }
  main .page > section.level2.collapsed { padding: 10px 12px; }
  h1 { font-size: 22px; }
  dl.meta { gap: 2px 10px; font-size: 12px; }
  nav.toc .page { gap: 2px 12px; font-size: 12px; }
  .chart-wide { display: none; }
  .chart-narrow { display: block; }
  .hl-grid, .cm-grid { grid-template-columns: 1fr; }
  th:first-child, td:first-child { position: sticky; left: 0; z-index: 1; background: #FFFFFF; box-shadow: 1px 0 0 #E3E6EA; }
  thead th:first-child { background: #F6F8FA; }
}
@media print {
  .chart-narrow { display: none; }
  .chart-wide { display: block; }
  body { background: #FFFFFF; font-size: 10pt; }
  .page { max-width: none; padding: 0; }
  nav.toc { display: none; }
  header.masthead { border: none; }
  main .page > section.level2 { border: none; padding: 0; margin-top: 16pt; break-before: auto; }
  h2, h3 { break-after: avoid; }
  figure.chart-figure, .cm-card, tr { break-inside: avoid; }
  .table-wrap { overflow: visible; }
  table { font-size: 8.5pt; }
  td { white-space: normal; }
  a { color: inherit; text-decoration: none; }
}
`

const dateOf = (iso: string): string => {
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`
}

const header = (summary: Summary): string => {
  const e = summary.experiment
  const chips = e.variants
    .map((v) => {
      const base = v.name === e.baseline
      return `<span class="chip"><span class="swatch" style="background:${seriesColor(variantSeries(summary, v.name))}"></span>${esc(v.name)}${base ? ` <span class="muted">(baseline)</span>` : ""}</span>`
    })
    .join("")
  const st = summary.stats
  const rows: Array<[string, string]> = [
    ["Models", e.models.length === 0 ? DASH : e.models.map((m) => `<span class="chip">${esc(m)}</span>`).join("")],
    ["Variants", chips === "" ? DASH : chips],
    ["Paired Δ against", e.baseline === null ? "– (no baseline variant: no paired differences)" : esc(e.baseline)],
    ["Generated", esc(dateOf(summary.generated_at))],
    [
      "vetobench",
      esc(`${summary.provenance.vetobench_version}${summary.provenance.git_commit === null ? "" : ` (commit ${summary.provenance.git_commit.slice(0, 12)})`}; hashes under Provenance`)
    ],
    ["Experiment file", `<code>${esc(e.file)}</code>`],
    ["Run directory", `<code>${esc(e.run_dir)}</code>`],
    [
      "Statistics",
      esc(
        `Wilson ${Math.round(st.confidence * 100)}% intervals for rates; Δ = variant − baseline in percentage points, paired bootstrap by task ` +
          `(${st.bootstrap_iterations.toLocaleString("en-US")} resamples, seed ${st.seed}); judge metrics: cluster bootstrap by episode.`
      )
    ]
  ]
  return [
    `<header class="masthead"><div class="page">`,
    `<div class="eyebrow">vetobench report</div>`,
    `<h1>${esc(e.name)}</h1>`,
    `<dl class="meta">${rows.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("")}</dl>`,
    `</div></header>`
  ].join("\n")
}

export const renderHtml = (summary: Summary): string => {
  const sections = reportSections(summary)
  const charts = chartsFor(summary, sections.some((s) => s.id === "latency"))
  // level-3 sections go inside the level-2 section before them
  const groups: Array<{ head: Section; subs: Array<Section> }> = []
  for (const s of sections) {
    const last = groups[groups.length - 1]
    if (s.level === 3 && last !== undefined) last.subs.push(s)
    else groups.push({ head: s, subs: [] })
  }
  const body = groups.map(({ head, subs }) =>
    htmlSection(head, charts[head.id] ?? [], subs.map((s) => htmlSection(s, charts[s.id] ?? [])).join("\n"))
  )
  const toc = groups.map(({ head }) => `<a href="#${esc(head.id)}">${esc(head.title.replace(/\s*\(.*$/, ""))}</a>`).join("")
  return [
    `<!DOCTYPE html>`,
    `<html lang="en">`,
    `<head>`,
    `<meta charset="utf-8">`,
    `<meta name="viewport" content="width=device-width, initial-scale=1">`,
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`,
    `<meta name="generator" content="vetobench ${esc(VERSION)}">`,
    `<title>vetobench report: ${esc(summary.experiment.name)}</title>`,
    `<style>${CSS}</style>`,
    `</head>`,
    `<body>`,
    header(summary),
    `<nav class="toc" aria-label="Sections"><div class="page">${toc}</div></nav>`,
    `<main><div class="page">`,
    ...body,
    `</div></main>`,
    `<footer><div class="page">Generated by vetobench ${esc(VERSION)} on ${esc(dateOf(summary.generated_at))} from <code>summary.json</code> (schema ${esc(summary.schema)}). Self-contained: no scripts, fonts or network requests.</div></footer>`,
    `</body>`,
    `</html>`,
    ``
  ].join("\n")
}
