/**
 * Run `vetobench` in a test, two ways:
 * - the built bundle as a user would (`runCli`, `runCliAsync`, `startCli`): where the process is
 *   the point (exit codes of the real binary, signals, the terminal, `--port`, the bundle's own
 *   imports);
 * - the same program in this process (`runCliInProcess`, `startCliInProcess`, src/cli/program.ts):
 *   everywhere else. Its output is captured from Effect's `Console` (log lines included) and the
 *   progress output; it sees this process's working directory, so tests give it absolute paths;
 *   `env` sets what it reads through `Config` (`VETOBENCH_CONFIG`).
 *
 * The timeouts only end a hung process: they are generous (a busy 2-core machine starts a CLI
 * several times slower), and below the test timeout.
 */
const HANG_MS = 100_000
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Cause, ConfigProvider, Console, Effect, Exit, Fiber } from "effect"
import { spawn, spawnSync } from "node:child_process"
import { Console as NodeConsole } from "node:console"
import * as path from "node:path"
import { Writable } from "node:stream"
import { fileURLToPath } from "node:url"
import { ProgressOutput } from "../../src/run-layout/progress.js"
import { runVetobench } from "../../src/cli/program.js"

export const CLI = path.resolve("dist/cli.mjs")

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const strip = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, "")

export const runCli = (args: ReadonlyArray<string>, opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): CliResult => {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: opts.cwd ?? process.cwd(),
    env: { ...process.env, ...opts.env },
    encoding: "utf8",
    timeout: HANG_MS
  })
  return { code: r.status, stdout: strip(r.stdout), stderr: strip(r.stderr) }
}

/** Start a long-running subcommand; resolves once `ready` matches stdout. */
export const startCli = (args: ReadonlyArray<string>, ready: RegExp, opts: { cwd?: string } = {}) =>
  new Promise<{ proc: ReturnType<typeof spawn>; match: RegExpMatchArray; output: () => string }>((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, ...args], { cwd: opts.cwd ?? process.cwd(), stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    const timer = setTimeout(() => reject(new Error(`not ready: ${out}`)), HANG_MS)
    const onData = (b: Buffer) => {
      out += strip(b.toString())
      const m = ready.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve({ proc, match: m, output: () => out })
      }
    }
    proc.stdout.on("data", onData)
    proc.stderr.on("data", onData)
    proc.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`exited ${code} before ready: ${out}`))
    })
  })

export const exited = (proc: ReturnType<typeof spawn>) =>
  new Promise<number | null>((resolve) => {
    if (proc.exitCode !== null) return resolve(proc.exitCode)
    proc.once("exit", (code) => resolve(code))
  })

/** `runCli` without blocking this process (a server the test runs in-process must keep answering). */
export const runCliAsync = (args: ReadonlyArray<string>, opts: { cwd?: string } = {}): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, ...args], { cwd: opts.cwd ?? process.cwd(), env: process.env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    proc.stdout.on("data", (b: Buffer) => (stdout += b.toString()))
    proc.stderr.on("data", (b: Buffer) => (stderr += b.toString()))
    proc.once("error", reject)
    proc.once("close", (code) => resolve({ code, stdout: strip(stdout), stderr: strip(stderr) }))
  })

/** the repository's small Agent-SafetyBench checkout (examples/agent-safetybench-mini) */
export const MINI_CHECKOUT = fileURLToPath(new URL("../../examples/agent-safetybench-mini", import.meta.url))

/** A settings file for CLI tests: one upstream `fake`, the allow-all judge, port 0, the mini checkout; `extra` lines appended. */
export const fakeSettingsYaml = (fakeUrl: string, extra: ReadonlyArray<string> = []): string =>
  [
    "upstreams:",
    "  - name: fake",
    `    base_url: ${fakeUrl}`,
    "judges:",
    "  allow-all: { kind: static, decision: allow }",
    "proxy:",
    "  port: 0",
    "paths:",
    `  asbench_dir: ${MINI_CHECKOUT}`,
    ...extra,
    ""
  ].join("\n")

// ---------------------------------------------------------------------------------------------
// in process

export interface InProcessOptions {
  /**
   * Variables the program reads through `Config` (`VETOBENCH_CONFIG`, `OTEL_*`): these over this
   * process's environment; `undefined` leaves one out. (`${VAR}` in settings files still reads
   * `process.env`.)
   */
  readonly env?: Readonly<Record<string, string | undefined>>
}

/** A writable stream that hands each chunk to `write` as it comes (synchronously). */
const into = (write: (text: string) => void) =>
  new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      write(typeof chunk === "string" ? chunk : chunk.toString("utf8"))
      done()
    }
  })

