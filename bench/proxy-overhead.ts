/**
 * bench/proxy-overhead — what veto-proxy adds on top of its upstream.
 *
 * The fake vLLM (`vetobench fake-vllm`) and the proxy (`vetobench proxy`, enforce arm, static
 * allow-all judge, audit on) run as separate processes; this process is the load generator
 * (keep-alive pool, concurrency 16). Each mode hits the upstream directly and through the proxy in
 * the same run; we report added p50/p99 latency and the proxy's CPU per request (utime+stime from
 * /proc/<pid>/stat over the measured requests). Results go to docs/performance.md.
 *
 * `--bare` also runs bench/bare-gate.ts (a bare node:http gate doing the same work for the chat
 * route) and reports veto-proxy's CPU per request as a multiple of it; `--paced` adds, per route,
 * the CPU per request at ~29 requests/s one at a time (the rate of a real benchmark run), where idle
 * costs (timers, wake-ups) show. Issue 23's targets are stated against these two figures.
 *
 * Every route is warmed up before anything is measured, and the CPU figures are taken in
 * `--rounds` interleaved rounds per target (the proxy, the bare gate, and with `BENCH_OTHER_CLI`
 * another build of the proxy, e.g. a copy of `dist/` from before a change): on a shared machine
 * whose load changes during the run, the ratios between targets are the figures to read. The load
 * average at the start and the end is printed with the table. `BENCH_PROXY_CLI` runs the proxy from
 * another bundle; `BENCH_PROXY_NODE_ARGS` passes Node options to the proxies (e.g. `--cpu-prof`).
 *
 *   npm run build && npx tsx bench/proxy-overhead.ts [--requests 10000] [--warmup 2000] [--rounds 5] [--bare] [--paced] [--write]
 */
import { spawn, type ChildProcess } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, existsSync } from "node:fs"
import { tmpdir, cpus, loadavg } from "node:os"
import * as path from "node:path"
import { Pool } from "undici"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const REQUESTS = arg("requests", 10_000)
const WARMUP = arg("warmup", 2_000)
const CONCURRENCY = 16
const UNLOADED = 1_000
const WRITE = process.argv.includes("--write")
const BARE = process.argv.includes("--bare")
const PACED = process.argv.includes("--paced")
const PACED_RATE = 29
const PACED_REQUESTS = arg("paced-requests", 300)
const CLI = path.resolve("dist/cli.mjs")
/** the bundle the proxy runs: `BENCH_PROXY_CLI` names another (a copy of an earlier build, to compare builds in alternation) */
const PROXY_CLI = path.resolve(process.env.BENCH_PROXY_CLI ?? CLI)
const OTHER_CLI = process.env.BENCH_OTHER_CLI === undefined ? null : path.resolve(process.env.BENCH_OTHER_CLI)
/** the measured requests (and the paced ones) are sent in this many interleaved rounds per target */
const ROUNDS = arg("rounds", 5)
const TICKS_PER_SECOND = 100

const start = (args: ReadonlyArray<string>, ready: RegExp, script = CLI) =>
  new Promise<{ proc: ChildProcess; match: RegExpMatchArray }>((resolve, reject) => {
    const nodeArgs = args[0] === "proxy" ? (process.env.BENCH_PROXY_NODE_ARGS ?? "").split(" ").filter(Boolean) : []
    const entry = script.endsWith(".mjs") ? [script] : ["--import", "tsx", script]
    const proc = spawn(process.execPath, [...nodeArgs, ...entry, ...args], { stdio: ["ignore", "pipe", "inherit"] })
    let out = ""
    let started = false
    proc.stdout!.on("data", (b: Buffer) => {
      // once started, stdout (the proxy's access log) is drained, not kept: keeping it costs the load generator time
      if (started) return
      out += b.toString()
      const m = ready.exec(out)
      if (m) {
        started = true
        resolve({ proc, match: m })
      }
    })
    proc.once("exit", (c) => reject(new Error(`exited ${c}: ${out}`)))
  })

const cpuTicks = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return Number(fields[11]) + Number(fields[12])
}

const TOOLS = [
  {
    type: "function",
    function: {
      name: "list_dir",
      description: "List a directory.",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
    }
  }
]

const PROMPT = "show me the reports"
const fn = TOOLS[0]!.function

/** one gated route: its path and a request body in its wire format (the same question and tool) */
interface Route {
  readonly name: string
  readonly path: string
  readonly body: (model: string, stream: boolean) => string
}

