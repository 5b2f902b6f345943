/**
 * bench/mcp-overhead — what the MCP gate adds to a `tools/call`, over both transports, against the
 * same server reached directly, in one run.
 *
 * The server is the MCP gate tests' filesystem-like server (test/mcp/fs-server.ts, written with the
 * SDK). Four ways to reach it, each driven by the SDK's client with sequential `tools/call
 * read_file` (what an agent does: one call, then the next):
 * - stdio direct: the server spawned (`node --import tsx test/mcp/fs-server.ts`);
 * - stdio gated: `vetobench mcp stdio --server fs --arm enforce:allow-all` (the bundle), which
 *   spawns the same server;
 * - HTTP direct: the server over Streamable HTTP, served from this process;
 * - HTTP gated: `vetobench proxy` (a child process) at `/mcp/web/enforce:allow-all`, in front of
 *   that same HTTP server.
 * Gated: static allow-all judge, audit on (fsync group). Reported: p50/p99 latency per call,
 * the added p50, and the gate's CPU per call (utime+stime of the gate's process from
 * /proc/<pid>/stat over the measured calls; the server it spawns is a process of its own).
 *
 *   npm run build && npx tsx bench/mcp-overhead.ts [--calls 2000] [--warmup 200]
 */
import { spawn, type ChildProcess } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { cpus, tmpdir } from "node:os"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { stringify } from "yaml"
import { FS_SERVER_FILE } from "../test/mcp/fs-server.js"
import { startHttpFsServer } from "../test/mcp/http-server.js"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const CALLS = arg("calls", 2_000)
const WARMUP = arg("warmup", 200)
const CLI = path.resolve("dist/cli.mjs")
const TICKS_PER_SECOND = 100

const cpuTicks = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return Number(fields[11]) + Number(fields[12])
}

const percentile = (xs: ReadonlyArray<number>, p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN
}

interface Measured {
  readonly p50: number
  readonly p99: number
  /** ms of the gate's CPU per call, or null when no gate process is measured */
  readonly cpuMs: number | null
}

/** Sequential `read_file` calls: warm-up, then the measured ones. */
const measure = async (client: Client, pid: number | null): Promise<Measured> => {
  const call = () => client.callTool({ name: "read_file", arguments: { path: "/notes.txt" } })
  for (let i = 0; i < WARMUP; i++) await call()
  const before = pid === null ? 0 : cpuTicks(pid)
  const ms: Array<number> = []
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now()
    await call()
    ms.push(performance.now() - t)
  }
  const ticks = pid === null ? 0 : cpuTicks(pid) - before
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), cpuMs: pid === null ? null : ((ticks / TICKS_PER_SECOND) * 1000) / CALLS }
}

const connect = async (transport: StdioClientTransport | StreamableHTTPClientTransport): Promise<Client> => {
  const client = new Client({ name: "bench", version: "1.0.0" })
  await client.connect(transport)
  return client
}

const startProxy = (config: string) =>
  new Promise<{ proc: ChildProcess; base: string }>((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, "proxy", "-c", config, "--port", "0", "--log-level", "warning"], { stdio: ["ignore", "pipe", "inherit"] })
    let out = ""
    proc.stdout!.on("data", (b: Buffer) => {
      out += b.toString()
      const m = /veto-proxy (http:\/\/\S+)\/v1/.exec(out)
      if (m !== null) resolve({ proc, base: m[1]! })
    })
    proc.once("exit", (code) => reject(new Error(`proxy exited ${code}: ${out}`)))
  })

const main = async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-mcp-bench-"))
  const http = await startHttpFsServer()
  const config = path.join(dir, "vetobench.yaml")
  writeFileSync(
    config,
    stringify({
      upstreams: [{ name: "none", base_url: "http://127.0.0.1:9" }],
      judges: { "allow-all": { kind: "static", decision: "allow" } },
      proxy: { audit_dir: path.join(dir, "audit") },
      mcp: {
        servers: {
          fs: { command: process.execPath, args: ["--import", "tsx", FS_SERVER_FILE], cwd: path.resolve(".") },
          web: { url: http.url }
        }
      }
    })
  )
  const serverArgs = ["--import", "tsx", FS_SERVER_FILE]
  const rows: Array<[string, Measured, Measured]> = []

  const stdioDirect = await connect(new StdioClientTransport({ command: process.execPath, args: serverArgs, cwd: path.resolve(".") }))
  const d1 = await measure(stdioDirect, null)
  await stdioDirect.close()
  const gateTransport = new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp", "stdio", "--server", "fs", "--arm", "enforce:allow-all", "-c", config, "--run", "bench-stdio"], cwd: path.resolve(".") })
  const stdioGated = await connect(gateTransport)
  const g1 = await measure(stdioGated, gateTransport.pid)
  await stdioGated.close()
  rows.push(["stdio", d1, g1])

  const proxy = await startProxy(config)
  try {
    const httpDirect = await connect(new StreamableHTTPClientTransport(new URL(http.url)))
    const d2 = await measure(httpDirect, null)
    await httpDirect.close()
    const httpGated = await connect(new StreamableHTTPClientTransport(new URL(`${proxy.base}/mcp/web/enforce:allow-all`), { requestInit: { headers: { "x-vetobench-run": "bench-http" } } }))
    const g2 = await measure(httpGated, proxy.proc.pid ?? null)
    await httpGated.close()
    rows.push(["Streamable HTTP", d2, g2])
  } finally {
    proxy.proc.kill("SIGTERM")
    await http.close()
  }

  const f = (x: number) => x.toFixed(3)
  console.log(`mcp-overhead: ${CALLS} sequential tools/call per way (warm-up ${WARMUP}), ${cpus().length} CPUs, node ${process.version}`)
  console.log("| transport | direct p50 ms | direct p99 ms | gated p50 ms | gated p99 ms | added p50 ms | gate CPU ms/call |")
  console.log("|---|---|---|---|---|---|---|")
  for (const [name, d, g] of rows) {
    console.log(`| ${name} | ${f(d.p50)} | ${f(d.p99)} | ${f(g.p50)} | ${f(g.p99)} | ${f(g.p50 - d.p50)} | ${g.cpuMs === null ? "-" : f(g.cpuMs)} |`)
  }
}

await main()
