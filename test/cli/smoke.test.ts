/**
 * `vetobench smoke` as users run it, against `vetobench fake-vllm --port 0`, with a temp repo whose
 * configs/vetobench.yaml points at the fake; both run in this process (test/support/cli.ts), the
 * settings named by `VETOBENCH_CONFIG` as they are found in the repo without -c.
 * A healthy setup passes: the fake's agents put the city named in the prompt into a `city`
 * argument, and its judge-small denies the SSN exfiltration probe.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { judgeAgentAnswer, shieldLabel } from "../../src/cli/smoke/probes.js"
import { type CliResult, type InProcessServer, runCliInProcess, startCliInProcess } from "../support/cli.js"

let fakeUrl = ""
let fake: InProcessServer | undefined

beforeAll(async () => {
  fake = await startCliInProcess(["fake-vllm", "--port", "0"], /serving (http:\/\/127\.0\.0\.1:\d+\/v1)/)
  fakeUrl = fake.match[1]!
})

afterAll(async () => {
  await fake?.stop()
})

/** A temp repo with configs/vetobench.yaml; returns its directory. */
const repo = (opts: { models?: ReadonlyArray<string>; judges?: ReadonlyArray<string> } = {}) => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-smoke-"))
  mkdirSync(path.join(dir, "configs"))
  const models = opts.models ?? ["qwen3.8-27b", "judge-small", "shieldagent"]
  writeFileSync(
    path.join(dir, "configs", "vetobench.yaml"),
    [
      "upstreams:",
      "  - name: fake",
      `    base_url: ${fakeUrl}`,
      `    models: [${models.join(", ")}]`,
      "aliases:",
      "  gpt-4o-mini: judge-small",
      "judges:",
      "  small: { kind: llm_json, model: judge-small }",
      ...(opts.judges ?? []).map((j) => `  ${j}`),
      "scoring:",
      "  shieldagent_model: shieldagent",
      ""
    ].join("\n")
  )
  return dir
}

const smoke = (dir: string, args: ReadonlyArray<string>) =>
  runCliInProcess(["smoke", ...args], { env: { VETOBENCH_CONFIG: path.join(dir, "configs", "vetobench.yaml") } })

/** The lines of one `## …` section (without the header). */
const section = (stdout: string, header: string): Array<string> => {
  const lines = stdout.split("\n")
  const start = lines.findIndex((l) => l.startsWith(`## ${header}`))
  if (start < 0) return []
  const rest = lines.slice(start + 1)
  const end = rest.findIndex((l) => l.trim() === "")
  return end < 0 ? rest : rest.slice(0, end)
}

const failLines = (stdout: string) => stdout.split("\n").filter((l) => l.startsWith("  FAIL "))

/** exit 0 + SMOKE PASSED iff no FAIL line; else exit 1 and the count matches. */
const expectVerdictMatchesLines = (r: CliResult) => {
  const fails = failLines(r.stdout).length
  if (fails === 0) {
    expect(r.code).toBe(0)
    expect(r.stdout.trimEnd().endsWith("SMOKE PASSED")).toBe(true)
    expect(r.stderr).toBe("")
  } else {
    expect(r.code).toBe(1)
    expect(r.stdout).toContain(`\nSMOKE FAILED (${fails} check${fails === 1 ? "" : "s"} failed)`)
    expect(r.stderr.trim().split("\n")).toHaveLength(1)
    expect(r.stderr).toMatch(/^vetobench: smoke: \d+ of \d+ checks failed$/m)
  }
}

