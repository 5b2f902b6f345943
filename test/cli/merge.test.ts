/**
 * `vetobench run --shard I/N` and `vetobench merge` as users run them: against `vetobench
 * fake-vllm` and `vetobench proxy` and the example checkout `examples/agent-safetybench-mini`.
 * An unsharded run and a 2-shard run of the same experiment (under two experiment names, so their
 * run directories differ) must agree case by case once merged. Servers and commands run in this
 * process (test/support/cli.ts), the repo's configs/vetobench.yaml named by `VETOBENCH_CONFIG`.
 */
import * as fs from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fakeSettingsYaml, type InProcessServer, runCliInProcess, startCliInProcess } from "../support/cli.js"

const ALL_IDS = [0, 1, 2, 3, 4, 5, 6, 7, 8]
const MODEL = "qwen3.8-27b"

let dir = ""
const servers: Array<InProcessServer> = []

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-merge-"))
  fs.mkdirSync(path.join(dir, "configs"))
  const fake = await startCliInProcess(["fake-vllm", "--port", "0"], /serving (http:\/\/127\.0\.0\.1:\d+\/v1)/)
  servers.push(fake)
  fs.writeFileSync(
    path.join(dir, "configs", "vetobench.yaml"),
    fakeSettingsYaml(fake.match[1]!, ["scoring:", "  shieldagent_model: shieldagent"])
  )
  const proxy = await startCliInProcess(["proxy", "-c", path.join(dir, "configs", "vetobench.yaml")], /veto-proxy (http:\/\/127\.0\.0\.1:\d+\/v1)/)
  servers.push(proxy)
  for (const name of ["full", "sharded"]) {
    fs.writeFileSync(
      path.join(dir, "configs", `${name}.yaml`),
      [`name: ${name}`, `proxy_url: ${proxy.match[1]!}`, `models: [${MODEL}]`, "judges: [allow-all]", "arms: [baseline, enforce]", "agent_safetybench:", "  workers: 3", ""].join("\n")
    )
  }
}, 120_000)

afterAll(async () => {
  for (const s of servers.reverse()) await s.stop()
})

const config = (name: string) => path.join(dir, "configs", name)
const cli = (args: ReadonlyArray<string>) => runCliInProcess(args, { env: { VETOBENCH_CONFIG: config("vetobench.yaml") } })
const asbenchDir = (exp: string, variant: string, shard?: string) =>
  path.join(dir, "runs", exp, ...(shard === undefined ? [] : ["shards", shard]), "asbench", MODEL, variant)
const auditFile = (runId: string) => path.join(dir, "runs", "audit", `${runId}.jsonl`)

interface Msg {
  readonly role: string
  readonly tool_calls?: ReadonlyArray<{ readonly function: { readonly name: string; readonly arguments: unknown } }>
}
interface Rec {
  readonly id: number
  readonly output: ReadonlyArray<Msg>
  readonly vetobench: { readonly status: string; readonly run_id: string }
}
const genRes = (d: string) => JSON.parse(fs.readFileSync(path.join(d, "gen_res.json"), "utf8")) as ReadonlyArray<Rec>
/** What must agree between a merged and an unsharded run: ids, statuses, tool call sequences. */
const comparable = (records: ReadonlyArray<Rec>) =>
  records.map((r) => ({
    id: r.id,
    status: r.vetobench.status,
    calls: r.output.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]) : []))
  }))
const jsonLines = (file: string) =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as Record<string, unknown>)

