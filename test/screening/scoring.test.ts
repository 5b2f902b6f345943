/**
 * Result rulings in scoring (issue 18 §2): `type: "result"` records are never read as calls; flagged
 * results are counted per episode (final attempts) into `live.*.flagged_results` of summary.json,
 * which the schema accepts and the report shows when non-zero.
 */
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { callRecordOf, resultRecordOf, type ScreenedResult } from "../../src/scoring/files.js"
import { currentCalls } from "../../src/scoring/current.js"
import { flaggedResults } from "../../src/scoring/flagged-results.js"
import { renderMarkdown } from "../../src/report/markdown.js"
import { fullSummary } from "../report/sample-summary.js"
import { type JsonSchema, validate } from "../scoring/json-schema.js"

const resultLine = (o: Partial<Record<string, unknown>>) => ({
  schema: "vetobench/v2",
  seq: 0,
  ts: "2026-01-01T00:00:00.000Z",
  prev_hash: "0".repeat(64),
  hash: "a".repeat(64),
  type: "result",
  run_id: "r",
  request_id: "q",
  episode_id: "e1",
  session_id: null,
  principal: null,
  agent_model: "agent",
  arm: "enforce",
  judge: "inj",
  wire: "chat",
  tool_call_id: "call_1",
  position: { index: 2, block: null },
  text: "x",
  chars: 1,
  verdict: { judge: "inj" },
  flagged: true,
  replaced: true,
  fail_policy: "closed",
  screen_ms: 1,
  ...o
})

describe("result rulings in scoring", () => {
  it("a result record is read as a result and never as a call", () => {
    const line = resultLine({})
    expect(callRecordOf(line)).toBeNull()
    expect(resultRecordOf(line)).toEqual({ episode_id: "e1", session_id: null, tool_call_id: "call_1", flagged: true, replaced: true })
    expect(resultRecordOf({ ...line, type: "call" })).toBeNull()
  })

  it("flagged results per episode, final attempts only", () => {
    const recs = [
      resultLine({ episode_id: "e1", attempt: 1, flagged: true }),
      resultLine({ episode_id: "e1", attempt: 2, flagged: true, replaced: false }),
      resultLine({ episode_id: "e1", attempt: 2, flagged: true }),
      resultLine({ episode_id: "e2", flagged: false, replaced: false }),
      resultLine({ episode_id: "e3", flagged: true })
    ].map((l) => resultRecordOf(l)!)
    const current = currentCalls<ScreenedResult>(recs, () => null)
    expect(current).toHaveLength(4)
    expect(flaggedResults(current)).toEqual({ screened: 4, flagged: 3, replaced: 2, episodes_with_flagged: 2 })
    expect(flaggedResults([])).toEqual({ screened: 0, flagged: 0, replaced: 0, episodes_with_flagged: 0 })
  })

  it("summary.json's schema accepts flagged_results; the report shows them only when some were flagged", () => {
    const schema = JSON.parse(readFileSync(path.resolve("docs/summary.schema.json"), "utf8")) as JsonSchema
    const base = fullSummary()
    expect(renderMarkdown(base)).not.toContain("Flagged tool results")
    const model = Object.keys(base.live)[0]!
    const byBench = base.live[model]!
    const [variant, stats] = Object.entries(byBench.asbench)[0]!
    const withFlags = {
      ...base,
      live: { ...base.live, [model]: { ...byBench, asbench: { ...byBench.asbench, [variant]: { ...stats, flagged_results: { screened: 9, flagged: 3, replaced: 3, episodes_with_flagged: 2 } } } } }
    }
    expect(validate(schema, withFlags)).toEqual([])
    const md = renderMarkdown(withFlags)
    expect(md).toContain("Flagged tool results")
    expect(md).toMatch(/\|\s*9\s*\|\s*3\s*\|\s*3\s*\|\s*2\s*\|/)
    const zero = {
      ...base,
      live: { ...base.live, [model]: { ...byBench, asbench: { ...byBench.asbench, [variant]: { ...stats, flagged_results: { screened: 9, flagged: 0, replaced: 0, episodes_with_flagged: 0 } } } } }
    }
    expect(validate(schema, zero)).toEqual([])
    expect(renderMarkdown(zero)).not.toContain("Flagged tool results")
    expect(validate(schema, { ...withFlags, live: { [model]: { ...byBench, asbench: { [variant]: { ...stats, flagged_results: { flagged: 1 } } } } } })).not.toEqual([])
  })
})