describe("vetobench smoke", () => {
  it("a healthy setup passes every section (exit 0); controls pass against their own expectation", async () => {
    const dir = repo()
    const r = await smoke(dir, ["--agents", "qwen3.8-27b"])
    expect(r.stdout).not.toMatch(/at .*\.mjs/)

    const served = section(r.stdout, "Served models per upstream")
    expect(served).toHaveLength(1)
    expect(served[0]).toMatch(/^ {2}fake: \[.*'judge-small'.*'qwen3\.8-27b'.*'shieldagent'.*\] \(\d+ ms\)$/)

    const agents = section(r.stdout, "Agent tool calling")
    expect(agents).toHaveLength(1)
    expect(agents[0]).toMatch(/^ {2}PASS qwen3\.8-27b \(\d+ ms\): \{"name":"get_weather","arguments":"\{\\"city\\": \\"Paris\\"\}"\}$/)

    const judges = section(r.stdout, "Judges (call-only probes)")
    expect(judges).toHaveLength(9)
    for (const probe of ["benign", "destructive", "exfiltration"]) {
      expect(judges).toContainEqual(expect.stringMatching(new RegExp(`^ {2}PASS allow-all / ${probe}: allow \\(none\\) \\d+ ms – static judge$`)))
      expect(judges).toContainEqual(expect.stringMatching(new RegExp(`^ {2}PASS deny-all / ${probe}: deny \\(other\\) \\d+ ms – static judge$`)))
      expect(judges).toContainEqual(expect.stringMatching(new RegExp(`^ {2}PASS small / ${probe}: (allow|deny) \\(\\w+\\) \\d+ ms – `)))
    }
    // what the fake's judge-small can recognise
    expect(judges).toContainEqual(expect.stringMatching(/^ {2}PASS small \/ benign: allow \(none\) \d+ ms – routine call$/))
    expect(judges).toContainEqual(expect.stringMatching(/^ {2}PASS small \/ destructive: deny \(security_compromise\) \d+ ms – malicious intent$/))

    expect(section(r.stdout, "ShieldAgent scorer (/v1/completions)")).toEqual([
      expect.stringMatching(/^ {2}PASS shieldagent \(\d+ ms\): '\[Answer\] (safe|unsafe)\\n\[Analysis\]'$/)
    ])
    expect(section(r.stdout, "Alias gpt-4o-mini -> judge-small")).toEqual([expect.stringMatching(/^ {2}PASS judge-small \(\d+ ms\): '1'$/)])
    expectVerdictMatchesLines(r)
    expect(r.code).toBe(0)
    expect(r.stdout.trimEnd().split("\n").at(-1)).toBe("SMOKE PASSED")
  })

  it("passes (exit 0, SMOKE PASSED) when every selected check passes", async () => {
    const dir = repo()
    const r = await smoke(dir, ["--judges", "allow-all,deny-all"])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(failLines(r.stdout)).toEqual([])
    expect(r.stdout.trimEnd().split("\n").at(-1)).toBe("SMOKE PASSED")
    expect(section(r.stdout, "Agent tool calling")).toEqual(["  (no agents: give --agents or -e)"])
    expect(section(r.stdout, "Judges (call-only probes)")).toHaveLength(6)
    for (const h of ["Served models per upstream", "ShieldAgent scorer", "Alias gpt-4o-mini -> judge-small"]) {
      expect(r.stdout).toContain(`## ${h}`)
    }
  })

  it("a configured model the upstream does not serve fails the run", async () => {
    const dir = repo({ models: ["qwen3.8-27b", "judge-small", "shieldagent", "ghost-model"] })
    const r = await smoke(dir, ["--judges", "allow-all"])
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/^ {2}FAIL fake: configured but not served: ghost-model$/m)
    expect(r.stdout).toContain("\nSMOKE FAILED (1 check failed)")
    expect(r.stderr).toBe("vetobench: smoke: 1 of 6 checks failed\n")
  })

  it("an unreachable upstream is an error line and fails", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "vetobench-smoke-"))
    const file = path.join(dir, "s.yaml")
    writeFileSync(file, "upstreams:\n  - name: dead\n    base_url: http://127.0.0.1:1/v1\n    models: [m]\n")
    const r = await smoke(dir, ["-c", file, "--judges", "deny-all"])
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/^ {2}dead: error: .* \(\d+ ms\)$/m)
    expect(r.stdout).toContain("SMOKE FAILED (1 check failed)")
  })

  it("credentials in an upstream's base_url or a judge's URL never reach the output", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "vetobench-smoke-"))
    const file = path.join(dir, "s.yaml")
    writeFileSync(
      file,
      [
        "upstreams:",
        "  - name: dead",
        "    base_url: http://user:secretpass@127.0.0.1:1/v1?api_key=k3y-secretpass",
        "    models: [m]",
        "aliases:",
        "  a: m",
        "judges:",
        "  cls: { kind: classifier, endpoint: 'http://user:secretpass@127.0.0.1:1/classify' }",
        "  tg: { kind: toolgate, url: 'http://user:secretpass@127.0.0.1:1', mode: tools }",
        "  slm: { kind: llm_json, model: m }",
        "scoring:",
        "  shieldagent_model: m",
        ""
      ].join("\n")
    )
    const r = await smoke(dir, ["-c", file, "--agents", "m", "--judges", "cls,tg,slm"])
    expect(r.code).toBe(1)
    const out = r.stdout + r.stderr
    expect(out).not.toContain("secretpass")
    expect(out).not.toContain("user:")
    // where it tried is still shown
    expect(r.stdout).toMatch(/^ {2}dead: error: .*\(http:\/\/\*\*\*@127\.0\.0\.1:1\/v1\?api_key=\*\*\*\) \(\d+ ms\)$/m)
    expect(r.stdout).toMatch(/^ {2}FAIL cls \/ benign: error: classifier endpoint http:\/\/\*\*\*@127\.0\.0\.1:1\/classify unavailable/m)
    expect(r.stdout).toMatch(/^ {2}FAIL tg \/ benign: error: toolgate http:\/\/\*\*\*@127\.0\.0\.1:1: unreachable/m)
    expect(r.stdout).toMatch(/^ {2}FAIL m \(\d+ ms\): UpstreamUnavailable: .*http:\/\/\*\*\*@127\.0\.0\.1:1/m)

    // a base_url the settings reject is quoted without its credentials
    writeFileSync(file, "upstreams:\n  - name: bad\n    base_url: ftp://user:secretpass@127.0.0.1/v1\n")
    const bad = await smoke(dir, ["-c", file])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain("upstreams[0].base_url")
    expect(bad.stderr).toContain("ftp://***@127.0.0.1/v1")
    expect(bad.stdout + bad.stderr).not.toContain("secretpass")
  })

  it("--judges limits the judge section (repeatable and comma lists)", async () => {
    const dir = repo()
    const judges = section((await smoke(dir, ["--judges", "small"])).stdout, "Judges (call-only probes)")
    expect(judges).toHaveLength(3)
    expect(judges.every((l) => / small \/ (benign|destructive|exfiltration): /.test(l))).toBe(true)

    const two = section((await smoke(dir, ["--judges", "deny-all", "--judges", "small,deny-all"])).stdout, "Judges (call-only probes)")
    // in the order given, duplicates dropped
    expect(two.map((l) => /^ {2}(?:PASS|FAIL) (\S+) \//.exec(l)?.[1])).toEqual(["deny-all", "deny-all", "deny-all", "small", "small", "small"])
  })

  it("layered judges run layer by layer; a static hold control must hold; a failing judge shows error: <reason>", async () => {
    const dir = repo({
      judges: [
        "stack: { kind: layered, layers: [allow-all, small] }",
        "pending: { kind: static, decision: hold }",
        // a judge whose model is not served stops smoke before the probes (test/cli/fail-loudly.test.ts)
        "broken: { kind: classifier, endpoint: 'http://127.0.0.1:1/classify' }"
      ]
    })
    const r = await smoke(dir, ["--judges", "stack,pending,broken"])
    const judges = section(r.stdout, "Judges (call-only probes)")
    expect(judges).toHaveLength(9)
    expect(judges).toContainEqual(expect.stringMatching(/^ {2}PASS stack \/ benign: allow \(none\) \d+ ms – all 2 layers allowed$/))
    expect(judges).toContainEqual(expect.stringMatching(/^ {2}PASS stack \/ destructive: deny \(security_compromise\) \d+ ms – small: malicious intent$/))
    for (const probe of ["benign", "destructive", "exfiltration"]) {
      expect(judges).toContainEqual(expect.stringMatching(new RegExp(`^ {2}PASS pending / ${probe}: hold \\(other\\) \\d+ ms – static judge$`)))
      expect(judges).toContainEqual(
        expect.stringMatching(new RegExp(`^ {2}FAIL broken / ${probe}: error: classifier endpoint http://127\\.0\\.0\\.1:1/classify unavailable.* \\(\\d+ ms\\)$`))
      )
    }
    expectVerdictMatchesLines(r)
  })

  it("an unknown judge is one line naming it, exit 1, before any check", async () => {
    const r = await smoke(repo(), ["--judges", "nope"])
    expect(r.code).toBe(1)
    expect(r.stdout).toBe("")
    expect(r.stderr).toBe("vetobench: unknown judge 'nope' (configured: small, allow-all, deny-all)\n")
  })

  it("-e takes the agents from the experiment's models; --agents wins over it", async () => {
    const dir = repo({ models: ["qwen3.8-27b", "muse-glimmer-30b", "judge-small", "shieldagent"] })
    const exp = path.join(dir, "exp.yaml")
    writeFileSync(exp, "name: t\nmodels: [qwen3.8-27b, muse-glimmer-30b]\njudges: [small]\n")
    const agents = section((await smoke(dir, ["-e", exp, "--judges", "allow-all"])).stdout, "Agent tool calling")
    expect(agents).toHaveLength(2)
    expect(agents[0]).toMatch(/^ {2}(PASS|FAIL) qwen3\.8-27b \(\d+ ms\): /)
    expect(agents[1]).toMatch(/^ {2}(PASS|FAIL) muse-glimmer-30b \(\d+ ms\): /)

    const only = section((await smoke(dir, ["-e", exp, "--agents", "qwen3.8-27b", "--judges", "allow-all"])).stdout, "Agent tool calling")
    expect(only).toHaveLength(1)
    const long = section((await smoke(dir, ["--experiment", exp, "--judges", "allow-all"])).stdout, "Agent tool calling")
    expect(long).toHaveLength(2)
  })

  it("a bad experiment file is one line naming the file and key, exit 1", async () => {
    const dir = repo()
    for (const body of ["name: t\nmodels: qwen3.8-27b\n", "name: t\nmodels: []\n", "name: t\n", "name: t\nmodels: [a, 3]\n"]) {
      const exp = path.join(dir, "bad.yaml")
      writeFileSync(exp, body)
      const r = await smoke(dir, ["-e", exp])
      expect(r.code).toBe(1)
      expect(r.stdout).toBe("")
      expect(r.stderr).toBe(`vetobench: ${exp}: models: must be a non-empty list of model names\n`)
    }
    const missing = await smoke(dir, ["-e", path.join(dir, "nope.yaml")])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain("nope.yaml: experiment file not found")
  })

  it("usage errors exit 2", async () => {
    expect((await smoke(repo(), ["--no-such-flag"])).code).toBe(2)
  })
})

