/**
 * bench/replay — logged calls per second through `vetobench replay` with the `rule` judge.
 *
 * Generates a baseline audit log of `--calls` call records (default 50,000: episodes of ten calls
 * cycling the accounts-payable twelve calls, test/fixtures/policies/) in a temporary run directory,
 * then replays it with one `rule` judge over test/fixtures/policies/accounts-payable.json, exactly as
 * the CLI does (`replayBench` under `replayGateLayer`, the replay file appended and fsynced; progress
 * recorded in memory). Prints calls per second (wall clock) and CPU per call, for `--repeats` runs
 * (each into a fresh replay file), and the load average at the start.
 *
 *   npx tsx bench/replay.ts [--calls 50000] [--repeats 3]
 */
import { createHash } from "node:crypto"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Either, Layer } from "effect"
import { defaultPlugins } from "../judges/plugins.js"
import { decodeExperiment } from "../src/config/experiment.js"
import { defaultSettings } from "../src/config/settings.js"
import { Progress, type ProgressEvent } from "../src/run-layout/progress.js"
import { replayBench, replayGateLayer } from "../src/experiment/replay.js"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const POLICY = "test/fixtures/policies/accounts-payable.json"
const CALLS = "test/fixtures/policies/twelve-calls.json"
const PER_EPISODE = 10

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const N = arg("calls", 50_000)
const REPEATS = arg("repeats", 3)
const LOAD_AT_START = loadavg()

interface Call {
  readonly id: string
  readonly tool: string
  readonly args: Record<string, unknown>
}
const calls = JSON.parse(readFileSync(path.join(ROOT, CALLS), "utf8")) as ReadonlyArray<Call>

const dir = mkdtempSync(path.join(tmpdir(), "vetobench-bench-replay-"))
const auditDir = path.join(dir, "audit")
mkdirSync(auditDir, { recursive: true })
const settings = defaultSettings(ROOT, {
  judges: { rules: { kind: "rule", policy: POLICY } },
  proxy: { audit_dir: auditDir }
})
const decoded = decodeExperiment(
  { name: "bench", run_dir: path.join(dir, "run"), models: ["agent"], judges: ["rules"], arms: ["baseline"], asb: { attacks: [{ method: "clean" }] } },
  { file: "bench.yaml", settings, env: {} }
)
if (Either.isLeft(decoded)) throw new Error(decoded.left.message)
const exp = decoded.right

// the baseline log: the shape the proxy writes for arm baseline (no verdict); hashes are unique, not chained
const lines: Array<string> = []
for (let i = 0; i < N; i++) {
  const c = calls[i % calls.length]!
  const hash = createHash("sha256").update(`bench-${i}`).digest("hex")
  lines.push(
    JSON.stringify({
      schema: "vetobench/v2",
      seq: i + 1,
      ts: "2026-01-01T00:00:00.000Z",
      type: "call",
      run_id: "bench.asbench.agent.baseline",
      request_id: `req-${i}`,
      episode_id: `asbench:${Math.floor(i / PER_EPISODE)}`,
      session_id: null,
      principal: null,
      agent_model: "agent",
      arm: "baseline",
      judge: null,
      stream: false,
      choice_index: 0,
      call_index: 0,
      tool_call_id: `call_${i}`,
      tool: { name: c.tool, description: `${c.tool} tool`, parameters: { type: "object", properties: {} }, arguments: c.args },
      verdict: null,
      layers: [],
      effective_decision: null,
      blocked: false,
      fail_policy: "closed",
      approval: "automatic",
      outcome: null,
      gate_ms: 0,
      prev_hash: "0".repeat(64),
      hash
    })
  )
}
writeFileSync(path.join(auditDir, "bench.asbench.agent.baseline.jsonl"), `${lines.join("\n")}\n`)

const once = async () => {
  rmSync(path.join(dir, "run"), { recursive: true, force: true })
  const events: Array<ProgressEvent> = []
  const run = replayBench(exp, auditDir, "asbench", "agent", ["rules"]).pipe(
    Effect.provide(Layer.mergeAll(replayGateLayer(settings, defaultPlugins), Progress.Test(events)))
  )
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  const s = await Effect.runPromise(run)
  const s_ = Number(process.hrtime.bigint() - t0) / 1e9
  const cpu = process.cpuUsage(cpu0)
  if (s === null || s.ruled !== N) throw new Error(`replay ruled ${s?.ruled ?? 0} of ${N} calls`)
  return { perSecond: N / s_, cpuUsPerCall: (cpu.user + cpu.system) / N, seconds: s_ }
}

console.log(`bench/replay: ${N} logged calls, one rule judge; ${cpus().length} CPUs; load average ${LOAD_AT_START.map((x) => x.toFixed(2)).join(" ")}`)
const results = []
for (let r = 0; r < REPEATS; r++) {
  const x = await once()
  results.push(x)
  console.log(`  run ${r + 1}: ${Math.round(x.perSecond).toLocaleString("en")} calls/s (${x.seconds.toFixed(2)} s), ${x.cpuUsPerCall.toFixed(1)} µs CPU per call`)
}
const best = results.reduce((a, b) => (b.perSecond > a.perSecond ? b : a))
console.log(`best: ${Math.round(best.perSecond).toLocaleString("en")} calls/s; load average now ${loadavg().map((x) => x.toFixed(2)).join(" ")}`)
rmSync(dir, { recursive: true, force: true })
