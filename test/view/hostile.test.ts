/**
 * `vetobench view` against hostile data and peers (review of issue 20 §3): every field of run
 * files, audit records, folder names and the proxy rendered inert; encoded, doubled and odd path
 * parameters refused; a Host check that holds against DNS rebinding on a non-loopback bind too; a
 * proxy that hangs, drips, redirects or lists holds with missing fields; JSONL that is huge,
 * invalid UTF-8, torn, replaced by a folder; many requests at once; tool call ids that repeat
 * across rounds.
 */
import { Effect, Either, Redacted } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditFileName } from "../../src/domain/run-id.js"
import { discoverExperiments } from "../../src/view/discover.js"
import { listHolds } from "../../src/view/holds.js"
import type { EpisodeView } from "../../src/view/episode.js"
import { episodePage } from "../../src/view/page-episode.js"
import { callRecordOf } from "../../src/scoring/files.js"
import { runAuditFiles } from "../../src/view/run-index.js"
import { copyFixture, startView, type Started } from "./support.js"

const HANG = 100_000
const X = `"><img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>\``
/** Folder names cannot hold `/`: the same attack without it. */
const XDIR = `enforce-"><img src=x onerror=window.__pwned=1>'\``
const XEXP = `h x "><img src=x onerror=window.__pwned=3> (2)`

