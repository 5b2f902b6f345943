/**
 * `--run-dir DIR` on run, score, replay and report, as users run them: against `vetobench
 * fake-vllm` and `vetobench proxy`, a temp repo and a small experiment. Everything the commands
 * write lands under DIR (relative to the working directory), nothing in the experiment's own
 * run_dir. Servers and commands run in this process (test/support/cli.ts) with DIR absolute; the
 * bundle, in the repo, shows a relative DIR is taken from the working directory.
 */
import * as fs from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fakeSettingsYaml, type InProcessServer, runCliAsync, runCliInProcess, startCliInProcess } from "../support/cli.js"


let dir = ""
const servers: Array<InProcessServer> = []

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-run-dir-"))
  fs.mkdirSync(path.join(dir, "configs"))
  const fake = await startCliInProcess(["fake-vllm", "--port", "0"], /serving (http:\/\/127\.0\.0\.1:\d+\/v1)/)
  servers.push(fake)
  const settings = path.join(dir, "configs", "vetobench.yaml")
  fs.writeFileSync(
    settings,
    fakeSettingsYaml(fake.match[1]!, ["scoring:", "  shieldagent_model: shieldagent"])
  )
  const proxy = await startCliInProcess(["proxy", "-c", settings], /veto-proxy (http:\/\/127\.0\.0\.1:\d+\/v1)/)
  servers.push(proxy)
  fs.writeFileSync(
    path.join(dir, "configs", "exp.yaml"),
    ["name: rd", `proxy_url: ${proxy.match[1]!}`, "models: [qwen3.8-27b]", "judges: [allow-all]", "arms: [baseline, enforce]", "agent_safetybench:", "  workers: 4", "asb:", "  enabled: false", ""].join("\n")
  )
})

afterAll(async () => {
  for (const s of servers.reverse()) await s.stop()
})

const exp = () => path.join(dir, "configs", "exp.yaml")
const cli = (args: ReadonlyArray<string>) => runCliInProcess(args, { env: { VETOBENCH_CONFIG: path.join(dir, "configs", "vetobench.yaml") } })

describe("--run-dir", () => {
  it("run, score, replay and report write under it, not under the experiment's run_dir", async () => {
    const out = path.join(dir, "elsewhere", "r1")
    const baseline = path.join(out, "asbench", "qwen3.8-27b", "baseline")

    const run = await cli(["run", "-e", exp(), "--run-dir", out])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain(`→ ${path.join(baseline, "gen_res.json")}`)
    expect(fs.existsSync(path.join(baseline, "gen_res.json"))).toBe(true)
    expect(fs.existsSync(path.join(out, "asbench", "qwen3.8-27b", "enforce-allow-all", "gen_res.json"))).toBe(true)

    const score = await cli(["score", "-e", exp(), "--run-dir", out])
    expect(score.code, score.stderr).toBe(0)
    expect(fs.existsSync(path.join(baseline, "shield.jsonl"))).toBe(true)

    const replay = await cli(["replay", "-e", exp(), "--run-dir", out, "--bench", "asbench"])
    expect(replay.code, replay.stderr).toBe(0)
    expect(fs.readdirSync(path.join(out, "replay"))).toEqual(["asbench.qwen3.8-27b.jsonl"])

    // the bundle in the repo: DIR relative to its working directory
    const report = await runCliAsync(["report", "-e", "configs/exp.yaml", "--run-dir", "elsewhere/r1"], { cwd: dir })
    expect(report.code, report.stderr).toBe(0)
    expect(report.stdout).toContain(`wrote ${path.join(out, "report.md")}`)
    for (const f of ["report.md", "summary.json", "report.html"]) expect(fs.existsSync(path.join(out, f))).toBe(true)

    // the experiment's own run_dir (runs/rd under the repo root) was never written
    expect(fs.existsSync(path.join(dir, "runs", "rd"))).toBe(false)
    expect(JSON.parse(fs.readFileSync(path.join(dir, "elsewhere", "r1", "summary.json"), "utf8"))).toMatchObject({ experiment: { run_dir: out } })
  })
})
