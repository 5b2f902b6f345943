/**
 * `vetobench report -e FILE` on the fixture results (a scratch copy): the three files, the
 * markdown sections and cells of reference §10, `summary.json` strict and valid against
 * `docs/summary.schema.json`, and one-line notes (never a crash) when a benchmark was not run or
 * the ASB checkout is absent.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli } from "../support/cli.js"
import { validate } from "./json-schema.js"
import { cells, section } from "./markdown-reader.js"
import { makeWorkspace, type Workspace } from "./workspace.js"

const SCHEMA: unknown = JSON.parse(fs.readFileSync(path.resolve("docs/summary.schema.json"), "utf8"))
const schema = SCHEMA as { readonly [k: string]: unknown }

const report = (ws: Workspace) => runCli(["report", "-c", ws.settings, "-e", ws.experiment])

/** The one line of a section that does not apply (`**<title>:** <why>`), without the title. */
const collapsed = (md: string, title: string): string | undefined =>
  md.split("\n").find((l) => l.startsWith(`**${title}:** `))?.slice(title.length + 6)

describe("vetobench report on the fixture results", () => {
  let ws: Workspace
  let out: ReturnType<typeof runCli>
  beforeAll(() => {
    ws = makeWorkspace()
    out = report(ws)
  })
  afterAll(() => ws.cleanup())

  it("writes report.md, summary.json and report.html into the run directory and prints their paths", () => {
    // the fixture's baseline has a case without a valid label (id 8): the files are written, then exit 1 with one line
    expect(out.stderr).toBe(
      `vetobench: report: 1 run with unscored cases (first: Agent-SafetyBench agent / baseline: 1 of 7 cases without a ShieldAgent label); see the Notes of ${path.join(ws.runDir, "report.md")}\n`
    )
    expect(out.code).toBe(1)
    const files = ["report.md", "summary.json", "report.html"].map((f) => path.join(ws.runDir, f))
    expect(out.stdout.split("\n").slice(0, 3)).toEqual(files.map((f) => `wrote ${f}`))
    for (const f of files) expect(fs.statSync(f).size).toBeGreaterThan(500)
  })

  it("report.md: the headline, the sections of reference §10, then coverage, per-layer contribution, holds, tokens, provenance and notes", () => {
    const md = fs.readFileSync(path.join(ws.runDir, "report.md"), "utf8")
    expect(md.startsWith("# vetobench report: fixture\n\n")).toBe(true)
    const h2 = md.split("\n").filter((l) => l.startsWith("## "))
    expect(h2).toEqual([
      "## Headline: each variant against baseline",
      "## Agent-SafetyBench (ShieldAgent safety score, % safe, 95% CI)",
      "## ASB (attack success rate, original-task success, refusal rate; %, 95% CI)",
      "## Judge quality on baseline tool calls (offline replay)",
      "## Live judge latency (uncached calls)",
      "## Coverage (share of proposed calls ruled with status ok, live audit)",
      "## Per-layer contribution (layered judges)",
      "## Holds (calls whose effective decision was hold, live audit)",
      "## Tokens",
      "## Provenance"
    ])
    expect(md).toContain("### Per risk category (safe %)")
    expect(collapsed(md, "Notes")).toBe("Nothing was skipped.")
    // the fixture has 6 paired cases: too few for a verdict, and the headline says so
    const head = section(md, "## Headline: each variant against baseline")
    expect(head[0]).toBe("**enforce-guard** — agent · enforce, judge guard — **cannot be estimated**")
    expect(head[1]).toBe("- Δ safe, Agent-SafetyBench (pp): +33.3 (n=6: too few pairs for an interval); scored 7 / 8 — **cannot be estimated**")
  })

  it("Agent-SafetyBench: Δ vs baseline for enforce-guard though `arms` lists enforce first; baseline row –", () => {
    const md = fs.readFileSync(path.join(ws.runDir, "report.md"), "utf8")
    const rows = section(md, "## Agent-SafetyBench (ShieldAgent safety score, % safe, 95% CI)")
    expect(rows[0]).toBe("| model | variant | n | safe % | Δ vs baseline (paired) | episodes w/ block |")
    const enforce = cells(rows.find((r) => r.startsWith("| agent | enforce-guard |")))
    const base = cells(rows.find((r) => r.startsWith("| agent | baseline |")))
    expect(enforce[2]).toBe("7")
    expect(enforce[3]).toMatch(/^\d+\.\d \[\d+\.\d, \d+\.\d\]$/)
    expect(enforce[4]).toBe("+33.3 (n=6: too few pairs for an interval)")
    expect(base[4]).toBe("–")
    const cats = section(md, "### Per risk category (safe %)")
    expect(cats[0]).toBe("| model | variant | Lead to property loss | Leak sensitive data / information |")
  })

  it("ASB, judge quality and live latency tables", () => {
    const md = fs.readFileSync(path.join(ws.runDir, "report.md"), "utf8")
    const asb = section(md, "## ASB (attack success rate, original-task success, refusal rate; %, 95% CI)")
    expect(asb[0]).toBe("| model | attack | variant | n | ASR | ΔASR vs baseline (paired) | task success | refusal |")
    expect(asb.slice(2).map((r) => cells(r).slice(1, 3).join(" "))).toEqual([
      "direct_prompt_injection-naive enforce-guard",
      "direct_prompt_injection-naive baseline",
      "clean enforce-guard",
      "clean baseline"
    ])
    expect(cells(asb[2])[5]).toBe("-50.0 (n=4: too few pairs for an interval)")
    const judges = section(md, "## Judge quality on baseline tool calls (offline replay)")
    const asbGuard = cells(judges.find((r) => r.startsWith("| agent | ASB | guard |")))
    expect(asbGuard[10]).toMatch(/^per call; 1 unknown-tool calls skipped/)
    const asbenchGuard = cells(judges.find((r) => r.startsWith("| agent | Agent-SafetyBench | guard |")))
    expect(asbenchGuard[10]).toMatch(/^per episode; \d+\/\d+ no-call episodes unsafe \(unreachable\)/)
    expect(asbenchGuard[7]).toBe("80 ms")
    const stack = cells(judges.find((r) => r.startsWith("| agent | Agent-SafetyBench | stack |")))
    expect(stack[3]).toBe("100.0 (no interval: every resample the same)")
    const live = section(md, "## Live judge latency (uncached calls)")
    expect(live[0]).toBe("| model | bench | variant | calls | p50 | p95 | errors |")
    expect(live).toHaveLength(3)
  })

  it("summary.json parses with JSON.parse, is indented by 1 and validates against docs/summary.schema.json", () => {
    const text = fs.readFileSync(path.join(ws.runDir, "summary.json"), "utf8")
    expect(text).not.toMatch(/NaN|Infinity/)
    expect(text.split("\n")[1]).toMatch(/^ "schema": /)
    const summary: unknown = JSON.parse(text)
    expect(validate(schema, summary)).toEqual([])
    // and the validator does reject a broken one
    const broken = { ...(summary as Record<string, unknown>), stats: "no" }
    expect(validate(schema, broken).length).toBeGreaterThan(0)
  })
})

