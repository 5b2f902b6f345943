/**
 * `vetobench run --bench asb` as users run it: `vetobench fake-vllm`, `vetobench proxy` and the
 * commands run in this process (test/support/cli.ts; the shards are the launcher's Python
 * processes), a temp repo whose settings point `paths.asb_dir` at an asb-mini checkout
 * (`test/fixtures/asb-mini`, the benchmark's real data linked in) and `paths.asb_python` at the
 * test venv's Python, and an experiment with two variants and two attacks.
 */
import * as fs from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeCheckout, testPython } from "../fixtures/asb-mini/checkout.js"
import { type InProcessServer, runCliInProcess, startCliInProcess } from "../support/cli.js"

const py = testPython()
if (py.skip !== null) console.warn(`ASB CLI tests skipped: ${py.skip}`)

const MODEL = "qwen3.8-27b"
const DPI = "direct_prompt_injection-naive"

let dir = ""
const servers: Array<InProcessServer> = []

/** `vetobench args…` with the temp repo's configs/vetobench.yaml as the settings (as run in the repo without -c). */
const cli = (args: ReadonlyArray<string>) => runCliInProcess(args, { env: { VETOBENCH_CONFIG: config("vetobench.yaml") } })
const config = (name: string) => path.join(dir, "configs", name)

const settingsYaml = (fakeUrl: string, asbDir: string) =>
  [
    "upstreams:",
    "  - name: fake",
    `    base_url: ${fakeUrl}`,
    "aliases:",
    "  gpt-4o-mini: judge-small",
    "judges:",
    "  small: { kind: llm_json, model: judge-small }",
    "proxy:",
    "  port: 0",
    "paths:",
    `  asb_dir: ${asbDir}`,
    `  asb_python: ${py.python ?? "python3"}`,
    ""
  ].join("\n")

const experimentYaml = (name: string, proxyUrl: string, attacks: ReadonlyArray<string>) =>
  [
    `name: ${name}`,
    `proxy_url: ${proxyUrl}`,
    `models: [${MODEL}]`,
    "judges: [small]",
    "arms: [baseline, enforce]",
    "agent_safetybench:",
    "  enabled: false",
    "asb:",
    "  tools_per_agent: 1",
    "  shards: 2",
    "  attacks:",
    ...attacks.map((a) => `    - ${a}`),
    ""
  ].join("\n")

const jsonLines = (file: string) =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as Record<string, unknown>)

