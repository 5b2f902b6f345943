/**
 * bench/rule-judge — decisions per second of the native `rule` judge, in process.
 *
 * The accounts-payable policy (toolgate.md §4.1) decides the twelve calls (§4.2) in a cycle. After
 * a warm-up, decisions run in batches of 1,000 timed with `process.hrtime.bigint()`; the figure is
 * the median batch / 1,000 (p99 batch alongside). Paths measured:
 *   - `decide` full mode (the evaluator alone),
 *   - `decide` scope mode,
 *   - `judge.rule` (the judge as the gate calls it, from a running fiber: header lookup, decide,
 *     verdict with latency; one `Effect.runSync` per batch, not per call).
 * Results go to docs/performance.md with --write (between the rule-judge markers).
 *
 *   npx tsx bench/rule-judge.ts [--decisions 1000000] [--warmup 200000] [--write]
 */
import { readFileSync, writeFileSync } from "node:fs"
import { cpus } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import type { JudgeContext } from "../judges/Judge.js"
import { decide, type DecideOptions } from "../judges/rule/evaluate.js"
import { makeRuleJudge } from "../judges/rule/kind.js"
import { loadPolicyFile } from "../judges/rule/policy.js"
import type { ToolCallView } from "../src/domain/tool-call.js"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const POLICY = "test/fixtures/policies/accounts-payable.json"
const CALLS = "test/fixtures/policies/twelve-calls.json"
const DOC = path.join(ROOT, "docs/performance.md")
const START = "<!-- rule-judge:start -->"
const END = "<!-- rule-judge:end -->"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const DECISIONS = arg("decisions", 1_000_000)
const WARMUP = arg("warmup", 200_000)
const BATCH = 1_000
const WRITE = process.argv.includes("--write")

interface Call {
  readonly id: string
  readonly tool: string
  readonly args: Record<string, unknown>
}

const calls = JSON.parse(readFileSync(path.join(ROOT, CALLS), "utf8")) as ReadonlyArray<Call>
const loaded = await Effect.runPromise(loadPolicyFile(POLICY, ROOT))
const compiled = loaded.compiled
const views: ReadonlyArray<ToolCallView> = calls.map((c) => ({ name: c.tool, description: "", parameters: null, arguments: c.args }))
const ctx: JudgeContext = { requestId: "bench", runId: null, episodeId: null, sessionId: null, principal: null, agentModel: "agent", headers: {} }
const judge = makeRuleJudge("rules", loaded, { mode: "full", scopes: null, scopes_header: true })

let sink = 0

/** Run `one(i)` for warm-up, then in timed batches; ns per decision at the median and p99 batch. */
const measure = (one: (i: number) => number) => {
  for (let i = 0; i < WARMUP; i++) sink += one(i)
  const batches = Math.max(1, Math.round(DECISIONS / BATCH))
  const ns: Array<number> = []
  let i = 0
  for (let b = 0; b < batches; b++) {
    const t0 = process.hrtime.bigint()
    for (let k = 0; k < BATCH; k++, i++) sink += one(i)
    ns.push(Number(process.hrtime.bigint() - t0) / BATCH)
  }
  ns.sort((x, y) => x - y)
  const at = (q: number) => ns[Math.min(ns.length - 1, Math.floor(q * ns.length))]!
  return { median: at(0.5), p99: at(0.99), decisions: batches * BATCH }
}

