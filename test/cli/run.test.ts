/**
 * `vetobench run` and `vetobench score` as users run them, against `vetobench fake-vllm --port 0`
 * and `vetobench proxy`, a temp repo whose settings point `paths.asbench_dir` at the fixture
 * checkout, and an experiment with two variants. Servers and commands run in this process
 * (test/support/cli.ts), the repo's configs/vetobench.yaml named by `VETOBENCH_CONFIG`.
 */
import * as fs from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fakeSettingsYaml, type InProcessServer, runCliInProcess, startCliInProcess } from "../support/cli.js"

const ALL_IDS = [0, 1, 2, 3, 4, 5, 6, 7, 8]

let dir = ""
let proxyUrl = ""
const servers: Array<InProcessServer> = []


beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-run-"))
  fs.mkdirSync(path.join(dir, "configs"))
  const fake = await startCliInProcess(["fake-vllm", "--port", "0"], /serving (http:\/\/127\.0\.0\.1:\d+\/v1)/)
  servers.push(fake)
  const fakeUrl = fake.match[1]!
  fs.writeFileSync(path.join(dir, "configs", "vetobench.yaml"), fakeSettingsYaml(fakeUrl, ["scoring:", "  shieldagent_model: shieldagent"]))
  fs.writeFileSync(path.join(dir, "configs", "noscorer.yaml"), fakeSettingsYaml(fakeUrl))
  const proxy = await startCliInProcess(["proxy", "-c", path.join(dir, "configs", "vetobench.yaml")], /veto-proxy (http:\/\/127\.0\.0\.1:\d+\/v1)/)
  servers.push(proxy)
  proxyUrl = proxy.match[1]!
  fs.writeFileSync(
    path.join(dir, "configs", "exp.yaml"),
    [
      "name: cli",
      `proxy_url: ${proxyUrl}`,
      "models: [qwen3.8-27b]",
      "judges: [allow-all]",
      "arms: [baseline, enforce]",
      "agent_safetybench:",
      "  workers: 4",
      ""
    ].join("\n")
  )
})

afterAll(async () => {
  for (const s of servers.reverse()) await s.stop()
})

const config = (name: string) => path.join(dir, "configs", name)
const cli = (args: ReadonlyArray<string>) => runCliInProcess(args, { env: { VETOBENCH_CONFIG: config("vetobench.yaml") } })
const runDir = (variant: string) => path.join(dir, "runs", "cli", "asbench", "qwen3.8-27b", variant)
const jsonLines = (file: string) =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as Record<string, unknown>)

describe("vetobench run / score", () => {
  it("runs every model × variant on the fixture, then scores them", async () => {
    const r = await cli(["run", "-e", config("exp.yaml")])
    expect(r.code).toBe(0)
    const headers = r.stdout.split("\n").filter((l) => l.startsWith("== "))
    expect(headers).toEqual(["== Agent-SafetyBench | qwen3.8-27b | baseline", "== Agent-SafetyBench | qwen3.8-27b | enforce-allow-all"])
    expect(r.stdout).toContain("[asbench] qwen3.8-27b@enforce:allow-all: 9 ok, 0 exceeded, 0 error (0 of 9 done before)")
    for (const variant of ["baseline", "enforce-allow-all"]) {
      const records = JSON.parse(fs.readFileSync(path.join(runDir(variant), "gen_res.json"), "utf8")) as Array<{
        id: number
        output: Array<{ role: string }>
        vetobench: { status: string; run_id: string }
      }>
      expect(records.map((x) => x.id)).toEqual(ALL_IDS)
      expect(records.every((x) => x.vetobench.status === "ok" && x.output[0]?.role === "system")).toBe(true)
      expect(records[0]!.vetobench.run_id).toBe(`cli.asbench.qwen3.8-27b.${variant}`)
      // the proxy logged the run under the run id, per episode
      const audit = jsonLines(path.join(dir, "runs", "audit", `cli.asbench.qwen3.8-27b.${variant}.jsonl`)).filter((x) => x.type === "call")
      expect(audit.length).toBeGreaterThan(0)
      expect(audit.every((x) => typeof x.episode_id === "string" && /^asbench:\d$/.test(x.episode_id))).toBe(true)
    }

    // a second run finds everything done
    const again = await cli(["run", "-e", config("exp.yaml"), "--variant", "baseline"])
    expect(again.code).toBe(0)
    expect(again.stdout).toContain("[asbench] qwen3.8-27b@baseline: 0 ok, 0 exceeded, 0 error (9 of 9 done before)")

    const s = await cli(["score", "-e", config("exp.yaml")])
    expect(s.code).toBe(0)
    expect(s.stdout.split("\n").filter((l) => l.startsWith("== "))).toEqual([
      "== ShieldAgent | qwen3.8-27b | baseline",
      "== ShieldAgent | qwen3.8-27b | enforce-allow-all"
    ])
    for (const variant of ["baseline", "enforce-allow-all"]) {
      const labels = jsonLines(path.join(runDir(variant), "shield.jsonl"))
      expect(labels.map((x) => x.id).sort()).toEqual(ALL_IDS)
      for (const l of labels) {
        expect(Object.keys(l)).toEqual(["id", "shield_output", "pred_label"])
        expect([0, 1]).toContain(l.pred_label)
        expect(String(l.shield_output)).toMatch(/^\[Answer\] (un)?safe\n/)
      }
    }
  })

  it("--bench asb on an experiment without ASB attacks says so in one line", async () => {
    const r = await cli(["run", "-e", config("exp.yaml"), "--bench", "asb"])
    expect(r.code).toBe(0)
    expect(r.stdout.trim()).toBe(`== ASB: no attacks in ${config("exp.yaml")} (asb.attacks is empty)`)
  })

  it("errors are one line, exit 1", async () => {
    const unknown = await cli(["run", "-e", config("exp.yaml"), "--model", "nope"])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr.trim()).toBe("vetobench: experiment cli has no model 'nope' (models: qwen3.8-27b)")

    fs.writeFileSync(path.join(dir, "configs", "down.yaml"), "name: down\nproxy_url: http://127.0.0.1:9/v1\nmodels: [qwen3.8-27b]\narms: [baseline]\n")
    const down = await cli(["run", "-e", config("down.yaml")])
    expect(down.code).toBe(1)
    expect(down.stderr.trim().split("\n")).toHaveLength(1)
    expect(down.stderr).toMatch(/^vetobench: veto-proxy is not reachable at http:\/\/127\.0\.0\.1:9 \(.+\)\. Start it with: (npx )?vetobench proxy -c \S+\n$/)
    expect(down.stderr).toContain(` -c ${config("vetobench.yaml")}\n`)

    const noScorer = await cli(["score", "-e", config("exp.yaml"), "-c", config("noscorer.yaml")])
    expect(noScorer.code).toBe(1)
    expect(noScorer.stderr).toBe("vetobench: set scoring.shieldagent_model in the config\n")

    const missing = await cli(["run", "-e", config("none.yaml")])
    expect(missing.code).toBe(1)
    expect(missing.stderr.trim().split("\n")).toHaveLength(1)
    expect(missing.stderr).toContain(config("none.yaml"))
  })
})
