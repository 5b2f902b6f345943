/**
 * bench/asbench-run — Agent-SafetyBench episodes per second through veto-proxy and the Python bridge,
 * with the fake vLLM, at 16 workers; and whether the bridge is the bottleneck.
 *
 * The fake vLLM (`vetobench fake-vllm`) and the proxy (`vetobench proxy`, built bundle) run as their
 * own processes; this process is the runner (`runAsbench`, the real `PythonBridge` with 16 `python3`
 * processes) and the load generator. The fixture checkout `examples/agent-safetybench-mini` is
 * copied to a temp dir and its nine cases replicated (ids + 1000·k) to `9 × --replicas` episodes.
 *
 * Phases, after a warm-up pass that starts the 16 bridge processes and warms the proxies:
 *   (a) full path: `runAsbench` on every case, `--passes` × (baseline, enforce with the static
 *       `allow-all` judge, audit on), each pass into a fresh run dir on disk, followed by enforce with the
 *       run dir on tmpfs, and enforce with the run dir on tmpfs through a second proxy whose audit
 *       dir is on tmpfs (where `fdatasync` costs nothing). Episodes/s, tool calls/s, chat
 *       requests/s; CPU of the runner (this process), the proxy, the fake and the bridge processes
 *       (utime + stime from /proc/<pid>/stat) and of the whole machine (/proc/stat); where the
 *       workers' time goes (bridge calls, chat steps, outside the session), timed by wrapping the
 *       bridge service the runner uses.
 *   (b) the proxy alone: the last pass's chat requests, rebuilt byte for byte from its
 *       `gen_res.json` (each request is the episode's messages up to a model turn, with the case's
 *       tools, serialised as the client does), replayed at concurrency 16 (and straight to the fake).
 *   (c) the bridge alone: the same episodes' `open_case` + `call_tool` (the recorded calls) +
 *       `close_case` sequences, 16 sessions at once.
 *   (d) the record store alone: the runner's `gen_res.jsonl` appender with 16 appenders.
 * Results go to docs/performance.md with --write (between the asbench-run markers; the section is
 * appended when missing).
 *
 *   npm run build && npx tsx bench/asbench-run.ts [--replicas 100] [--passes 3] [--write]
 */
import { type ChildProcess, spawn } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Either, Layer } from "effect"
import { Pool } from "undici"
import {
  type BridgeError,
  type BridgeSession,
  PythonBridge,
  type PythonBridgeService,
  type PythonBridgeShape
} from "../layers/PythonBridge.js"
import { chatBody, type Message } from "../src/adapters/agent-safetybench/client.js"
import { type AsbenchCase, type AsbenchRecord, caseEnvironments, initialMessages } from "../src/adapters/agent-safetybench/episode.js"
import { runAsbench } from "../src/adapters/agent-safetybench/run.js"
import { openAppender } from "../src/run-layout/store.js"
import { asbenchRunDir, runIdFor } from "../src/run-layout/paths.js"
import { type Experiment, loadExperiment, routeFor, type Variant } from "../src/config/experiment.js"
import { Settings } from "../src/config/service.js"
import { loadSettings, type Settings as SettingsShape } from "../src/config/settings.js"
import { parsePythonJson, pyJsonDumps } from "../src/domain/python-json.js"
import { Progress } from "../src/run-layout/progress.js"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const FIXTURE = path.join(ROOT, "examples/agent-safetybench-mini")
const CLI = path.join(ROOT, "dist/cli.mjs")
const DOC = path.join(ROOT, "docs/performance.md")

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const REPLICAS = arg("replicas", 100)
const BRIDGE_REPEAT = arg("bridge-repeat", 5)
const PASSES = arg("passes", 3)
const STORE_RECORDS = arg("store-records", 400)
const WARMUP_CASES = arg("warmup", 64)
const WORKERS = 16
const ID_STRIDE = 1000
const MODEL = "qwen3.8-27b"
const MAX_TOKENS = 2048
const WRITE = process.argv.includes("--write")
const TICKS_PER_SECOND = 100
const CORES = cpus().length

// ---------------------------------------------------------------------------------------------
// processes and CPU

const start = (args: ReadonlyArray<string>, ready: RegExp) =>
  new Promise<{ proc: ChildProcess; match: RegExpMatchArray }>((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "pipe", "inherit"] })
    let out = ""
    let done = false
    proc.stdout!.on("data", (b: Buffer) => {
      if (done) return // keep draining, stop accumulating
      out += b.toString()
      const m = ready.exec(out)
      if (m) {
        done = true
        resolve({ proc, match: m })
      }
    })
    proc.once("exit", (c) => reject(new Error(`${args[0]} exited ${c}: ${out}`)))
  })

/** SIGTERM, then wait for the exit (the proxy closes its audit files first). */
const stop = (p: { readonly proc: ChildProcess }): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (p.proc.exitCode !== null || p.proc.signalCode !== null) return resume(Effect.void)
    const timer = setTimeout(() => p.proc.kill("SIGKILL"), 15_000)
    p.proc.once("exit", () => {
      clearTimeout(timer)
      resume(Effect.void)
    })
    p.proc.kill("SIGTERM")
  })

/** utime + stime in ticks, or undefined when the process is gone. */
const cpuTicks = (pid: number): number | undefined => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return undefined
  }
}

interface Snapshot {
  readonly t: number
  readonly bench: NodeJS.CpuUsage
  readonly proxy: number
  readonly fake: number
  readonly bridge: ReadonlyMap<number, number>
  readonly machine: MachineTicks
}

interface MachineTicks {
  readonly busy: number
  readonly total: number
}