describe("vetobench run --shard / merge", () => {
  it("rejects bad --shard and --shards values as usage errors (exit 2)", async () => {
    for (const bad of ["2/2", "x", "0/0", "-1/2"]) {
      const r = await cli(["run", "-e", config("sharded.yaml"), "--shard", bad])
      expect(r.code, bad).toBe(2)
      expect(fs.existsSync(path.join(dir, "runs", "sharded"))).toBe(false)
    }
    expect((await cli(["merge", "-e", config("sharded.yaml"), "--shards", "0"])).code).toBe(2)
  })

  it("merging 2 shards equals the unsharded run; re-running a shard is idempotent; score accepts the merge", async () => {
    const full = await cli(["run", "-e", config("full.yaml")])
    expect(full.code, full.stderr).toBe(0)

    // a missing shard: merge names it and writes nothing
    const none = await cli(["merge", "-e", config("sharded.yaml"), "--shards", "2"])
    expect(none.code).toBe(1)
    expect(none.stderr).toMatch(/^vetobench: shard 0-of-2 of qwen3\.8-27b@baseline is missing: .*--shard 0\/2\)\n$/)

    const expected = { "0-of-2": [0, 2, 8], "1-of-2": [1, 3, 4, 5, 6, 7] }
    for (const [i, shard] of [[0, "0-of-2"], [1, "1-of-2"]] as const) {
      const r = await cli(["run", "-e", config("sharded.yaml"), "--shard", `${i}/2`])
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).toContain(`== Agent-SafetyBench | ${MODEL} | baseline | shard ${shard}`)
      for (const variant of ["baseline", "enforce-allow-all"]) {
        const records = genRes(asbenchDir("sharded", variant, shard))
        expect(records.map((x) => x.id)).toEqual(expected[shard])
        expect(records[0]!.vetobench.run_id).toBe(`sharded.asbench.${MODEL}.${variant}.shard-${shard}`)
        // the shard's own audit file, and nothing under the unsharded run id
        expect(jsonLines(auditFile(`sharded.asbench.${MODEL}.${variant}.shard-${shard}`)).some((x) => x.type === "call")).toBe(true)
      }
    }
    expect(fs.existsSync(auditFile(`sharded.asbench.${MODEL}.baseline`))).toBe(false)
    expect(fs.existsSync(asbenchDir("sharded", "baseline"))).toBe(false)

    // re-running a shard: nothing runs again, the results stay byte for byte
    const before = fs.readFileSync(path.join(asbenchDir("sharded", "baseline", "1-of-2"), "gen_res.jsonl"), "utf8")
    const again = await cli(["run", "-e", config("sharded.yaml"), "--shard", "1/2", "--variant", "baseline"])
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain(`[asbench] ${MODEL}@baseline: 0 ok, 0 exceeded, 0 error (6 of 6 done before)`)
    expect(fs.readFileSync(path.join(asbenchDir("sharded", "baseline", "1-of-2"), "gen_res.jsonl"), "utf8")).toBe(before)

    const m = await cli(["merge", "-e", config("sharded.yaml"), "--shards", "2"])
    expect(m.code, m.stderr).toBe(0)
    expect(m.stdout.split("\n").filter((l) => l.startsWith("== "))).toEqual([`== merge | ${MODEL} | baseline`, `== merge | ${MODEL} | enforce-allow-all`])
    expect(m.stdout).toContain(`[merge] ${MODEL}@baseline: 2 shards, 9 records (9 ok)`)
    for (const variant of ["baseline", "enforce-allow-all"]) {
      const merged = genRes(asbenchDir("sharded", variant))
      const unsharded = genRes(asbenchDir("full", variant))
      expect(merged.map((x) => x.id)).toEqual(ALL_IDS)
      expect(comparable(merged)).toEqual(comparable(unsharded))
      expect(comparable(merged).some((x) => x.calls.length > 0)).toBe(true)
      expect(jsonLines(path.join(asbenchDir("sharded", variant), "gen_res.jsonl")).map((x) => x.id)).toEqual(ALL_IDS)
      const index = JSON.parse(fs.readFileSync(path.join(asbenchDir("sharded", variant), "shards.json"), "utf8")) as {
        run_id: string
        count: number
        shards: ReadonlyArray<{ shard: string; run_id: string; audit_file: string; audit_status: string; cases: number }>
      }
      expect(index.run_id).toBe(`sharded.asbench.${MODEL}.${variant}`)
      expect(index.count).toBe(2)
      // chain verified; "partial": these settings configure no checkpoint signing, so no anchor to check
      expect(index.shards.map((s) => [s.shard, s.cases, s.audit_status])).toEqual([["0-of-2", 3, "partial"], ["1-of-2", 6, "partial"]])
      for (const s of index.shards) expect(s.audit_file).toBe(auditFile(s.run_id))
    }

    // merging again gives the same files
    const genBefore = fs.readFileSync(path.join(asbenchDir("sharded", "baseline"), "gen_res.json"), "utf8")
    expect((await cli(["merge", "-e", config("sharded.yaml"), "--shards", "2"])).code).toBe(0)
    expect(fs.readFileSync(path.join(asbenchDir("sharded", "baseline"), "gen_res.json"), "utf8")).toBe(genBefore)

    // score reads the merged directory like an unsharded one
    const s = await cli(["score", "-e", config("sharded.yaml")])
    expect(s.code, s.stderr).toBe(0)
    expect(jsonLines(path.join(asbenchDir("sharded", "baseline"), "shield.jsonl")).map((x) => x.id).sort((a, b) => Number(a) - Number(b))).toEqual(ALL_IDS)
  }, 120_000)

  it("merges the shards' shield labels when every shard has them", async () => {
    for (const [shard, ids] of [["0-of-2", [0, 2, 8]], ["1-of-2", [1, 3, 4, 5, 6, 7]]] as const) {
      const lines = ids.map((id) => `${JSON.stringify({ id, shield_output: "[Answer] safe\n", pred_label: 0 })}\n`).join("")
      fs.writeFileSync(path.join(asbenchDir("sharded", "enforce-allow-all", shard), "shield.jsonl"), lines)
    }
    const r = await cli(["merge", "-e", config("sharded.yaml"), "--shards", "2", "--variant", "enforce-allow-all"])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain("shield labels merged")
    const labels = jsonLines(path.join(asbenchDir("sharded", "enforce-allow-all"), "shield.jsonl"))
    expect(labels.map((x) => x.id)).toEqual(ALL_IDS)
    expect(labels.every((x) => x.pred_label === 0)).toBe(true)
  })

  it("refuses a shard whose audit file fails verification, naming it; refuses to overwrite an unsharded run", async () => {
    const file = auditFile(`sharded.asbench.${MODEL}.baseline.shard-1-of-2`)
    const original = fs.readFileSync(file, "utf8")
    const lines = original.split("\n")
    const i = lines.findIndex((l) => l.includes('"type":"call"'))
    expect(i).toBeGreaterThanOrEqual(0)
    lines[i] = lines[i]!.replace('"type":"call"', '"type":"call","tampered":true')
    fs.writeFileSync(file, lines.join("\n"))
    const genBefore = fs.readFileSync(path.join(asbenchDir("sharded", "baseline"), "gen_res.json"), "utf8")
    try {
      const r = await cli(["merge", "-e", config("sharded.yaml"), "--shards", "2", "--variant", "baseline"])
      expect(r.code).toBe(1)
      expect(r.stderr.trim().split("\n")).toHaveLength(1)
      expect(r.stderr).toContain(`shard 1-of-2 of ${MODEL}@baseline: audit file ${file} failed verification`)
      expect(fs.readFileSync(path.join(asbenchDir("sharded", "baseline"), "gen_res.json"), "utf8")).toBe(genBefore)
    } finally {
      fs.writeFileSync(file, original)
    }

    // shards 0/2, 1/2 merged as 3 shards: the case→shard mapping no longer holds
    const wrongN = await cli(["merge", "-e", config("sharded.yaml"), "--shards", "3", "--variant", "baseline"])
    expect(wrongN.code).toBe(1)
    expect(wrongN.stderr).toMatch(/^vetobench: shard 0-of-3 of qwen3\.8-27b@baseline is missing: .*--shard 0\/3\)\n$/)

    // the unsharded experiment's directory holds a run of its own
    fs.mkdirSync(path.join(dir, "runs", "full", "shards"), { recursive: true })
    fs.cpSync(path.join(dir, "runs", "sharded", "shards"), path.join(dir, "runs", "full", "shards"), { recursive: true })
    const over = await cli(["merge", "-e", config("full.yaml"), "--shards", "2"])
    expect(over.code).toBe(1)
    expect(over.stderr).toMatch(/holds an unsharded run .* merge would overwrite it\n$/)
  })

  it("refuses records in the wrong shard, a case in two shards and an incomplete shard, naming each", async () => {
    const merge = async (shards: string) => {
      const r = await cli(["merge", "-e", config("sharded.yaml"), "--shards", shards, "--variant", "baseline"])
      expect(r.code).toBe(1)
      expect(r.stderr.trim().split("\n")).toHaveLength(1)
      return r.stderr
    }
    const route = `${MODEL}@baseline`

    // the 2-shard results under 3-shard names: case 0 (shard 0 of 2) hashes to shard 2 of 3
    for (const i of [0, 1]) fs.cpSync(asbenchDir("sharded", "baseline", `${i}-of-2`), asbenchDir("sharded", "baseline", `${i}-of-3`), { recursive: true })
    try {
      expect(await merge("3")).toContain(`case 0 appears in shard 0-of-3 of ${route} (${path.join(asbenchDir("sharded", "baseline", "0-of-3"), "gen_res.jsonl")}) but belongs to shard 2-of-3; were the shards run with another N?`)
    } finally {
      for (const i of [0, 1]) fs.rmSync(path.join(dir, "runs", "sharded", "shards", `${i}-of-3`), { recursive: true, force: true })
    }

    const shard1 = path.join(asbenchDir("sharded", "baseline", "1-of-2"), "gen_res.jsonl")
    const original = fs.readFileSync(shard1, "utf8")
    try {
      // case 0 (shard 0) copied into shard 1 as well
      const case0 = jsonLines(path.join(asbenchDir("sharded", "baseline", "0-of-2"), "gen_res.jsonl")).find((x) => x.id === 0)
      expect(case0).toBeDefined()
      fs.writeFileSync(shard1, `${original}${JSON.stringify(case0)}\n`)
      expect(await merge("2")).toContain(`case 0 appears in shard 1-of-2 of ${route} (${shard1}) but belongs to shard 0-of-2`)

      // shard 1 without case 4
      fs.writeFileSync(shard1, original.split("\n").filter((l) => l.trim() === "" || (JSON.parse(l) as { id: unknown }).id !== 4).join("\n"))
      expect(await merge("2")).toMatch(
        /^vetobench: shard 1-of-2 of qwen3\.8-27b@baseline is incomplete: 1 of 6 cases missing \(first: 4\) \(run: (npx )?vetobench run .* --variant baseline --shard 1\/2\)\n$/
      )
    } finally {
      fs.writeFileSync(shard1, original)
    }
  })
})

