/**
 * `kind: plugin` from the built bundle: the module is imported at start-up by the bundled CLI
 * (a dynamic import esbuild leaves alone), resolved against the repo root when relative. The fake
 * vLLM and the commands that are not about the bundle's import run in this process
 * (test/support/cli.ts).
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { exited, runCliInProcess, startCli, startCliInProcess } from "../support/cli.js"

const FIXTURE = path.resolve("test/fixtures/plugins/keyword-judge.mjs")

/** A temp repo: `<dir>/configs/vetobench.yaml` with `lines`, so the repo root is `<dir>`. */
const repo = (lines: (dir: string) => ReadonlyArray<string>) => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-plugin-cli-"))
  mkdirSync(path.join(dir, "configs"))
  const file = path.join(dir, "configs", "vetobench.yaml")
  writeFileSync(file, lines(dir).join("\n"))
  return { dir, file }
}

const tool = (name: string, type: string) => ({
  type: "function",
  function: { name, description: `${name} something`, parameters: { type: "object", properties: { x: { type } } } }
})

describe("vetobench proxy with a plugin judge (bundle)", () => {
  it("loads the plugin by absolute and by root-relative path; blocks keyword calls, allows the rest, audits plugin:keyword", async () => {
    const fake = await startCliInProcess(["fake-vllm", "--port", "0"], /serving (http:\/\/127\.0\.0\.1:\d+\/v1)/)
    try {
      const { dir, file } = repo((d) => {
        mkdirSync(path.join(d, "judges-local"))
        copyFileSync(FIXTURE, path.join(d, "judges-local", "my-judge.mjs"))
        return [
          "upstreams:",
          "  - name: fake",
          `    base_url: ${fake.match[1]}`,
          "judges:",
          "  kw:",
          "    kind: plugin",
          `    module: ${JSON.stringify(FIXTURE)}`,
          // the fake agent fills every string argument with "test"
          "    options: { keywords: [test] }",
          "  local:",
          "    kind: plugin",
          "    module: ./judges-local/my-judge.mjs",
          "    options:",
          "      keywords: [TEST]",
          "proxy:",
          "  port: 0"
        ]
      })
      const proxy = await startCli(["proxy", "-c", file], /veto-proxy (http:\/\/127\.0\.0\.1:\d+)\/v1/)
      const base = proxy.match[1]!
      const ask = async (model: string, type: string) => {
        const res = await fetch(`${base}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-vetobench-run": "cli-plugin" },
          body: JSON.stringify({ model, messages: [{ role: "user", content: "do the thing" }], tools: [tool("act", type)] })
        })
        const body = (await res.json()) as { choices: Array<{ message: { content: string | null; tool_calls: Array<unknown> | null } }> }
        return { status: res.status, blocked: res.headers.get("x-vetobench-blocked"), message: body.choices[0]!.message }
      }
      const denied = await ask("qwen3.8-27b@enforce:kw", "string")
      expect(denied.status).toBe(200)
      expect(denied.blocked).toBe("1")
      expect(denied.message.tool_calls).toBeNull()
      expect(denied.message.content).toContain("argument contains the keyword 'test'")
      const allowed = await ask("qwen3.8-27b@enforce:kw", "integer")
      expect(allowed.blocked).toBe("0")
      expect(allowed.message.tool_calls).toHaveLength(1)
      const local = await ask("qwen3.8-27b@enforce:local", "string")
      expect(local.blocked).toBe("1")
      expect(local.message.content).toContain("argument contains the keyword 'TEST'")

      proxy.proc.kill("SIGTERM")
      expect(await exited(proxy.proc)).toBe(0)
      const log = path.join(dir, "runs", "audit", "cli-plugin.jsonl")
      const records = readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { blocked: boolean; verdict: { judge: string; kind: string; version: string; decision: string } })
      expect(records.map((r) => [r.verdict.judge, r.verdict.kind, r.verdict.version, r.verdict.decision, r.blocked])).toEqual([
        ["kw", "plugin:keyword", "1.0.0", "deny", true],
        ["kw", "plugin:keyword", "1.0.0", "allow", false],
        ["local", "plugin:keyword", "1.0.0", "deny", true]
      ])
      expect((await runCliInProcess(["verify-audit", log])).stdout).toMatch(/^PARTIAL .*: 3 records – chain ok; anchor ok/m)
    } finally {
      await fake.stop()
    }
  })

  it("a missing plugin file stops start-up: one line naming the judge, the key and the resolved path (exit 1)", async () => {
    const { dir, file } = repo(() => [
      "upstreams:",
      "  - name: a",
      "    base_url: http://127.0.0.1:1/v1",
      "judges:",
      "  kw: { kind: plugin, module: ./judges-local/missing.mjs }"
    ])
    const r = await runCliInProcess(["proxy", "-c", file])
    expect(r.code).toBe(1)
    expect(r.stderr.trim().split("\n")).toHaveLength(1)
    expect(r.stderr).toContain(`judges.kw.module: file not found: ${path.join(dir, "judges-local", "missing.mjs")} (resolved against the repo root ${dir})`)
  })

  it("a module without a judge-kind export stops start-up naming judges.<name>.module", async () => {
    const { file } = repo(() => [
      "upstreams:",
      "  - name: a",
      "    base_url: http://127.0.0.1:1/v1",
      "judges:",
      `  kw: { kind: plugin, module: ${JSON.stringify(path.resolve("test/fixtures/plugins/no-default.mjs"))} }`
    ])
    const r = await runCliInProcess(["proxy", "-c", file])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("judges.kw.module: ")
    expect(r.stderr).toContain("has no default export")
  })
})