/** All cores, all processes (the first line of /proc/stat): busy = everything but idle and iowait. */
const machineTicks = (): MachineTicks => {
  try {
    const xs = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1, 9).map(Number)
    const total = xs.reduce((a, b) => a + b, 0)
    return { busy: total - xs[3]! - xs[4]!, total }
  } catch {
    return { busy: 0, total: 0 }
  }
}

/** CPU seconds of each party over a phase, and its wall time. */
interface Usage {
  readonly wallS: number
  /** this process: the runner / load generator */
  readonly runnerS: number
  readonly proxyS: number
  readonly fakeS: number
  /** every bridge process alive at the end (processes started during the phase count from 0) */
  readonly bridgeS: number
  /** CPU seconds of every process on the machine (other work included) */
  readonly machineS: number
}

const totalCpu = (u: Usage) => u.runnerS + u.proxyS + u.fakeS + u.bridgeS

interface Meter {
  readonly snap: () => Snapshot
  readonly since: (a: Snapshot) => Usage
}

const makeMeter = (proxyPid: number, fakePid: number, bridgePids: () => ReadonlyArray<number>): Meter => {
  const snap = (): Snapshot => {
    const bridge = new Map<number, number>()
    for (const pid of bridgePids()) {
      const t = cpuTicks(pid)
      if (t !== undefined) bridge.set(pid, t)
    }
    return {
      t: performance.now(),
      bench: process.cpuUsage(),
      proxy: cpuTicks(proxyPid) ?? 0,
      fake: cpuTicks(fakePid) ?? 0,
      bridge,
      machine: machineTicks()
    }
  }
  const since = (a: Snapshot): Usage => {
    const b = snap()
    let bridgeTicks = 0
    for (const [pid, t] of b.bridge) bridgeTicks += t - (a.bridge.get(pid) ?? 0)
    const bench = process.cpuUsage(a.bench)
    return {
      wallS: (b.t - a.t) / 1000,
      runnerS: (bench.user + bench.system) / 1e6,
      proxyS: (b.proxy - a.proxy) / TICKS_PER_SECOND,
      fakeS: (b.fake - a.fake) / TICKS_PER_SECOND,
      bridgeS: bridgeTicks / TICKS_PER_SECOND,
      machineS: (b.machine.busy - a.machine.busy) / TICKS_PER_SECOND
    }
  }
  return { snap, since }
}

// ---------------------------------------------------------------------------------------------
// the bridge, timed

/** Time spent in bridge sessions, summed over sessions (so over concurrent episodes). */
interface BridgeClock {
  sessions: number
  opens: number
  calls: number
  /** whole `withSession`: permit + process + the episode + `close_case` */
  sessionMs: number
  /** inside the session callback: the episode (chat steps and bridge calls) */
  useMs: number
  openMs: number
  callMs: number
}

const newClock = (): BridgeClock => ({ sessions: 0, opens: 0, calls: 0, sessionMs: 0, useMs: 0, openMs: 0, callMs: 0 })

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>, add: (ms: number) => void): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const t0 = performance.now()
    return effect.pipe(Effect.ensuring(Effect.sync(() => add(performance.now() - t0))))
  })

/** The bridge service with every session and call timed into `clock.current`. */
const timedBridge = (inner: PythonBridgeShape, clock: { current: BridgeClock }): PythonBridgeShape => {
  const wrap = (s: BridgeSession): BridgeSession => ({
    openCase: (environments) =>
      timed(s.openCase(environments), (ms) => {
        clock.current.opens += 1
        clock.current.openMs += ms
      }),
    callTool: (name, args) =>
      timed(s.callTool(name, args), (ms) => {
        clock.current.calls += 1
        clock.current.callMs += ms
      })
  })
  const withSession = <A, E, R>(use: (s: BridgeSession) => Effect.Effect<A, E, R>): Effect.Effect<A, E | BridgeError, R> =>
    timed(
      inner.withSession((s) =>
        timed(use(wrap(s)), (ms) => {
          clock.current.useMs += ms
        })
      ),
      (ms) => {
        clock.current.sessions += 1
        clock.current.sessionMs += ms
      }
    )
  return { texts: inner.texts, envInfo: inner.envInfo, pyJson: inner.pyJson, withSession }
}

// ---------------------------------------------------------------------------------------------
// the chat requests of a run, rebuilt from its records

interface ChatRequest {
  readonly episode: string
  /** the body exactly as the runner's client serialises it */
  readonly body: string
  /** the same request with the bare model (straight to the fake) */
  readonly directBody: string
}

const clientJson = (v: unknown) => pyJsonDumps(v, { ensureAscii: false, separators: [",", ":"] })

/**
 * Request k of an episode is its messages up to (not including) the k-th assistant turn the model
 * wrote, with the case's tools; the episode sends exactly these message objects (runEpisode), so
 * the bodies are the bytes the client sent.
 */
const rebuildRequests = (
  records: ReadonlyArray<AsbenchRecord>,
  cases: ReadonlyMap<number, AsbenchCase>,
  toolsByOriginal: ReadonlyMap<number, ReadonlyArray<Message>>,
  systemPrompt: string,
  route: string
): Array<ChatRequest> => {
  const out: Array<ChatRequest> = []
  for (const r of records) {
    const c = cases.get(r.id)
    const tools = toolsByOriginal.get(r.id % ID_STRIDE)
    if (c === undefined || tools === undefined) throw new Error(`case ${r.id}: unknown`)
    const start = initialMessages(c, systemPrompt)
    if (Either.isLeft(start)) throw new Error(`case ${r.id}: ${start.left}`)
    let n = 0
    for (let i = start.right.length; i < r.output.length; i++) {
      if (r.output[i]!.role !== "assistant") continue
      const messages = r.output.slice(0, i)
      out.push({
        episode: `asbench:${r.id}`,
        body: clientJson(chatBody(route, MAX_TOKENS, messages, tools)),
        directBody: clientJson(chatBody(MODEL, MAX_TOKENS, messages, tools))
      })
      n += 1
    }
    if (n !== r.vetobench.rounds) throw new Error(`case ${r.id}: rebuilt ${n} requests for ${r.vetobench.rounds} rounds`)
  }
  return out
}

