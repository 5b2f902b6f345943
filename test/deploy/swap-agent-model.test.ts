/**
 * scripts/swap-agent-model.sh against stub `oc` and `curl` (test/fixtures/deploy/bin, copied to
 * a temporary PATH directory): syntax, --help, usage errors, the happy path (env set, rollout
 * waited for, /v1/models polled with the key on curl's stdin, smoke command printed), a crash
 * loop (last log lines, exit 1), a rejected key and a timeout. No cluster is contacted.
 */
import { spawnSync } from "node:child_process"
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, beforeEach, describe, expect, it } from "vitest"

const SCRIPT = path.resolve("scripts/swap-agent-model.sh")
const STUBS = path.resolve("test/fixtures/deploy/bin")
const KEY = 'k3y-"with"\\odd$chars'

const root = mkdtempSync(path.join(tmpdir(), "vetobench-swap-"))
const bin = path.join(root, "bin")
const state = path.join(root, "state")
const log = path.join(state, "log")
mkdirSync(bin, { recursive: true })
for (const tool of ["oc", "curl"]) {
  copyFileSync(path.join(STUBS, tool), path.join(bin, tool))
  chmodSync(path.join(bin, tool), 0o755)
}
const caBundle = path.join(root, "ca.crt")
writeFileSync(caBundle, "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
afterAll(() => rmSync(root, { recursive: true, force: true }))

beforeEach(() => {
  rmSync(state, { recursive: true, force: true })
  mkdirSync(state, { recursive: true })
  writeFileSync(log, "")
})

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const swap = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}): Result => {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith("VETOBENCH_") && !k.startsWith("SWAP_") && k !== "VLLM_API_KEY") base[k] = v
  }
  const r = spawnSync("bash", [SCRIPT, ...args], {
    env: {
      ...base,
      PATH: `${bin}:${process.env.PATH ?? ""}`,
      STUB_DIR: state,
      STUB_LOG: log,
      STUB_API_KEY: KEY,
      SWAP_POLL_S: "0",
      VETOBENCH_CA_BUNDLE: caBundle, // the stub curl only sees the path
      ...env
    },
    encoding: "utf8",
    timeout: 15_000
  })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** The stubs' log: one entry per call, the tool then its arguments. */
const calls = (): ReadonlyArray<ReadonlyArray<string>> =>
  readFileSync(log, "utf8").split("\n").filter((l) => l.length > 0).map((l) => l.split("\t"))

const KNOWN = ["qwen3-8b-test", "qwen3.8-27b", "muse-glimmer-30b", "gemma4-31b"]

