/**
 * Which settings file a command reads, as users meet it: `-c FILE`, else the file
 * `VETOBENCH_CONFIG` names, else `configs/vetobench.yaml` in the working directory. In this process
 * (test/support/cli.ts: `VETOBENCH_CONFIG` through `Config`) and, where the environment and the
 * working directory of a real process are the point, the built bundle.
 */
import * as fs from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { type CliResult, runCli, runCliInProcess } from "../support/cli.js"

const FIXTURE = fileURLToPath(new URL("../../examples/agent-safetybench-mini", import.meta.url))
const tmp = () => fs.mkdtempSync(path.join(tmpdir(), "vetobench-config-env-"))

/** The bundle in `cwd` with `VETOBENCH_CONFIG` set to `env` (or unset when undefined). */
const cli = (args: ReadonlyArray<string>, cwd: string, env: string | undefined): CliResult => {
  const saved = process.env.VETOBENCH_CONFIG
  delete process.env.VETOBENCH_CONFIG
  try {
    return runCli(args, { cwd, ...(env === undefined ? {} : { env: { VETOBENCH_CONFIG: env } }) })
  } finally {
    if (saved !== undefined) process.env.VETOBENCH_CONFIG = saved
  }
}

/** A settings file whose paths.asbench_dir is the fixture checkout (split reads its data from there). */
const goodSettings = (dir: string) => {
  const file = path.join(dir, "elsewhere", "settings.yaml")
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, ["upstreams:", "  - name: a", "    base_url: http://127.0.0.1:9/v1", "paths:", `  asbench_dir: ${FIXTURE}`, ""].join("\n"))
  return file
}

const badSettings = (file: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, "upstreams:\n  - name: a\n    base_url: http://127.0.0.1:9/v1\nproxy:\n  prot: 1\n")
  return file
}

describe("VETOBENCH_CONFIG", () => {
  it("names the settings file when -c is not given", async () => {
    const dir = tmp()
    const settings = goodSettings(dir)
    const out = path.join(dir, "split.json")
    const r = await runCliInProcess(["split", "--n-test", "3", "--n-dev", "0", "--out", out], { env: { VETOBENCH_CONFIG: settings } })
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(r.stdout.startsWith(`wrote ${out}: 3 test, 0 dev cases`)).toBe(true)
    // the bundle, in `dir`, reads it from its environment; without it (and no configs/vetobench.yaml
    // there) there is no data file to split
    expect(cli(["split", "--n-test", "3", "--n-dev", "0", "--out", "split1.json"], dir, settings).stdout).toMatch(/^wrote split1\.json: 3 test, 0 dev cases/)
    const none = cli(["split", "--n-test", "3", "--n-dev", "0", "--out", "split2.json"], dir, undefined)
    expect(none.code).toBe(1)
    expect(none.stderr).toContain("no data file")
  })

  it("-c wins over it", async () => {
    const dir = tmp()
    const fromEnv = goodSettings(dir)
    const given = badSettings(path.join(dir, "given.yaml"))
    const r = await runCliInProcess(["proxy", "-c", given], { env: { VETOBENCH_CONFIG: fromEnv } })
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(new RegExp(`^vetobench: ${given.replace(/[.]/g, "\\.")}: proxy\\.prot: unknown key; did you mean 'port'\\?`))
  })

  it("a missing file it names is an error naming that file; unset or empty: configs/vetobench.yaml", async () => {
    const dir = tmp()
    const missing = path.join(dir, "nope", "settings.yaml")
    const r = await runCliInProcess(["proxy"], { env: { VETOBENCH_CONFIG: missing } })
    expect(r.code).toBe(1)
    expect(r.stderr).toBe(`vetobench: ${missing}: settings file not found (copy configs/vetobench.example.yaml to configs/vetobench.yaml and edit it)\n`)
    badSettings(path.join(dir, "configs", "vetobench.yaml"))
    for (const env of [undefined, ""]) {
      const d = cli(["proxy"], dir, env)
      expect(d.code).toBe(1)
      expect(d.stderr).toMatch(/^vetobench: configs\/vetobench\.yaml: proxy\.prot: unknown key/)
    }
  })
})