/** Send every request at concurrency `WORKERS`; fails on anything but a 200 with choices. */
const replay = async (pool: Pool, reqs: ReadonlyArray<ChatRequest>, runId: string, direct: boolean) => {
  const latencies: Array<number> = []
  let next = 0
  const worker = async () => {
    while (next < reqs.length) {
      const q = reqs[next++]!
      const t0 = performance.now()
      const r = await pool.request({
        method: "POST",
        path: "/v1/chat/completions",
        headers: {
          "content-type": "application/json",
          authorization: "Bearer vetobench",
          "x-vetobench-run": runId,
          "x-vetobench-episode": q.episode
        },
        body: direct ? q.directBody : q.body
      })
      const text = await r.body.text()
      if (r.statusCode !== 200 || !text.includes('"choices"')) throw new Error(`HTTP ${r.statusCode}: ${text.slice(0, 200)}`)
      latencies.push(performance.now() - t0)
    }
  }
  await Promise.all(Array.from({ length: WORKERS }, worker))
  return latencies
}

// ---------------------------------------------------------------------------------------------
// rows

interface FullRow {
  readonly label: string
  readonly variant: string
  readonly episodes: number
  readonly requests: number
  readonly toolCalls: number
  readonly usage: Usage
  readonly clock: BridgeClock
}

type ReplayTarget = "proxy" | "proxy, audit on tmpfs" | "fake vLLM"

interface ReplayRow {
  readonly label: string
  readonly target: ReplayTarget
  readonly variant: string
  readonly requests: number
  readonly usage: Usage
  readonly meanMs: number
}

interface BridgeRow {
  readonly episodes: number
  readonly ops: number
  readonly usage: Usage
  readonly clock: BridgeClock
}

interface StoreRow {
  readonly records: number
  readonly wallS: number
  readonly meanMs: number
  readonly runnerS: number
}

interface Results {
  readonly full: ReadonlyArray<FullRow>
  readonly replays: ReadonlyArray<ReplayRow>
  readonly bridgeRow: BridgeRow
  readonly store: StoreRow
}

const addUsage = (a: Usage, b: Usage): Usage => ({
  wallS: a.wallS + b.wallS,
  runnerS: a.runnerS + b.runnerS,
  proxyS: a.proxyS + b.proxyS,
  fakeS: a.fakeS + b.fakeS,
  bridgeS: a.bridgeS + b.bridgeS,
  machineS: a.machineS + b.machineS
})

const addClock = (a: BridgeClock, b: BridgeClock): BridgeClock => ({
  sessions: a.sessions + b.sessions,
  opens: a.opens + b.opens,
  calls: a.calls + b.calls,
  sessionMs: a.sessionMs + b.sessionMs,
  useMs: a.useMs + b.useMs,
  openMs: a.openMs + b.openMs,
  callMs: a.callMs + b.callMs
})

/** Several passes as one (sums; rates are then totals over total wall time). */
const mergeFull = (rows: ReadonlyArray<FullRow>, label: string): FullRow =>
  rows.slice(1).reduce(
    (m, r) => ({
      ...m,
      episodes: m.episodes + r.episodes,
      requests: m.requests + r.requests,
      toolCalls: m.toolCalls + r.toolCalls,
      usage: addUsage(m.usage, r.usage),
      clock: addClock(m.clock, r.clock)
    }),
    { ...rows[0]!, label }
  )

const mergeReplay = (rows: ReadonlyArray<ReplayRow>, label: string): ReplayRow =>
  rows.slice(1).reduce(
    (m, r) => ({
      ...m,
      requests: m.requests + r.requests,
      usage: addUsage(m.usage, r.usage),
      meanMs: (m.meanMs * m.requests + r.meanMs * r.requests) / (m.requests + r.requests)
    }),
    { ...rows[0]!, label }
  )