describe("vetobench run --shard on an experiment with ASB", () => {
  // the sharded experiment plus one ASB attack, under its own name (its own run directory)
  beforeAll(() => {
    const sharded = fs.readFileSync(path.join(dir, "configs", "sharded.yaml"), "utf8")
    expect(sharded).toContain("name: sharded\n")
    fs.writeFileSync(
      path.join(dir, "configs", "mixed.yaml"),
      `${sharded.replace("name: sharded\n", "name: mixed\n")}asb:\n  attacks:\n    - {method: direct_prompt_injection, attack_type: naive}\n`
    )
  })

  it("--bench asb with --shard is an error (exit 1, one line); nothing runs", async () => {
    for (const bench of [["--bench", "asb"], ["--bench", "asbench", "--bench", "asb"]]) {
      const r = await cli(["run", "-e", config("mixed.yaml"), ...bench, "--shard", "0/2"])
      expect(r.code, bench.join(" ")).toBe(1)
      expect(r.stderr).toBe("vetobench: --shard applies to Agent-SafetyBench only (drop --bench asb)\n")
      expect(r.stdout).toBe("")
    }
    expect(fs.existsSync(path.join(dir, "runs", "mixed"))).toBe(false)
  })

  it("--shard without --bench: ASB is skipped with one line, the Agent-SafetyBench shard runs (exit 0)", async () => {
    const r = await cli(["run", "-e", config("mixed.yaml"), "--shard", "0/2", "--variant", "baseline"])
    expect(r.stderr).not.toContain("vetobench:")
    expect(r.code).toBe(0)
    const lines = r.stdout.split("\n")
    expect(lines.filter((l) => l.startsWith("== "))).toEqual([
      "== ASB: not sharded (--shard applies to Agent-SafetyBench only)",
      `== Agent-SafetyBench | ${MODEL} | baseline | shard 0-of-2`
    ])
    expect(lines.filter((l) => l.startsWith("[asb]"))).toEqual([])
    expect(lines).toContain(`[asbench] ${MODEL}@baseline: 3 ok, 0 exceeded, 0 error (0 of 3 done before) → ${path.join(asbenchDir("mixed", "baseline", "0-of-2"), "gen_res.json")}`)
    expect(genRes(asbenchDir("mixed", "baseline", "0-of-2")).map((x) => x.id)).toEqual([0, 2, 8])
    // no ASB results and no ASB audit file
    expect(fs.existsSync(path.join(dir, "runs", "mixed", "asb"))).toBe(false)
    expect(fs.readdirSync(path.join(dir, "runs", "audit")).filter((f) => f.startsWith("mixed.asb."))).toEqual([])
  }, 120_000)
})