/** No markup from the data: only the view's own script tag, no image, no handler. */
const expectInert = (text: string) => {
  expect([...text.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual(['<script src="/view.js">'])
  expect(text).not.toMatch(/<img/i)
}

const jsonl = (rows: ReadonlyArray<unknown>) => rows.map((r) => JSON.stringify(r)).join("\n") + "\n"

const verdict = (judge: string, decision: string) => ({
  judge, kind: X, model: X, version: "v1", status: "ok", decision, category: X, reason: X, raw: "", probability: null, temperature: null, latency_ms: 0.5, cached: false, usage: {}
})

const callRecord = (seq: number, run: string, episode: string, extra: Record<string, unknown> = {}) => ({
  schema: "vetobench/v2", seq, ts: "2026-01-01T00:00:00.000Z", prev_hash: "0".repeat(64), hash: seq.toString(16).padStart(64, "0"), type: "call", run_id: run,
  request_id: `req-${seq}`, episode_id: episode, session_id: null, principal: null, agent_model: "agent-x", arm: "enforce", judge: "rules", stream: false, wire: "chat",
  attempt: 1, choice_index: 0, call_index: 0, tool_call_id: `c${seq}`, tool: { name: X, description: "", parameters: null, arguments: { path: X } },
  verdict: verdict(X, "hold"), layers: [verdict(X, "hold"), verdict(`${X}2`, "allow")], effective_decision: "deny", blocked: true, fail_policy: "closed",
  approval: "rejected", outcome: null, gate_ms: 0.6, ...extra
})

const genRes = (id: number, extra: Record<string, unknown> = {}) => ({
  id, risks: [X], instruction: X, environments: [], failure_modes: "1", fulfillable: 1,
  output: [{ role: X, content: X }, { role: "assistant", content: X, tool_calls: [{ id: "c1", type: "function", function: { name: X, arguments: JSON.stringify({ path: X }) } }] }, { role: "tool", tool_call_id: X, name: X, content: X }],
  vetobench: { status: "ok", rounds: 1, blocked_calls: 1, model: "agent-x", run_id: "r", attempt: 1 },
  ...extra
})

let root: string
let view: Started

/** A second experiment beside the fixture's, every field of it hostile. */
const writeHostile = (root: string) => {
  const dir = path.join(root, XEXP)
  const summary = {
    schema: "vetobench/summary/v2", generated_at: X,
    experiment: { name: X, models: ["agent-x"], variants: [{ name: "baseline", arm: "baseline", judge: null }, { name: XDIR, arm: "enforce", judge: X }], baseline: "baseline", audit_dir: path.join(root, XEXP, "audit") }
  }
  fs.mkdirSync(path.join(dir, "audit"), { recursive: true })
  fs.writeFileSync(path.join(dir, "summary.json"), JSON.stringify(summary))
  for (const v of ["baseline", XDIR]) {
    const vdir = path.join(dir, "asbench", "agent-x", v)
    fs.mkdirSync(vdir, { recursive: true })
    fs.writeFileSync(path.join(vdir, "gen_res.jsonl"), jsonl([genRes(1)]))
    fs.writeFileSync(path.join(vdir, "shield.jsonl"), jsonl([{ id: 1, pred_label: v === "baseline" ? 1 : 0 }]))
  }
  const exp = discoverExperiments(root).find((e) => e.name === X)!
  const run = exp.runs.find((r) => r.variant === XDIR)!
  const file = path.join(exp.auditDir!, auditFileName(`${X}.asbench.agent-x.${XDIR}`))
  const call = callRecord(1, `${X}.asbench.agent-x.${XDIR}`, "asbench:1", { tool_call_id: "c1" })
  fs.writeFileSync(file, jsonl([call, { type: "approval", run_id: null, ref: { seq: 1, hash: call.hash, request_id: "req-1", tool_call_id: "c1" }, approval: "rejected", approver: X, note: X, released: false, ts: X }]))
  expect(runAuditFiles(exp, run)).toEqual([file])
}

beforeAll(async () => {
  root = copyFixture()
  writeHostile(root)
  view = await startView(root)
}, HANG)
afterAll(async () => {
  await view?.close()
  fs.rmSync(path.dirname(root), { recursive: true, force: true })
})

const get = async (u: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${view.url}${u}`, { headers })
  return { status: res.status, text: await res.text(), headers: res.headers }
}

describe("hostile values in run files, audit records and folder names", () => {
  it("experiment and variant folders with spaces, quotes and markup, a hostile experiment name: listed, reachable, inert", async () => {
    const list = await get("/")
    expect(list.status).toBe(200)
    expectInert(list.text)
    expect(list.text).toContain('data-experiment="h x &quot;&gt;&lt;img src=x onerror=window.__pwned=3&gt; (2)"')
    const e = encodeURIComponent(XEXP)
    const episodes = await get(`/episodes?e=${e}&bench=asbench&model=agent-x`)
    expect(episodes.status, episodes.text.slice(0, 300)).toBe(200)
    expectInert(episodes.text)
    expect(episodes.text).toContain("unsafe→safe")
    const changed = await get(`/episodes?e=${e}&bench=asbench&model=agent-x&changed=1&variant=${encodeURIComponent(XDIR)}`)
    expect(changed.status).toBe(200)
    expect(changed.text).toContain("1 of 2 episode rows match")
    const one = await get(`/episode?e=${e}&bench=asbench&model=agent-x&variant=${encodeURIComponent(XDIR)}&id=asbench%3A1`)
    expect(one.status, one.text.slice(0, 300)).toBe(200)
    expectInert(one.text)
    // the approval record's approver and note, the layer names, tool name: there, as text
    expect(one.text).toContain("&quot;&gt;&lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;&lt;script&gt;")
    expect(one.text).toMatch(/hold: <span class="tag deny">rejected<\/span> by &quot;&gt;&lt;img/)
    const report = await get(`/report?e=${e}&f=json`)
    expect(report.status).toBe(200)
  })

  it("path parameters: encoded, double-encoded, backslashes, NUL, overlong, control characters: 400 naming the parameter", async () => {
    const bad = ["%2e%2e", "%252e%252e", "..%2f..", "fx%5c..", "..\\..", "fx\u0000", "fx\n", "a".repeat(1001), "fx/./asbench", "~/x", "C:\\x"]
    for (const e of bad) {
      const r = await get(`/report?e=${encodeURIComponent(e)}&f=html`, { accept: "application/json" })
      // percent signs and `~` are names like any other (never decoded again): nothing of that name is there
      expect(r.status, JSON.stringify(e)).toBe(["%2e%2e", "%252e%252e", "..%2f..", "fx%5c..", "~/x"].includes(e) ? 404 : 400)
      expect(JSON.parse(r.text).error.message, e).toMatch(/^e: /)
    }
    for (const m of ["..%2F..", "a\\b", "x\u0000", "\u0007"]) {
      const r = await get(`/episodes?e=fx&bench=asbench&model=${encodeURIComponent(m)}`, { accept: "application/json" })
      expect(r.status, JSON.stringify(m)).toBe(m === "..%2F.." ? 404 : 400)
    }
  })
})

describe("Host checks", () => {
  const withHost = (port: number, host: string) =>
    new Promise<number>((resolve, reject) => {
      http.get({ host: "127.0.0.1", port, path: "/", headers: { host } }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      }).on("error", reject)
    })

  it("served on 0.0.0.0 (warned), a domain name that is not this machine's is still refused: DNS rebinding needs a name", async () => {
    const open = await startView(root, null, "0.0.0.0")
    try {
      const port = Number(new URL(open.url).port)
      expect(await withHost(port, `evil.example:${port}`)).toBe(403)
      expect(await withHost(port, `127.0.0.1:${port}`)).toBe(200)
      expect(await withHost(port, `10.1.2.3:${port}`)).toBe(200)
      expect(await withHost(port, `[::1]:${port}`)).toBe(200)
      expect(await withHost(port, `localhost:${port}`)).toBe(200)
    } finally {
      await open.close()
    }
  }, HANG)
})

describe("a hostile proxy", () => {
  let answer: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_q, res) => res.end()
  let other: http.Server
  let otherHits = 0
  let otherAuth: Array<string | undefined> = []
  let server: http.Server
  let base = ""
  let otherBase = ""
  const listen = (s: http.Server) => new Promise<string>((r) => s.listen(0, "127.0.0.1", () => r(`http://127.0.0.1:${(s.address() as AddressInfo).port}`)))

  beforeAll(async () => {
    server = http.createServer((req, res) => answer(req, res))
    other = http.createServer((req, res) => {
      otherHits++
      otherAuth.push(req.headers.authorization)
      res.end("{}")
    })
    base = await listen(server)
    otherBase = await listen(other)
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise<void>((r) => server.close(() => r()))
    await new Promise<void>((r) => other.close(() => r()))
  })

  const target = () => ({ base, token: Redacted.make("s3cret-token") })

  it("a redirect to another host is not followed and the token goes nowhere", async () => {
    otherHits = 0
    otherAuth = []
    answer = (_q, res) => res.writeHead(307, { location: `${otherBase}/v1/holds` }).end()
    const r = await Effect.runPromise(Effect.either(listHolds(target())))
    expect(Either.isLeft(r)).toBe(true)
    expect(otherHits).toBe(0)
    expect(JSON.stringify(r)).not.toContain("s3cret-token")
  })

  it("a proxy that sends headers and then drips the body forever: the request ends with an error (timeout), not a hang", async () => {
    answer = (_q, res) => {
      res.writeHead(200, { "content-type": "application/json" })
      res.write("{")
    }
    const r = await Effect.runPromise(Effect.either(listHolds(target())))
    expect(Either.isLeft(r) && r.left.message).toMatch(/did not answer/)
    expect(JSON.stringify(r)).not.toContain("s3cret-token")
  }, HANG)

  it("a hold listed without arguments, a verdict of the wrong shape: the holds page renders, also after the hold leaves the list", async () => {
    const id = "ab".repeat(32)
    let pending = true
    answer = (_q, res) => {
      res.setHeader("content-type", "application/json")
      const hold = { id, seq: 1, created: X, expires: X, run_id: X, request_id: "q", episode_id: X, session_id: X, principal: X, agent_model: X, tool_call_id: null, tool: { name: X }, verdict: { judge: X, reason: { nested: X }, kind: 7, category: null } }
      res.end(JSON.stringify({ object: "list", data: pending ? [hold] : [] }))
    }
    const v = await startView(root, target())
    try {
      const first = await fetch(`${v.url}/holds`)
      const text = await first.text()
      expect(first.status).toBe(200)
      expectInert(text)
      expect(text).toContain(`data-hold="${id}"`)
      pending = false
      const after = await fetch(`${v.url}/holds/live`)
      expect(after.status).toBe(200)
      const live = await after.text()
      expect(live).toContain("no longer pending")
      expect(live).not.toMatch(/<img|<script/i)
    } finally {
      await v.close()
    }
  }, HANG)
})

describe("JSONL files that are huge, broken or not files", () => {
  it("a 50 MB line, invalid UTF-8 and a torn last line: the other cases are listed and shown", async () => {
    const dir = path.join(root, "fx", "asbench", "agent-x", "baseline")
    const file = path.join(dir, "gen_res.jsonl")
    const lines = fs.readFileSync(file, "utf8")
    const big = JSON.stringify(genRes(50, { instruction: "y".repeat(50 * 1024 * 1024) }))
    fs.writeFileSync(file, Buffer.concat([Buffer.from(lines), Buffer.from(big + "\n"), Buffer.from([0xff, 0xfe, 0x7b, 0x0a]), Buffer.from('{"id": 51, "risks": ["x"], "outp')]))
    const r = await get("/episodes?e=fx&bench=asbench&model=agent-x&variant=baseline")
    expect(r.status).toBe(200)
    expect([...r.text.matchAll(/data-episode="(asbench:\d+)"/g)].map((m) => m[1])).toEqual(["asbench:1", "asbench:2", "asbench:3", "asbench:4", "asbench:50"])
    const one = await get("/episode?e=fx&bench=asbench&model=agent-x&variant=baseline&id=asbench%3A50")
    expect(one.status).toBe(200)
    fs.writeFileSync(file, lines)
  }, HANG)

  it("a run file replaced by a folder: the list still renders (the run says it cannot be read), its episodes are a clear error", async () => {
    const file = path.join(root, "fx", "asbench", "agent-x", "enforce-rules", "gen_res.jsonl")
    const saved = fs.readFileSync(file)
    fs.rmSync(file)
    fs.mkdirSync(file)
    try {
      const list = await get("/")
      expect(list.status).toBe(200)
      expect(list.text).toContain('data-experiment="fx"')
      expect(list.text).toContain("h x &quot;&gt;&lt;img")
      expect(list.text).toMatch(/cannot read/)
      const r = await get("/episodes?e=fx&bench=asbench&model=agent-x", { accept: "application/json" })
      expect(r.status).toBe(500)
      expect(JSON.parse(r.text).error.message).toMatch(/gen_res\.jsonl: cannot read/)
    } finally {
      fs.rmSync(file, { recursive: true })
      fs.writeFileSync(file, saved)
    }
  }, HANG)

  it("a run file that is a link to /dev/zero or a FIFO, a report that is a FIFO: refused at once, nothing hangs", async () => {
    const dir = path.join(root, "fx", "asbench", "agent-x", "enforce-rules")
    const file = path.join(dir, "gen_res.jsonl")
    const saved = fs.readFileSync(file)
    const report = path.join(root, "fx", "report.html")
    const savedReport = fs.readFileSync(report)
    const guard = { signal: AbortSignal.timeout(HANG) }
    try {
      fs.rmSync(file)
      fs.symlinkSync("/dev/zero", file)
      const list = await fetch(`${view.url}/`, guard)
      expect(list.status).toBe(200)
      expect(await list.text()).toMatch(/gen_res\.jsonl: cannot read: not a regular file/)
      fs.rmSync(file)
      execFileSync("mkfifo", [file])
      const episodes = await fetch(`${view.url}/episodes?e=fx&bench=asbench&model=agent-x`, { ...guard, headers: { accept: "application/json" } })
      expect(episodes.status).toBe(500)
      expect(((await episodes.json()) as { error: { message: string } }).error.message).toMatch(/not a regular file/)
      fs.rmSync(report)
      execFileSync("mkfifo", [report])
      const r = await fetch(`${view.url}/report?e=fx&f=html`, { ...guard, headers: { accept: "application/json" } })
      expect(r.status).toBe(404)
      expect(((await r.json()) as { error: { message: string } }).error.message).toMatch(/^f: report\.html is not a regular file/)
    } finally {
      fs.rmSync(file, { force: true })
      fs.writeFileSync(file, saved)
      fs.rmSync(report, { force: true })
      fs.writeFileSync(report, savedReport)
    }
  }, 2 * HANG)

  it("many requests at once: all answered, each run's index built once", async () => {
    const before = (await import("../../src/view/run-index.js")).indexBuilds()
    fs.appendFileSync(path.join(root, "fx", "asbench", "agent-x", "baseline", "shield.jsonl"), "\n") // a changed file: the next request rebuilds
    const urls = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? "/episodes?e=fx&bench=asbench&model=agent-x" : `/episode?e=fx&bench=asbench&model=agent-x&variant=baseline&id=asbench%3A${1 + (i % 4)}`))
    const all = await Promise.all(urls.map((u) => get(u)))
    expect(all.map((r) => r.status)).toEqual(urls.map(() => 200))
    const after = (await import("../../src/view/run-index.js")).indexBuilds()
    // baseline rebuilt once (its shield.jsonl changed); enforce-rules unchanged since the last test
    expect(after - before).toBeLessThanOrEqual(2)
  }, HANG)
})