const main = Effect.gen(function*() {
  if (!existsSync(CLI)) throw new Error("run `npm run build` first")
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-asbench-bench-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true, maxRetries: 3 })).pipe(Effect.ignore))
  const shm = existsSync("/dev/shm") ? mkdtempSync("/dev/shm/vetobench-asbench-bench-") : null
  if (shm !== null) yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(shm, { recursive: true, force: true })).pipe(Effect.ignore))

  // the checkout: the fixture with its cases replicated
  const checkout = path.join(dir, "asbench")
  cpSync(FIXTURE, checkout, { recursive: true })
  const dataFile = path.join(checkout, "data", "released_data.json")
  const originals = parsePythonJson(readFileSync(dataFile, "utf8")) as Array<AsbenchCase>
  const replicated: Array<AsbenchCase> = []
  for (let k = 0; k < REPLICAS; k++) for (const c of originals) replicated.push({ ...c, id: c.id + k * ID_STRIDE })
  writeFileSync(dataFile, pyJsonDumps(replicated, { indent: 1, ensureAscii: false }))
  const caseById = new Map(replicated.map((c) => [c.id, c]))

  // the fake vLLM and the proxy, as processes
  mkdirSync(path.join(dir, "configs"))
  const fake = yield* Effect.acquireRelease(
    Effect.promise(() => start(["fake-vllm", "--port", "0"], /serving (http:\/\/127\.0\.0\.1:(\d+))\/v1/)),
    stop
  )
  const settingsYaml = (auditDir?: string) =>
    [
      "upstreams:",
      "  - name: fake",
      `    base_url: ${fake.match[1]}/v1`,
      "proxy:",
      "  port: 0",
      ...(auditDir !== undefined ? [`  audit_dir: ${auditDir}`] : []),
      "paths:",
      `  asbench_dir: ${checkout}`,
      ""
    ].join("\n")
  const config = path.join(dir, "configs", "vetobench.yaml")
  writeFileSync(config, settingsYaml())
  const proxy = yield* Effect.acquireRelease(
    Effect.promise(() => start(["proxy", "-c", config], /veto-proxy (http:\/\/127\.0\.0\.1:\d+)\/v1/)),
    stop
  )
  const proxyUrl = proxy.match[1]!
  // a second proxy, the same but for its audit dir on tmpfs (its group-commit fdatasync is then free)
  const proxyShm = shm === null
    ? null
    : yield* Effect.gen(function*() {
      const file = path.join(dir, "shm", "configs", "vetobench.yaml")
      mkdirSync(path.dirname(file), { recursive: true })
      writeFileSync(file, settingsYaml(path.join(shm, "audit")))
      return yield* Effect.acquireRelease(
        Effect.promise(() => start(["proxy", "-c", file], /veto-proxy (http:\/\/127\.0\.0\.1:\d+)\/v1/)),
        stop
      )
    })
  const settings: SettingsShape = yield* loadSettings(config)

  // the bridge: 16 processes, timed
  const service: PythonBridgeService = yield* PythonBridge.make({ asbenchDir: checkout, workers: WORKERS })
  const clock = { current: newClock() }
  const bridge = timedBridge(service, clock)
  let pids: ReadonlyArray<number> = []
  const refreshPids = Effect.map(service.pids, (p) => {
    pids = p
  })
  const meter = makeMeter(proxy.proc.pid!, fake.proc.pid!, () => pids)
  const meterShm = proxyShm === null ? meter : makeMeter(proxyShm.proc.pid!, fake.proc.pid!, () => pids)

  /** an experiment whose run dir is `<base>/<name>/run` */
  const experiment = (name: string, opts: { readonly ids?: ReadonlyArray<number>; readonly base?: string; readonly proxyUrl?: string } = {}) =>
    Effect.gen(function*() {
      const home = path.join(dir, name)
      mkdirSync(home)
      const lines = [
        `name: ${name}`,
        `run_dir: ${path.join(opts.base ?? dir, name, "run")}`,
        `proxy_url: ${opts.proxyUrl ?? proxyUrl}/v1`,
        `models: [${MODEL}]`,
        "judges: [allow-all]",
        "arms: [baseline, enforce]",
        "agent_safetybench:",
        `  workers: ${WORKERS}`,
        `  max_tokens: ${MAX_TOKENS}`
      ]
      if (opts.ids !== undefined) {
        writeFileSync(path.join(home, "split.json"), JSON.stringify({ seed: 0, dev: [], test: opts.ids, note: "" }))
        lines.push(`  split: ${path.join(home, "split.json")}`)
      }
      writeFileSync(path.join(home, "exp.yaml"), lines.join("\n"))
      return yield* loadExperiment(path.join(home, "exp.yaml"), settings)
    })

  const variantsOf = (exp: Experiment) => ({
    baseline: exp.variants.find((v) => v.name === "baseline")!,
    enforce: exp.variants.find((v) => v.name === "enforce-allow-all")!
  })

  const readRecords = (exp: Experiment, v: Variant) =>
    parsePythonJson(readFileSync(path.join(asbenchRunDir(exp, MODEL, v), "gen_res.json"), "utf8")) as Array<AsbenchRecord>

  const run = (exp: Experiment, v: Variant) =>
    runAsbench(exp, MODEL, v).pipe(
      Effect.provide(Layer.mergeAll(Progress.Test([]), Settings.layerValue(settings), Layer.succeed(PythonBridge, bridge)))
    )

  /** one measured pass of the full path */
  const measureRun = (exp: Experiment, v: Variant, label: string, m: Meter = meter) =>
    Effect.gen(function*() {
      clock.current = newClock()
      yield* refreshPids
      const s0 = m.snap()
      const summary = yield* run(exp, v)
      const usage = m.since(s0)
      if (summary.ran.ok !== replicated.length) throw new Error(`${label}: ${JSON.stringify(summary.ran)} of ${replicated.length}`)
      const records = readRecords(exp, v)
      console.error(`[full] ${label}: ${records.length} episodes in ${usage.wallS.toFixed(2)} s`)
      return {
        label,
        variant: v.name,
        episodes: records.length,
        requests: records.reduce((n, r) => n + r.vetobench.rounds, 0),
        toolCalls: clock.current.calls,
        usage,
        clock: clock.current
      } satisfies FullRow
    })

  // warm-up: start the bridge processes, warm the proxy and this process
  const warm = yield* experiment("warmup", { ids: replicated.slice(0, WARMUP_CASES).map((c) => c.id) })
  for (const v of Object.values(variantsOf(warm))) yield* run(warm, v)
  if (proxyShm !== null) {
    const warmShm = yield* experiment("warmup-shm", { ids: replicated.slice(0, 4 * WARMUP_CASES).map((c) => c.id), base: shm!, proxyUrl: proxyShm.match[1]! })
    yield* run(warmShm, variantsOf(warmShm).enforce)
  }
  yield* refreshPids
  if (pids.length !== WORKERS) console.error(`note: ${pids.length} bridge processes after the warm-up (expected ${WORKERS})`)

  // (a) the full path: PASSES × (baseline, enforce), each pass in a fresh run dir
  const full: Array<FullRow> = []
  let last: Experiment | null = null
  for (let pass = 1; pass <= PASSES; pass++) {
    const exp = yield* experiment(`pass${pass}`)
    const { baseline, enforce } = variantsOf(exp)
    full.push(yield* measureRun(exp, baseline, `baseline, pass ${pass}`))
    full.push(yield* measureRun(exp, enforce, `enforce-allow-all, pass ${pass}`))
    last = exp
    // the same with the run dir on tmpfs (fdatasync of gen_res.jsonl costs nothing there), in the
    // same pass so that it runs under the same background load
    if (shm !== null) {
      const tmpfs = yield* experiment(`tmpfs${pass}`, { base: shm })
      full.push(yield* measureRun(tmpfs, variantsOf(tmpfs).enforce, `enforce-allow-all, run dir on tmpfs, pass ${pass}`))
    }
    if (shm !== null && proxyShm !== null) {
      const none = yield* experiment(`nosync${pass}`, { base: shm, proxyUrl: proxyShm.match[1]! })
      full.push(yield* measureRun(none, variantsOf(none).enforce, `enforce-allow-all, run dir and audit on tmpfs, pass ${pass}`, meterShm))
    }
  }
  const exp = last!
  const { baseline, enforce } = variantsOf(exp)

  // the record store alone: gen_res.jsonl appends (one write + fdatasync each, serialised), 16 appenders
  const enforceRecords = readRecords(exp, enforce)
  const storeRecords = enforceRecords.slice(0, STORE_RECORDS)
  const store = yield* Effect.scoped(
    Effect.gen(function*() {
      const appender = yield* openAppender(path.join(dir, "store-alone", "gen_res.jsonl"))
      const c0 = process.cpuUsage()
      const t0 = performance.now()
      let sum = 0
      yield* Effect.forEach(
        storeRecords,
        (r) => timed(appender.append(r), (ms) => {
          sum += ms
        }),
        { concurrency: WORKERS, discard: true }
      )
      const wallS = (performance.now() - t0) / 1000
      const cpu = process.cpuUsage(c0)
      return { records: storeRecords.length, wallS, meanMs: sum / storeRecords.length, runnerS: (cpu.user + cpu.system) / 1e6 } satisfies StoreRow
    })
  )
  console.error(`[store] ${store.records} appends in ${store.wallS.toFixed(2)} s`)

  // the tools each original case offers (as the runner sent them)
  const texts = yield* bridge.texts
  const toolsByOriginal = new Map<number, ReadonlyArray<Message>>()
  for (const c of originals) {
    const envs = caseEnvironments(c)
    if (Either.isLeft(envs)) throw new Error(`case ${c.id}: ${envs.left}`)
    const specs = yield* bridge.withSession((s) => s.openCase(envs.right))
    toolsByOriginal.set(c.id, specs.map((spec) => ({ type: "function", function: spec })))
  }

  // (c) the bridge alone: each episode's bridge calls, 16 sessions at once
  const oneRound = enforceRecords.map((r) => {
    const c = caseById.get(r.id)!
    const envs = caseEnvironments(c)
    if (Either.isLeft(envs)) throw new Error(`case ${r.id}: ${envs.left}`)
    const initial = Either.getOrThrow(initialMessages(c, texts.systemPrompt)).length
    const calls = r.output.slice(initial).flatMap((m) =>
      Array.isArray(m.tool_calls) ? (m.tool_calls as Array<{ function: { name: string; arguments: string } }>).map((x) => x.function) : []
    )
    return { envs: envs.right, calls }
  })
  const sequences = Array.from({ length: BRIDGE_REPEAT }, () => oneRound).flat()
  clock.current = newClock()
  yield* refreshPids
  const b0 = meter.snap()
  yield* Effect.forEach(
    sequences,
    (q) =>
      bridge.withSession((s) =>
        Effect.gen(function*() {
          yield* s.openCase(q.envs)
          for (const c of q.calls) yield* s.callTool(c.name, c.arguments)
        })
      ),
    { concurrency: WORKERS, discard: true }
  )
  const bridgeRow: BridgeRow = {
    episodes: sequences.length,
    // open_case + call_tool + close_case (every session that opened a case closes it)
    ops: clock.current.opens * 2 + clock.current.calls,
    usage: meter.since(b0),
    clock: clock.current
  }
  console.error(`[bridge] ${bridgeRow.episodes} episodes in ${bridgeRow.usage.wallS.toFixed(2)} s`)

  // (b) the proxy alone (and the fake alone): the last full pass's requests replayed, PASSES times
  const replays: Array<ReplayRow> = []
  const viaProxy = new Pool(proxyUrl, { connections: WORKERS })
  const direct = new Pool(fake.match[1]!, { connections: WORKERS })
  const viaProxyShm = new Pool(proxyShm?.match[1] ?? proxyUrl, { connections: WORKERS })
  yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([viaProxy.close(), direct.close(), viaProxyShm.close()])))
  const requests = new Map<string, Array<ChatRequest>>()
  for (const v of [baseline, enforce]) {
    requests.set(v.name, rebuildRequests(readRecords(exp, v), caseById, toolsByOriginal, texts.systemPrompt, routeFor(MODEL, v)))
  }
  const replayOnce = (target: ReplayTarget, v: Variant, label: string) =>
    Effect.gen(function*() {
      const reqs = requests.get(v.name)!
      const isDirect = target === "fake vLLM"
      const m = target === "proxy, audit on tmpfs" ? meterShm : meter
      const pool = target === "proxy" ? viaProxy : target === "fake vLLM" ? direct : viaProxyShm
      const s0 = m.snap()
      const lat = yield* Effect.promise(() => replay(pool, reqs, `${runIdFor(exp, "asbench", MODEL, v)}.replay`, isDirect))
      const usage = m.since(s0)
      console.error(`[replay] ${label}: ${reqs.length} requests in ${usage.wallS.toFixed(2)} s`)
      return { label, target, variant: isDirect ? MODEL : v.name, requests: reqs.length, usage, meanMs: lat.reduce((a, b) => a + b, 0) / lat.length } satisfies ReplayRow
    })
  for (let pass = 1; pass <= PASSES; pass++) {
    replays.push(yield* replayOnce("proxy", baseline, `proxy, baseline, pass ${pass}`))
    replays.push(yield* replayOnce("proxy", enforce, `proxy, enforce-allow-all, pass ${pass}`))
    if (proxyShm !== null) replays.push(yield* replayOnce("proxy, audit on tmpfs", enforce, `proxy with its audit on tmpfs, enforce-allow-all, pass ${pass}`))
  }
  replays.push(yield* replayOnce("fake vLLM", enforce, "fake vLLM alone"))

  return { full, replays, bridgeRow, store } satisfies Results
})

