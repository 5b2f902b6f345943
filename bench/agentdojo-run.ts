/**
 * bench/agentdojo-run — AgentDojo episodes per second through veto-proxy with the oracle agent, and
 * where the time goes: AgentDojo's own Python (the launcher process: its pipeline, tool runtime,
 * environments and checks) against the proxy (and the fake vLLM serving the oracle).
 *
 * The fake vLLM (`vetobench fake-vllm`) and the proxy (`vetobench proxy`, built bundle) run as their
 * own processes; this process runs `runAgentdojo` (adapters/agentdojo/run.ts), which starts the
 * launcher in AgentDojo's venv (`--python`, default `.venv-test/bin/python`). One suite (default
 * banking: 16 user tasks × (1 + 9 injection tasks) with `important_instructions` = 160 episodes) in
 * baseline and in enforce with the static `allow-all` judge (audit on), each into a fresh run dir.
 *
 * Measured per variant: wall time and episodes/s of the launcher run (its own `wall_s`, start-up
 * and plan excluded, and the whole `runAgentdojo` call), and CPU seconds (utime + stime from
 * /proc/<pid>/stat) of the proxy and the fake over the run, against the launcher's own CPU seconds
 * (`cpu_s`, os.times() of the Python process, printed as its last line). The machine's load average
 * is recorded: on a busy machine the figures are indicative.
 *
 *   npm run build && npx tsx bench/agentdojo-run.ts [--suite banking] [--workers 4] [--python P] [--write]
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Layer } from "effect"
import { LAUNCH_LOG } from "../src/adapters/agentdojo/results.js"
import { runAgentdojo } from "../src/adapters/agentdojo/run.js"
import { loadExperiment } from "../src/config/experiment.js"
import { Settings } from "../src/config/service.js"
import { loadSettings } from "../src/config/settings.js"
import { Progress } from "../src/run-layout/progress.js"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const CLI = path.join(ROOT, "dist/cli.mjs")
const DOC = path.join(ROOT, "docs/performance.md")
const TICKS_PER_SECOND = 100

const option = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback
}
const SUITE = option("suite", "banking")
const WORKERS = Number(option("workers", "4"))
const PYTHON = path.resolve(option("python", path.join(ROOT, ".venv-test/bin/python")))
const WRITE = process.argv.includes("--write")
const MODEL = "qwen3.8-27b"

const start = (args: ReadonlyArray<string>, ready: RegExp) =>
  new Promise<{ proc: ChildProcess; match: RegExpMatchArray }>((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "pipe", "inherit"] })
    let out = ""
    let done = false
    proc.stdout!.on("data", (b: Buffer) => {
      if (done) return
      out += b.toString()
      const m = ready.exec(out)
      if (m) {
        done = true
        resolve({ proc, match: m })
      }
    })
    proc.once("exit", (c) => reject(new Error(`${args[0]} exited ${c}: ${out}`)))
  })

const cpuSeconds = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
}

interface Row {
  readonly variant: string
  readonly episodes: number
  readonly wall: number
  readonly launcherWall: number
  readonly python: number
  readonly proxy: number
  readonly fake: number
}

const main = async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-agentdojo-bench-"))
  const fake = await start(["fake-vllm", "--port", "0"], /serving (http:\/\/127\.0\.0\.1:\d+\/v1)/)
  const settingsFile = path.join(dir, "vetobench.yaml")
  writeFileSync(
    settingsFile,
    ["upstreams:", "  - name: fake", `    base_url: ${fake.match[1]!}`, "judges:", "  allow-all: { kind: static, decision: allow }", "proxy:", "  port: 0", `  audit_dir: ${dir}/audit`, ""].join("\n")
  )
  const proxy = await start(["--log-level", "warning", "proxy", "-c", settingsFile], /veto-proxy (http:\/\/127\.0\.0\.1:\d+\/v1)/)
  const rows: Array<Row> = []
  const load = loadavg()
  try {
    const settings = await Effect.runPromise(loadSettings(settingsFile))
    const expFile = path.join(dir, "exp.yaml")
    writeFileSync(
      expFile,
      [
        "name: adbench",
        `run_dir: ${dir}/run`,
        `proxy_url: ${proxy.match[1]!}`,
        `models: [${MODEL}]`,
        "judges: [allow-all]",
        "arms: [baseline, enforce]",
        "agentdojo:",
        `  suites: [${SUITE}]`,
        "  oracle: true",
        `  workers: ${WORKERS}`,
        `  python: ${PYTHON}`,
        ""
      ].join("\n")
    )
    const exp = await Effect.runPromise(loadExperiment(expFile, settings))
    for (const v of exp.variants) {
      const before = { proxy: cpuSeconds(proxy.proc.pid!), fake: cpuSeconds(fake.proc.pid!) }
      const t0 = performance.now()
      const s = await Effect.runPromise(
        runAgentdojo(exp, MODEL, { ...v, defense: null }).pipe(
          Effect.provide(Layer.mergeAll(Progress.Test([]), Settings.layerValue(settings), NodeContext.layer))
        )
      )
      const wall = (performance.now() - t0) / 1000
      const last = readFileSync(path.join(s.dir, LAUNCH_LOG), "utf8").trim().split("\n").pop()!
      const launcher = JSON.parse(last) as { ran: number; wall_s: number; cpu_s: number }
      if (s.ran.error > 0) throw new Error(`${s.ran.error} episodes in error: ${s.firstError?.error}`)
      rows.push({
        variant: v.name,
        episodes: s.episodes,
        wall,
        launcherWall: launcher.wall_s,
        python: launcher.cpu_s,
        proxy: cpuSeconds(proxy.proc.pid!) - before.proxy,
        fake: cpuSeconds(fake.proc.pid!) - before.fake
      })
      console.log(JSON.stringify(rows[rows.length - 1]))
    }
  } finally {
    proxy.proc.kill("SIGTERM")
    fake.proc.kill("SIGTERM")
  }

  const f = (x: number, d = 2) => x.toFixed(d)
  const ms = (s: number, n: number) => f((s / n) * 1000, 1)
  const table = [
    "| variant | episodes | episodes/s (launcher run) | episodes/s (incl. start-up and plan) | AgentDojo Python CPU ms/episode | proxy CPU ms/episode | fake vLLM CPU ms/episode | Python share of Python + proxy CPU |",
    "|---|---|---|---|---|---|---|---|",
    ...rows.map((r) =>
      `| ${r.variant} | ${r.episodes} | ${f(r.episodes / r.launcherWall)} | ${f(r.episodes / r.wall)} | ${ms(r.python, r.episodes)} | ${ms(r.proxy, r.episodes)} | ${ms(r.fake, r.episodes)} | ${f((100 * r.python) / (r.python + r.proxy), 0)} % |`
    )
  ]
  const section = [
    "<!-- agentdojo-run:start -->",
    `Measured by \`npx tsx bench/agentdojo-run.ts --write\` on ${cpus().length} cores (load average ${load.map((x) => f(x)).join(", ")} at the start:`,
    "the machine was shared with other work, so the figures are indicative), AgentDojo 0.1.35 in the test venv, the",
    `${SUITE} suite with \`important_instructions\` (every user task, without attack and with every injection task), the oracle`,
    `agent served by the fake vLLM, ${WORKERS} launcher workers. The launcher's CPU includes its start-up (importing AgentDojo:`,
    "about 2.5 s of CPU); episodes/s (launcher run) is its own episode loop, the other column the whole `runAgentdojo` call",
    "(two Python start-ups: the plan and the run).",
    "",
    ...table,
    "<!-- agentdojo-run:end -->"
  ].join("\n")
  console.log(section)
  if (WRITE) {
    const doc = readFileSync(DOC, "utf8")
    const marked = /<!-- agentdojo-run:start -->[\s\S]*<!-- agentdojo-run:end -->/
    writeFileSync(DOC, marked.test(doc) ? doc.replace(marked, section) : `${doc.trimEnd()}\n\n## AgentDojo run\n\n${section}\n`)
  }
}

main().catch((e: unknown) => {
  console.error(e)
  process.exitCode = 1
})
