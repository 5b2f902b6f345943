/**
 * Provenance in summary.json (issue 20 §1): vetobench version, git commit when available, and
 * hashes of the settings (secrets excluded), the experiment file, each policy and the benchmark data.
 */
import { createHash } from "node:crypto"
import { Effect, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { makeUpstreamSettings } from "../../src/config/settings.js"
import { dataFiles, gitCommitAt, packageRoot, policyFiles, provenanceOf, settingsSha256, withoutSecrets } from "../../src/scoring/provenance.js"
import { buildSummary } from "../../src/scoring/summary.js"
import { VERSION } from "../../src/domain/version.js"
import { fixtureExperiment, fixtureSettings, REPO } from "./fixture.js"

const sha = (s: string | Buffer) => createHash("sha256").update(s).digest("hex")
const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-provenance-"))

describe("the settings hash leaves secrets out", () => {
  const withKey = (key: string, extra: Record<string, unknown> = {}) =>
    fixtureSettings({
      upstreams: [makeUpstreamSettings({ name: "u", base_url: "https://user:pw@vllm.example/v1", api_key: Redacted.make(key) })],
      judges: { guard: { kind: "static", decision: "deny" }, gate: { kind: "toolgate", url: "http://gate", token: key, ...extra } },
      proxy: { operator_token: Redacted.make(key) }
    })

  it("a changed key, token or URL credential keeps the hash; any other change does not", () => {
    expect(settingsSha256(withKey("one"))).toBe(settingsSha256(withKey("two")))
    expect(settingsSha256(withKey("one"))).not.toBe(settingsSha256(withKey("one", { timeout_s: 3 })))
    const shown = JSON.stringify(withoutSecrets(withKey("sekrit")))
    expect(shown).not.toContain("sekrit")
    expect(shown).not.toContain("user:pw")
    expect(shown).toContain("<redacted>")
  })
})

describe("git commit", () => {
  it("read from .git without running git: a loose ref, a packed ref, a detached HEAD; null without a checkout", () => {
    const dir = tmp()
    const id = "0123456789abcdef0123456789abcdef01234567"
    fs.mkdirSync(path.join(dir, ".git", "refs", "heads"), { recursive: true })
    fs.writeFileSync(path.join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
    fs.writeFileSync(path.join(dir, ".git", "refs", "heads", "main"), `${id}\n`)
    expect(gitCommitAt(dir)).toBe(id)
    fs.rmSync(path.join(dir, ".git", "refs", "heads", "main"))
    fs.writeFileSync(path.join(dir, ".git", "packed-refs"), `# pack-refs with: peeled\n${id.replace("0123", "9999")} refs/heads/main\n`)
    expect(gitCommitAt(dir)).toBe(id.replace("0123", "9999"))
    fs.writeFileSync(path.join(dir, ".git", "HEAD"), `${id}\n`)
    expect(gitCommitAt(dir)).toBe(id)
    expect(gitCommitAt(tmp())).toBeNull()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("only of the vetobench package's own folder", () => {
    expect(packageRoot(path.join(REPO, "src", "scoring"))).toBe(REPO)
    const other = tmp()
    fs.writeFileSync(path.join(other, "package.json"), JSON.stringify({ name: "someone-else" }))
    fs.mkdirSync(path.join(other, "node_modules", "x"), { recursive: true })
    expect(packageRoot(path.join(other, "node_modules", "x"))).toBeNull()
  })
})

describe("provenance of a summary", () => {
  it("version, the experiment file's sha256, policies and data files by sha256 (null when unreadable)", () => {
    const dir = tmp()
    const policy = path.join(dir, "policy.json")
    fs.writeFileSync(policy, '{"version": 1}')
    const expFile = path.join(dir, "exp.yaml")
    fs.writeFileSync(expFile, "name: fixture\n")
    const asbenchDir = path.join(dir, "asbench")
    fs.mkdirSync(path.join(asbenchDir, "data"), { recursive: true })
    fs.writeFileSync(path.join(asbenchDir, "data", "released_data.json"), "[]")
    const settings = fixtureSettings({
      judges: { guard: { kind: "static", decision: "deny" }, value: { kind: "rule", policy } },
      paths: { asbench_dir: asbenchDir, asb_dir: path.join(dir, "no-asb") }
    })
    const exp = { ...fixtureExperiment(settings), file: expFile }
    const p = provenanceOf(exp, settings)
    expect(p.vetobench_version).toBe(VERSION)
    expect(p.settings_sha256).toMatch(/^[0-9a-f]{64}$/)
    expect(p.experiment_sha256).toBe(sha("name: fixture\n"))
    expect(p.policies).toEqual({ value: { file: policy, sha256: sha('{"version": 1}') } })
    expect(policyFiles(settings)).toEqual(p.policies)
    expect(p.data).toEqual(dataFiles(exp, settings))
    expect(p.data[0]).toEqual({ bench: "asbench", file: path.join(asbenchDir, "data", "released_data.json"), sha256: sha("[]") })
    expect(p.data.filter((f) => f.bench === "asb").map((f) => [path.basename(f.file), f.sha256])).toEqual([
      ["agent_task.jsonl", null],
      ["all_attack_tools.jsonl", null],
      ["all_normal_tools.jsonl", null]
    ])
    // the checkout that runs the tests is a git checkout: its commit is recorded
    if (fs.existsSync(path.join(REPO, ".git"))) expect(p.git_commit).toMatch(/^[0-9a-f]{40}$/)
    // and it is in summary.json
    const s = Effect.runSync(buildSummary(exp, settings, { iterations: 100 }))
    expect(s.provenance).toEqual(p)
    fs.rmSync(dir, { recursive: true, force: true })
  })
})
