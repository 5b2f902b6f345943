/**
 * `report.html` in headless Chromium (Debian's `chromium`; `.ci/run` installs it): the page
 * renders, every chart's <svg> has a non-zero size and its marks, nothing is fetched, there are no
 * console errors or exceptions, the layout fits a 1280 px viewport. On a 390 px phone: the headline
 * box comes first and fits the screen, the compact charts are shown (the wide ones hidden), no
 * text is smaller than 10 px (SVG text measured at the scale it is drawn), the page does not
 * scroll sideways. Full-page screenshots are kept as test artefacts: `test/artifacts/report.png`
 * (the fixture results), `test/artifacts/report-sample.png` (a larger hand-made summary) and
 * `test/artifacts/report-390.png` (the larger one on a phone).
 *
 * Skipped only when no Chromium is found and `CI` is unset; in CI a missing browser fails.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { renderHtml } from "../../src/report/html.js"
import { findChromium, inspectPage, type PageReport } from "../support/chromium.js"
import { runCli } from "../support/cli.js"
import { fullSummary } from "./sample-summary.js"
import { makeWorkspace, type Workspace } from "./workspace.js"

const ARTIFACTS = path.resolve("test/artifacts")
const skip = findChromium() === null && process.env.CI === undefined

interface Box {
  readonly id: string
  readonly w: number
  readonly h: number
  readonly marks: number
}

interface PageFacts {
  readonly title: string
  readonly h1: string
  readonly sections: ReadonlyArray<string>
  readonly charts: ReadonlyArray<Box>
  readonly tables: number
  readonly emptyTables: number
  readonly confusionCards: number
  readonly overflowX: boolean
  readonly keyMarks: Readonly<Record<string, number>>
}

/** Runs in the page: sizes of the charts and counts of their key marks. */
const FACTS = `(() => {
  const size = (el) => { const r = el.getBoundingClientRect(); return { w: r.width, h: r.height } }
  const count = (sel) => document.querySelectorAll(sel).length
  return {
    title: document.title,
    h1: (document.querySelector("h1") || {}).textContent || "",
    sections: [...document.querySelectorAll("section[id]")].map((s) => s.id),
    charts: [...document.querySelectorAll("svg.chart")].filter((s) => size(s).w > 0).map((s) => ({ id: s.id, ...size(s), marks: s.querySelectorAll("line, rect, circle, path, text").length })),
    tables: count("table"),
    emptyTables: [...document.querySelectorAll("table")].filter((t) => { const r = size(t); return r.w === 0 || r.h === 0 }).length,
    confusionCards: count(".cm-card"),
    overflowX: document.documentElement.scrollWidth > window.innerWidth,
    keyMarks: {
      forestCi: count("svg[id$='-delta'] .ci"),
      zeroLines: count("svg[id$='-delta'] .zero"),
      bars: count("svg[id^='chart-asbench-categories']:not([id$='-narrow']) .bar"),
      medians: count("#chart-latency > .median"),
      p95: count("#chart-latency > .p95"),
      axes: count("svg.chart:not([id$='-narrow']) .axis"),
      legends: count("svg.chart:not([id$='-narrow']) .legend")
    }
  }
})()`

const facts = (r: PageReport): PageFacts => {
  expect(typeof r.value).toBe("object")
  return r.value as PageFacts
}

const expectClean = (r: PageReport, page: string) => {
  expect(r.errors).toEqual([])
  expect(r.requests).toEqual([pathToFileURL(page).href]) // nothing but the page itself
}