describe("vetobench report when a benchmark is missing", () => {
  it("Agent-SafetyBench not run and the ASB checkout absent: one-line notes, valid summary.json, exit 1 naming the runs without results", () => {
    const ws = makeWorkspace({ remove: ["run/asbench", "asb-checkout"] })
    try {
      const out = report(ws)
      expect(out.stderr).toMatch(/^vetobench: report: 2 of 6 runs without results \(first: Agent-SafetyBench agent \/ enforce-guard\); see the Notes of .*report\.md\n$/)
      expect(out.code).toBe(1)
      const md = fs.readFileSync(path.join(ws.runDir, "report.md"), "utf8")
      const asbench = collapsed(md, "Agent-SafetyBench (ShieldAgent safety score, % safe, 95% CI)")
      expect(asbench).toMatch(/Agent-SafetyBench/)
      expect(asbench).toMatch(/not run/)
      // ASB results are still reported; judge quality on ASB calls needs the checkout: a note
      expect(section(md, "## ASB (attack success rate, original-task success, refusal rate; %, 95% CI)")[0]).toMatch(/^\| model \| attack/)
      expect(collapsed(md, "Judge quality on baseline tool calls (offline replay)")).toMatch(/checkout/i)
      expect(section(md, "## Notes").length).toBeGreaterThanOrEqual(2)
      const summary: unknown = JSON.parse(fs.readFileSync(path.join(ws.runDir, "summary.json"), "utf8"))
      expect(validate(schema, summary)).toEqual([])
      expect(fs.existsSync(path.join(ws.runDir, "report.html"))).toBe(true)
    } finally {
      ws.cleanup()
    }
  })

  it("nothing run at all: every section is a note", () => {
    const ws = makeWorkspace({ remove: ["run", "audit"], asbDir: "/nonexistent/ASB" })
    try {
      const out = report(ws)
      expect(out.code).toBe(1)
      expect(out.stderr).toMatch(/^vetobench: report: 6 of 6 runs without results \(first: /)
      const md = fs.readFileSync(path.join(ws.runDir, "report.md"), "utf8")
      expect(md).not.toMatch(/^\|/m)
      expect(collapsed(md, "Agent-SafetyBench (ShieldAgent safety score, % safe, 95% CI)")).toMatch(/not run/)
      expect(collapsed(md, "ASB (attack success rate, original-task success, refusal rate; %, 95% CI)")).toMatch(/ASB/)
      expect(collapsed(md, "Headline: each variant against baseline")).toBe("No variant has results to compare with the baseline yet.")
      expect(validate(schema, JSON.parse(fs.readFileSync(path.join(ws.runDir, "summary.json"), "utf8")))).toEqual([])
    } finally {
      ws.cleanup()
    }
  })

  it("an unreadable experiment file is one line and exit 1", () => {
    const out = runCli(["report", "-c", "/nonexistent/settings.yaml", "-e", "/nonexistent/exp.yaml"])
    expect(out.code).toBe(1)
    expect(out.stderr.trim().split("\n")).toHaveLength(1)
    expect(out.stderr).toMatch(/^vetobench: /)
  })
})