describe("scripts/swap-agent-model.sh", () => {
  it("passes bash -n", () => {
    const r = spawnSync("bash", ["-n", SCRIPT], { encoding: "utf8" })
    expect(r.status, r.stderr).toBe(0)
  })

  const shellcheck = spawnSync("shellcheck", ["--version"]).status === 0
  it.skipIf(!shellcheck)("passes shellcheck (script and stubs; skipped when shellcheck is not installed)", () => {
    const r = spawnSync("shellcheck", [SCRIPT, path.join(STUBS, "oc"), path.join(STUBS, "curl")], { encoding: "utf8" })
    expect(r.status, r.stdout).toBe(0)
  })

  it("--help prints the usage with every known model and exits 0 without calling oc", () => {
    for (const flag of ["--help", "-h"]) {
      const r = swap([flag])
      expect(r.code).toBe(0)
      expect(r.stdout).toContain("Usage: scripts/swap-agent-model.sh <served name>")
      for (const name of KNOWN) expect(r.stdout).toContain(name)
      expect(r.stdout).toContain("Qwen/Qwen3.8-27B, qwen3_xml")
    }
    expect(calls()).toEqual([])
  })

  it("an unknown model, a missing or extra argument, or an unknown option: usage on stderr, exit 2, oc never called", () => {
    for (const args of [["qwen3-9b"], [], ["qwen3-8b-test", "extra"], ["--force"]]) {
      const r = swap(args)
      expect(r.code, args.join(" ")).toBe(2)
      expect(r.stderr).toContain("Usage: scripts/swap-agent-model.sh")
      for (const name of KNOWN) expect(r.stderr).toContain(name)
    }
    expect(swap(["qwen3-9b"]).stderr).toContain("unknown model 'qwen3-9b'")
    expect(calls()).toEqual([])
  })

  it("a model whose Hugging Face id is not decided needs SWAP_MODEL_ID and SWAP_TOOL_PARSER (exit 2)", () => {
    const r = swap(["gemma4-31b"])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("gemma4-31b: the Hugging Face id and tool parser are not decided yet")
    expect(calls()).toEqual([])
  })

  it("happy path: sets the env, waits for the rollout, polls /v1/models with the key on stdin, prints the smoke command", () => {
    const r = swap(["qwen3.8-27b"])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain("agent model: qwen3-8b-test -> qwen3.8-27b (Qwen/Qwen3.8-27B")
    expect(r.stdout.trimEnd().split("\n").at(-1)).toBe("next: npx vetobench smoke --agents qwen3.8-27b")

    const all = calls()
    expect(all).toContainEqual([
      "oc", "-n", "vetobench", "set", "env", "deployment/vllm-agent",
      "MODEL_ID=Qwen/Qwen3.8-27B", "SERVED_NAME=qwen3.8-27b", "TOOL_PARSER=qwen3_xml",
      "EXTRA_ARGS=--language-model-only --reasoning-parser qwen3 --max-num-seqs 64"
    ])
    const rollouts = all.filter((c) => c[0] === "oc" && c.includes("rollout"))
    expect(rollouts.length, "rollout status polled until done").toBe(2)
    const curls = all.filter((c) => c[0] === "curl")
    expect(curls.length, "/v1/models polled until listed").toBe(2)
    for (const c of curls) {
      expect(c.at(-1)).toBe("https://vllm-agent-vetobench.apps.example.test/v1/models")
      expect(c.slice(c.indexOf("--cacert"), c.indexOf("--cacert") + 2)).toEqual(["--cacert", caBundle])
      expect(c.slice(c.indexOf("-H"), c.indexOf("-H") + 2)).toEqual(["-H", "@-"])
    }
    expect(all.filter((c) => c[0] === "curl-stdin-auth-ok")).toHaveLength(2)
    // the key was read from the secret, never passed as an argument and never printed
    expect(all).toContainEqual(["oc", "-n", "vetobench", "get", "secret/vllm-secrets", "-o", "jsonpath={.data.VLLM_API_KEY}"])
    expect(readFileSync(log, "utf8").split("\n").filter((l) => l.includes(KEY))).toEqual([])
    expect(r.stdout + r.stderr).not.toContain(KEY)
    // the set env came before any rollout check
    expect(all.findIndex((c) => c.includes("set"))).toBeLessThan(all.findIndex((c) => c.includes("rollout")))
  })

  it("qwen3-8b-test sets an empty EXTRA_ARGS; VETOBENCH_AGENT_URL and VETOBENCH_NAMESPACE are honoured", () => {
    const r = swap(["qwen3-8b-test"], { VETOBENCH_AGENT_URL: "https://agent.example.test/v1/", VETOBENCH_NAMESPACE: "other" })
    expect(r.code, r.stderr).toBe(0)
    const all = calls()
    expect(all).toContainEqual([
      "oc", "-n", "other", "set", "env", "deployment/vllm-agent",
      "MODEL_ID=Qwen/Qwen3-8B", "SERVED_NAME=qwen3-8b-test", "TOOL_PARSER=hermes", "EXTRA_ARGS="
    ])
    expect(all.filter((c) => c[0] === "curl").map((c) => c.at(-1))).toContain("https://agent.example.test/v1/models")
    expect(all.some((c) => c.includes("route/vllm-agent"))).toBe(false)
  })

  it("SWAP_MODEL_ID, SWAP_TOOL_PARSER and SWAP_EXTRA_ARGS give a not-yet-decided model its values", () => {
    const r = swap(["gemma4-31b"], { SWAP_MODEL_ID: "example/gemma-test", SWAP_TOOL_PARSER: "pythonic", SWAP_EXTRA_ARGS: "--max-num-seqs 32" })
    expect(r.code, r.stderr).toBe(0)
    expect(calls()).toContainEqual([
      "oc", "-n", "vetobench", "set", "env", "deployment/vllm-agent",
      "MODEL_ID=example/gemma-test", "SERVED_NAME=gemma4-31b", "TOOL_PARSER=pythonic", "EXTRA_ARGS=--max-num-seqs 32"
    ])
    expect(r.stdout).toContain("next: npx vetobench smoke --agents gemma4-31b")
  })

  it("a crash loop stops the wait: the pod's last log lines are printed and the exit status is 1", () => {
    const r = swap(["qwen3-8b-test"], { STUB_OC_POD: "2|CrashLoopBackOff|false" })
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("pod vllm-agent-7d9f-x2k: CrashLoopBackOff; its last log lines:")
    expect(r.stderr).toContain("RuntimeError: stub engine failure")
    expect(calls()).toContainEqual(["oc", "-n", "vetobench", "logs", "vllm-agent-7d9f-x2k", "--previous", "--tail=40"])
    expect(calls().some((c) => c[0] === "curl")).toBe(false)
  })

  it("a restarted pod that is not ready counts as crashing too", () => {
    const r = swap(["qwen3-8b-test"], { STUB_OC_POD: "1||false" })
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("restarted 1 time(s)")
  })

  it("a rejected key stops the polling with exit 1", () => {
    const r = swap(["qwen3-8b-test"], { STUB_CURL_FAILS: "99", STUB_CURL_STATUS: "401" })
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("rejected the key")
    expect(calls().filter((c) => c[0] === "curl")).toHaveLength(1)
  })

  it("gives up after SWAP_TIMEOUT_S (exit 1)", () => {
    const rollout = swap(["qwen3-8b-test"], { STUB_OC_ROLLOUT_WAIT: "99", SWAP_TIMEOUT_S: "0" })
    expect(rollout.code).toBe(1)
    expect(rollout.stderr).toContain("timed out after 0s waiting for the rollout")
    const listing = swap(["qwen3-8b-test"], { STUB_OC_ROLLOUT_WAIT: "0", STUB_CURL_FAILS: "99", SWAP_TIMEOUT_S: "0" })
    expect(listing.code).toBe(1)
    expect(listing.stderr).toContain("timed out after 0s: https://vllm-agent-vetobench.apps.example.test/v1/models")
  })
})
