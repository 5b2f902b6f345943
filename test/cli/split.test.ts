/**
 * `vetobench split` as users run it: in this process (test/support/cli.ts), with absolute paths;
 * the bundle where the working directory is the point (the default output path).
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { runCli, runCliInProcess } from "../support/cli.js"

const REPO = path.resolve(import.meta.dirname, "../..")
const DATA = path.resolve(REPO, "../shared/benchmarks/agent-safetybench/released_data.json")
const tmp = () => mkdtempSync(path.join(tmpdir(), "vetobench-split-cli-"))

describe("vetobench split", () => {
  it("writes the split (creating parent dirs) and prints one line", async () => {
    const out = path.join(tmp(), "splits", "sanity.json")
    const r = await runCliInProcess(["split", "--data", DATA, "--n-test", "16", "--n-dev", "0", "--out", out])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(r.stdout).toBe(`wrote ${out}: 16 test, 0 dev cases (8 categories, seed 0)\n`)
    const text = readFileSync(out, "utf8")
    expect(text.startsWith('{\n "seed": 0,\n "dev": [],\n "test": [\n  ')).toBe(true)
    const split = JSON.parse(text) as { seed: number; dev: Array<number>; test: Array<number>; note: string }
    expect(split.test).toHaveLength(16)
    expect(split.note).toBe("dev is for judge prompt development only; report numbers on test")
  })

  it("defaults: 300 test, 48 dev, seed 0; the same seed gives the same file", async () => {
    const dir = tmp()
    // the bundle in `dir`: the default output is relative to the working directory
    const a = runCli(["split", "--data", DATA], { cwd: dir })
    expect(a.code).toBe(0)
    expect(a.stdout).toBe("wrote runs/splits/asbench-pilot.json: 300 test, 48 dev cases (8 categories, seed 0)\n")
    const first = readFileSync(path.join(dir, "runs/splits/asbench-pilot.json"), "utf8")
    const b = await runCliInProcess(["split", "--data", DATA, "--out", path.join(dir, "again.json"), "--seed", "0"])
    expect(b.code).toBe(0)
    expect(readFileSync(path.join(dir, "again.json"), "utf8")).toBe(first)
    const c = await runCliInProcess(["split", "--data", DATA, "--out", path.join(dir, "other.json"), "--seed", "7"])
    expect(c.stdout).toContain("(8 categories, seed 7)")
    expect(readFileSync(path.join(dir, "other.json"), "utf8")).not.toBe(first)
  })

  it("takes the data file from the settings' paths.asbench_dir", async () => {
    const dir = tmp()
    mkdirSync(path.join(dir, "configs"))
    mkdirSync(path.join(dir, "bench", "data"), { recursive: true })
    writeFileSync(path.join(dir, "bench", "data", "released_data.json"), JSON.stringify([{ id: 1, risks: ["a"] }, { id: 2, risks: ["b"] }, { id: 3 }]))
    writeFileSync(
      path.join(dir, "configs", "vetobench.yaml"),
      "upstreams:\n  - name: a\n    base_url: http://127.0.0.1:1/v1\npaths:\n  asbench_dir: bench\n"
    )
    // configs/vetobench.yaml of the repo, as found there without -c
    const r = await runCliInProcess(["split", "--n-test", "3", "--n-dev", "0", "--out", path.join(dir, "s.json")], {
      env: { VETOBENCH_CONFIG: path.join(dir, "configs", "vetobench.yaml") }
    })
    expect(r.stderr).toBe("")
    expect(r.stdout).toBe(`wrote ${path.join(dir, "s.json")}: 3 test, 0 dev cases (3 categories, seed 0)\n`)
    expect(JSON.parse(readFileSync(path.join(dir, "s.json"), "utf8"))).toMatchObject({ test: [1, 2, 3], dev: [] })
  })

  it("no settings file and no --data: one line naming both options, exit 1", async () => {
    const r = await runCliInProcess(["split"], { env: { VETOBENCH_CONFIG: path.join(tmp(), "configs", "vetobench.yaml") } })
    expect(r.code).toBe(1)
    expect(r.stderr.trim().split("\n")).toHaveLength(1)
    expect(r.stderr).toContain("--data")
    expect(r.stderr).toContain("-c")
  })

  it("a missing data file is one line naming it, exit 1", async () => {
    const missing = path.join(tmp(), "nope.json")
    const r = await runCliInProcess(["split", "--data", missing, "--out", path.join(tmp(), "x.json")])
    expect(r.code).toBe(1)
    expect(r.stderr.trim().split("\n")).toHaveLength(1)
    expect(r.stderr).toContain(`${missing}: cannot read data file: not found`)
  })

  it("bad numbers: not a number exits 2; out of range exits 1 with one line", async () => {
    expect((await runCliInProcess(["split", "--data", DATA, "--n-test", "many"])).code).toBe(2)
    const neg = await runCliInProcess(["split", "--data", DATA, "--n-dev", "-1", "--out", path.join(tmp(), "x.json")])
    expect(neg.code).toBe(1)
    expect(neg.stderr.trim()).toBe("vetobench: --n-dev must be 0 or more, got -1")
    const seed = await runCliInProcess(["split", "--data", DATA, "--seed", "4294967296", "--out", path.join(tmp(), "x.json")])
    expect(seed.code).toBe(1)
    expect(seed.stderr.trim()).toBe("vetobench: --seed must be an integer from 0 to 4294967295, got 4294967296")
  })
})