/** The judge inside one fiber per batch (the gate calls `rule` from its own fiber; no `runSync` per call). */
const measureJudge = () => {
  const batch = (start: number) =>
    Effect.gen(function* () {
      let acc = 0
      for (let k = 0; k < BATCH; k++) acc += (yield* judge.rule(views[(start + k) % n]!, ctx)).category.length
      return acc
    })
  for (let i = 0; i < WARMUP; i += BATCH) sink += Effect.runSync(batch(i))
  const batches = Math.max(1, Math.round(DECISIONS / BATCH))
  const ns: Array<number> = []
  for (let b = 0; b < batches; b++) {
    const eff = batch(b * BATCH)
    const t0 = process.hrtime.bigint()
    sink += Effect.runSync(eff)
    ns.push(Number(process.hrtime.bigint() - t0) / BATCH)
  }
  ns.sort((x, y) => x - y)
  const at = (q: number) => ns[Math.min(ns.length - 1, Math.floor(q * ns.length))]!
  return { median: at(0.5), p99: at(0.99), decisions: batches * BATCH }
}

const full: DecideOptions = { mode: "full" }
const scope: DecideOptions = { mode: "scope" }
const n = calls.length

const rows = [
  ["`decide`, full mode", measure((i) => decide(compiled, calls[i % n]!.tool, calls[i % n]!.args, full).rule.length)],
  ["`decide`, scope mode", measure((i) => decide(compiled, calls[i % n]!.tool, calls[i % n]!.args, scope).rule.length)],
  ["`judge.rule` in a running fiber (as the gate calls it)", measureJudge()]
] as const

// the decisions must be those of §4.4, or the figures mean nothing
const expected = ["allow", "allow", "allow", "allow", "deny", "deny", "escalate", "allow", "deny", "deny", "deny", "deny"]
const got = calls.map((c) => decide(compiled, c.tool, c.args, full).decision)
if (got.join() !== expected.join()) throw new Error(`unexpected decisions: ${got.join(", ")}`)

const fmt = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(2)} µs` : `${Math.round(x)} ns`)
const perSecond = (ns: number) => `${(1e9 / ns / 1e6).toFixed(2)} M/s`
const cpu = cpus()[0]?.model.trim() ?? "unknown CPU"
const date = new Date().toISOString().slice(0, 10)
const table = [
  `Run ${date} on ${cpus().length} × ${cpu}, Node ${process.version}; policy \`${POLICY}\` (${loaded.version}), the twelve calls of \`${CALLS}\` in a cycle; ${WARMUP.toLocaleString("en")} warm-up decisions, then ${rows[0][1].decisions.toLocaleString("en")} per path in batches of ${BATCH.toLocaleString("en")}.`,
  "",
  "| path | median per decision | p99 batch per decision | decisions per second (median) |",
  "|---|---|---|---|",
  ...rows.map(([label, r]) => `| ${label} | ${fmt(r.median)} | ${fmt(r.p99)} | ${perSecond(r.median)} |`)
].join("\n")

const worst = Math.max(rows[0][1].median, rows[2][1].median)
const notes = [
  `\`npx tsx bench/rule-judge.ts [--decisions N] [--warmup N] [--write]\`. In process, no proxy: the evaluator alone (\`decide\`) and the judge as the gate calls it (\`judge.rule\` from a running fiber: header lookup, decide, verdict with latency). Target: at most 2 µs per decision — ${worst <= 2000 ? "met" : "**not met**"} (worst median ${fmt(worst)}).`,
  "",
  "The Agent-SafetyBench skeleton policy does not exist yet, so only the accounts-payable policy of toolgate.md §4.1 is measured. For scale: the Go gate decides the same twelve calls in 0.4–0.5 µs per call in process (toolgate.md §5.3)."
].join("\n")

console.log(table)
console.log(`\n(target: ≤ 2 µs per decision; checksum ${sink})`)

if (WRITE) {
  const doc = readFileSync(DOC, "utf8")
  const block = `${START}\n${notes}\n\n${table}\n${END}`
  const next = doc.includes(START) && doc.includes(END)
    ? doc.slice(0, doc.indexOf(START)) + block + doc.slice(doc.indexOf(END) + END.length)
    : `${doc.replace(/\s*$/, "")}\n\n## bench/rule-judge\n\n${block}\n`
  writeFileSync(DOC, next)
  console.log(`wrote ${path.relative(ROOT, DOC)}`)
}
