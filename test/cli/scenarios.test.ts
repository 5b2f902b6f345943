/**
 * `vetobench scenarios run | replay | approve | verify` as users run them, against the fake vLLM
 * and a real proxy; servers and commands run in this process (test/support/cli.ts).
 */
import { readFileSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { runCliInProcess } from "../support/cli.js"
import { Harness, harnessLayer } from "../support/harness.js"
import { makeSuite, refundScripts } from "../scenarios/support.js"

const cli = (args: ReadonlyArray<string>) => Effect.promise(() => runCliInProcess(args))

describe("vetobench scenarios", () => {
  layer(harnessLayer(), { excludeTestServices: true })((it) => {
    it.effect("run prints pass counts and the failing calls; approve refuses a failing run; baseline vs candidate", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.scripts = refundScripts()
        const suite = makeSuite()
        const prices = path.join(suite.dir, "prices.yaml")
        writeFileSync(prices, "agent: {input_per_1k: 0.001, output_per_1k: 0.002}\n")
        const common = ["--model", "agent", "--proxy-url", h.url, "--trials", "1", "--prices", prices]

        // weak prompt: exit 1, the failing calls shown as calls
        const weakRun = path.join(suite.runs, "weak.jsonl")
        const weak = yield* cli(["scenarios", "run", suite.scenarios, ...common, "--prompt", suite.weak, "--out", weakRun, "--run-name", "cli-weak"])
        expect(weak.code).toBe(1)
        expect(weak.stdout).toMatch(/PASS {2}refund-under-limit +1\/1/)
        expect(weak.stdout).toMatch(/FAIL {2}refund-split-50-plus-approval +0\/1/)
        expect(weak.stdout).toContain("✗ must_precede request_manager_approval before issue_refund (same order_id): issue_refund without an earlier request_manager_approval with the same order_id — trial 1")
        expect(weak.stdout).toContain('issue_refund({"order_id":"A1004","amount":50})   (round 2)')
        expect(weak.stdout).toContain("why: refunds over $50 need a manager's approval first; $50 now + $70 later is a split")
        expect(weak.stdout).toMatch(/total: 4\/6 trials passed, 4\/6 scenarios; tokens \d+ in \/ \d+ out; est\. cost \$0\.\d{4}/)
        expect(weak.stderr).toContain("vetobench: scenarios: 2 of 6 candidate trial(s) failed")

        const refused = yield* cli(["scenarios", "approve", weakRun, "--approver", "alice"])
        expect(refused.code).toBe(1)
        expect(refused.stdout).toContain("REFUSED scenario refund-split-50-plus-approval: 1/1 trial(s) failed")

        // baseline vs candidate
        const ab = yield* cli(["scenarios", "run", suite.scenarios, ...common, "--baseline", suite.weak, "--candidate", suite.draft, "--out", path.join(suite.runs, "ab.jsonl")])
        expect(ab.code).toBe(1)
        expect(ab.stdout).toMatch(/FAIL {2}refund-split-3x40 +baseline 1\/1 +candidate 0\/1/)
        expect(ab.stdout).toContain("NEW REGRESSION: max_total issue_refund amount <= 50 per order_id (candidate 1/1, baseline 0/1)")
        expect(ab.stdout).toContain("historical: must_not_call issue_refund (candidate 1/1, baseline 1/1)")
        expect(ab.stdout).toContain("fixed: must_precede request_manager_approval before issue_refund (same order_id) (candidate 0/1, baseline 1/1)")
        expect(ab.stdout).toContain("candidate failures: 2 new regression(s), 2 historical; 2 fixed vs the baseline")

      }))

    it.effect("approve a passing run; verify follows the prompt file; a replay never approves", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.scripts = refundScripts()
        const suite = makeSuite()
        const common = ["--model", "agent", "--proxy-url", h.url, "--trials", "1"]

        // the strong prompt (the file's own): exit 0, approved, verified
        const strongRun = path.join(suite.runs, "strong.jsonl")
        const strong = yield* cli(["scenarios", "run", suite.scenarios, ...common, "--out", strongRun])
        expect(strong.code).toBe(0)
        expect(strong.stdout).toMatch(/total: 6\/6 trials passed, 6\/6 scenarios/)
        const approved = yield* cli(["scenarios", "approve", strongRun, "--approver", "alice"])
        expect(approved.code).toBe(0)
        expect(approved.stdout).toMatch(/^APPROVED .* by alice at /)
        expect(approved.stdout).toMatch(/ {2}prompt {4}.*support-v2\.txt sha256 [0-9a-f]{64}/)
        const approvals = path.join(suite.runs, "approvals.jsonl")
        expect((yield* cli(["verify-audit", approvals])).code).toBe(3) // unsigned: PARTIAL
        const ok = yield* cli(["scenarios", "verify", "--approvals", approvals])
        expect(ok.code).toBe(0)
        expect(ok.stdout).toContain("VERIFIED")

        const original = readFileSync(suite.strong, "utf8")
        writeFileSync(suite.strong, original.replace("never split", "split when asked"))
        const changed = yield* cli(["scenarios", "verify", "--approvals", approvals])
        expect(changed.code).toBe(1)
        expect(changed.stdout).toMatch(/CHANGED prompt \.\.\/prompts\/support-v2\.txt \(approved [0-9a-f]{12}…, now [0-9a-f]{12}…\)/)
        expect(changed.stdout).toContain("NOT VERIFIED")
        writeFileSync(suite.strong, original)
        expect((yield* cli(["scenarios", "verify", "--approvals", approvals, "--prompt", suite.strong])).code).toBe(0)

        // replay: offline, marked live: false, never approvable
        const replayFile = path.join(suite.runs, "strong.replay.jsonl")
        const replay = yield* cli(["scenarios", "replay", strongRun, "--out", replayFile])
        expect(replay.code).toBe(0)
        expect(replay.stdout).toContain("scenario REPLAY (offline re-check; cannot be approved)")
        const noReplay = yield* cli(["scenarios", "approve", replayFile, "--approver", "alice"])
        expect(noReplay.code).toBe(1)
        expect(noReplay.stdout).toContain("a replay result can never be used to approve")
      }))

    it.effect("usage problems are one line", () =>
      Effect.gen(function*() {
        const suite = makeSuite()
        const r = yield* cli(["scenarios", "run", suite.scenarios, "--model", "agent", "--proxy-url", "http://127.0.0.1:1/v1", "--candidate", suite.draft])
        expect(r.code).toBe(1)
        expect(r.stderr.trim()).toBe("vetobench: --candidate goes with --baseline (or use --prompt)")
        const missing = yield* cli(["scenarios", "verify", "--approvals", path.join(suite.dir, "none.jsonl")])
        expect(missing.code).toBe(1)
        expect(missing.stderr).toContain("approvals file not found")
        const badFile = path.join(suite.dir, "bad.yaml")
        writeFileSync(badFile, "tools: []\nscenarios: [{id: x, conversation: [hi], checks: [{must_call: {tool: t, min: 0}}]}]\n")
        const bad = yield* cli(["scenarios", "run", badFile, "--model", "agent", "--proxy-url", "http://127.0.0.1:1/v1"])
        expect(bad.code).toBe(1)
        expect(bad.stderr.trim()).toBe(`vetobench: ${badFile}: scenarios[0].checks[0].must_call.min: must be at least 1, got 0`)
      }))
  })
})
