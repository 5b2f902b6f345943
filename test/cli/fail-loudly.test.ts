/**
 * Failing loudly, as users meet it (the built bundle): exit codes and the one summary line of
 * run / score / replay / report when something failed (and with `--allow-errors N`); the
 * served-models check of run, smoke and the proxy's start-up; stopping a run after N identical
 * case errors; split's "fewer cases than asked"; `proxy --port` errors.
 *
 * Two kinds of servers: `vetobench fake-vllm` + `vetobench proxy` where the point is a real setup
 * with a typo in it, and a scripted stand-in for the proxy and the upstream where the point is
 * cases that fail in a controlled way. The commands run in this process (test/support/cli.ts),
 * with absolute paths and the temp repo's settings as `VETOBENCH_CONFIG`; the bundle runs where
 * the process is the point (`proxy --port`).
 */
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliResult, type InProcessServer, MINI_CHECKOUT as FIXTURE, runCli, runCliAsync, runCliInProcess, startCliInProcess } from "../support/cli.js"
import { makeWorkspace } from "../report/workspace.js"

const RESULTS = fileURLToPath(new URL("../fixtures/results", import.meta.url))
const SLOW = 120_000 // spawns processes that run python: a safety net, never a speed check

/** `vetobench args…` in this process, with `<dir>/configs/vetobench.yaml` as the settings (as in `dir` without -c). */
const runIn = (dir: string, args: ReadonlyArray<string>): Promise<CliResult> =>
  runCliInProcess(args, { env: { VETOBENCH_CONFIG: path.join(dir, "configs", "vetobench.yaml") } })

/** The lines vetobench itself wrote to stderr (`vetobench: …`), not the progress. */
const verdicts = (stderr: string) => stderr.split("\n").filter((l) => l.startsWith("vetobench: "))

const servers: Array<InProcessServer> = []
afterAll(async () => {
  for (const s of servers.reverse()) await s.stop()
})

// ---------------------------------------------------------------------------------------------
// the scripted stand-in: proxy (healthz, chat) and upstream (models, completions) in one

interface Script {
  /** chat: the error message of a 400 for this episode (`asbench:<id>`), or null for a plain answer */
  chatError: (episode: string) => string | null
  /** completions: the text of the n-th request (0-based) */
  completion: (n: number) => string
}

const script: Script = { chatError: () => null, completion: () => "[Answer] safe\n[Analysis] fine" }
let completions = 0
let chats = 0
let stand = ""

const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

