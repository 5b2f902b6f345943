/**
 * The `agentdojo` section of experiment files (bad input named by key path), the launcher's own
 * checks against the installed AgentDojo, and `vetobench run --bench agentdojo` / `merge` as users
 * run them (`vetobench fake-vllm` and `vetobench proxy` in this process, the launcher in the test
 * venv's Python with the oracle agent).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Either } from "effect"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { planArgs, planEpisodes } from "../../src/adapters/agentdojo/run.js"
import { agentdojoOff, selectionJson } from "../../src/config/agentdojo.js"
import type { ConfigError } from "../../src/config/errors.js"
import { decodeExperiment, type Experiment, loadExperiment } from "../../src/config/experiment.js"
import { defaultSettings, loadSettings, type Settings } from "../../src/config/settings.js"
import { ROOT } from "../fixtures/asb-mini/checkout.js"
import { agentdojoPython, LAUNCHER } from "../fixtures/agentdojo/python.js"
import { type InProcessServer, runCliInProcess, startCliInProcess } from "../support/cli.js"
import { Effect } from "effect"

const settings: Settings = { ...defaultSettings("/srv/bench", {}), file: "configs/vetobench.yaml" }

const decode = (agentdojo: unknown): Either.Either<Experiment, ConfigError> =>
  decodeExperiment({ name: "exp", models: ["m1"], arms: ["baseline"], agentdojo }, { file: "exp.yaml", settings, env: {} })

const failure = (agentdojo: unknown): string => {
  const r = decode(agentdojo)
  if (Either.isRight(r)) throw new Error("expected a ConfigError")
  return r.left.message
}

describe("the agentdojo section", () => {
  it("absent: disabled; present: every default", () => {
    const off = Either.getOrThrow(decode(undefined)).agentdojo!
    expect(off.enabled).toBe(false)
    const on = Either.getOrThrow(decode({})).agentdojo!
    expect(on).toEqual({
      enabled: true,
      suites: ["workspace", "travel", "banking", "slack"],
      benchmark_version: null,
      attacks: ["important_instructions"],
      user_tasks: { kind: "all" },
      injection_tasks: { kind: "all" },
      defenses: [],
      workers: 4,
      oracle: false,
      python: "/srv/bench/.venv-agentdojo/bin/python",
      attack_model_name: "local",
      timeout_s: 600
    })
  })

  it("task subsets: per suite or flat, as the launcher reads them", () => {
    const e = Either.getOrThrow(decode({ suites: ["banking", "slack"], user_tasks: ["user_task_1"], injection_tasks: { slack: ["injection_task_2"] } })).agentdojo!
    expect(selectionJson(e.user_tasks, e.suites)).toBe(JSON.stringify({ banking: ["user_task_1"], slack: ["user_task_1"] }))
    expect(selectionJson(e.injection_tasks, e.suites)).toBe(JSON.stringify({ slack: ["injection_task_2"] }))
  })

  it("unknown names are errors naming the key path and the valid names", () => {
    expect(failure({ suites: ["bankng"] })).toBe(
      "exp.yaml: agentdojo.suites[0]: AgentDojo has no suite 'bankng'; did you mean 'banking'? (suites: workspace, travel, banking, slack)"
    )
    expect(failure({ defenses: ["tool_filtr"] })).toMatch(/^exp\.yaml: agentdojo\.defenses\[0\]: AgentDojo has no defense 'tool_filtr'; did you mean 'tool_filter'\?/)
    expect(failure({ attacks: ["important_instruction"] })).toMatch(/^exp\.yaml: agentdojo\.attacks\[0\]: AgentDojo has no attack 'important_instruction'; did you mean 'important_instructions'\?/)
    expect(failure({ benchmark_version: "v9" })).toMatch(/^exp\.yaml: agentdojo\.benchmark_version: AgentDojo has no benchmark version 'v9'/)
    expect(failure({ user_tasks: ["task_1"] })).toBe("exp.yaml: agentdojo.user_tasks[0]: expected an AgentDojo user task id such as 'user_task_0', got \"task_1\"")
    expect(failure({ suites: ["banking"], user_tasks: { slack: ["user_task_1"] } })).toBe("exp.yaml: agentdojo.user_tasks.slack: suite 'slack' is not among the suites run (banking)")
    expect(failure({ defenses: ["tool_filter", "tool_filter"] })).toBe("exp.yaml: agentdojo.defenses[1]: duplicate defense 'tool_filter'")
    expect(failure({ workers: 0 })).toMatch(/^exp\.yaml: agentdojo\.workers: /)
    expect(failure({ oracle: "yes" })).toMatch(/^exp\.yaml: agentdojo\.oracle: expected true or false/)
    expect(failure({ sutes: [] })).toMatch(/^exp\.yaml: agentdojo\.sutes: unknown key; did you mean 'suites'\?/)
    // the launcher is the interpreter's first argument: anything but a Python is refused
    for (const bad of ["/bin/sh", "/bin/rm", "/usr/bin/env", "python; rm -rf x", "--python"]) {
      expect(failure({ python: bad })).toMatch(/^exp\.yaml: agentdojo\.python: expected the Python of AgentDojo's venv/)
    }
    for (const ok of [".venv-agentdojo/bin/python", "/usr/bin/python3", "/opt/py/bin/python3.11"]) expect(Either.isRight(decode({ python: ok }))).toBe(true)
  })

  it("configs/agentdojo.yaml loads with the example settings", () => {
    const s = Effect.runSync(loadSettings(path.join(ROOT, "configs/vetobench.example.yaml")))
    const e = Effect.runSync(loadExperiment(path.join(ROOT, "configs/agentdojo.yaml"), s, {}))
    expect(e.agentdojo).toMatchObject({ enabled: true, suites: ["banking"], defenses: ["tool_filter", "spotlighting_with_delimiting"], oracle: false })
    expect(e.variants.map((v) => v.name)).toEqual(["baseline", "enforce-banking-rules"])
  })
})

const py = agentdojoPython()
if (py.skip !== null) console.warn(`AgentDojo launcher and CLI tests skipped: ${py.skip}`)

/** `launch.py plan …` (asynchronous: a busy machine takes seconds per AgentDojo import, and the test worker must stay responsive) */
const plan = (args: ReadonlyArray<string>): Promise<{ readonly code: number; readonly stderr: string }> =>
  new Promise((resolve) => {
    execFile(py.python!, [LAUNCHER, "plan", ...args], { timeout: 120_000 }, (error, _stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stderr })
    })
  })

