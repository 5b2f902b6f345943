/**
 * scripts/vllm-supervisor.py with dummy children (python3 one-liners instead of vLLM): one child
 * exiting stops the others and the supervisor (non-zero); SIGTERM stops everything (a child that
 * ignores SIGTERM is killed after the grace period); output lines are prefixed; children with a
 * ready_url start one after another; --check reports readiness; bad specs exit 2.
 *
 * "Promptly" is shown without timing assertions: the sleeping children sleep far longer than
 * the test timeout, so a supervisor that waited for them would time the test out.
 *
 * The tests run concurrently (they mostly wait on sleeping children); each stops the supervisors it
 * started when it finishes. The two that need a port nobody listens on for a while run alone.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, describe, it, type TestContext } from "vitest"

const SCRIPT = path.resolve("scripts/vllm-supervisor.py")
const dir = mkdtempSync(path.join(tmpdir(), "vetobench-supervisor-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

interface ChildSpec {
  readonly name: string
  readonly argv: ReadonlyArray<string>
  readonly ready_url?: string
}
const py = (code: string): ReadonlyArray<string> => ["python3", "-c", code]
const SLEEPER = py("import time; print('up', flush=True); time.sleep(120)")

let specCount = 0
const writeSpec = (spec: unknown): string => {
  const file = path.join(dir, `spec-${specCount++}.json`)
  writeFileSync(file, JSON.stringify(spec))
  return file
}

interface Running {
  readonly proc: ChildProcess
  readonly output: () => string
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}
/** Never leave processes behind, whatever a test did: a supervisor stops its children on SIGTERM. */
const stop = async (p: ChildProcess) => {
  if (p.exitCode !== null || p.signalCode !== null) return
  const closed = new Promise((r) => p.once("close", r))
  p.kill("SIGTERM")
  const timer = setTimeout(() => p.kill("SIGKILL"), 5_000)
  await closed
  clearTimeout(timer)
}

/** Start the supervisor with `args`; it is stopped when the test finishes. */
const supervise = (onTestFinished: TestContext["onTestFinished"], args: ReadonlyArray<string>): Running => {
  const proc = spawn("python3", [SCRIPT, ...args], { stdio: ["ignore", "pipe", "pipe"] })
  onTestFinished(() => stop(proc))
  let out = ""
  proc.stdout!.on("data", (b: Buffer) => (out += b.toString()))
  proc.stderr!.on("data", (b: Buffer) => (out += b.toString()))
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once("close", (code, signal) => resolve({ code, signal }))
  )
  return { proc, output: () => out, exit }
}

/** Poll `check`; `ms` only ends a hang (a busy machine starts Pythons several times slower). */
const waitFor = async (what: string, check: () => boolean, ms = 100_000) => {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** pid of each child from the supervisor's "started NAME (pid N)" lines. */
const childPids = (out: string): Map<string, number> => {
  const pids = new Map<string, number>()
  for (const m of out.matchAll(/^\[supervisor\] started (\S+) \(pid (\d+)\)$/gm)) {
    pids.set(m[1]!, Number(m[2]))
  }
  return pids
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = http.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })

