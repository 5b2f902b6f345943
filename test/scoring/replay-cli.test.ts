/** `vetobench replay` as users run it (the built bundle), over the fixture's baseline audit files. */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { runCli } from "../support/cli.js"
import { FIXTURE } from "./fixture.js"

const SETTINGS = `upstreams:
  - name: cluster
    base_url: http://127.0.0.1:9/v1
judges:
  guard: { kind: static, decision: deny }
  lenient: { kind: static, decision: allow }
proxy:
  audit_dir: audit
`
const EXPERIMENT = `name: fixture
run_dir: run
models: [agent]
judges: [guard]
arms: [enforce, baseline]
`

const workspace = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-replay-cli-"))
  mkdirSync(path.join(dir, "configs"))
  cpSync(path.join(FIXTURE, "audit"), path.join(dir, "audit"), { recursive: true })
  writeFileSync(path.join(dir, "configs", "vetobench.yaml"), SETTINGS)
  writeFileSync(path.join(dir, "configs", "fixture.yaml"), EXPERIMENT)
  return dir
}

const lines = (file: string) => readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { judge: string; verdict: { decision: string } })

describe("vetobench replay", () => {
  it("replays the experiment's judges over both benches, then resumes with nothing to do", () => {
    const dir = workspace()
    const r = runCli(["replay", "-e", "configs/fixture.yaml"], { cwd: dir })
    expect(r.code).toBe(0)
    const out = r.stdout.split("\n")
    expect(out[0]).toBe("== replay | asbench | agent | judges=[guard]")
    expect(out[1]).toBe(`[replay] asbench | agent: 7 ruled (0 errors, retried next time), 0 done before → ${path.join(dir, "run", "replay", "asbench.agent.jsonl")}`)
    expect(out[2]).toBe("== replay | asb | agent | judges=[guard]")
    expect(out[3]).toMatch(/^\[replay\] asb \| agent: 6 ruled \(0 errors, retried next time\), 0 done before → /)
    expect(r.stderr).toContain("[replay] asbench | agent: 7 baseline calls × 1 judges: 0 done before, 7 to rule")
    const asbench = lines(path.join(dir, "run", "replay", "asbench.agent.jsonl"))
    expect(asbench).toHaveLength(7)
    expect(asbench.every((l) => l.judge === "guard" && l.verdict.decision === "deny")).toBe(true)

    const again = runCli(["replay", "-e", "configs/fixture.yaml", "--judges", "guard,lenient", "--bench", "asbench"], { cwd: dir })
    expect(again.code).toBe(0)
    expect(again.stdout).toContain("== replay | asbench | agent | judges=[guard, lenient]")
    expect(again.stdout).toContain("7 ruled (0 errors, retried next time), 7 done before")
    expect(again.stdout).not.toContain("| asb |")
    expect(lines(path.join(dir, "run", "replay", "asbench.agent.jsonl"))).toHaveLength(14)
  })

  it("one-line errors: unknown judge, unknown model; a missing baseline audit is skipped with a line", () => {
    const dir = workspace()
    const bad = runCli(["replay", "-e", "configs/fixture.yaml", "--judges", "nope"], { cwd: dir })
    expect(bad.code).toBe(1)
    expect(bad.stderr.trim()).toBe("vetobench: unknown judge 'nope' (configured: guard, lenient, allow-all, deny-all)")
    const model = runCli(["replay", "-e", "configs/fixture.yaml", "--model", "other"], { cwd: dir })
    expect(model.code).toBe(1)
    expect(model.stderr).toContain("has no model 'other'")

    writeFileSync(path.join(dir, "configs", "vetobench.yaml"), SETTINGS.replace("audit_dir: audit", "audit_dir: empty-audit"))
    const none = runCli(["replay", "-e", "configs/fixture.yaml"], { cwd: dir })
    expect(none.code).toBe(0)
    expect(none.stdout).toContain(`== replay | asbench | agent: no baseline audit file ${path.join(dir, "empty-audit", "fixture.asbench.agent.baseline.jsonl")}; skipped`)
    expect(existsSync(path.join(dir, "run", "replay"))).toBe(false)
  })
})