describe("smoke probe checks", () => {
  const answer = (calls: ReadonlyArray<unknown> | undefined, content: string | null = null) => ({
    choices: [{ index: 0, message: { role: "assistant", content, ...(calls !== undefined ? { tool_calls: calls } : {}) } }]
  })
  const call = (name: string, args: string) => ({ id: "c0", type: "function", function: { name, arguments: args } })

  it("the agent check passes iff the first call is get_weather with a city containing paris", () => {
    expect(judgeAgentAnswer(answer([call("get_weather", '{"city": "Paris, France"}')])).pass).toBe(true)
    expect(judgeAgentAnswer(answer([call("get_weather", '{"city": "PARIS"}')])).pass).toBe(true)
    expect(judgeAgentAnswer(answer([call("get_weather", '{"city": "test"}')])).pass).toBe(false)
    expect(judgeAgentAnswer(answer([call("get_time", '{"city": "Paris"}'), call("get_weather", '{"city": "Paris"}')])).pass).toBe(false)
    expect(judgeAgentAnswer(answer([call("get_weather", '{"city": "Paris"')])).pass).toBe(false)
    expect(judgeAgentAnswer(answer(undefined, "It is sunny in Paris."))).toEqual({ pass: false, detail: "no tool_calls; content='It is sunny in Paris.'" })
  })

  it("the ShieldAgent label parses [Answer] safe|unsafe", () => {
    expect(shieldLabel("[Answer] unsafe\n[Analysis]")).toBe(1)
    expect(shieldLabel("[Answer] safe\n")).toBe(0)
    expect(shieldLabel("unsafe")).toBe(1)
    expect(shieldLabel("[Answer] maybe")).toBe(-1)
    expect(shieldLabel("")).toBe(-1)
  })
})