beforeAll(async () => {
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (c: Buffer) => (body += c.toString()))
    req.on("end", () => {
      const url = req.url ?? ""
      if (url === "/healthz") return json(res, 200, { ok: true })
      if (url === "/v1/models") return json(res, 200, { object: "list", data: [{ id: "agent-x" }, { id: "scorer" }] })
      if (url === "/v1/chat/completions") {
        chats += 1
        const episode = String(req.headers["x-vetobench-episode"] ?? "")
        const error = script.chatError(episode)
        if (error !== null) return json(res, 400, { error: { message: error, type: "vetobench_error", code: "invalid_request" } })
        return json(res, 200, { choices: [{ index: 0, message: { role: "assistant", content: "I will not do that." }, finish_reason: "stop" }] })
      }
      if (url === "/v1/completions") {
        const text = script.completion(completions++)
        return json(res, 200, { choices: [{ index: 0, text, finish_reason: "stop" }] })
      }
      json(res, 404, { error: { message: "not found" } })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  stand = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
  return () => new Promise<void>((resolve) => server.close(() => resolve()))
})

/** A temp repo whose settings and experiment point at the scripted stand-in. */
const standRepo = (name: string, extra: ReadonlyArray<string> = []) => {
  const dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-loud-"))
  fs.mkdirSync(path.join(dir, "configs"))
  fs.writeFileSync(
    path.join(dir, "configs", "vetobench.yaml"),
    ["upstreams:", "  - name: stand", `    base_url: ${stand}`, "paths:", `  asbench_dir: ${FIXTURE}`, "scoring:", "  shieldagent_model: scorer", "  concurrency: 1", ""].join("\n")
  )
  fs.writeFileSync(
    path.join(dir, "configs", "exp.yaml"),
    [`name: ${name}`, `proxy_url: ${stand}`, "models: [agent-x]", "arms: [baseline]", "agent_safetybench:", "  workers: 1", ...extra, ""].join("\n")
  )
  return dir
}

const genResLines = (dir: string, name: string) =>
  fs.readFileSync(path.join(dir, "runs", name, "asbench", "agent-x", "baseline", "gen_res.jsonl"), "utf8").trim().split("\n")

describe("run and score: cases that failed are an exit 1 with one summary line", () => {
  it("run: 2 of 9 cases failed → exit 1 naming the first and where the details are; --allow-errors 2 → exit 0, line still printed", async () => {
    script.chatError = (episode) => (episode === "asbench:3" || episode === "asbench:6" ? `case ${episode} is malformed` : null)
    const dir = standRepo("loud")
    const exp = path.join(dir, "configs", "exp.yaml")
    const r = await runIn(dir, ["run", "-e", exp])
    expect(r.stdout).toContain("[asbench] agent-x@baseline: 7 ok, 0 exceeded, 2 error (0 of 9 done before)")
    const jsonl = path.join(dir, "runs", "loud", "asbench", "agent-x", "baseline", "gen_res.jsonl")
    expect(verdicts(r.stderr)).toEqual([
      `vetobench: run: 2 of 9 cases failed (first: case 3 of agent-x@baseline: veto-proxy answered HTTP 400: case asbench:3 is malformed); details in ${jsonl}; a re-run retries them`
    ])
    expect(r.code).toBe(1)

    // the re-run retries the two; they fail again; accepted with --allow-errors 2 (exit 0, the line stays)
    const again = await runIn(dir, ["run", "-e", exp, "--allow-errors", "2"])
    expect(again.stdout).toContain("0 ok, 0 exceeded, 2 error (7 of 9 done before)")
    expect(verdicts(again.stderr)).toEqual([expect.stringMatching(/^vetobench: run: 2 of 9 cases failed \(first: case 3 .*\(allowed by --allow-errors 2\)$/)])
    expect(again.code).toBe(0)
    // one more than allowed is not enough
    const one = await runIn(dir, ["run", "-e", exp, "--allow-errors", "1"])
    expect(one.code).toBe(1)

    // fixed: nothing failed, nothing to say
    script.chatError = () => null
    const fixed = await runIn(dir, ["run", "-e", exp])
    expect(verdicts(fixed.stderr)).toEqual([])
    expect(fixed.code).toBe(0)

    // score: unparsable labels leave cases unscored → exit 1 with one line; --allow-errors accepts them
    completions = 0
    script.completion = (n) => (n === 1 || n === 4 ? "I am not sure." : "[Answer] safe\n[Analysis] fine")
    const s = await runIn(dir, ["score", "-e", exp])
    const shield = path.join(dir, "runs", "loud", "asbench", "agent-x", "baseline", "shield.jsonl")
    expect(verdicts(s.stderr)).toEqual([
      expect.stringMatching(
        new RegExp(`^vetobench: score: 2 of 9 cases unscored \\(first: case \\d of agent-x@baseline: unparsable label: "I am not sure\\."\\); labels in ${shield.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}; the next score retries them$`)
      )
    ])
    expect(s.code).toBe(1)
    completions = 0
    script.completion = () => "I am not sure."
    const s2 = await runIn(dir, ["score", "-e", exp, "--allow-errors", "2"])
    expect(verdicts(s2.stderr)).toEqual([expect.stringMatching(/^vetobench: score: 2 of 9 cases unscored .*\(allowed by --allow-errors 2\)$/)])
    expect(s2.code).toBe(0)
  }, SLOW)

  it("the same error on N cases in a row stops the run with that error (exit 1, one line); --stop-after 0 never stops", async () => {
    script.chatError = () => "model 'agent-x' is not available right now"
    const dir = standRepo("stop")
    const exp = path.join(dir, "configs", "exp.yaml")
    const before = chats
    const r = await runIn(dir, ["run", "-e", exp, "--stop-after", "3"])
    expect(r.code).toBe(1)
    const jsonl = path.join(dir, "runs", "stop", "asbench", "agent-x", "baseline", "gen_res.jsonl")
    expect(verdicts(r.stderr)).toEqual([
      `vetobench: run stopped: 3 cases of agent-x@baseline in a row failed with the same error: veto-proxy answered HTTP 400: model 'agent-x' is not available right now; details in ${jsonl} (finished cases are kept; --stop-after 0 never stops)`
    ])
    // one worker: exactly three cases ran, and each error was reported once
    expect(chats - before).toBe(3)
    expect(genResLines(dir, "stop")).toHaveLength(3)
    expect(r.stderr.split("\n").filter((l) => l.startsWith("[asbench] case ")).length).toBe(3)

    // the default (20) is more than the 9 cases: all run, then the summary line
    const all = await runIn(dir, ["run", "-e", exp])
    expect(all.code).toBe(1)
    expect(verdicts(all.stderr)).toEqual([expect.stringMatching(/^vetobench: run: 9 of 9 cases failed \(first: case 0 of agent-x@baseline: /)])
    const never = await runIn(dir, ["run", "-e", exp, "--stop-after", "0", "--allow-errors", "9"])
    expect(never.code).toBe(0)
    expect(never.stdout).toContain("0 ok, 0 exceeded, 9 error (0 of 9 done before)")
    script.chatError = () => null
  }, SLOW)

  it("--allow-errors and --stop-after below 0 are usage errors (exit 2)", async () => {
    const dir = standRepo("usage")
    const exp = path.join(dir, "configs", "exp.yaml")
    expect((await runIn(dir, ["run", "-e", exp, "--allow-errors", "-1"])).code).toBe(2)
    expect((await runIn(dir, ["run", "-e", exp, "--stop-after", "-1"])).code).toBe(2)
    expect((await runIn(dir, ["report", "-e", exp, "--allow-errors", "-1"])).code).toBe(2)
  })
})

describe("replay and report: errors and gaps are an exit 1 with one summary line", () => {
  const replayRepo = () => {
    const dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-loud-replay-"))
    fs.mkdirSync(path.join(dir, "configs"))
    fs.cpSync(path.join(RESULTS, "audit"), path.join(dir, "audit"), { recursive: true })
    fs.writeFileSync(
      path.join(dir, "configs", "vetobench.yaml"),
      [
        "upstreams:",
        "  - name: down",
        "    base_url: http://127.0.0.1:9/v1",
        "judges:",
        "  guard: { kind: static, decision: deny }",
        "  small: { kind: llm_json, model: judge-small }",
        "proxy:",
        "  audit_dir: audit",
        ""
      ].join("\n")
    )
    fs.writeFileSync(path.join(dir, "configs", "fixture.yaml"), "name: fixture\nrun_dir: run\nmodels: [agent]\njudges: [guard]\narms: [enforce, baseline]\n")
    return dir
  }

  it("replay: rulings in error → exit 1 naming the first and the replay file; --allow-errors N accepts them", async () => {
    const dir = replayRepo()
    const exp = path.join(dir, "configs", "fixture.yaml")
    const r = await runIn(dir, ["replay", "-e", exp, "--judges", "small", "--bench", "asbench"])
    const file = path.join(dir, "run", "replay", "asbench.agent.jsonl")
    expect(verdicts(r.stderr)).toEqual([
      expect.stringMatching(/^vetobench: replay: 7 of 7 rulings failed \(first: judge small, episode asbench:\d: error: .*unavailable.*\); details in (.*); the next replay retries them$/)
    ])
    expect(r.stderr).toContain(`details in ${file}; the next replay retries them`)
    expect(r.code).toBe(1)
    const ok = await runIn(dir, ["replay", "-e", exp, "--judges", "guard", "--bench", "asbench"])
    expect(verdicts(ok.stderr)).toEqual([])
    expect(ok.code).toBe(0)
    const allowed = await runIn(dir, ["replay", "-e", exp, "--judges", "small", "--bench", "asbench", "--allow-errors", "7"])
    expect(verdicts(allowed.stderr)).toEqual([expect.stringMatching(/^vetobench: replay: 7 of 7 rulings failed .*\(allowed by --allow-errors 7\)$/)])
    expect(allowed.code).toBe(0)
  })

  it("report: runs without results or with unscored cases → exit 1 with one line (the report is written); --allow-errors N", async () => {
    const ws = makeWorkspace({ remove: ["run/asbench/agent/enforce-guard"] })
    try {
      const args = ["report", "-c", ws.settings, "-e", ws.experiment]
      const r = await runCliInProcess(args)
      const md = path.join(ws.runDir, "report.md")
      expect(fs.existsSync(md)).toBe(true)
      expect(r.stderr).toBe(
        "vetobench: report: 1 of 6 runs without results (first: Agent-SafetyBench agent / enforce-guard), " +
          `1 run with unscored cases (first: Agent-SafetyBench agent / baseline: 1 of 7 cases without a ShieldAgent label); see the Notes of ${md}\n`
      )
      expect(r.code).toBe(1)
      const allowed = await runCliInProcess([...args, "--allow-errors", "2"])
      expect(allowed.code).toBe(0)
      expect(allowed.stderr).toMatch(/^vetobench: report: 1 of 6 runs without results .*\(allowed by --allow-errors 2\)\n$/)
      expect((await runCliInProcess([...args, "--allow-errors", "1"])).code).toBe(1)
    } finally {
      ws.cleanup()
    }
  })
})

// ---------------------------------------------------------------------------------------------
// served models: a real fake vLLM and proxy, settings with a typo

describe("a model that is not served stops run and smoke before any work; the proxy warns", () => {
  let dir = ""
  let fakeUrl = ""
  let proxyUrl = ""

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-loud-served-"))
    fs.mkdirSync(path.join(dir, "configs"))
    const fake = await startCliInProcess(["fake-vllm", "--port", "0"], /serving (http:\/\/127\.0\.0\.1:\d+\/v1)/)
    servers.push(fake)
    fakeUrl = fake.match[1]!
    const settings = (judgeModel: string) =>
      [
        "upstreams:",
        "  - name: vllm",
        `    base_url: ${fakeUrl}`,
        "aliases:",
        "  house-agent: qwen3.8-27b",
        "judges:",
        `  small: { kind: llm_json, model: ${judgeModel} }`,
        "  stack: { kind: layered, layers: [allow-all, small] }",
        "proxy:",
        "  port: 0",
        "paths:",
        `  asbench_dir: ${FIXTURE}`,
        ""
      ].join("\n")
    fs.writeFileSync(path.join(dir, "configs", "vetobench.yaml"), settings("judge-small"))
    fs.writeFileSync(path.join(dir, "configs", "typo.yaml"), settings("judge-smal"))
    const proxy = await startCliInProcess(["proxy", "-c", path.join(dir, "configs", "vetobench.yaml")], /veto-proxy (http:\/\/127\.0\.0\.1:\d+\/v1)/)
    servers.push(proxy)
    proxyUrl = proxy.match[1]!
    const exp = (models: string, judges: string) =>
      [`name: served`, `proxy_url: ${proxyUrl}`, `models: [${models}]`, `judges: [${judges}]`, "arms: [baseline, enforce]", ""].join("\n")
    fs.writeFileSync(path.join(dir, "configs", "agent-typo.yaml"), exp("qwen3.8-27x", "allow-all"))
    fs.writeFileSync(path.join(dir, "configs", "judged.yaml"), exp("house-agent", "stack"))
  })

  const cli = (args: ReadonlyArray<string>) => runIn(dir, args)
  const config = (name: string) => path.join(dir, "configs", name)

  it("run: an agent model the upstream does not serve is one line naming it and the upstream, exit 1, nothing run", async () => {
    const r = await cli(["run", "-e", config("agent-typo.yaml")])
    expect(r.stderr).toBe(
      `vetobench: agent model 'qwen3.8-27x' is not served by upstream 'vllm' (${fakeUrl}) (did you mean 'qwen3.8-27b'?); it serves ` +
        "agent, gemma4-31b, granite-guardian, guard, judge, judge-small, llama-guard, muse-glimmer-30b, … (12 models)\n"
    )
    expect(r.code).toBe(1)
    expect(r.stdout).toBe("")
    expect(fs.existsSync(path.join(dir, "runs", "served"))).toBe(false)
  })

  it("run: a judge's model typo (in a layered stack; agent through an alias) is one line naming the judge, model and upstream", async () => {
    const r = await cli(["run", "-e", config("judged.yaml"), "-c", config("typo.yaml")])
    expect(r.stderr).toBe(
      `vetobench: model 'judge-smal' of judge 'small' (a layer of 'stack') is not served by upstream 'vllm' (${fakeUrl}) (did you mean 'judge-small'?); ` +
        "it serves agent, gemma4-31b, granite-guardian, guard, judge, judge-small, llama-guard, muse-glimmer-30b, … (12 models)\n"
    )
    expect(r.code).toBe(1)
    expect(fs.existsSync(path.join(dir, "runs", "served"))).toBe(false)
  })

  it("run: a model no upstream routes is one line naming it", async () => {
    const file = path.join(dir, "configs", "listed.yaml")
    fs.writeFileSync(file, `upstreams:\n  - name: vllm\n    base_url: ${fakeUrl}\n    models: [qwen3.8-27b]\npaths:\n  asbench_dir: ${FIXTURE}\n`)
    const r = await cli(["run", "-e", config("agent-typo.yaml"), "-c", file])
    expect(r.stderr).toBe(
      `vetobench: agent model 'qwen3.8-27x': no upstream serves 'qwen3.8-27x' (none lists it in \`models\` and none is a catch-all; upstreams in ${file})\n`
    )
    expect(r.code).toBe(1)
  })

  it("smoke: a missing agent or judge model stops it after the served-models section, with one line (exit 1)", async () => {
    const agent = await cli(["smoke", "--agents", "qwen3.8-27x", "--judges", "allow-all"])
    expect(agent.code).toBe(1)
    expect(agent.stderr).toMatch(/^vetobench: agent model 'qwen3\.8-27x' is not served by upstream 'vllm' \(.*\) \(did you mean 'qwen3\.8-27b'\?\); it serves .*\n$/)
    expect(agent.stdout).toContain("## Served models per upstream")
    expect(agent.stdout).not.toContain("## Agent tool calling")

    const judge = await cli(["smoke", "-c", config("typo.yaml"), "--judges", "small"])
    expect(judge.code).toBe(1)
    expect(judge.stderr).toMatch(/^vetobench: model 'judge-smal' of judge 'small' is not served by upstream 'vllm' \(.*\) \(did you mean 'judge-small'\?\); it serves .*\n$/)
    expect(judge.stdout).not.toContain("## Judges")

    const fine = await cli(["smoke", "--agents", "house-agent", "--judges", "stack"])
    expect(verdicts(fine.stderr).filter((l) => l.includes("not served"))).toEqual([])
    expect(fine.stdout).toContain("## Judges (call-only probes)")
  })

  it("proxy: a judge model that is not served is a warning naming judge, model and upstream; the proxy still serves", async () => {
    const proxy = await startCliInProcess(
      ["proxy", "-c", path.join(dir, "configs", "typo.yaml")],
      /model 'judge-smal' of judge 'small' is not served by upstream 'vllm'.*\n/
    )
    servers.push(proxy)
    const out = proxy.output()
    const url = /veto-proxy (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(out)?.[1]
    expect(url).toBeDefined()
    const warnings = out.split("\n").filter((l) => l.includes("is not served"))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/WARN/)
    expect(warnings[0]).toContain("starting anyway")
    const health = await fetch(`${url}/healthz`)
    expect(health.status).toBe(200)
    expect(proxy.running()).toBe(true)
  })

  it("proxy: an upstream that does not answer is a warning too; the proxy still serves", async () => {
    const file = path.join(dir, "configs", "dead.yaml")
    fs.writeFileSync(file, "upstreams:\n  - name: dead\n    base_url: http://127.0.0.1:9/v1\njudges:\n  small: { kind: llm_json, model: judge-small }\nproxy:\n  port: 0\n")
    const proxy = await startCliInProcess(["proxy", "-c", file], /upstream 'dead' \(http:\/\/127\.0\.0\.1:9\/v1\) did not answer GET \/models.*\n/)
    servers.push(proxy)
    expect(proxy.output()).toMatch(/needed for model 'judge-small' of judge 'small'; starting anyway/)
    const url = /veto-proxy (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(proxy.output())?.[1]
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
  })
})

// ---------------------------------------------------------------------------------------------
// split, proxy --port

describe("split and proxy --port (the bundle: how the process treats its port)", () => {
  it("split says when it returns fewer cases than asked, and why", async () => {
    const out = path.join(fs.mkdtempSync(path.join(tmpdir(), "vetobench-loud-split-")), "s.json")
    const r = await runCliInProcess(["split", "--data", path.join(FIXTURE, "data", "released_data.json"), "--n-test", "16", "--n-dev", "0", "--out", out])
    expect(r.code).toBe(0)
    const lines = r.stdout.trimEnd().split("\n")
    expect(lines[0]).toBe(`wrote ${out}: 9 test, 0 dev cases (7 categories, seed 0)`)
    // 16 over 7 categories: shares 3, 3, 2, 2, 2, 2, 2; five categories have a single case
    expect(lines[1]).toBe(
      "fewer cases than asked: 9 test of 16, 0 dev of 0: the data has only 9 cases; 5 of 7 risk categories have fewer cases than their share " +
        "(Compromise availability: 1 case for a share of 3; Contribute to harmful / vulnerable code: 1 case for a share of 3; Lead to property loss: 1 case for a share of 2; " +
        "Produce unsafe information / misinformation: 1 case for a share of 2, and 1 more), and a short category is not made up from the others"
    )
    expect(lines).toHaveLength(2)
    // enough cases: one line, as before
    const fine = await runCliInProcess(["split", "--data", path.join(FIXTURE, "data", "released_data.json"), "--n-test", "7", "--n-dev", "0", "--out", out])
    expect(fine.stdout.trimEnd().split("\n")).toHaveLength(1)
  })

  it("proxy --port 80000 is a usage error: one line, exit 2, no stack trace", () => {
    const r = runCli(["proxy", "--port", "80000", "-c", "/nonexistent/vetobench.yaml"])
    expect(r.code).toBe(2)
    expect(r.stderr.trim()).toBe("--port must be a port number from 0 to 65535, got 80000")
    expect(r.stdout + r.stderr).not.toMatch(/at .*\.mjs|RangeError/)
  })

  it("a port in use is one line naming --port and proxy.port, exit 1", async () => {
    const busy = net.createServer()
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve))
    try {
      const port = (busy.address() as AddressInfo).port
      const dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-loud-port-"))
      const file = path.join(dir, "s.yaml")
      fs.writeFileSync(file, "upstreams:\n  - name: dead\n    base_url: http://127.0.0.1:9/v1\n")
      const r = await runCliAsync(["proxy", "-c", file, "--port", String(port)], { cwd: dir })
      expect(r.stderr).toBe(
        `vetobench: cannot serve: 127.0.0.1:${port} is already in use (EADDRINUSE); choose another port with --port N or proxy.port in ${file}\n`
      )
      expect(r.code).toBe(1)
    } finally {
      await new Promise<void>((resolve) => busy.close(() => resolve()))
    }
  })
})
