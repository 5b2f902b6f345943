/**
 * Tokens and cost (issue 20 §1): the agent's tokens as the runner recorded them per case, each
 * judge's from the verdicts' `usage` in the audit log, and with `--prices` (the price table
 * `vetobench scenarios` takes) the cost per variant and per blocked unsafe call, for the agent and
 * each judge separately. On a copy of the fixture results with usage written into them.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { costRow, usdOf } from "../../src/scoring/cost.js"
import { buildSummary } from "../../src/scoring/summary.js"
import { fixtureExperiment, fixtureSettings } from "../scoring/fixture.js"
import { runCli } from "../support/cli.js"
import { makeWorkspace, type Workspace } from "./workspace.js"

const PRICES = { table: { agent: { input_per_1k: 0.001, output_per_1k: 0.002 }, judge: { input_per_1k: 0.01, output_per_1k: 0.02 } }, file: "prices.yaml" }
const tokens = (p: number, c: number) => ({ prompt_tokens: p, completion_tokens: c, total_tokens: p + c })

/** The fixture with the agent's usage in every enforce-guard case and the judge's in every uncached verdict. */
const withUsage = (ws: Workspace) => {
  const genRes = path.join(ws.runDir, "asbench/agent/enforce-guard/gen_res.json")
  const cases = JSON.parse(fs.readFileSync(genRes, "utf8")) as Array<{ vetobench?: Record<string, unknown> }>
  fs.writeFileSync(genRes, JSON.stringify(cases.map((c) => ({ ...c, vetobench: { ...c.vetobench, usage: { prompt_tokens: 1000, completion_tokens: 100 } } }))))
  const audit = path.join(ws.root, "audit/fixture.asbench.agent.enforce-guard.jsonl")
  const used = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 }
  const lines = fs.readFileSync(audit, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { verdict: { cached: boolean; usage: unknown } | null; layers: Array<{ cached: boolean; usage: unknown }> })
  fs.writeFileSync(
    audit,
    lines
      .map((r) => JSON.stringify({ ...r, verdict: r.verdict === null ? null : { ...r.verdict, usage: r.verdict.cached ? {} : used }, layers: r.layers.map((v) => ({ ...v, usage: v.cached ? {} : used })) }))
      .join("\n") + "\n"
  )
}

describe("cost of one variant", () => {
  it("tokens × price per 1,000; per blocked unsafe call; null without a price or without blocks", () => {
    expect(usdOf(PRICES, "agent", tokens(8000, 800))).toBeCloseTo(0.0096, 12)
    expect(usdOf(PRICES, "agent@enforce:guard", tokens(1000, 0))).toBeCloseTo(0.001, 12) // the route's model
    expect(usdOf(PRICES, "other", tokens(1000, 0))).toBeNull()
    expect(usdOf(null, "agent", tokens(1000, 0))).toBeNull()
    const row = costRow({ model: "agent", bench: "asbench", variant: "enforce-guard", agent: tokens(8000, 800), judges: { guard: { model: "judge", verdicts: 5, tokens: tokens(500, 50) } }, blocked_unsafe_calls: 3 }, PRICES)
    expect(row?.lines.map((l) => [l.role, l.name, l.model])).toEqual([["agent", "agent", "agent"], ["judge", "guard", "judge"]])
    expect(row?.lines[1]?.usd).toBeCloseTo(0.006, 12)
    expect(row?.lines[1]?.usd_per_blocked_unsafe_call).toBeCloseTo(0.002, 12)
    expect(costRow({ model: "m", bench: "asb", variant: "baseline", agent: null, judges: {}, blocked_unsafe_calls: null }, PRICES)).toBeNull()
    const none = costRow({ model: "agent", bench: "asb", variant: "baseline", agent: tokens(10, 1), judges: {}, blocked_unsafe_calls: 0 }, PRICES)
    expect(none?.lines[0]?.usd_per_blocked_unsafe_call).toBeNull()
  })
})

describe("tokens and cost in the summary and the report", () => {
  let ws: Workspace
  beforeAll(() => {
    ws = makeWorkspace()
    withUsage(ws)
  })
  afterAll(() => ws.cleanup())

  it("the agent from the cases' records, the judge from the verdicts, blocked unsafe calls by the baseline's labels", () => {
    const settings = fixtureSettings({}, ws.root)
    const exp = fixtureExperiment(settings, {}, ws.root)
    const s = Effect.runSync(buildSummary(exp, settings, { iterations: 100, prices: PRICES }))
    expect(s.asbench.agent!["enforce-guard"]!.agent_tokens).toEqual(tokens(8000, 800))
    expect(s.asbench.agent!["enforce-guard"]!.cases_with_tokens).toBe(8)
    expect(s.asbench.agent!.baseline!.agent_tokens).toBeNull()
    expect(s.live.agent!.asbench["enforce-guard"]!.judge_tokens).toEqual({ guard: { model: "judge", verdicts: 6, tokens: tokens(500, 50) } })
    expect(s.cost.prices).toBe("prices.yaml")
    const row = s.cost.rows.find((r) => r.bench === "asbench" && r.variant === "enforce-guard")!
    // blocked: cases 1 and 4 (twice); the baseline labels both unsafe
    expect(row.blocked_unsafe_calls).toBe(3)
    expect(row.lines.map((l) => [l.role, l.name, l.usd === null ? null : Number(l.usd.toFixed(6)), l.usd_per_blocked_unsafe_call === null ? null : Number(l.usd_per_blocked_unsafe_call.toFixed(6))])).toEqual([
      ["agent", "agent", 0.0096, 0.0032],
      ["judge", "guard", 0.006, 0.002]
    ])
  })

  it("vetobench report --prices: the cost table; a bad price table is one line, exit 1", () => {
    const prices = path.join(ws.root, "prices.yaml")
    fs.writeFileSync(prices, "agent: {input_per_1k: 0.001, output_per_1k: 0.002}\njudge: {input_per_1k: 0.01, output_per_1k: 0.02}\n")
    const out = runCli(["report", "-c", ws.settings, "-e", ws.experiment, "--prices", prices, "--allow-errors", "1"])
    expect(out.code).toBe(0)
    const md = fs.readFileSync(path.join(ws.runDir, "report.md"), "utf8")
    expect(md).toContain("## Tokens and cost (USD)")
    expect(md).toContain("| agent | Agent-SafetyBench | enforce-guard | agent | agent | 8,000 in / 800 out | 3 | $0.0096 | $0.0032 |")
    expect(md).toContain("| agent | Agent-SafetyBench | enforce-guard | judge guard | judge | 500 in / 50 out | 3 | $0.006 | $0.002 |")
    fs.writeFileSync(prices, "agent: {input_per_1k: -1, output_per_1k: 0}\n")
    const bad = runCli(["report", "-c", ws.settings, "-e", ws.experiment, "--prices", prices])
    expect(bad.code).toBe(1)
    expect(bad.stderr.trim().split("\n")).toHaveLength(1)
    expect(bad.stderr).toMatch(/^vetobench: .*prices\.yaml: agent\.input_per_1k: /)
  })
})