describe.concurrent("vllm-supervisor.py", () => {
  it("exits non-zero as soon as one child exits, and stops the others", async ({ expect, onTestFinished }) => {
    const children: ReadonlyArray<ChildSpec> = [
      { name: "judge-small", argv: SLEEPER },
      { name: "granite-guardian", argv: SLEEPER },
      { name: "llama-guard", argv: SLEEPER },
      { name: "shieldagent", argv: py("import sys, time; time.sleep(0.5); print('dying', flush=True); sys.exit(3)") }
    ]
    const run = supervise(onTestFinished, [writeSpec({ grace_seconds: 5, children })])
    const { code } = await run.exit
    const out = run.output()
    expect(code, out).toBe(3)
    expect(out).toContain("[supervisor] shieldagent exited with status 3; stopping the others")
    expect(out).toContain("[shieldagent] dying")
    const pids = childPids(out)
    expect([...pids.keys()]).toEqual(children.map((c) => c.name))
    for (const [name, pid] of pids) expect(alive(pid), `${name} (pid ${pid}) still running`).toBe(false)
  })

  it("exits 1 when a child exits with status 0 (a server must not stop), 128+N when a signal killed it", async ({ expect, onTestFinished }) => {
    const ok = supervise(onTestFinished, [writeSpec([{ name: "a", argv: SLEEPER }, { name: "b", argv: py("pass") }])])
    expect((await ok.exit).code, ok.output()).toBe(1)
    const killed = supervise(onTestFinished, [writeSpec([{ name: "a", argv: SLEEPER }, { name: "b", argv: py("import os, signal; os.kill(os.getpid(), signal.SIGKILL)") }])])
    expect((await killed.exit).code, killed.output()).toBe(128 + 9)
  })

  it("forwards SIGTERM to every child, kills one that ignores it after the grace period, exits 0", async ({ expect, onTestFinished }) => {
    const children: ReadonlyArray<ChildSpec> = [
      { name: "a", argv: SLEEPER },
      { name: "b", argv: SLEEPER },
      { name: "stubborn", argv: py("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(120)") }
    ]
    const run = supervise(onTestFinished, [writeSpec({ grace_seconds: 1, children })])
    await waitFor("all children up", () => children.every((c) => run.output().includes(`[${c.name}] up\n`)))
    const pids = childPids(run.output())
    expect(pids.size).toBe(3)
    run.proc.kill("SIGTERM")
    const { code } = await run.exit
    const out = run.output()
    expect(code, out).toBe(0)
    expect(out).toContain("[supervisor] received signal 15; stopping all children")
    expect(out).toContain("[supervisor] stubborn did not stop within 1s: SIGKILL")
    for (const [name, pid] of pids) expect(alive(pid), `${name} (pid ${pid}) still running`).toBe(false)
  })

  it("prefixes every output line, stdout and stderr, including a last line without a newline", async ({ expect, onTestFinished }) => {
    const code = "import sys; print('one'); sys.stderr.write('two\\n'); sys.stdout.write('three'); sys.stdout.flush()"
    const run = supervise(onTestFinished, [writeSpec([{ name: "talker", argv: py(code) }, { name: "idle", argv: SLEEPER }])])
    await run.exit
    const lines = run.output().split("\n")
    for (const text of ["one", "two", "three"]) expect(lines).toContain(`[talker] ${text}`)
    expect(lines.filter((l) => l.length > 0).every((l) => /^\[(talker|idle|supervisor)\] /.test(l)), run.output()).toBe(true)
  })

  it.sequential("starts a child only after the previous one's ready_url answers 200", async ({ expect, onTestFinished }) => {
    const port = await freePort()
    const url = `http://127.0.0.1:${port}/health`
    const server = [
      "import http.server, time",
      "time.sleep(1)",
      "class H(http.server.BaseHTTPRequestHandler):",
      "    def do_GET(self):",
      "        self.send_response(200); self.end_headers(); self.wfile.write(b'ok')",
      "    def log_message(self, *a): pass",
      `http.server.HTTPServer(('127.0.0.1', ${port}), H).serve_forever()`
    ].join("\n")
    // the second child fails (and so would the supervisor) if the first were not ready yet
    const second = py(`import time, urllib.request; urllib.request.urlopen('${url}', timeout=5); print('saw first ready', flush=True); time.sleep(120)`)
    const run = supervise(onTestFinished, [
      writeSpec({ ready_poll_seconds: 0.1, children: [{ name: "first", argv: py(server), ready_url: url }, { name: "second", argv: second }] })
    ])
    await waitFor("second child", () => run.output().includes("[second] saw first ready"))
    const out = run.output()
    expect(out.indexOf(`[supervisor] first is ready (${url})`)).toBeGreaterThan(-1)
    expect(out.indexOf("[supervisor] first is ready")).toBeLessThan(out.indexOf("[supervisor] started second"))
    run.proc.kill("SIGTERM")
    expect((await run.exit).code, run.output()).toBe(0)
  })

  it.sequential("fails when a child is not ready in time, or dies before it is ready", async ({ expect, onTestFinished }) => {
    const port = await freePort()
    const late = supervise(onTestFinished, [
      writeSpec({ ready_timeout_seconds: 0.5, ready_poll_seconds: 0.1, children: [{ name: "never", argv: SLEEPER, ready_url: `http://127.0.0.1:${port}/health` }, { name: "next", argv: SLEEPER }] })
    ])
    expect((await late.exit).code, late.output()).toBe(1)
    expect(late.output()).toContain("[supervisor] never not ready after 0.5s")
    expect(late.output()).not.toContain("started next")

    const dies = supervise(onTestFinished, [
      writeSpec({ ready_poll_seconds: 0.1, children: [{ name: "crash", argv: py("raise SystemExit(7)"), ready_url: `http://127.0.0.1:${port}/health` }, { name: "next", argv: SLEEPER }] })
    ])
    expect((await dies.exit).code, dies.output()).toBe(7)
    expect(dies.output()).not.toContain("started next")
  })

  it("--check exits 0 when every ready_url answers 200, 1 otherwise (for the probes)", async ({ expect }) => {
    const server = http.createServer((req, res) => res.writeHead(req.url === "/health" ? 200 : 503).end())
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    const { port } = server.address() as AddressInfo
    const closed = await freePort()
    const check = (urls: ReadonlyArray<string>) =>
      new Promise<{ code: number; stderr: string }>((resolve) => {
        const spec = writeSpec(urls.map((u, i) => ({ name: `c${i}`, argv: ["true"], ready_url: u })))
        execFile("python3", [SCRIPT, "--check", spec], (err, _stdout, stderr) =>
          resolve({ code: err === null ? 0 : Number(err.code), stderr })
        )
      })
    try {
      expect(await check([`http://127.0.0.1:${port}/health`, `http://127.0.0.1:${port}/health`])).toEqual({ code: 0, stderr: "" })
      expect(await check([`http://127.0.0.1:${port}/health`, `http://127.0.0.1:${port}/down`])).toEqual({ code: 1, stderr: "not ready: c1\n" })
      expect(await check([`http://127.0.0.1:${closed}/health`])).toEqual({ code: 1, stderr: "not ready: c0\n" })
    } finally {
      await new Promise((r) => server.close(r))
    }
  })

  it("rejects a bad spec with exit 2 and a message naming the problem", async ({ expect, onTestFinished }) => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ children: [] }, "children: expected a non-empty list"],
      [[{ name: "a", argv: [] }], "children[0].argv: expected a non-empty list of strings"],
      [[{ name: "a", argv: ["true"] }, { name: "a", argv: ["true"] }], "children[1].name: duplicate name 'a'"],
      [[{ name: "a", argv: ["true"], ready_url: "localhost:1" }], "children[0].ready_url: expected an http(s) URL"],
      [{ children: [{ name: "a", argv: ["true"] }], grace: 1 }, "unknown key(s): grace"]
    ]
    // all at once: each exits by itself
    const runs = cases.map(([spec]) => supervise(onTestFinished, [writeSpec(spec)]))
    const usage = supervise(onTestFinished, [])
    const help = supervise(onTestFinished, ["--help"])
    for (const [i, [, message]] of cases.entries()) {
      expect((await runs[i]!.exit).code).toBe(2)
      expect(runs[i]!.output()).toContain(`vllm-supervisor: bad spec: ${message}`)
    }
    expect((await usage.exit).code).toBe(2)
    expect((await help.exit).code).toBe(0)
    expect(help.output()).toContain("--check SPEC.json")
  })
})