describe.skipIf(py.skip !== null)("the launcher checks the selection against the installed AgentDojo", () => {
  it("an unknown task, suite, attack or defense is exit 2 with one line naming it", async () => {
    const bad = [
      [["--suites", "banking", "--user-tasks", JSON.stringify({ banking: ["user_task_99"] })], "AgentDojo has no user task 'user_task_99' in suite banking (v1.2.2); did you mean 'user_task_9'?"],
      [["--suites", "banking", "--injection-tasks", JSON.stringify({ banking: ["injection_task_42"] })], "AgentDojo has no injection task 'injection_task_42' in suite banking"],
      [["--suites", "bank"], "AgentDojo has no suite 'bank'"],
      [["--suites", "banking", "--attacks", "nope"], "AgentDojo has no attack 'nope'"],
      [["--suites", "banking", "--defense", "nope"], "AgentDojo has no defense 'nope'"],
      [["--suites", "banking", "--attack-model-name", "qwen"], "AgentDojo has no model name for attacks 'qwen'"],
      [["--suites", "banking", "--user-tasks", "[1"], "--user-tasks: not JSON"]
    ] as const
    const torch = await plan(["--suites", "banking", "--defense", "transformers_pi_detector"])
    if (torch.code !== 0) expect(torch.stderr).toContain("the transformers_pi_detector defense needs torch and transformers")
    for (const [args, line] of bad) {
      const r = await plan(args)
      expect(r.code, args.join(" ")).toBe(2)
      expect(r.stderr.trim().split("\n")).toHaveLength(1)
      expect(r.stderr).toContain(line)
    }
  })
})

