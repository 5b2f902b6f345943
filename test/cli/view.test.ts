/**
 * `vetobench view` as a command: bad arguments are one line and exit 2; the bundle serves the runs
 * directory, answers, and ends with 0 on SIGTERM; `vetobench demo` ends by printing the `view`
 * command for its run directory, and that directory is what the view lists.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { exited, runCliInProcess, startCli, startCliInProcess } from "../support/cli.js"

const FIXTURE = path.resolve("test/fixtures/view/tree")
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-view-cli-"))
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

const oneLine = (stderr: string) => stderr.split("\n").filter((l) => l.trim() !== "")

describe("vetobench view: usage errors", () => {
  it("each bad argument is one line naming it, exit 2", async () => {
    const cases: Array<[ReadonlyArray<string>, Record<string, string | undefined>, RegExp]> = [
      [[FIXTURE, "--port", "70000"], {}, /--port must be a port number from 0 to 65535, got 70000/],
      [[FIXTURE, "--port", "-1"], {}, /--port/],
      [[path.join(tmp, "missing")], {}, /runs directory .*missing does not exist/],
      [[FIXTURE, "--host", ""], {}, /--host must not be empty/],
      [[FIXTURE, "--proxy", "ftp://127.0.0.1/"], { VETOBENCH_OPERATOR_TOKEN: "x" }, /--proxy must be an http or https URL/],
      [[FIXTURE, "--proxy", "http://admin:hunter2@127.0.0.1:8080"], { VETOBENCH_OPERATOR_TOKEN: "x" }, /--proxy must not carry credentials/],
      [[FIXTURE, "--proxy", "not a url"], { VETOBENCH_OPERATOR_TOKEN: "x" }, /--proxy must be the proxy's URL/],
      [[FIXTURE, "--proxy", "http://127.0.0.1:8080/v1"], { VETOBENCH_OPERATOR_TOKEN: undefined }, /--proxy needs the proxy's operator token in \$VETOBENCH_OPERATOR_TOKEN/],
      [[FIXTURE, "--no-such-flag"], {}, /no-such-flag/]
    ]
    for (const [args, env, message] of cases) {
      const r = await runCliInProcess(["view", ...args], { env })
      expect(r.code, args.join(" ")).toBe(2)
      const lines = oneLine(r.stderr)
      expect(lines.length, `${args.join(" ")}: ${r.stderr}`).toBe(1)
      expect(lines[0], args.join(" ")).toMatch(message)
      expect(r.stderr).not.toContain("hunter2")
      expect(r.stdout).toBe("")
    }
  })
})

describe("vetobench view: serving", () => {
  it("the bundle prints the URL, answers on 127.0.0.1, never prints the token, and SIGTERM ends it with 0", async () => {
    const token = "tok-should-never-appear"
    // startCli passes this process's environment on
    process.env.VETOBENCH_OPERATOR_TOKEN = token
    const started = startCli(["view", FIXTURE, "--port", "0", "--proxy", "http://127.0.0.1:9/v1"], /open (http:\/\/127\.0\.0\.1:\d+\/)/)
    delete process.env.VETOBENCH_OPERATOR_TOKEN
    const { match, output, proc } = await started
    try {
      const res = await fetch(match[1]!)
      expect(res.status).toBe(200)
      expect(await res.text()).toContain('data-experiment="fx"')
      const holds = await fetch(`${match[1]!}holds`)
      expect(await holds.text()).not.toContain(token)
    } finally {
      proc.kill("SIGTERM")
    }
    expect(await exited(proc)).toBe(0)
    expect(output()).not.toContain(token)
    expect(output()).toContain("holds of http://127.0.0.1:9")
  }, 120_000)

  it("a non-loopback --host gets a warning line (and serves)", async () => {
    const s = await startCliInProcess(["view", FIXTURE, "--host", "0.0.0.0", "--port", "0"], /open http:\/\/0\.0\.0\.0:\d+\//)
    try {
      expect(s.output()).toMatch(/warning: serving on 0\.0\.0\.0, not loopback/)
    } finally {
      await s.stop()
    }
  }, 120_000)
})

describe("vetobench demo → view", () => {
  it("the demo ends by printing the view command for its run directory, whose experiment the view lists", async () => {
    const out = path.join(tmp, "demo")
    const r = await runCliInProcess(["demo", "--out", out])
    expect(r.code).toBe(0)
    const last = r.stdout.trimEnd().split("\n").at(-1) ?? ""
    const m = /^browse its episodes and rulings: (?:npx )?vetobench view (\S+)$/.exec(last)
    expect(m, last).not.toBeNull()
    const dir = m![1]!
    expect(path.dirname(dir)).toBe(path.resolve(out))
    const s = await startCliInProcess(["view", dir, "--port", "0"], /open (http:\/\/127\.0\.0\.1:\d+\/)/)
    try {
      const page = await (await fetch(s.match[1]!)).text()
      expect(page).toContain('data-experiment="experiment"')
      const changed = await (await fetch(`${s.match[1]!}episodes?e=experiment&bench=asbench&model=qwen3.8-27b&changed=1`)).text()
      expect(changed).toMatch(/<tr class="changed" data-episode="asbench:\d+" data-variant="enforce-rules">/)
    } finally {
      await s.stop()
    }
  }, 300_000)
})
