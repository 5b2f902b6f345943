/**
 * The report renderers on hand-made summaries (no files): markdown sections and cell formats
 * (reference §10), strict JSON, HTML self-containment and escaping, and the SVG primitives.
 */
import { describe, expect, it } from "vitest"
import { ciCell, deltaCell, estimateCell, latencyCell, pct, signedPp } from "../../src/report/format.js"
import { renderHtml } from "../../src/report/html.js"
import { strictJson } from "../../src/report/json.js"
import { renderMarkdown } from "../../src/report/markdown.js"
import { esc, forestPlot, groupedBars, latencyBoxes, niceTicks } from "../../src/report/svg.js"
import type { Summary } from "../../src/scoring/summary-types.js"
import { emptySummary, fullSummary } from "./sample-summary.js"

const headings = (md: string) => md.split("\n").filter((l) => /^#{1,3} /.test(l))

/** The table rows (cells trimmed) under the heading `title`, header row first. */
const tableUnder = (md: string, title: string): Array<Array<string>> => {
  const lines = md.split("\n")
  const at = lines.findIndex((l) => l.replace(/^#+ /, "") === title)
  expect(at, `heading ${title}`).toBeGreaterThanOrEqual(0)
  const rows: Array<Array<string>> = []
  for (const l of lines.slice(at + 1)) {
    if (/^#/.test(l)) break
    if (l.startsWith("|") && !/^\|[-:|]+\|$/.test(l)) rows.push(l.slice(1, -1).split(" | ").map((c) => c.trim()))
  }
  return rows
}

const DELTA = /^[+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\] \(n=\d+\)$/
const CI = /^\d+\.\d \[\d+\.\d, \d+\.\d\]$/

describe("cell formats (reference §10)", () => {
  it("percent with one decimal, en dash for missing", () => {
    expect(pct(0.5)).toBe("50.0")
    expect(pct(0.12345)).toBe("12.3")
    expect(pct(1)).toBe("100.0")
    expect([pct(null), pct(Number.NaN), pct(Number.POSITIVE_INFINITY)]).toEqual(["–", "–", "–"])
  })
  it("CI cells `p [lo, hi]`, Δ cells `+d [+lo, +hi] (n=N)` in percentage points", () => {
    expect(ciCell(0.5, 0.2366, 0.7634)).toBe("50.0 [23.7, 76.3]")
    expect(ciCell(null, null, null)).toBe("–")
    expect(deltaCell({ n: 40, d: 0.125, lo: -0.05, hi: 0.3 })).toBe("+12.5 [-5.0, +30.0] (n=40)")
    expect(deltaCell({ n: 12, d: -0.25, lo: -0.5, hi: 0 })).toBe("-25.0 [-50.0, +0.0] (n=12)")
    expect(deltaCell({ n: 0, d: null, lo: null, hi: null })).toBe("–")
    expect(deltaCell(null)).toBe("–")
    expect(signedPp(-0.00001)).toBe("+0.0")
  })

  it("an interval that cannot be estimated is said so: too few pairs, one point, no units", () => {
    expect(deltaCell({ n: 6, d: 1 / 3, lo: 0, hi: 0.67 })).toBe("+33.3 (n=6: too few pairs for an interval)")
    expect(deltaCell({ n: 40, d: 0, lo: 0, hi: 0 })).toBe("+0.0 (n=40: no interval, every pair alike)")
    expect(estimateCell({ value: 0, lo: 0, hi: 0 })).toBe("0.0 (no interval: every resample the same)")
    expect(estimateCell({ value: null, lo: null, hi: null }, "nothing flagged")).toBe("– (nothing flagged)")
    expect(estimateCell({ value: null, lo: null, hi: null })).toBe("–")
    expect(estimateCell({ value: 0.5, lo: 0.25, hi: 0.75 })).toBe("50.0 [25.0, 75.0]")
  })

  it("latencies carry their unit: µs below 1 ms (never `0`), one decimal below 10 ms", () => {
    expect([0.0004, 0.15, 0.9996, 4.24, 412.6, 12345, 0].map(latencyCell)).toEqual(["0.4 µs", "150 µs", "1000 µs", "4.2 ms", "413 ms", "12,345 ms", "< 1 µs"])
    expect([latencyCell(null), latencyCell(Number.NaN)]).toEqual(["–", "–"])
  })
})

describe("report.md", () => {
  const md = renderMarkdown(fullSummary())

  it("starts with the title and a blank line, then the sections in order", () => {
    expect(md.split("\n").slice(0, 2)).toEqual(["# vetobench report: pilot", ""])
    expect(headings(md).map((h) => h.replace(/ \(.*$/, "").replace(/^## Headline:.*$/, "## Headline"))).toEqual([
      "# vetobench report: pilot",
      "## Headline",
      "## Agent-SafetyBench",
      "### Per risk category",
      "### Paired Δ per risk category",
      "### By fulfillability",
      "### Episode status and infrastructure errors",
      "## ASB",
      "### Over-blocking: original-task success on clean tasks",
      "### ASR by attacker-tool aggressiveness",
      "### Rows, infrastructure errors and blocked episodes",
      "### Audit join: the proxy's call records per episode",
      "## Judge quality on baseline tool calls",
      "### Confusion tables",
      "## Live judge latency",
      "## Coverage",
      "## Per-layer contribution",
      "## Holds",
      "## Tokens and cost",
      "## Provenance",
      "## Notes"
    ])
  })

  it("the headline: one box per model × variant with its verdicts, before everything else", () => {
    const head = md.slice(md.indexOf("## Headline"), md.indexOf("## Agent-SafetyBench"))
    expect(head).toContain("**enforce-small** — qwen3-8b-test · enforce, judge small — **safer**")
    expect(head).toContain("- Δ safe, Agent-SafetyBench (pp): +21.0 [+15.0, +27.0] (n=298); scored 300 / 304 — **safer**")
    expect(head).toContain("- ΔASR, ASB direct_prompt_injection-naive (pp): -37.0 [-43.0, -31.0] (n=200); scored 200 / 204 — **safer**")
    expect(head).toContain("- over-blocking: Δ task success, ASB clean (pp): -6.0 [-12.0, +0.0] (n=200) — **no detectable over-blocking**")
    expect(head).toContain("- over-blocking: baseline-safe cases blocked, Agent-SafetyBench: 4 / 126 (3.2%) — **over-blocks**")
    expect(head).toContain("- control: none in this experiment (judge allow-all in arm enforce) — **cannot be estimated**")
    // shadow never blocks: its difference is noise, no detectable change
    expect(head).toContain("**shadow-small** — qwen3-8b-test · shadow, judge small — **no detectable change**")
    expect(head.match(/^\*\*[a-z-]+\*\* — /gm)).toHaveLength(6) // 2 models × 3 variants other than the baseline
  })

  it("tokens and cost per variant, agent and judge; provenance", () => {
    const cost = tableUnder(md, "Tokens and cost (USD)")
    expect(cost[0]).toEqual(["model", "bench", "variant", "who", "model priced", "tokens", "blocked unsafe calls", "USD", "USD per blocked unsafe call"])
    expect(cost[1]).toEqual(["qwen3-8b-test", "Agent-SafetyBench", "enforce-small", "agent", "qwen3-8b-test", "1,840,000 in / 212,000 out", "80", "$1.08", "$0.013"])
    expect(cost[2]).toEqual(["qwen3-8b-test", "Agent-SafetyBench", "enforce-small", "judge small", "judge-small", "480,000 in / 26,000 out", "80", "$0.053", "$0.00067"])
    expect(cost[3]?.slice(6)).toEqual(["–", "$1.06", "–"])
    expect(md).toContain("- vetobench 0.2.0 at commit 0123456789abcdef0123456789abcdef01234567")
    expect(md).toContain(`- settings sha256 ${"a".repeat(64)} (secrets excluded)`)
    expect(md).toContain("- ASB data /work/third_party/ASB/data/agent_task.jsonl sha256 unreadable")
  })

  it("Agent-SafetyBench: paired Δ vs the baseline although the baseline arm comes last", () => {
    const rows = tableUnder(md, "Agent-SafetyBench (ShieldAgent safety score, % safe, 95% CI)")
    expect(rows[0]).toEqual(["model", "variant", "n", "safe %", "Δ vs baseline (paired)", "episodes w/ block"])
    const byVariant = new Map(rows.slice(1).filter((r) => r[0] === "qwen3-8b-test").map((r) => [r[1], r]))
    expect([...byVariant.keys()]).toEqual(["enforce-small", "enforce-layered", "shadow-small", "baseline"])
    expect(byVariant.get("enforce-small")?.[3]).toMatch(CI)
    expect(byVariant.get("enforce-small")?.[4]).toBe("+21.0 [+15.0, +27.0] (n=298)")
    expect(byVariant.get("shadow-small")?.[4]).toMatch(DELTA)
    expect(byVariant.get("baseline")?.[4]).toBe("–")
  })

  it("per-category columns are the summary's categories; ASB, judge and latency tables have the reference's columns", () => {
    const cats = tableUnder(md, "Per risk category (safe %)")
    expect(cats[0]).toEqual(["model", "variant", ...fullSummary().categories])
    expect(cats[1]?.slice(2).every((c) => /^\d+\.\d$/.test(c))).toBe(true)
    const asb = tableUnder(md, "ASB (attack success rate, original-task success, refusal rate; %, 95% CI)")
    expect(asb[0]).toEqual(["model", "attack", "variant", "n", "ASR", "ΔASR vs baseline (paired)", "task success", "refusal"])
    expect(asb.slice(1).map((r) => r[1])).toEqual([...new Array(4).fill("clean"), ...new Array(4).fill("direct_prompt_injection-naive"), ...new Array(4).fill("observation_prompt_injection-combined_attack")])
    const judges = tableUnder(md, "Judge quality on baseline tool calls (offline replay)")
    expect(judges[0]).toEqual(["model", "bench", "judge", "precision", "recall", "F1", "FPR", "p50", "p95", "errors", "notes"])
    expect(judges.slice(1).map((r) => r[2])).toEqual(["granite", "layered", "small", "layered", "small"]) // sorted per bench
    expect(judges[1]?.[10]).toBe("per episode; 21/37 no-call episodes unsafe (unreachable); 1 unjudged episodes skipped; replay incomplete: 700/812 calls")
    expect(judges[4]?.[10]).toBe("per call; 9 unknown-tool calls skipped")
    const live = tableUnder(md, "Live judge latency (uncached calls)")
    expect(live[0]).toEqual(["model", "bench", "variant", "calls", "p50", "p95", "errors"])
    expect(live[1]).toEqual(["qwen3-8b-test", "Agent-SafetyBench", "enforce-small", "812", "390 ms", "1,209 ms", "2"])
    const join = tableUnder(md, "Audit join: the proxy's call records per episode (final attempts)")
    expect(join[0]).toEqual(["model", "attack", "variant", "calls", "joined", "episodes with calls", "unmatched episodes", "earlier-attempt calls left out"])
    expect(join[2]).toEqual(["qwen3-8b-test", "clean", "enforce-layered", "410", "404/410", "198 of 204", "2 (asb:system_admin_agent:Foo:0, asb:system_admin_agent:Foo:1)", "12"])
  })

  it("coverage, per-layer contribution and holds", () => {
    const cov = tableUnder(md, "Coverage (share of proposed calls ruled with status ok, live audit)")
    expect(cov.find((r) => r[2] === "enforce-layered" && r[3] === "value-gate")).toEqual([
      "qwen3-8b-test", "Agent-SafetyBench", "enforce-layered", "value-gate", "812", "700/700 (100.0%)", "100.0 [99.5, 100.0]", ""
    ])
    const layers = tableUnder(md, "Per-layer contribution (layered judges)")
    expect(layers.filter((r) => r[2] === "layered").map((r) => r[3])).toEqual(["injection-guard", "value-gate", "small", "injection-guard", "value-gate", "small"])
    const holds = tableUnder(md, "Holds (calls whose effective decision was hold, live audit)")
    expect(holds.find((r) => r[2] === "enforce-layered")?.slice(3)).toEqual(["812", "7", "0.9 [0.4, 1.8]"])
  })

  it("a benchmark model that was not run gets its note in the benchmark's section", () => {
    const asbPart = md.slice(md.indexOf("## ASB"), md.indexOf("### Over-blocking"))
    expect(asbPart).toContain("ASB: qwen3.8-27b was not run (no shard CSVs under /work/runs/pilot/asb/qwen3.8-27b).")
  })

  it("nothing run: a section that does not apply is one line; no tables, no latency section, no crash", () => {
    const e = renderMarkdown(emptySummary())
    expect(e).not.toMatch(/^\|/m)
    expect(e).not.toContain("Live judge latency")
    const lines = e.split("\n")
    expect(lines).toContain("**Headline: each variant against baseline:** No variant has results to compare with the baseline yet.")
    expect(lines).toContain("**Agent-SafetyBench (ShieldAgent safety score, % safe, 95% CI):** Agent-SafetyBench: not run (no gen_res.json under /work/runs/pilot/asbench).")
    expect(lines).toContain("**ASB (attack success rate, original-task success, refusal rate; %, 95% CI):** ASB: not run (no shard CSVs under /work/runs/pilot/asb).")
    expect(lines).toContain("**Judge quality on baseline tool calls (offline replay):** ASB checkout (paths.asb_dir /work/third_party/ASB) for judge quality: not found; skipped")
    expect(headings(e)).toEqual(["# vetobench report: pilot", "## Provenance", "## Notes"])
    const html = renderHtml(emptySummary())
    expect(html).toContain(`<section id="asbench" class="level2 collapsed">\n<p class="collapsed-line"><strong>Agent-SafetyBench (ShieldAgent safety score, % safe, 95% CI):</strong> Agent-SafetyBench: not run`)
  })

  it("pipes in names are escaped in table cells", () => {
    const s = fullSummary()
    const weird: Summary = { ...s, experiment: { ...s.experiment, models: ["a|b"] }, asbench: { "a|b": s.asbench["qwen3-8b-test"] ?? {} } }
    expect(renderMarkdown(weird)).toContain("| a\\|b | enforce-small |")
  })
})

describe("summary.json serialisation", () => {
  it("NaN and ±Infinity become null; indent 1; parses with JSON.parse", () => {
    const text = strictJson({ a: Number.NaN, b: Number.POSITIVE_INFINITY, c: [1, Number.NEGATIVE_INFINITY], d: { e: 0.5 }, f: 12n })
    expect(text).toBe('{\n "a": null,\n "b": null,\n "c": [\n  1,\n  null\n ],\n "d": {\n  "e": 0.5\n },\n "f": "12"\n}\n')
    expect(JSON.parse(text)).toEqual({ a: null, b: null, c: [1, null], d: { e: 0.5 }, f: "12" })
  })
  it("a whole summary: its non-finite values become null, the rest round-trips", () => {
    const s = fullSummary()
    const model = s.asbench["qwen3-8b-test"]!
    const base = model.baseline!
    const withOverall = (p: number | null, lo: number | null, hi: number | null): Summary => ({
      ...s,
      asbench: { ...s.asbench, "qwen3-8b-test": { ...model, baseline: { ...base, overall: { ...base.overall, p, lo, hi } } } }
    })
    const text = strictJson(withOverall(Number.NaN, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY))
    expect(text).not.toMatch(/NaN|Infinity/)
    const parsed = JSON.parse(text) as Summary
    expect(parsed.asbench["qwen3-8b-test"]!.baseline!.overall).toMatchObject({ p: null, lo: null, hi: null })
    expect(parsed).toEqual(JSON.parse(JSON.stringify(withOverall(null, null, null))))
  })
})

describe("report.html", () => {
  const html = renderHtml(fullSummary())

  it("is self-contained: no scripts, no external URLs, a CSP that forbids fetching", () => {
    expect(html.startsWith("<!DOCTYPE html>")).toBe(true)
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`)
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\(/i)
    // the only absolute URL is the SVG namespace
    expect([...new Set(html.match(/https?:\/\/[^\s"'<>)]+/g) ?? [])]).toEqual(["http://www.w3.org/2000/svg"])
  })

  it("has the header, every section and the charts", () => {
    expect(html).toContain("<h1>pilot</h1>")
    for (const id of ["headline", "asbench", "asbench-categories", "asb", "asb-audit", "judges", "judges-confusion", "latency", "coverage", "layers", "holds", "cost", "provenance", "notes"]) {
      expect(html).toContain(`<section id="${id}"`)
    }
    // every chart twice: wide, and compact for phones
    for (const id of ["chart-asbench-delta", "chart-asbench-categories-qwen3-8b-test", "chart-asbench-categories-qwen3-8-27b", "chart-asb-delta", "chart-latency"]) {
      expect(html).toContain(`id="${id}"`)
      expect(html).toContain(`id="${id}-narrow"`)
    }
    expect(html.match(/<article class="hl-box /g)).toHaveLength(6)
    expect(html).toContain(`<article class="hl-box tone-good" id="headline-qwen3-8b-test-enforce-small">`)
    expect(html.match(/class="cm-card"/g)).toHaveLength(5)
    expect(html).not.toMatch(/NaN|Infinity|undefined/)
  })

  it("escapes every name", () => {
    const s = fullSummary()
    const evil = `<img src=x onerror="alert(1)">&`
    const page = renderHtml({
      ...s,
      experiment: { ...s.experiment, name: evil, models: [evil] },
      asbench: { [evil]: s.asbench["qwen3-8b-test"] ?? {} },
      notes: [evil]
    })
    expect(page).not.toContain("<img")
    expect(page).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;")
  })
})

describe("SVG primitives", () => {
  const wellFormed = (svg: string) => {
    expect(svg.startsWith("<svg xmlns=\"http://www.w3.org/2000/svg\"")).toBe(true)
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true)
    expect(svg).not.toMatch(/NaN|Infinity|undefined/)
    expect(svg).toMatch(/ width="\d+" height="\d+" viewBox="0 0 \d+ \d+"/)
  }

  it("forest plot: CIs, zero line, missing rows as text, labels escaped", () => {
    const svg = forestPlot(
      [{ title: "m<1>", rows: [{ label: "a&b", d: 12.5, lo: 2, hi: 20, n: 30 }, { label: "none", d: null, lo: null, hi: null, n: 0 }, { label: "nan", d: Number.NaN, lo: 1, hi: 2, n: 3 }] }],
      { id: "f", title: "Δ", xLabel: "pp" }
    )
    wellFormed(svg)
    expect(svg).toContain("m&lt;1&gt;")
    expect(svg).toContain("a&amp;b")
    expect(svg).toContain("+12.5 [+2.0, +20.0] (n=30)")
    expect(svg.match(/– \(no pairs\)/g)).toHaveLength(2)
    expect(svg).toContain('class="zero"')
    expect(svg.match(/class="ci"/g)).toHaveLength(1)
  })

  it("compact layouts (phones): no text under 11 units, rows in two lines", () => {
    const sizes = (svg: string) => [...svg.matchAll(/font-size="(\d+(?:\.\d+)?)"/g)].map((m) => Number(m[1]))
    const forest = forestPlot([{ title: "m", rows: [{ label: "enforce-small", d: 12.5, lo: 2, hi: 20, n: 30 }] }], { id: "f", title: "Agent-SafetyBench: paired Δ safe vs baseline", xLabel: "pp", leftNote: "← less", rightNote: "more →", width: 360 })
    const bars = groupedBars([{ name: "base" }, { name: "enforce" }], [{ label: "Leak sensitive data / information", values: [{ p: 0.5, lo: 0.3, hi: 0.7 }, { p: 0.6, lo: 0.4, hi: 0.8 }] }], { id: "b", title: "bars", xLabel: "%", width: 360 })
    const lat = latencyBoxes([{ label: "small", sublabel: "live · m · ASB", n: 5, p50: 0.15, p95: 2.5 }], { id: "l", title: "latency", width: 360 })
    for (const svg of [forest, bars, lat]) {
      wellFormed(svg)
      expect(svg).toContain('viewBox="0 0 360 ')
      expect(Math.min(...sizes(svg))).toBeGreaterThanOrEqual(11)
    }
    expect(forest).toContain("+12.5 [+2.0, +20.0] (n=30)")
    expect(lat).toContain("150 µs / 2.5 (n=5)")
  })

  it("forest plot with no finite value still has an axis", () => {
    wellFormed(forestPlot([{ title: "g", rows: [] }], { id: "f", title: "t", xLabel: "x" }))
  })

  it("grouped bars: one bar per measured value, whiskers, '–' for missing", () => {
    const svg = groupedBars(
      [{ name: "base" }, { name: "enforce" }],
      [{ label: "cat", values: [{ p: 0.5, lo: 0.3, hi: 0.7, n: 10 }, null] }, { label: "other", values: [{ p: Number.NaN, lo: null, hi: null }, { p: 1, lo: 0.8, hi: 1 }] }],
      { id: "b", title: "bars", xLabel: "%" }
    )
    wellFormed(svg)
    expect(svg.match(/class="bar"/g)).toHaveLength(2)
    expect(svg).toContain("50.0%")
    expect(svg).toContain("100.0%")
  })

  it("latency: median, p95 and the line between them; '–' for missing", () => {
    const boxes = latencyBoxes(
      [{ label: "j", n: 5, p50: 100, p95: 9000 }, { label: "k", n: 0, p50: null, p95: null }],
      { id: "l", title: "latency" }
    )
    wellFormed(boxes)
    expect(boxes).toContain("(log scale)")
    expect(boxes).toContain("100 / 9,000 (n=5)")
    expect(boxes).toContain("– / – (n=0)")
    expect(boxes.match(/class="median"/g)).toHaveLength(1)
    expect(boxes.match(/class="p95"/g)).toHaveLength(2) // the row's and the legend's
    expect(boxes.match(/class="spread"/g)).toHaveLength(1)
  })

  it("nice ticks and escaping", () => {
    expect(niceTicks(0, 100, 5)).toEqual([0, 20, 40, 60, 80, 100])
    expect(niceTicks(-12, 31, 6)).toEqual([-10, 0, 10, 20, 30])
    expect(esc(`<a href="x">'&'</a>`)).toBe("&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;")
  })
})
