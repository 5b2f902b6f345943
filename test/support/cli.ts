/**
 * Run the built `vetobench` bundle as a user would. The timeouts only end a hung process: they are
 * generous (a busy 2-core machine starts a CLI several times slower), and below the test timeout.
 */
const HANG_MS = 100_000
import { spawn, spawnSync } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

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