/** Effect's `Console` over Node's, writing to `out` and `err` instead of this process's stdout and stderr. */
const capturingConsole = (out: (text: string) => void, err: (text: string) => void): Console.Console => {
  const unsafe = new NodeConsole({ stdout: into(out), stderr: into(err), colorMode: false })
  const run = (f: () => void) => Effect.sync(f)
  return {
    [Console.TypeId]: Console.TypeId,
    assert: (condition, ...args) => run(() => unsafe.assert(condition, ...args)),
    clear: run(() => unsafe.clear()),
    count: (label) => run(() => unsafe.count(label)),
    countReset: (label) => run(() => unsafe.countReset(label)),
    debug: (...args) => run(() => unsafe.debug(...args)),
    dir: (item, options) => run(() => unsafe.dir(item, options)),
    dirxml: (...args) => run(() => unsafe.dirxml(...args)),
    error: (...args) => run(() => unsafe.error(...args)),
    group: (options) => run(() => (options?.collapsed === true ? unsafe.groupCollapsed(options.label) : unsafe.group(options?.label))),
    groupEnd: run(() => unsafe.groupEnd()),
    info: (...args) => run(() => unsafe.info(...args)),
    log: (...args) => run(() => unsafe.log(...args)),
    table: (data, properties) => run(() => unsafe.table(data, properties === undefined ? undefined : [...properties])),
    time: (label) => run(() => unsafe.time(label)),
    timeEnd: (label) => run(() => unsafe.timeEnd(label)),
    timeLog: (label, ...args) => run(() => unsafe.timeLog(label, ...args)),
    trace: (...args) => run(() => unsafe.trace(...args)),
    warn: (...args) => run(() => unsafe.warn(...args)),
    unsafe
  }
}

/**
 * The environment `Config` reads, as `ConfigProvider.fromEnv` reads `process.env`; in this process
 * `process.argv[1]` is not the CLI, so the demo's stdio gate (src/cli/demo-mcp.ts) is spawned from the bundle.
 */
const configFrom = (env: InProcessOptions["env"]) =>
  ConfigProvider.fromMap(
    new Map(Object.entries({ VETOBENCH_CLI_ENTRY: CLI, ...process.env, ...env }).filter((e): e is [string, string] => e[1] !== undefined)),
    { pathDelim: "_" }
  )

/**
 * `vetobench args…` as a fiber of this process: stdout and stderr go to `out` and `err` (progress
 * to `err`, as a pipe sees it: no TTY). A defect ends it with exit code 1 and the runtime's report
 * on stderr, as `runMain` does.
 */
const program = (args: ReadonlyArray<string>, opts: InProcessOptions, out: (text: string) => void, err: (text: string) => void) =>
  runVetobench(["node", "vetobench", ...args]).pipe(
    Effect.withConsole(capturingConsole(out, err)),
    Effect.withConfigProvider(configFrom(opts.env)),
    Effect.provideService(ProgressOutput, { write: err, isTTY: false }),
    Effect.provide(NodeContext.layer),
    Effect.catchAllDefect((defect) =>
      Effect.sync(() => {
        err(`${Cause.pretty(Cause.die(defect))}\n`)
        return 1
      })
    )
  )

/** Run `vetobench args…` in this process, to the end: its exit code and what it printed (ANSI stripped). */
export const runCliInProcess = async (args: ReadonlyArray<string>, opts: InProcessOptions = {}): Promise<CliResult> => {
  let stdout = ""
  let stderr = ""
  const code = await Effect.runPromise(program(args, opts, (t) => void (stdout += t), (t) => void (stderr += t)))
  return { code, stdout: strip(stdout), stderr: strip(stderr) }
}

/** A long-running subcommand (`fake-vllm`, `proxy`) served from this process. */
export interface InProcessServer {
  /** `ready` on what it printed */
  readonly match: RegExpMatchArray
  /** all it printed so far (stdout and stderr, ANSI stripped) */
  readonly output: () => string
  /** it has not ended (by itself or by `stop`) */
  readonly running: () => boolean
  /** interrupt it (as SIGTERM ends the process) and wait until it has closed everything */
  readonly stop: () => Promise<void>
}

/** Start a long-running subcommand in this process; resolves once `ready` matches what it printed. */
export const startCliInProcess = (args: ReadonlyArray<string>, ready: RegExp, opts: InProcessOptions = {}): Promise<InProcessServer> =>
  new Promise((resolve, reject) => {
    let out = ""
    let settled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const stop = () => Effect.runPromise(Fiber.interrupt(fiber)).then(() => undefined)
    const onOutput = (text: string) => {
      out += strip(text)
      const m = settled ? null : ready.exec(out)
      if (m !== null) {
        settled = true
        clearTimeout(timer)
        resolve({ match: m, output: () => out, running: () => fiber.unsafePoll() === null, stop })
      }
    }
    const fiber = Effect.runFork(program(args, opts, onOutput, onOutput))
    if (!settled) {
      timer = setTimeout(() => {
        settled = true
        void stop()
        reject(new Error(`not ready: ${out}`))
      }, HANG_MS)
    }
    fiber.addObserver((exit) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      reject(new Error(`ended (${Exit.isSuccess(exit) ? `exit ${exit.value}` : Cause.pretty(exit.cause)}) before ready: ${out}`))
    })
  })