describe.skipIf(py.skip !== null)("vetobench run --bench asb", () => {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-asb-cli-"))
    fs.mkdirSync(path.join(dir, "configs"))
    const ok = makeCheckout(dir, "asb-ok")
    const failing = makeCheckout(dir, "asb-failing")
    fs.writeFileSync(path.join(failing, "mini_fail.txt"), "CredentialHarvesting\n") // system_admin_agent's 2nd tool
    const fake = await startCliInProcess(["fake-vllm", "--port", "0"], /serving (http:\/\/127\.0\.0\.1:\d+\/v1)/)
    servers.push(fake)
    const fakeUrl = fake.match[1]!
    fs.writeFileSync(path.join(dir, "configs", "vetobench.yaml"), settingsYaml(fakeUrl, ok))
    fs.writeFileSync(path.join(dir, "configs", "failing.yaml"), settingsYaml(fakeUrl, failing))
    fs.writeFileSync(path.join(dir, "configs", "missing.yaml"), settingsYaml(fakeUrl, path.join(dir, "nowhere")))
    const proxy = await startCliInProcess(["proxy", "-c", path.join(dir, "configs", "vetobench.yaml")], /veto-proxy (http:\/\/127\.0\.0\.1:\d+\/v1)/)
    servers.push(proxy)
    const proxyUrl = proxy.match[1]!
    fs.writeFileSync(path.join(dir, "configs", "exp.yaml"), experimentYaml("cli-asb", proxyUrl, ["{method: direct_prompt_injection, attack_type: naive}", "{method: clean}"]))
    // one tool per agent and 2 shards: shard01 holds the second agent's tool, not system_admin_agent's first
    fs.writeFileSync(path.join(dir, "configs", "fail.yaml"), experimentYaml("cli-asb-fail", proxyUrl, ["{method: direct_prompt_injection, attack_type: naive}"]).replace("tools_per_agent: 1", "tools_per_agent: 2"))
    fs.writeFileSync(path.join(dir, "configs", "none.yaml"), `name: none\nproxy_url: ${proxyUrl}\nmodels: [${MODEL}]\narms: [baseline]\nagent_safetybench: {enabled: false}\n`)
  })

  afterAll(async () => {
    for (const s of servers.reverse()) await s.stop()
  })

  it("runs every variant × attack, prints results and paired Δ; a second run finds the shards done", async () => {
    const r = await cli(["run", "-e", config("exp.yaml"), "--bench", "asb"])
    expect(r.stderr).not.toContain("vetobench:")
    expect(r.code).toBe(0)
    const lines = r.stdout.split("\n")
    expect(lines.filter((l) => l.startsWith("== "))).toEqual([
      `== ASB | ${MODEL} | baseline | ${DPI}`,
      `== ASB | ${MODEL} | baseline | clean`,
      `== ASB | ${MODEL} | enforce-small | ${DPI}`,
      `== ASB | ${MODEL} | enforce-small | clean`
    ])
    const runDir = (variant: string, tag: string) => path.join(dir, "runs", "cli-asb", "asb", MODEL, variant, tag)
    expect(lines).toContain(`[asb] ${MODEL}@baseline ${DPI}: 2 shards run, 0 done before (10 tools × 1 task = 10 episodes) → ${runDir("baseline", DPI)}`)
    expect(lines).toContain(`[asb] ${MODEL}@enforce:small clean: 2 shards run, 0 done before (10 tools × 5 tasks = 50 episodes) → ${runDir("enforce-small", "clean")}`)
    const result = lines.find((l) => l.startsWith(`[asb] ${MODEL}@baseline ${DPI}: 10 episodes: ASR 1.000 [`))
    expect(result).toBeDefined()
    expect(result).toMatch(/refusal 0\.000 \[.*\]; 0 with a blocked call; audit: (\d+)\/\1 calls joined to 10 of 10 episodes; refusal judge gpt-4o-mini → judge-small \(stand-in: RR provisional\)$/)
    expect(lines.some((l) => l.startsWith(`[asb] ${MODEL}@baseline clean: 50 episodes: ASR 0.000 [`))).toBe(true)
    expect(lines.filter((l) => / − baseline /.test(l)).map((l) => l.replace(/ [-0-9.]+ \[[-0-9., ]+\], n \d+$/, ""))).toEqual([
      `[asb] ${MODEL} ${DPI}: ΔASR enforce-small − baseline`,
      `[asb] ${MODEL} clean: Δ task success enforce-small − baseline`
    ])
    expect(lines.find((l) => l.includes("ΔASR"))).toMatch(/, n 10$/)
    expect(lines.find((l) => l.includes("Δ task success"))).toMatch(/, n 50$/)

    // the proxy logged each variant under its run id, per episode and attack
    for (const variant of ["baseline", "enforce-small"]) {
      const audit = jsonLines(path.join(dir, "runs", "audit", `cli-asb.asb.${MODEL}.${variant}.jsonl`)).filter((x) => x.type === "call")
      expect(new Set(audit.map((x) => x.session_id))).toEqual(new Set([DPI, "clean"]))
      const dpi = audit.filter((x) => x.session_id === DPI).map((x) => String(x.episode_id))
      expect(dpi.every((id) => /^asb:[a-z_]+_agent:[A-Za-z]+:0$/.test(id))).toBe(true)
      const clean = audit.filter((x) => x.session_id === "clean").map((x) => String(x.episode_id))
      expect(new Set(clean.map((id) => id.split(":")[3]))).toEqual(new Set(["0", "1", "2", "3", "4"]))
    }

    const again = await cli(["run", "-e", config("exp.yaml"), "--bench", "asb", "--variant", "baseline"])
    expect(again.code).toBe(0)
    expect(again.stdout).toContain(`[asb] ${MODEL}@baseline ${DPI}: 0 shards run, 2 done before (10 tools × 1 task = 10 episodes)`)
    expect(again.stdout).toContain(`[asb] ${MODEL}@baseline clean: 0 shards run, 2 done before (10 tools × 5 tasks = 50 episodes)`)
  }, 180_000)

  it("a failing shard: exit 1, one line with its exit status and log; the other shard finished", async () => {
    const r = await cli(["run", "-e", config("fail.yaml"), "-c", config("failing.yaml"), "--bench", "asb", "--variant", "baseline"])
    expect(r.code).toBe(1)
    const dpiDir = path.join(dir, "runs", "cli-asb-fail", "asb", MODEL, "baseline", DPI)
    expect(r.stderr.trim().split("\n").filter((l) => l.startsWith("vetobench:"))).toEqual([
      `vetobench: ASB shards failed: shard01.tools.jsonl (exit 1, see ${path.join(dpiDir, "shard01.log")})`
    ])
    expect(fs.readFileSync(path.join(dpiDir, "shard01.log"), "utf8")).toContain("asb-mini: failing on purpose for attacker tool CredentialHarvesting")
    expect(fs.readFileSync(path.join(dpiDir, "shard00.csv"), "utf8").split("\r\n").filter((l) => l.startsWith("example/"))).toHaveLength(10)
  }, 180_000)

  it("only the treatment variant: the paired Δ is computed against the baseline's results on disk", async () => {
    const proxyUrl = /^proxy_url: (.+)$/m.exec(fs.readFileSync(path.join(dir, "configs", "exp.yaml"), "utf8"))?.[1]
    expect(proxyUrl).toBeDefined()
    fs.writeFileSync(path.join(dir, "configs", "delta.yaml"), experimentYaml("cli-asb-delta", proxyUrl!, ["{method: direct_prompt_injection, attack_type: naive}"]))
    const run = async (variants: ReadonlyArray<string>) => {
      const r = await cli(["run", "-e", config("delta.yaml"), "--bench", "asb", ...variants.flatMap((v) => ["--variant", v])])
      expect(r.stderr).not.toContain("vetobench:")
      expect(r.code).toBe(0)
      return r.stdout.split("\n")
    }
    const esc = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
    const asr = (lines: ReadonlyArray<string>, route: string) => {
      const m = lines.map((l) => new RegExp(`^\\[asb\\] ${esc(route)} ${DPI}: 10 episodes: ASR ([0-9.]+) \\[`).exec(l)).find((x) => x !== null)
      expect(m, route).toBeDefined()
      return Number(m![1])
    }
    const deltas = (lines: ReadonlyArray<string>) => lines.filter((l) => / − baseline /.test(l))

    // the treatment before any baseline: one line saying there is nothing to pair with
    const first = await run(["enforce-small"])
    expect(first.some((l) => l.startsWith(`[asb] ${MODEL}@enforce:small ${DPI}: 2 shards run, 0 done before`))).toBe(true)
    expect(deltas(first)).toEqual([])
    const baseDir = path.join(dir, "runs", "cli-asb-delta", "asb", MODEL, "baseline", DPI)
    expect(first).toContain(`[asb] ${MODEL} ${DPI}: no paired Δ: no baseline results in ${baseDir} (run --variant baseline)`)

    // the baseline alone: nothing to compare, no Δ line
    const base = await run(["baseline"])
    expect(base.filter((l) => l.startsWith("== "))).toEqual([`== ASB | ${MODEL} | baseline | ${DPI}`])
    expect(deltas(base)).toEqual([])
    expect(base.some((l) => l.includes("no paired Δ"))).toBe(false)
    const baseAsr = asr(base, `${MODEL}@baseline`)

    // the treatment alone (its shards done before): the baseline is neither run nor printed, yet its Δ line is there
    const treat = await run(["enforce-small"])
    expect(treat.filter((l) => l.startsWith("== "))).toEqual([`== ASB | ${MODEL} | enforce-small | ${DPI}`])
    expect(treat.some((l) => l.startsWith(`[asb] ${MODEL}@enforce:small ${DPI}: 0 shards run, 2 done before`))).toBe(true)
    const treatDelta = deltas(treat)
    expect(treatDelta).toHaveLength(1)
    const m = new RegExp(`^\\[asb\\] ${esc(MODEL)} ${DPI}: ΔASR enforce-small − baseline (-?[0-9.]+) \\[-?[0-9.]+, -?[0-9.]+\\], n 10$`).exec(treatDelta[0]!)
    expect(m, treatDelta[0]).not.toBeNull()
    // every episode is paired, so Δ = ASR(treatment) − ASR(baseline as the earlier run printed it)
    expect(m![1]).toBe((asr(treat, `${MODEL}@enforce:small`) - baseAsr).toFixed(3))

    // both variants (all shards done before): the same Δ line, interval included
    const both = await run(["baseline", "enforce-small"])
    expect(both.filter((l) => / shards run, /.test(l)).map((l) => l.replace(/ \(10 tools.*$/, ""))).toEqual([
      `[asb] ${MODEL}@baseline ${DPI}: 0 shards run, 2 done before`,
      `[asb] ${MODEL}@enforce:small ${DPI}: 0 shards run, 2 done before`
    ])
    expect(deltas(both)).toEqual(treatDelta)
  }, 180_000)

  it("setup problems and empty selections are one line", async () => {
    const missing = await cli(["run", "-e", config("exp.yaml"), "-c", config("missing.yaml"), "--bench", "asb"])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toBe(
      `vetobench: ASB checkout not found: ${path.join(dir, "nowhere")} does not exist (paths.asb_dir in ${config("missing.yaml")}). Create it with: bash scripts/setup_asb_env.sh\n`
    )
    const none = await cli(["run", "-e", config("none.yaml"), "--bench", "asb"])
    expect(none.code).toBe(0)
    expect(none.stdout.trim()).toBe(`== ASB: no attacks in ${config("none.yaml")} (asb.attacks is empty)`)
  }, 120_000)
})