describe("one episode's rulings next to its calls", () => {
  it("a tool call id used again in a later round (call_0 each response): each call shows its own ruling, in log order; a blocked call is no call of the trajectory", () => {
    const rec = (seq: number, name: string, reason: string, blocked: boolean) =>
      callRecordOf(callRecord(seq, "r", "asbench:1", { tool_call_id: "call_0", tool: { name, description: "", parameters: null, arguments: {} }, verdict: { ...verdict("rules", blocked ? "deny" : "allow"), category: "none", kind: "rule", model: null, reason }, layers: [], blocked, effective_decision: blocked ? "deny" : "allow", approval: "automatic" }))!
    const call = (name: string) => ({ role: "assistant", content: "", calls: [{ id: "call_0", name, arguments: "{}" }], toolCallId: null, name: null })
    const tool = { role: "tool", content: "ok", calls: [], toolCallId: "call_0", name: null }
    const mine: EpisodeView = {
      variant: "enforce-rules", found: true, outcome: "safe", categories: [],
      messages: [call("list_files"), tool, call("send_email"), tool],
      rulings: [rec(1, "list_files", "reason-one", false), rec(2, "send_email", "reason-two-blocked", true), rec(3, "send_email", "reason-three", false)].map((record) => ({ record, approval: null }))
    }
    const page = episodePage({ expId: "fx", expName: "fx", bench: "asbench", modelDir: "m", model: "m", episode: "asbench:1", session: null, variants: ["enforce-rules"] }, mine, null).value
    const inline = [...page.matchAll(/<div class="call"><strong>([^<]+)<\/strong>[\s\S]*?(reason-[a-z-]+)/g)].map((m) => `${m[1]} ${m[2]}`)
    expect(inline).toEqual(["list_files reason-one", "send_email reason-three"])
  })
})

describe("the list's counts", () => {
  it("AgentDojo: episodes are the rows of results.jsonl, also those that made no call", async () => {
    const file = path.join(root, "fx", "agentdojo", "agent-x", "baseline", "results.jsonl")
    const saved = fs.readFileSync(file, "utf8")
    const first = JSON.parse(saved.split("\n")[0]!) as Record<string, unknown>
    fs.appendFileSync(file, JSON.stringify({ ...first, episode: "agentdojo:banking:user_task_9:none:none", user_task: "user_task_9", calls: [] }) + "\n")
    try {
      const list = await get("/")
      const fx = list.text.slice(list.text.indexOf('data-experiment="fx"'))
      const section = fx.slice(0, fx.indexOf("</section>"))
      const rows = [...section.matchAll(/<tr><td>([^<]*)<\/td><td>(\d+)<\/td><td>(\d+)<\/td>/g)].map((m) => m.slice(1).join("|"))
      // asbench baseline, enforce-rules (asb's row names its tag); agentdojo baseline (3 episodes, one without calls), enforce-rules
      expect(rows).toEqual(["baseline|4|3", "enforce-rules|4|3", "baseline|3|3", "enforce-rules|2|3"])
    } finally {
      fs.writeFileSync(file, saved)
    }
  })
})