const expectPng = (file: string, width = 1280) => {
  const b = fs.readFileSync(file)
  expect(b.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a")
  expect(b.readUInt32BE(16)).toBe(width) // IHDR width
  expect(b.readUInt32BE(20)).toBeGreaterThan(1000) // full page, not one viewport
}

interface PhoneFacts {
  readonly viewport: number
  readonly overflowX: boolean
  /** the first headline box */
  readonly box: { readonly top: number; readonly left: number; readonly right: number; readonly verdict: string; readonly lines: number }
  readonly boxes: number
  /** the first section in the page */
  readonly first: string
  readonly visibleCharts: ReadonlyArray<string>
  /** the smallest rendered text: HTML text by its computed size, SVG text at the scale the chart is drawn */
  readonly smallest: { readonly px: number; readonly what: string }
}

/** Runs in the page at phone width. */
const PHONE = `(() => {
  const visible = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 }
  let smallest = { px: Infinity, what: "" }
  const note = (px, what) => { if (px < smallest.px) smallest = { px, what } }
  for (const el of document.body.querySelectorAll("*")) {
    if (el.closest("svg") !== null || !visible(el)) continue
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== "")
    if (own) note(parseFloat(getComputedStyle(el).fontSize), el.tagName + ": " + el.textContent.trim().slice(0, 40))
  }
  for (const svg of document.querySelectorAll("svg.chart")) {
    if (!visible(svg)) continue
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width
    for (const t of svg.querySelectorAll("text")) note(parseFloat(getComputedStyle(t).fontSize) * scale, svg.id + ": " + t.textContent.slice(0, 40))
  }
  const box = document.querySelector("#headline .hl-box")
  const r = box.getBoundingClientRect()
  return {
    viewport: window.innerWidth,
    overflowX: document.documentElement.scrollWidth > window.innerWidth,
    box: { top: r.top, left: r.left, right: r.right, verdict: box.querySelector(".hl-verdict").textContent, lines: box.querySelectorAll(".hl-lines li").length },
    boxes: document.querySelectorAll("#headline .hl-box").length,
    first: document.querySelector("main section[id]").id,
    visibleCharts: [...document.querySelectorAll("svg.chart")].filter(visible).map((s) => s.id),
    smallest
  }
})()`

describe.skipIf(skip)("report.html in headless Chromium", () => {
  let ws: Workspace
  beforeAll(() => {
    ws = makeWorkspace()
    // the fixture has one run with an unscored case on purpose: accept it
    const out = runCli(["report", "-c", ws.settings, "-e", ws.experiment, "--allow-errors", "1"])
    expect(out.code).toBe(0)
  })
  afterAll(() => ws.cleanup())

  it("the fixture report renders: charts with size and marks, no console errors, no requests; screenshot saved", async () => {
    const page = path.join(ws.runDir, "report.html")
    const shot = path.join(ARTIFACTS, "report.png")
    fs.rmSync(shot, { force: true })
    const r = await inspectPage({ url: pathToFileURL(page).href, evaluate: FACTS, screenshot: shot })
    expectClean(r, page)
    const f = facts(r)
    expect(f.title).toBe("vetobench report: fixture")
    expect(f.h1).toBe("fixture")
    expect(f.sections).toEqual(expect.arrayContaining(["asbench", "asbench-categories", "asb", "judges", "judges-confusion", "latency", "coverage", "layers", "holds", "notes"]))
    expect(f.charts.map((c) => c.id)).toEqual(["chart-asbench-delta", "chart-asbench-categories-agent", "chart-asb-delta", "chart-latency"])
    for (const c of f.charts) {
      expect(c.w, c.id).toBeGreaterThan(300)
      expect(c.h, c.id).toBeGreaterThan(100)
      expect(c.marks, c.id).toBeGreaterThan(20)
    }
    expect(f.keyMarks).toEqual({ forestCi: 2, zeroLines: 2, bars: 6, medians: 4, p95: 4, axes: 4, legends: 2 })
    expect(f.confusionCards).toBe(3)
    expect(f.tables).toBeGreaterThan(10)
    expect(f.emptyTables).toBe(0)
    expect(f.overflowX).toBe(false)
    expect(r.contentSize.height).toBeGreaterThan(1500)
    expectPng(shot)
  }, 120_000)

  it("a larger report (two models, four variants, layered judge) renders as cleanly; screenshot saved", async () => {
    const dir = fs.mkdtempSync(path.join(ws.root, "sample-"))
    const page = path.join(dir, "report.html")
    fs.writeFileSync(page, renderHtml(fullSummary()))
    const shot = path.join(ARTIFACTS, "report-sample.png")
    const r = await inspectPage({ url: pathToFileURL(page).href, evaluate: FACTS, screenshot: shot })
    expectClean(r, page)
    const f = facts(r)
    expect(f.charts.map((c) => c.id)).toEqual([
      "chart-asbench-delta",
      "chart-asbench-categories-qwen3-8b-test",
      "chart-asbench-categories-qwen3-8-27b",
      "chart-asb-delta",
      "chart-latency"
    ])
    for (const c of f.charts) expect(c.w > 0 && c.h > 0, c.id).toBe(true)
    expect(f.keyMarks.bars).toBe(2 * 9 * 4) // models × (all + 8 categories) × variants
    expect(f.confusionCards).toBe(5)
    expect(f.overflowX).toBe(false)
    expectPng(shot)
  }, 120_000)

  it("on a 390 px phone: the headline first and within the screen, compact charts, no text under 10 px; screenshot saved", async () => {
    const dir = fs.mkdtempSync(path.join(ws.root, "phone-"))
    const page = path.join(dir, "report.html")
    fs.writeFileSync(page, renderHtml(fullSummary()))
    const shot = path.join(ARTIFACTS, "report-390.png")
    fs.rmSync(shot, { force: true })
    const r = await inspectPage({ url: pathToFileURL(page).href, evaluate: PHONE, screenshot: shot, width: 390 })
    expectClean(r, page)
    const f = r.value as PhoneFacts
    expect(f.viewport).toBe(390)
    expect(f.overflowX).toBe(false)
    expect(f.first).toBe("headline")
    expect(f.boxes).toBe(6)
    // the first box is on the first screen, whole: its verdict and every line readable without scrolling sideways
    expect(f.box.left).toBeGreaterThanOrEqual(0)
    expect(f.box.right).toBeLessThanOrEqual(390)
    expect(f.box.top).toBeLessThan(900)
    expect(f.box.verdict).toBe("safer")
    expect(f.box.lines).toBeGreaterThanOrEqual(4)
    expect(f.visibleCharts.length).toBeGreaterThanOrEqual(5)
    expect(f.visibleCharts.every((id) => id.endsWith("-narrow"))).toBe(true)
    expect(f.smallest.px, f.smallest.what).toBeGreaterThanOrEqual(10)
    expectPng(shot, 390)
  }, 120_000)
})