describe.skipIf(py.skip !== null)("the launcher against hostile values, a second launcher and a dead runner", () => {
  const dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-agentdojo-hostile-"))
  const children: Array<ChildProcess> = []
  const hung: Array<net.Socket> = []
  // accepts connections and never answers: an episode in flight stays in flight
  const silent = net.createServer((socket) => void hung.push(socket))
  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL")
    for (const h of hung) h.destroy()
    await new Promise<void>((resolve) => silent.close(() => resolve()))
    fs.rmSync(dir, { recursive: true, force: true })
  })
  const runArgs = (results: string, baseUrl: string) => [
    LAUNCHER, "run", "--suites=banking", "--attacks=", `--user-tasks=${JSON.stringify({ banking: ["user_task_0"] })}`,
    `--base-url=${baseUrl}`, "--route=m@baseline", "--model=m", "--variant=baseline", "--arm=baseline", "--run-id=hostile",
    `--results=${results}`, `--attempts=${path.join(dir, "attempts.jsonl")}`, "--timeout=600"
  ]

  it("a value that starts with '-' is a value (attack model name '--defense' is named as unknown, not read as an option)", async () => {
    const ad = { ...agentdojoOff(ROOT), enabled: true, suites: ["banking"], python: py.python!, attack_model_name: "--defense=tool_filter" }
    const e = await Effect.runPromise(planEpisodes(py.python!, LAUNCHER, planArgs(ad, null)).pipe(Effect.flip, Effect.provide(NodeContext.layer)))
    expect(e.message).toContain("AgentDojo has no model name for attacks '--defense=tool_filter'")
  })

  it("a second launcher on the same results file exits 5 at once with one line", async () => {
    const results = path.join(dir, "busy.jsonl")
    const holder = spawn(py.python!, ["-c", "import fcntl,sys,time; f=open(sys.argv[1],'a'); fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(300)", results])
    children.push(holder)
    await new Promise<void>((resolve) => holder.stdout.once("data", () => resolve()))
    const r = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(py.python!, runArgs(results, "http://127.0.0.1:9/v1"), { timeout: 120_000 }, (error, _o, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stderr })))
    expect(r.code).toBe(5)
    expect(r.stderr.trim().split("\n")).toHaveLength(1)
    expect(r.stderr).toContain(`another launcher is running on ${results}`)
    holder.kill("SIGKILL")
  })

  it("--exit-with-parent: a launcher whose runner is gone stops instead of running on as an orphan", async () => {
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", () => resolve()))
    const port = (silent.address() as net.AddressInfo).port
    const attempts = path.join(dir, "attempts.jsonl")
    // the "runner": a Node process that starts the launcher with piped stdout and stderr (as the
    // runner does), says its pid, waits until a model request is in flight, and exits; the
    // launcher's stderr is then a pipe nobody reads
    const runner = [
      "const { spawn } = require('node:child_process'); const fs = require('node:fs');",
      "const [py, attempts, ...args] = JSON.parse(process.argv[1]);",
      "const c = spawn(py, [...args, '--exit-with-parent=' + process.pid], { stdio: ['ignore', 'pipe', 'pipe'] });",
      "c.stdout.resume(); c.stderr.resume(); console.log(c.pid);",
      "setInterval(() => { if (fs.existsSync(attempts) && fs.statSync(attempts).size > 0) process.exit(0) }, 200)"
    ].join("\n")
    const parent = spawn(process.execPath, ["-e", runner, JSON.stringify([py.python!, attempts, ...runArgs(path.join(dir, "orphan.jsonl"), `http://127.0.0.1:${port}/v1`)])])
    children.push(parent)
    const pid = await new Promise<number>((resolve) => parent.stdout.once("data", (d: Buffer) => resolve(Number(String(d).trim()))))
    await new Promise<void>((resolve) => parent.once("exit", () => resolve()))
    // running: signal 0 reaches it and (Linux) it is not a zombie waiting for a reaper
    const alive = () => {
      try {
        process.kill(pid, 0)
      } catch {
        return false
      }
      try {
        return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"))
      } catch {
        return true
      }
    }
    for (let i = 0; i < 1000 && alive(); i++) await new Promise((resolve) => setTimeout(resolve, 100))
    const stopped = !alive()
    if (!stopped) process.kill(pid, "SIGKILL")
    expect(stopped).toBe(true)
    expect(fs.existsSync(path.join(dir, "orphan.jsonl")) ? fs.readFileSync(path.join(dir, "orphan.jsonl"), "utf8") : "").toBe("")
  }, 200_000)
})

