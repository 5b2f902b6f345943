/**
 * `--run-dir DIR` on run, score, replay and report, as users run them: the built bundle against
 * real `vetobench fake-vllm` and `vetobench proxy` processes, a temp repo and a small experiment.
 * Everything the commands write lands under DIR (relative to the working directory), nothing in
 * the experiment's own run_dir.
 */
import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { exited, fakeSettingsYaml, runCli, startCli } from "../support/cli.js"


let dir = ""
const procs: Array<ChildProcess> = []

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-run-dir-"))
  fs.mkdirSync(path.join(dir, "configs"))
  const fake = await startCli(["fake-vllm", "--port", "0"], /serving (http:\/\/127\.0\.0\.1:\d+\/v1)/)
  procs.push(fake.proc)
  const settings = path.join(dir, "configs", "vetobench.yaml")
  fs.writeFileSync(
    settings,
    fakeSettingsYaml(fake.match[1]!, ["scoring:", "  shieldagent_model: shieldagent"])
  )
  const proxy = await startCli(["proxy", "-c", settings], /veto-proxy (http:\/\/127\.0\.0\.1:\d+\/v1)/)
  procs.push(proxy.proc)
  fs.writeFileSync(
    path.join(dir, "configs", "exp.yaml"),
    ["name: rd", `proxy_url: ${proxy.match[1]!}`, "models: [qwen3.8-27b]", "judges: [allow-all]", "arms: [baseline, enforce]", "agent_safetybench:", "  workers: 4", "asb:", "  enabled: false", ""].join("\n")
  )
})

afterAll(async () => {
  for (const p of procs.reverse()) {
    p.kill("SIGTERM")
    await exited(p)
  }
})

const cli = (args: ReadonlyArray<string>) => runCli(args, { cwd: dir })

describe("--run-dir", () => {
  it("run, score, replay and report write under it, not under the experiment's run_dir", () => {
    const out = path.join(dir, "elsewhere", "r1")
    const baseline = path.join(out, "asbench", "qwen3.8-27b", "baseline")

    const run = cli(["run", "-e", "configs/exp.yaml", "--run-dir", "elsewhere/r1"])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain(`→ ${path.join(baseline, "gen_res.json")}`)
    expect(fs.existsSync(path.join(baseline, "gen_res.json"))).toBe(true)
    expect(fs.existsSync(path.join(out, "asbench", "qwen3.8-27b", "enforce-allow-all", "gen_res.json"))).toBe(true)

    const score = cli(["score", "-e", "configs/exp.yaml", "--run-dir", "elsewhere/r1"])
    expect(score.code, score.stderr).toBe(0)
    expect(fs.existsSync(path.join(baseline, "shield.jsonl"))).toBe(true)

    const replay = cli(["replay", "-e", "configs/exp.yaml", "--run-dir", "elsewhere/r1", "--bench", "asbench"])
    expect(replay.code, replay.stderr).toBe(0)
    expect(fs.readdirSync(path.join(out, "replay"))).toEqual(["asbench.qwen3.8-27b.jsonl"])

    const report = cli(["report", "-e", "configs/exp.yaml", "--run-dir", "elsewhere/r1"])
    expect(report.code, report.stderr).toBe(0)
    expect(report.stdout).toContain(`wrote ${path.join(out, "report.md")}`)
    for (const f of ["report.md", "summary.json", "report.html"]) expect(fs.existsSync(path.join(out, f))).toBe(true)

    // the experiment's own run_dir (runs/rd under the repo root) was never written
    expect(fs.existsSync(path.join(dir, "runs", "rd"))).toBe(false)
    expect(JSON.parse(fs.readFileSync(path.join(dir, "elsewhere", "r1", "summary.json"), "utf8"))).toMatchObject({ experiment: { run_dir: out } })
  })
})
