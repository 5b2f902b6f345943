/**
 * The report's AgentDojo section from a written run directory (test/scoring/agentdojo-fixture.ts)
 * through `vetobench report`: the oracle banner, the main, gate, per-suite and runs tables with
 * the hand-computed figures, the utility/ASR plane and the Δ forest plot in report.html,
 * summary.json valid against the schema; the section is one line when there are no AgentDojo
 * results; and the plane on a 390 px phone in headless Chromium (skipped only without a browser
 * outside CI).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { renderHtml } from "../../src/report/html.js"
import { renderMarkdown } from "../../src/report/markdown.js"
import { writeAgentdojoWorkspace } from "../scoring/agentdojo-fixture.js"
import { findChromium, inspectPage } from "../support/chromium.js"
import { runCli } from "../support/cli.js"
import { validate } from "./json-schema.js"
import { cells, section } from "./markdown-reader.js"
import { emptySummary } from "./sample-summary.js"

const SCHEMA = JSON.parse(fs.readFileSync(path.resolve("docs/summary.schema.json"), "utf8")) as { readonly [k: string]: unknown }
const TITLE = "AgentDojo (utility, utility under attack, targeted ASR; %, 95% CI)"

const rowOf = (lines: ReadonlyArray<string>, start: string) => cells(lines.find((l) => l.startsWith(start)))

describe("vetobench report with AgentDojo results", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-agentdojo-report-"))
  const ws = writeAgentdojoWorkspace(root)
  let out: ReturnType<typeof runCli>
  beforeAll(() => {
    out = runCli(["report", "-c", ws.settings, "-e", ws.experiment])
  })
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

  it("writes the three files; every run the experiment calls for has results: exit 0", () => {
    expect(out.stderr).toBe("")
    expect(out.code).toBe(0)
    for (const f of ["report.md", "summary.json", "report.html"]) expect(out.stdout).toContain(`wrote ${path.join(ws.runDir, f)}`)
    const summary: unknown = JSON.parse(fs.readFileSync(path.join(ws.runDir, "summary.json"), "utf8"))
    expect(validate(SCHEMA, summary)).toEqual([])
  })

  it("report.md: the banner, the main table with paired Δs clustered by user task, the gate, per suite, runs", () => {
    const md = fs.readFileSync(path.join(ws.runDir, "report.md"), "utf8")
    const main = section(md, `## ${TITLE}`)
    expect(main[0]).toMatch(/^> \*\*Warning\.\*\* Oracle agent: scripted ground-truth calls, not a model\./)
    const head = main.find((l) => l.startsWith("| model |"))
    expect(cells(head)).toEqual(["model", "variant", "what", "episodes", "utility", "Δ utility (paired)", "utility under attack", "Δ under attack", "targeted ASR", "ΔASR (paired)", "errors"])
    const base = rowOf(main, "| agent | baseline |")
    expect(base.slice(2, 4)).toEqual(["baseline", "22"])
    expect(base[4]).toMatch(/^87\.5 \[\d+\.\d, \d+\.\d\] \(7\/8\)$/)
    expect(base[5]).toBe("–")
    expect(base[8]).toMatch(/^100\.0 \[\d+\.\d, 100\.0\] \(14\/14\)$/)
    const enforce = rowOf(main, "| agent | enforce-rules |")
    expect(enforce[2]).toBe("enforce, judge rules")
    expect(enforce[5]).toBe("-12.5 (n=8: too few pairs for an interval)")
    expect(enforce[8]).toMatch(/^53\.8 \[.*\] \(7\/13\)$/)
    expect(enforce[9]).toMatch(/^-46\.2 \[-\d+\.\d, -\d+\.\d\] \(n=13, 7 user tasks\)$/)
    expect(enforce[10]).toBe("1")
    expect(rowOf(main, "| agent | defense-tool_filter |")[2]).toBe("AgentDojo defense tool_filter")

    const gate = section(md, "### What the gate did (live audit, final attempts)")
    const g = rowOf(gate, "| agent | enforce-rules |")
    expect(g.slice(2, 5)).toEqual(["6 of 34", "0.29", "6 of 21"])
    expect(g[5]).toMatch(/^46\.2 \[.*\] \(6\/13\)$/)
    expect(g.slice(6)).toEqual(["13 of 13", "1 (agentdojo:banking:user_task_9:none:none)", "2"])

    const suites = section(md, "### Per suite (%, paired Δ vs baseline)")
    const slack = rowOf(suites, "| agent | enforce-rules | slack |")
    expect(slack[8]).toBe("+0.0 (n=1: too few pairs for an interval)")
    expect(slack[10]).toBe("1")
    expect(rowOf(suites, "| agent | defense-tool_filter | banking |")[7]).toMatch(/^0\.0 \[0\.0, \d+\.\d\] \(0\/12\)$/)

    const runs = section(md, "### Runs: benchmark versions, agent, rows and errors")
    expect(rowOf(runs, "| agent | enforce-rules |").slice(2, 10)).toEqual(["v1.2.1", "important_instructions", "oracle (scripted)", "23", "22", "1", "1 of 22", "proxy answered 502"])

    // the live sections and the tokens table have the AgentDojo runs too
    expect(rowOf(section(md, "## Coverage (share of proposed calls ruled with status ok, live audit)"), "| agent | AgentDojo | enforce-rules |").slice(3, 5)).toEqual(["rules", "35"])
    expect(rowOf(section(md, "## Tokens"), "| agent | AgentDojo | enforce-rules | agent |").slice(5, 7)).toEqual(["2,200 in / 220 out", "6"])

    const headline = section(md, "## Headline: each variant against baseline")
    expect(headline.some((l) => /^> \*\*Warning\.\*\* Oracle agent:/.test(l))).toBe(true)
    expect(headline).toContain("**enforce-rules** — agent · enforce, judge rules — **safer**")
    expect(headline.find((l) => l.startsWith("- Δ targeted ASR, AgentDojo important_instructions (pp):"))).toMatch(/\(n=13, 7 user tasks\); attacked episodes counted 13 \/ 14 — \*\*safer\*\*$/)
  })

  it("report.html: the plane (one point per variant, whiskers both ways) and the forest plot, wide and narrow", () => {
    const html = fs.readFileSync(path.join(ws.runDir, "report.html"), "utf8")
    for (const id of ["chart-agentdojo-plane-agent", "chart-agentdojo-plane-agent-narrow", "chart-agentdojo-delta", "chart-agentdojo-delta-narrow"]) expect(html).toContain(`id="${id}"`)
    const plane = /<svg[^>]*id="chart-agentdojo-plane-agent"[\s\S]*?<\/svg>/.exec(html)![0]
    expect(plane.match(/class="point"/g)).toHaveLength(3)
    expect(plane.match(/class="ci-x"/g)).toHaveLength(3)
    expect(plane.match(/class="ci-y"/g)).toHaveLength(3)
    expect(plane).toContain("defense-tool_filter: ASR 14.3% [")
    const forest = /<svg[^>]*id="chart-agentdojo-delta"[\s\S]*?<\/svg>/.exec(html)![0]
    expect(forest).toContain("agent · Δ targeted ASR")
    expect(forest).toContain("−46.2")
    // the banner opens the section, above its charts
    const sectionHtml = /<section id="agentdojo" class="level2">[\s\S]*?<\/section>/.exec(html)![0]
    expect(sectionHtml.indexOf('<p class="banner" role="alert">Oracle agent: scripted ground-truth calls, not a model.')).toBeGreaterThan(0)
    expect(sectionHtml.indexOf('<p class="banner"')).toBeLessThan(sectionHtml.indexOf("<svg"))
  })
})

describe("a variant the experiment calls for without results", () => {
  it("the report is written, and exit 1 names the missing AgentDojo run", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-agentdojo-gap-"))
    try {
      const ws = writeAgentdojoWorkspace(root)
      fs.rmSync(path.join(ws.runDir, "agentdojo", "agent", "defense-tool_filter"), { recursive: true })
      const out = runCli(["report", "-c", ws.settings, "-e", ws.experiment])
      expect(out.code).toBe(1)
      expect(out.stderr).toMatch(/^vetobench: report: 1 of 3 runs without results \(first: AgentDojo agent \/ defense-tool_filter\); see the Notes of .*report\.md\n$/)
      expect(fs.existsSync(path.join(ws.runDir, "report.html"))).toBe(true)
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })
})

describe("without AgentDojo results", () => {
  it("the section is one line in report.md and report.html, and no AgentDojo chart is drawn", () => {
    const s = emptySummary()
    const md = renderMarkdown(s)
    expect(md).not.toContain(`## ${TITLE}`)
    expect(md).toContain(`**${TITLE}:** AgentDojo: no results (not run: no results under ${s.experiment.run_dir}/agentdojo).`)
    const html = renderHtml(s)
    expect(html).toMatch(/<section id="agentdojo" class="level2 collapsed">/)
    expect(html).not.toContain("chart-agentdojo")
    expect(html).not.toContain("Oracle agent")
  })
})

const skip = findChromium() === null && process.env.CI === undefined

describe.skipIf(skip)("the AgentDojo section on a 390 px phone (headless Chromium)", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-agentdojo-phone-"))
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

  it("the narrow plane is shown, fits the screen, all its points drawn, no text under 10 px", async () => {
    const ws = writeAgentdojoWorkspace(root)
    const out = runCli(["report", "-c", ws.settings, "-e", ws.experiment])
    expect(out.code).toBe(0)
    const page = path.join(ws.runDir, "report.html")
    const r = await inspectPage({
      url: pathToFileURL(page).href,
      width: 390,
      evaluate: `(() => {
        const svg = document.getElementById("chart-agentdojo-plane-agent-narrow")
        const wide = document.getElementById("chart-agentdojo-plane-agent")
        const box = svg.getBoundingClientRect()
        const scale = box.width / svg.viewBox.baseVal.width
        let smallest = Infinity
        for (const t of svg.querySelectorAll("text")) smallest = Math.min(smallest, parseFloat(getComputedStyle(t).fontSize) * scale)
        return {
          shown: box.width > 0 && box.height > 0,
          wideShown: wide.getBoundingClientRect().width > 0,
          left: box.left, right: box.right,
          points: svg.querySelectorAll(".point").length,
          smallest,
          overflowX: document.documentElement.scrollWidth > window.innerWidth
        }
      })()`
    })
    expect(r.errors).toEqual([])
    expect(r.requests).toEqual([pathToFileURL(page).href])
    const f = r.value as { shown: boolean; wideShown: boolean; left: number; right: number; points: number; smallest: number; overflowX: boolean }
    expect(f.shown).toBe(true)
    expect(f.wideShown).toBe(false)
    expect(f.left).toBeGreaterThanOrEqual(0)
    expect(f.right).toBeLessThanOrEqual(390)
    expect(f.points).toBe(3)
    expect(f.smallest).toBeGreaterThanOrEqual(10)
    expect(f.overflowX).toBe(false)
  }, 120_000)
})