const ROUTES: ReadonlyArray<Route> = [
  {
    name: "chat",
    path: "/v1/chat/completions",
    body: (model, stream) => JSON.stringify({ model, stream, messages: [{ role: "user", content: PROMPT }], tools: TOOLS, max_tokens: 64 })
  },
  {
    name: "responses",
    path: "/v1/responses",
    body: (model, stream) =>
      JSON.stringify({ model, stream, input: PROMPT, tools: [{ type: "function", name: fn.name, description: fn.description, parameters: fn.parameters }], max_output_tokens: 64 })
  },
  {
    name: "messages",
    path: "/v1/messages",
    body: (model, stream) =>
      JSON.stringify({ model, stream, max_tokens: 64, messages: [{ role: "user", content: PROMPT }], tools: [{ name: fn.name, description: fn.description, input_schema: fn.parameters }] })
  }
]

const percentile = (xs: Array<number>, p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!
}

/** Send `n` requests at concurrency 16; returns per-request latencies in ms. */
const load = async (pool: Pool, pathname: string, payload: string, n: number, concurrency = CONCURRENCY) => {
  const lat: Array<number> = []
  let next = 0
  const worker = async () => {
    while (next < n) {
      next++
      const t0 = performance.now()
      const r = await pool.request({ method: "POST", path: pathname, headers: { "content-type": "application/json", "x-vetobench-run": "bench" }, body: payload })
      const text = await r.body.text()
      if (r.statusCode !== 200 || !text.includes("list_dir")) throw new Error(`HTTP ${r.statusCode}: ${text.slice(0, 200)}`)
      lat.push(performance.now() - t0)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return lat
}

/** `n` requests one at a time at `rate` per second (start to start) */
const paced = async (pool: Pool, pathname: string, payload: string, n: number, rate: number) => {
  const gap = 1000 / rate
  const t0 = performance.now()
  for (let i = 0; i < n; i++) {
    const wait = t0 + i * gap - performance.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    await load(pool, pathname, payload, 1, 1)
  }
}

/** CPU ticks of process `pid` over `run` */
const ticksOver = async (pid: number, run: () => Promise<unknown>) => {
  const before = cpuTicks(pid)
  await run()
  return cpuTicks(pid) - before
}

interface Row {
  mode: string
  route: string
  stream: boolean
  /** the bare gate's CPU per request (chat route, `--bare`) */
  bareCpuMs?: number
  /** CPU per request at ~29 requests/s (`--paced`) */
  pacedCpuMs?: number
  barePacedCpuMs?: number
  /** the other build's (`BENCH_OTHER_CLI`), saturated and paced */
  otherCpuMs?: number
  otherPacedCpuMs?: number
  unloadedAdded: number
  directP50: number
  directP99: number
  proxyP50: number
  proxyP99: number
  cpuMs: number
}

const main = async () => {
  if (!existsSync(CLI)) throw new Error("run `npm run build` first")
  const loadBefore = loadavg()[0]!
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-bench-"))
  mkdirSync(path.join(dir, "configs"))
  const fake = await start(["fake-vllm", "--port", "0"], /serving (http:\/\/127\.0\.0\.1:(\d+))\/v1/)
  const config = path.join(dir, "configs", "vetobench.yaml")
  writeFileSync(config, `upstreams:\n  - name: fake\n    base_url: ${fake.match[1]}/v1\nproxy:\n  port: 0\n`)
  const proxy = await start(["proxy", "-c", config], /veto-proxy (http:\/\/127\.0\.0\.1:\d+)\/v1/, PROXY_CLI)
  const direct = new Pool(fake.match[1]!, { connections: CONCURRENCY })
  const viaProxy = new Pool(proxy.match[1]!, { connections: CONCURRENCY })
  const bare = BARE
    ? await start(["--upstream", `${fake.match[1]}/v1`, "--audit", path.join(dir, "bare.jsonl")], /bare gate (http:\/\/127\.0\.0\.1:\d+)/, path.resolve("bench/bare-gate.ts"))
    : null
  const viaBare = bare === null ? null : new Pool(bare.match[1]!, { connections: CONCURRENCY })
  // another build of the proxy, measured in the same rounds (`BENCH_OTHER_CLI`: e.g. the build before a change)
  // (its own settings directory: its own audit files, which one proxy at a time may write)
  const otherConfig = path.join(dir, "other", "configs", "vetobench.yaml")
  if (OTHER_CLI !== null) {
    mkdirSync(path.dirname(otherConfig), { recursive: true })
    writeFileSync(otherConfig, readFileSync(config))
  }
  const other = OTHER_CLI === null ? null : await start(["proxy", "-c", otherConfig], /veto-proxy (http:\/\/127\.0\.0\.1:\d+)\/v1/, OTHER_CLI)
  const viaOther = other === null ? null : new Pool(other.match[1]!, { connections: CONCURRENCY })
  const rows: Array<Row> = []
  const MODES = [["JSON, one tool call", false], ["SSE, one tool call (gated)", true]] as const
  try {
    // every route and transport once before anything is measured: the first mode measured would
    // otherwise pay for compiling the paths all modes share
    for (const [, stream] of MODES) {
      for (const route of ROUTES) {
        const gated = route.body("qwen3.8-27b@enforce:allow-all", stream)
        await load(viaProxy, route.path, gated, WARMUP)
        if (viaOther !== null) await load(viaOther, route.path, gated, WARMUP)
        if (viaBare !== null && route.name === "chat") await load(viaBare, route.path, route.body("qwen3.8-27b", stream), WARMUP)
      }
    }
    for (const [kind, stream] of MODES) {
      for (const route of ROUTES) {
        const mode = `${route.path} ${kind}`
        const plain = route.body("qwen3.8-27b", stream)
        const gated = route.body("qwen3.8-27b@enforce:allow-all", stream)
        const chat = route.name === "chat"
        await load(direct, route.path, plain, WARMUP)
        await load(viaProxy, route.path, gated, WARMUP)
        if (viaOther !== null) await load(viaOther, route.path, gated, WARMUP)
        if (viaBare !== null && chat) await load(viaBare, route.path, plain, WARMUP)
        const d = await load(direct, route.path, plain, REQUESTS)
        // the CPU figures in interleaved rounds (proxy, the other build, the bare gate): a load that
        // changes during the run weighs on each of them alike
        const per = Math.ceil(REQUESTS / ROUNDS)
        const p: Array<number> = []
        let ticks = 0
        let otherTicks = 0
        let bareTicks = 0
        for (let r = 0; r < ROUNDS; r++) {
          ticks += await ticksOver(proxy.proc.pid!, async () => p.push(...(await load(viaProxy, route.path, gated, per))))
          if (other !== null && viaOther !== null) otherTicks += await ticksOver(other.proc.pid!, () => load(viaOther, route.path, gated, per))
          if (bare !== null && viaBare !== null && chat) bareTicks += await ticksOver(bare.proc.pid!, () => load(viaBare, route.path, plain, per))
        }
        const perRequest = (t: number) => (t / TICKS_PER_SECOND / (per * ROUNDS)) * 1000
        // one request at a time: the latency the proxy adds when nothing queues
        const d1 = await load(direct, route.path, plain, UNLOADED, 1)
        const p1 = await load(viaProxy, route.path, gated, UNLOADED, 1)
        const bareCpuMs = bare !== null && chat ? perRequest(bareTicks) : undefined
        const otherCpuMs = other !== null ? perRequest(otherTicks) : undefined
        let barePacedCpuMs: number | undefined
        let pacedCpuMs: number | undefined
        let otherPacedCpuMs: number | undefined
        if (PACED) {
          const n = Math.ceil(PACED_REQUESTS / ROUNDS)
          let pt = 0
          let ot = 0
          let bt = 0
          for (let r = 0; r < ROUNDS; r++) {
            pt += await ticksOver(proxy.proc.pid!, () => paced(viaProxy, route.path, gated, n, PACED_RATE))
            if (other !== null && viaOther !== null) ot += await ticksOver(other.proc.pid!, () => paced(viaOther, route.path, gated, n, PACED_RATE))
            if (bare !== null && viaBare !== null && chat) bt += await ticksOver(bare.proc.pid!, () => paced(viaBare, route.path, plain, n, PACED_RATE))
          }
          const pacedPer = (t: number) => (t / TICKS_PER_SECOND / (n * ROUNDS)) * 1000
          pacedCpuMs = pacedPer(pt)
          if (other !== null) otherPacedCpuMs = pacedPer(ot)
          if (bare !== null && chat) barePacedCpuMs = pacedPer(bt)
        }
        rows.push({
          mode,
          route: route.name,
          stream,
          ...(bareCpuMs !== undefined ? { bareCpuMs } : {}),
          ...(barePacedCpuMs !== undefined ? { barePacedCpuMs } : {}),
          ...(pacedCpuMs !== undefined ? { pacedCpuMs } : {}),
          ...(otherCpuMs !== undefined ? { otherCpuMs } : {}),
          ...(otherPacedCpuMs !== undefined ? { otherPacedCpuMs } : {}),
          unloadedAdded: percentile(p1, 50) - percentile(d1, 50),
          directP50: percentile(d, 50),
          directP99: percentile(d, 99),
          proxyP50: percentile(p, 50),
          proxyP99: percentile(p, 99),
          cpuMs: perRequest(ticks)
        })
      }
    }
  } finally {
    await direct.close()
    await viaProxy.close()
    await viaBare?.close()
    await viaOther?.close()
    other?.proc.kill("SIGTERM")
    bare?.proc.kill("SIGTERM")
    proxy.proc.kill("SIGTERM")
    fake.proc.kill("SIGTERM")
  }
  const f = (x: number) => x.toFixed(2)
  // each format's proxy CPU next to the chat route's, same transport, same run
  const vsChat = (r: Row) => {
    const chat = rows.find((x) => x.route === "chat" && x.stream === r.stream)
    return chat === undefined || r.route === "chat" ? "—" : `${((r.cpuMs / chat.cpuMs) * 100).toFixed(0)} %`
  }
  const table = [
    "| mode | proxy CPU / request | CPU vs chat | added p50, one at a time | direct p50 | direct p99 | via proxy p50 | via proxy p99 | via proxy p99/p50 | added p50 | added p99 |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${r.mode} | ${f(r.cpuMs)} ms | ${vsChat(r)} | ${f(r.unloadedAdded)} ms | ${f(r.directP50)} ms | ${f(r.directP99)} ms | ${f(r.proxyP50)} ms | ${f(r.proxyP99)} ms | ${(r.proxyP99 / r.proxyP50).toFixed(1)} | ${f(r.proxyP50 - r.directP50)} ms | ${f(r.proxyP99 - r.directP99)} ms |`
    )
  ].join("\n")
  // issue 23's figures: veto-proxy's CPU per request as a multiple of the bare gate's, saturated and paced
  const bareChat = (stream: boolean) => rows.find((x) => x.route === "chat" && x.stream === stream)
  const times = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined ? `${(a / b).toFixed(1)}×` : "—")
  const ms = (x: number | undefined) => (x === undefined ? "—" : `${f(x)} ms`)
  const bareTable =
    BARE || PACED
      ? [
          "",
          `| mode | proxy CPU, saturated | vs bare gate (chat) | proxy CPU, paced ~${PACED_RATE}/s | bare gate, paced |`,
          "|---|---|---|---|---|",
          ...rows.map((r) => {
            const b = bareChat(r.stream)
            return `| ${r.mode} | ${f(r.cpuMs)} ms | ${times(r.cpuMs, b?.bareCpuMs)} (bare ${ms(b?.bareCpuMs)}) | ${ms(r.pacedCpuMs)} | ${ms(b?.barePacedCpuMs)} |`
          })
        ].join("\n")
      : ""
  const otherTable =
    OTHER_CLI === null
      ? ""
      : [
          "",
          `| mode | this build, saturated | other build (${path.basename(path.dirname(OTHER_CLI))}), saturated | this / other | this build, paced | other build, paced |`,
          "|---|---|---|---|---|---|",
          ...rows.map((r) => `| ${r.mode} | ${f(r.cpuMs)} ms | ${ms(r.otherCpuMs)} | ${times(r.cpuMs, r.otherCpuMs)} | ${ms(r.pacedCpuMs)} | ${ms(r.otherPacedCpuMs)} |`)
        ].join("\n")
  const section = [
    "<!-- proxy-overhead:start -->",
    `Run ${new Date().toISOString().slice(0, 10)} on ${cpus().length} × ${cpus()[0]?.model.trim() ?? "cpu"}, Node ${process.version}, load average ${loadBefore.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end; ${REQUESTS} measured requests per mode after ${WARMUP} warm-up, concurrency ${CONCURRENCY}, the CPU figures in ${ROUNDS} interleaved rounds per target (and ${UNLOADED} requests one at a time for the unloaded figure); enforce arm, static \`allow-all\` judge, audit on (one fsynced record per call).`,
    "",
    `${table}${bareTable === "" ? "" : `\n${bareTable}`}${otherTable === "" ? "" : `\n${otherTable}`}`,
    "<!-- proxy-overhead:end -->"
  ].join("\n")
  console.log(section)
  if (WRITE) {
    const doc = path.resolve("docs/performance.md")
    const text = readFileSync(doc, "utf8")
    writeFileSync(doc, text.replace(/<!-- proxy-overhead:start -->[\s\S]*<!-- proxy-overhead:end -->/, section))
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e)
    process.exit(1)
  }
)