describe.skipIf(py.skip !== null)("vetobench run --bench agentdojo", () => {
  let dir = ""
  const servers: Array<InProcessServer> = []
  const config = (name: string) => path.join(dir, "configs", name)
  const cli = (args: ReadonlyArray<string>) => runCliInProcess(args, { env: { VETOBENCH_CONFIG: config("vetobench.yaml") } })

  const experimentYaml = (name: string, proxyUrl: string, agentdojo: ReadonlyArray<string>) =>
    [
      `name: ${name}`,
      `proxy_url: ${proxyUrl}`,
      "models: [qwen3.8-27b]",
      "judges: [allow-all]",
      "arms: [baseline, enforce]",
      "agent_safetybench: {enabled: false}",
      "agentdojo:",
      "  suites: [banking]",
      "  oracle: true",
      `  python: ${py.python}`,
      ...agentdojo.map((l) => `  ${l}`),
      ""
    ].join("\n")

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-agentdojo-cli-"))
    fs.mkdirSync(path.join(dir, "configs"))
    const fake = await startCliInProcess(["fake-vllm", "--port", "0"], /serving (http:\/\/127\.0\.0\.1:\d+\/v1)/)
    servers.push(fake)
    const settingsYaml = ["upstreams:", "  - name: fake", `    base_url: ${fake.match[1]!}`, "judges:", "  allow-all: { kind: static, decision: allow }", "proxy:", "  port: 0", ""]
    fs.writeFileSync(config("vetobench.yaml"), settingsYaml.join("\n"))
    const proxy = await startCliInProcess(["proxy", "-c", config("vetobench.yaml")], /veto-proxy (http:\/\/127\.0\.0\.1:\d+\/v1)/)
    servers.push(proxy)
    const url = proxy.match[1]!
    fs.writeFileSync(config("ok.yaml"), experimentYaml("ad-cli", url, ["user_tasks: [user_task_1]", "attacks: []", "defenses: [repeat_user_prompt]"]))
    fs.writeFileSync(config("unknown-task.yaml"), experimentYaml("ad-cli-bad", url, ["user_tasks: [user_task_99]"]))
    fs.writeFileSync(config("unknown-defense.yaml"), experimentYaml("ad-cli-bad2", url, ["defenses: [spotlight]"]))
  })

  afterAll(async () => {
    for (const s of servers.reverse()) await s.stop()
  })

  it("runs the defense variant alone, sharded, and merges it", async () => {
    const r = await cli(["run", "-e", config("ok.yaml"), "--bench", "agentdojo", "--variant", "defense-repeat_user_prompt", "--shard", "0/1"])
    expect(r.stderr).not.toContain("vetobench:")
    expect(r.code).toBe(0)
    expect(r.stdout.split("\n").filter((l) => l.startsWith("== "))).toEqual(["== AgentDojo | qwen3.8-27b | defense-repeat_user_prompt | shard 0-of-1 | oracle agent"])
    expect(r.stdout).toMatch(/\[agentdojo\] qwen3\.8-27b@baseline \(repeat_user_prompt\): 1 ok, 0 error \(0 of 1 done before, v1\.2\.2\)/)
    const m = await cli(["merge", "-e", config("ok.yaml"), "--bench", "agentdojo", "--variant", "defense-repeat_user_prompt", "--shards", "1"])
    expect(m.code).toBe(0)
    expect(m.stdout).toMatch(/\[merge\] qwen3\.8-27b@baseline: 1 shards, 1 episodes \(0 in error\), 1 audit files verified/)
    const merged = path.join(dir, "runs", "ad-cli", "agentdojo", "qwen3.8-27b", "defense-repeat_user_prompt", "results.jsonl")
    const row = JSON.parse(fs.readFileSync(merged, "utf8").trim()) as Record<string, unknown>
    expect(row).toMatchObject({ episode: "agentdojo:banking:user_task_1:none:none", defense: "repeat_user_prompt", utility: true, oracle: true })
  })

  it("an unknown task id fails at run start with the launcher's line (exit 1); an unknown defense when the file is read", async () => {
    const r = await cli(["run", "-e", config("unknown-task.yaml"), "--bench", "agentdojo", "--variant", "baseline"])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("agentdojo: AgentDojo has no user task 'user_task_99' in suite banking")
    const d = await cli(["run", "-e", config("unknown-defense.yaml"), "--bench", "agentdojo"])
    expect(d.code).toBe(1)
    expect(d.stderr).toContain("agentdojo.defenses[0]: AgentDojo has no defense 'spotlight'")
  })
})