// ---------------------------------------------------------------------------------------------
// report

const f1 = (x: number) => x.toFixed(1)
const f2 = (x: number) => x.toFixed(2)
const pct = (x: number) => `${(x * 100).toFixed(0)} %`
const ms = (s: number, n: number) => f2((s / n) * 1000)
const times = (x: number) => `×${x.toFixed(1)}`

const largestCpu = (u: Usage): string => {
  const parts = [["the runner", u.runnerS], ["the proxy", u.proxyS], ["the fake vLLM", u.fakeS], ["the bridge", u.bridgeS]] as const
  const top = [...parts].sort((a, b) => b[1] - a[1])[0]!
  return `${top[0]} (${pct(top[1] / totalCpu(u))})`
}

const report = (r: Results) => {
  const { full, replays, bridgeRow, store } = r
  const onDisk = full.filter((x) => !x.label.includes("tmpfs"))
  const enforce = mergeFull(onDisk.filter((x) => x.variant === "enforce-allow-all"), "enforce-allow-all, all passes")
  const mergeIf = (rows: ReadonlyArray<FullRow>, label: string) => (rows.length === 0 ? undefined : mergeFull(rows, label))
  const tmpfs = mergeIf(full.filter((x) => x.label.includes("run dir on tmpfs")), "run dir on tmpfs")
  const nosync = mergeIf(full.filter((x) => x.label.includes("audit on tmpfs")), "run dir and audit on tmpfs")
  const rate = (x: FullRow) => x.episodes / x.usage.wallS
  const outsideShare = (x: FullRow) => 1 - x.clock.sessionMs / (WORKERS * x.usage.wallS * 1000)
  const reqPerEpisode = enforce.requests / enforce.episodes
  const callsPerEpisode = enforce.toolCalls / enforce.episodes
  const opsPerEpisode = bridgeRow.ops / bridgeRow.episodes
  const cpuName = cpus()[0]?.model.trim() ?? "cpu"

  const fullTable = [
    "| run | episodes | wall | **episodes/s** | tool calls/s | chat requests/s | CPU of the bench's processes (of 2 cores) | CPU of all processes on the machine |",
    "|---|---|---|---|---|---|---|---|",
    ...full.map((x) =>
      `| ${x.label} | ${x.episodes} | ${f2(x.usage.wallS)} s | **${f1(x.episodes / x.usage.wallS)}** | ${f1(x.toolCalls / x.usage.wallS)} | ${f1(x.requests / x.usage.wallS)} | ${pct(totalCpu(x.usage) / (x.usage.wallS * CORES))} | ${pct(x.usage.machineS / (x.usage.wallS * CORES))} |`
    )
  ].join("\n")

  const cpuTable = [
    "| run | runner (this process) | proxy | fake vLLM | bridge (16 × python3) | total |",
    "|---|---|---|---|---|---|",
    ...full.map((x) => {
      const u = x.usage
      const t = totalCpu(u)
      const cell = (s: number) => `${ms(s, x.episodes)} ms (${pct(s / t)})`
      return `| ${x.label} | ${cell(u.runnerS)} | ${cell(u.proxyS)} | ${cell(u.fakeS)} | ${cell(u.bridgeS)} | ${ms(t, x.episodes)} ms |`
    })
  ].join("\n")

  const timeTable = [
    "| run | bridge calls (open_case, call_tool) | taking a process + close_case | chat steps (and the runner's work between them) | outside the session (record append + fdatasync, idle) | mean open_case | mean call_tool | mean chat step |",
    "|---|---|---|---|---|---|---|---|",
    ...full.map((x) => {
      const c = x.clock
      const workerMs = WORKERS * x.usage.wallS * 1000
      const chat = c.useMs - c.openMs - c.callMs
      return `| ${x.label} | ${pct((c.openMs + c.callMs) / workerMs)} | ${pct((c.sessionMs - c.useMs) / workerMs)} | ${pct(chat / workerMs)} | **${pct(1 - c.sessionMs / workerMs)}** | ${f2(c.openMs / c.opens)} ms | ${c.calls > 0 ? f2(c.callMs / c.calls) : "–"} ms | ${f2(chat / x.requests)} ms |`
    })
  ].join("\n")

  const replayTable = [
    "| run | requests | wall | **requests/s** | as episodes/s | mean latency | CPU / request: target | CPU / request: fake | CPU / request: load generator | CPU of the bench's processes | CPU of all processes |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...replays.map((x) => {
      const u = x.usage
      const isProxy = x.target !== "fake vLLM"
      const own = isProxy ? u.proxyS : u.fakeS
      return `| ${x.label} | ${x.requests} | ${f2(u.wallS)} s | **${f1(x.requests / u.wallS)}** | ${f1(x.requests / u.wallS / reqPerEpisode)} | ${f2(x.meanMs)} ms | ${ms(own, x.requests)} ms | ${isProxy ? `${ms(u.fakeS, x.requests)} ms` : "—"} | ${ms(u.runnerS, x.requests)} ms | ${pct((u.runnerS + u.proxyS + u.fakeS) / (u.wallS * CORES))} | ${pct(u.machineS / (u.wallS * CORES))} |`
    })
  ].join("\n")

  const bu = bridgeRow.usage
  const bridgeTable = [
    "| sessions at once | episodes | operations | wall | **operations/s** | as episodes/s | bridge CPU / episode | client CPU / episode | mean open_case | mean call_tool | CPU of the bench's processes | CPU of all processes |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
    `| ${WORKERS} | ${bridgeRow.episodes} | ${bridgeRow.ops} | ${f2(bu.wallS)} s | **${f1(bridgeRow.ops / bu.wallS)}** | ${f1(bridgeRow.episodes / bu.wallS)} | ${ms(bu.bridgeS, bridgeRow.episodes)} ms | ${ms(bu.runnerS, bridgeRow.episodes)} ms | ${f2(bridgeRow.clock.openMs / bridgeRow.clock.opens)} ms | ${bridgeRow.clock.calls > 0 ? f2(bridgeRow.clock.callMs / bridgeRow.clock.calls) : "–"} ms | ${pct((bu.runnerS + bu.bridgeS) / (bu.wallS * CORES))} | ${pct(bu.machineS / (bu.wallS * CORES))} |`
  ].join("\n")

  const storeTable = [
    "| appenders | records | wall | **records/s** | mean append (incl. waiting for the lock) | CPU / record |",
    "|---|---|---|---|---|---|",
    `| ${WORKERS} | ${store.records} | ${f2(store.wallS)} s | **${f1(store.records / store.wallS)}** | ${f2(store.meanMs)} ms | ${ms(store.runnerS, store.records)} ms |`
  ].join("\n")

  // conclusion: the enforce passes on disk together
  const u = enforce.usage
  const t = totalCpu(u)
  const eps = enforce.episodes / u.wallS
  const proxyReplay = mergeReplay(replays.filter((x) => x.target === "proxy" && x.variant === enforce.variant), "proxy")
  const proxyEps = proxyReplay.requests / proxyReplay.usage.wallS / reqPerEpisode
  const bridgeEps = bridgeRow.episodes / bu.wallS
  const storeEps = store.records / store.wallS
  const cpuEps = (CORES / t) * enforce.episodes
  const c = enforce.clock
  const workerMs = WORKERS * u.wallS * 1000
  const bridgeTime = (c.openMs + c.callMs + c.sessionMs - c.useMs) / workerMs
  const outside = 1 - c.sessionMs / workerMs
  const ceilings = [
    ["the bridge alone", bridgeEps],
    ["the proxy alone (with the fake)", proxyEps],
    ["the record store alone (gen_res.jsonl appends)", storeEps],
    [`CPU (${CORES} cores ÷ ${ms(t, enforce.episodes)} ms per episode)`, cpuEps]
  ] as const
  const lowest = [...ceilings].sort((a, b) => a[1] - b[1])[0]!
  const bridgeOk = bridgeEps >= 2 * eps && u.bridgeS < u.proxyS && bridgeTime < 0.25
  const conclusion = [
    `**Conclusion** (enforce, ${onDisk.length / 2 === 1 ? "the pass" : `the ${onDisk.length / 2} passes`} on disk together: ${enforce.episodes} episodes in ${f2(u.wallS)} s, **${f1(eps)} episodes/s**, ${f1(enforce.toolCalls / u.wallS)} tool calls/s).`,
    "",
    `- Ceilings, in episodes/s (full path ${f1(eps)}): ${ceilings.map(([name, x]) => `${name} ${f1(x)} (${times(x / eps)})`).join("; ")}. The lowest is that of ${lowest[0]}, and the full path stays ${times(lowest[1] / eps)} below it: no single part, run alone, is what holds the full path back.`,
    `- CPU per episode: runner ${ms(u.runnerS, enforce.episodes)} ms (${pct(u.runnerS / t)}), proxy ${ms(u.proxyS, enforce.episodes)} ms (${pct(u.proxyS / t)}), fake ${ms(u.fakeS, enforce.episodes)} ms (${pct(u.fakeS / t)}), bridge ${ms(u.bridgeS, enforce.episodes)} ms (${pct(u.bridgeS / t)}); the bench's processes used ${pct(t / (u.wallS * CORES))} of the ${CORES} cores` +
      (u.machineS > 1.2 * t
        ? `, while all processes on the machine used ${pct(u.machineS / (u.wallS * CORES))}: other work shared the cores during the run, so every rate here is what the bench got on a busy machine (a lower bound), and the ratios between phases are the figures to read.`
        : "."),
    `- Time: of the 16 workers' time, ${pct(bridgeTime)} is spent in the bridge (calls, taking a process, close_case), ${pct(c.sessionMs / workerMs - bridgeTime)} in chat steps through the proxy, and **${pct(outside)} outside the session**, i.e. in the runner's append of the finished record to \`gen_res.jsonl\` (one write + \`fdatasync\` per record under one lock, so one disk sync at a time for all 16 workers; alone, on the same disk, the store does ${f1(storeEps)} records/s).` +
      (tmpfs !== undefined
        ? ` With the run dir on tmpfs (where \`fdatasync\` is free; the passes together) the same run makes ${f1(rate(tmpfs))} episodes/s (${times(rate(tmpfs) / eps)}), with ${pct(outsideShare(tmpfs))} of the workers' time outside the session.`
        : "") +
      (nosync !== undefined
        ? ` With the proxy's audit on tmpfs as well: ${f1(rate(nosync))} episodes/s (${times(rate(nosync) / eps)}), ${pct(outsideShare(nosync))} outside the session, ${ms(totalCpu(nosync.usage), nosync.episodes)} ms of CPU per episode` +
          (nosync.usage.proxyS / nosync.episodes > 1.2 * (u.proxyS / enforce.episodes)
            ? ` (the proxy's share grows: ${ms(nosync.usage.proxyS, nosync.episodes)} ms per episode against ${ms(u.proxyS, enforce.episodes)} ms with its audit on disk, presumably because its group commit then writes smaller batches).`
            : ".")
        : ""),
    bridgeOk
      ? `- **The bridge is not the bottleneck**: alone it sustains ${times(bridgeEps / eps)} the full path's episode rate, it takes ${pct(u.bridgeS / t)} of the CPU (less than the proxy's ${pct(u.proxyS / t)}) and ${pct(bridgeTime)} of the workers' time.`
      : `- **The bridge may be a bottleneck here**: alone it sustains only ${times(bridgeEps / eps)} the full path's episode rate, or it takes more CPU than the proxy, or more than a quarter of the workers' time (${pct(bridgeTime)}).`,
    tmpfs !== undefined && outside > 0.3 && outsideShare(tmpfs) < outside / 2
      ? `- **What holds the workers on disk** is the runner's record store, not the bridge: ${pct(outside)} of their time goes to appending finished records (one \`fdatasync\` at a time, on a disk the proxy's audit also syncs to); with the run dir on tmpfs that drops to ${pct(outsideShare(tmpfs))} and the episode rate grows ${times(rate(tmpfs) / eps)}${u.machineS > 1.2 * t ? " (less than the freed time suggests, since on this shared machine the workers then wait for CPU instead)" : ""}. Without the syncs, the chat steps through the proxy take ${pct((tmpfs.clock.useMs - tmpfs.clock.openMs - tmpfs.clock.callMs) / (WORKERS * tmpfs.usage.wallS * 1000))} of the workers' time and the proxy is the largest CPU consumer (${pct(tmpfs.usage.proxyS / totalCpu(tmpfs.usage))}); the bridge's share stays ${pct(tmpfs.usage.bridgeS / totalCpu(tmpfs.usage))} of the CPU and ${pct((tmpfs.clock.openMs + tmpfs.clock.callMs + tmpfs.clock.sessionMs - tmpfs.clock.useMs) / (WORKERS * tmpfs.usage.wallS * 1000))} of the time.`
      : `- The largest CPU consumer is ${largestCpu(u)}.`
  ].join("\n")

  return [
    "<!-- asbench-run:start -->",
    "`npx tsx bench/asbench-run.ts [--replicas N] [--passes N] [--write]` (built bundle). The fake vLLM and the proxy run as their own processes; the runner (`runAsbench`, 16 workers) and the real Python bridge (16 `python3` processes on a temp copy of `examples/agent-safetybench-mini`) run in the benchmark process, which is also the load generator of the replays. " +
      `The fixture's 9 cases are replicated (ids + 1000·k) to ${replicatedCount(enforce, onDisk)} episodes per run; an episode makes ${f2(reqPerEpisode)} chat requests and ${f2(callsPerEpisode)} tool calls on average (the fake answers a case with tools by calling its first tool, then \`Task finished.\`), i.e. ${f2(opsPerEpisode)} bridge operations (open_case, call_tool, close_case). ` +
      `A warm-up pass of ${WARMUP_CASES} cases per variant starts the bridge processes first; then ${PASSES} passes, each of: baseline and enforce (static \`allow-all\` judge, audit on) with a fresh run dir on disk (\`/tmp\`); enforce with the run dir on tmpfs (\`/dev/shm\`, where \`fdatasync\` costs nothing); enforce with the run dir on tmpfs through a second proxy whose audit dir is on tmpfs too (warmed up with ${4 * WARMUP_CASES} cases first). ` +
      "CPU is utime + stime from `/proc/<pid>/stat` (10 ms ticks) for the proxy, the fake and every bridge process, and `process.cpuUsage()` for the runner.",
    "",
    `Run ${new Date().toISOString().slice(0, 10)} on ${CORES} × ${cpuName}, Node ${process.version}.`,
    "",
    "**(a) Full path** (fake vLLM + proxy + bridge + runner):",
    "",
    fullTable,
    "",
    "CPU per episode (share of the total):",
    "",
    cpuTable,
    "",
    "Where the workers' time goes (timed by wrapping the bridge service the runner uses; summed over episodes, as a share of 16 workers × wall time):",
    "",
    timeTable,
    "",
    "**(b) The proxy alone**: the last pass's chat requests, rebuilt byte for byte from its `gen_res.json` (each request is the episode's messages up to a model turn, with the case's tools, serialised as the client does), replayed at concurrency 16 with the runner's headers; the fake vLLM alone for reference:",
    "",
    replayTable,
    "",
    `**(c) The bridge alone**: the enforce run's episodes as bridge calls only (open_case, the recorded tool calls, close_case), ${BRIDGE_REPEAT} times over, 16 sessions at once:`,
    "",
    bridgeTable,
    "",
    "**(d) The record store alone**: the runner's `gen_res.jsonl` appender (`openAppender`: one write + `fdatasync` per record, serialised) with the enforce run's records, 16 appenders at once, on the same disk:",
    "",
    storeTable,
    "",
    conclusion,
    "<!-- asbench-run:end -->"
  ].join("\n")
}

const replicatedCount = (merged: FullRow, passes: ReadonlyArray<FullRow>) => merged.episodes / passes.filter((x) => x.variant === merged.variant).length

Effect.runPromise(Effect.scoped(main)).then(
  (r) => {
    const section = report(r)
    console.log(section)
    if (WRITE) {
      const text = readFileSync(DOC, "utf8")
      const marked = /<!-- asbench-run:start -->[\s\S]*<!-- asbench-run:end -->/
      const next = marked.test(text)
        ? text.replace(marked, () => section)
        : `${text.replace(/\n*$/, "\n")}\n## bench/asbench-run\n\n${section}\n`
      writeFileSync(DOC, next)
    }
    process.exit(0)
  },
  (e: unknown) => {
    console.error(e)
    process.exit(1)
  }
)
