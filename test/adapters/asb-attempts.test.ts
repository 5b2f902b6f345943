/**
 * ASB counts and faithfulness (issue 20 §1), end to end with the asb-mini stand-in, the real
 * launcher and a real veto-proxy (test harness):
 * - a shard that runs again (its CSV gone, as after a kill) numbers a second start; the audit log
 *   keeps both starts' calls, and the join — in `vetobench run`'s line and in the report summary —
 *   counts the final start's only, with joined / unmatched per arm;
 * - the launcher records the agent's tokens per answer, summed per variant;
 * - tool-call arguments that are not JSON: by default the answer has no tool call and ASB's error
 *   text (as ASB's GPT backend does), scored, not an infra error; `malformed_arguments: empty` keeps
 *   the call with `{}` (the recorded deviation);
 * - `asb.agents` selects agents; an unknown one is one line naming the known ones.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { ATTACK_TOOL_FILES, planShards, readAttackerTools, readTasks, TASKS_FILE } from "../../src/adapters/asb/data.js"
import { attackResults, formatResults, refusalJudge } from "../../src/scoring/asb-attack.js"
import { runAsbAttack, unknownAgents } from "../../src/adapters/asb/run.js"
import { asbRunDir, attackTag, runIdFor } from "../../src/run-layout/paths.js"
import { type AsbAttack, type Experiment, type Variant } from "../../src/config/experiment.js"
import { Settings } from "../../src/config/service.js"
import { readAttempts } from "../../src/run-layout/attempts.js"
import { Progress } from "../../src/run-layout/progress.js"
import { buildSummary } from "../../src/scoring/summary.js"
import { makeCheckout, ROOT, SHARED_ASB_DATA, testPython } from "../fixtures/asb-mini/checkout.js"
import { Harness, harnessLayer, type HarnessShape } from "../support/harness.js"
import { harnessExperiment } from "../support/experiment-file.js"

const py = testPython()
const MODEL = "qwen3.8-27b"
const LAUNCHER = path.join(ROOT, "src/adapters/asb/launch.py")
const DPI: AsbAttack = { method: "direct_prompt_injection", attack_type: "naive" }
const TAG = attackTag(DPI)
const TASKS = Effect.runSync(readTasks(path.join(SHARED_ASB_DATA, TASKS_FILE)))

const work = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-asb-attempts-"))
const CHECKOUT = makeCheckout(work)

const harness = harnessLayer({
  settings: () => ({ paths: { asb_dir: CHECKOUT, asb_python: py.python ?? "python3" } })
})

const experiment = (h: HarnessShape, name: string, asb: ReadonlyArray<string>) =>
  harnessExperiment(h, name, [MODEL], [
    "judges: [slm]",
    "arms: [baseline]",
    "agent_safetybench: {enabled: false}",
    "asb:",
    "  attacks: [{method: direct_prompt_injection, attack_type: naive}]",
    ...asb.map((l) => `  ${l}`)
  ])

const baseline = (exp: Experiment): Variant => exp.variants.find((v) => v.name === "baseline")!

const runAttack = (h: HarnessShape, exp: Experiment) =>
  runAsbAttack(exp, MODEL, baseline(exp), DPI, { pollMs: 50, launcher: LAUNCHER }).pipe(
    Effect.provide(Layer.mergeAll(Progress.Test([]), Settings.layerValue(h.settings), NodeContext.layer))
  )

const results = (h: HarnessShape, exp: Experiment) =>
  attackResults({
    dir: path.join(asbRunDir(exp, MODEL, baseline(exp)), TAG),
    tasks: TASKS,
    auditFile: h.auditFile(runIdFor(exp, "asb", MODEL, baseline(exp))),
    session: TAG,
    refusalTemplate: h.settings.proxy.refusal_template,
    refusalJudge: refusalJudge(h.settings.aliases, exp.models)
  }).pipe(Effect.orDie)

describe("asb.agents", () => {
  it("selects the attacker tools of the named agents; an unknown agent is one line with the known ones", () => {
    const tools = Effect.runSync(readAttackerTools(path.join(SHARED_ASB_DATA, ATTACK_TOOL_FILES.all)))
    const plan = planShards(tools, TASKS, { method: "direct_prompt_injection", toolsPerAgent: 2, taskNum: 1, shards: 3, agents: ["system_admin_agent", "financial_analyst_agent"] })
    const chosen = plan.shards.flatMap((s) => s.tools)
    expect(chosen).toHaveLength(4)
    expect(new Set(chosen.map((t) => t.agent))).toEqual(new Set(["system_admin_agent", "financial_analyst_agent"]))
    expect(unknownAgents(["system_admin_agent"], TASKS, "exp.yaml")).toBeNull()
    expect(unknownAgents(null, TASKS, "exp.yaml")).toBeNull()
    expect(unknownAgents(["system_admn_agent"], TASKS, "exp.yaml")).toMatch(/^asb\.agents in exp\.yaml: ASB has no agent 'system_admn_agent'; did you mean 'system_admin_agent'\? \(agents: .*system_admin_agent.*\)$/)
  })
})

describe.skipIf(py.skip !== null)("ASB attempts, tokens and malformed arguments (asb-mini)", () => {
  layer(harness, { excludeTestServices: true, timeout: 60_000 })("through the launcher", (it) => {
    it.effect("a shard that runs again: both starts logged, the join and the report count the final one", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const exp = yield* experiment(h, "asb-attempts", ["tools_per_agent: 2", "shards: 2"])
        const dir = path.join(asbRunDir(exp, MODEL, baseline(exp)), TAG)
        yield* runAttack(h, exp).pipe(Effect.orDie)
        const runId = runIdFor(exp, "asb", MODEL, baseline(exp))
        const firstCalls = h.records(runId).length
        // shard01 must run again (its rows gone, as after a kill)
        fs.rmSync(path.join(dir, "shard01.csv"))
        const again = yield* runAttack(h, exp).pipe(Effect.orDie)
        expect(again.shards.map((s) => [s.name, s.status])).toEqual([["shard00", "skipped"], ["shard01", "ok"]])

        const starts = yield* readAttempts(dir).pipe(Effect.orDie)
        expect([...starts.values()].map((l) => [l.key, l.attempt, l.malformed_arguments])).toEqual([["shard00", 1, "asb"], ["shard01", 2, "asb"]])
        const records = h.records(runId)
        expect(records.every((r) => r.session_id === TAG && (r.attempt === 1 || r.attempt === 2))).toBe(true)
        const rerun = starts.get("shard01")!.tools
        expect(Array.isArray(rerun)).toBe(true)
        const stale = records.filter((r) => r.attempt === 1 && (rerun as ReadonlyArray<string>).includes(r.tool.name))
        expect(stale.length).toBeGreaterThan(0)
        expect(records.length).toBe(firstCalls + stale.length)

        const r = yield* results(h, exp)
        expect(r.core.n_rows).toBe(20)
        expect(r.audit).toMatchObject({ calls: firstCalls, calls_joined: firstCalls, stale_calls: stale.length, rows_with_calls: 20, unmatched_episodes: [] })
        const line = formatResults(r)
        expect(line).toContain(`audit: ${firstCalls}/${firstCalls} calls joined to 20 of 20 episodes, ${stale.length} calls of earlier shard starts left out`)

        const summary = yield* buildSummary(exp, h.settings, { iterations: 200 })
        const s = summary.asb[MODEL]![TAG]!.baseline!
        expect(s.audit).toEqual({
          calls: firstCalls,
          stale_calls: stale.length,
          calls_joined: firstCalls,
          rows_with_episode: 20,
          rows_with_calls: 20,
          episodes_with_block: 0,
          unmatched_episodes: 0,
          unmatched_examples: []
        })
        // the launcher's tokens: one line per answer of each shard's final start
        expect(s.agent_tokens?.prompt_tokens).toBeGreaterThan(0)
        expect(s.malformed_tool_replies).toBe(0)
        expect(summary.cost.rows.find((c) => c.bench === "asb" && c.variant === "baseline")?.lines[0]).toMatchObject({ role: "agent", name: MODEL })
      }), 180_000)

    it.effect("tool-call arguments that are not JSON: as ASB's backend by default; kept with {} under malformed_arguments: empty", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const asb = yield* experiment(h, "asb-malformed", ["tools_per_agent: 1", "shards: 1"])
        const empty = yield* experiment(h, "asb-malformed-empty", ["tools_per_agent: 1", "shards: 1", "malformed_arguments: empty"])
        h.fake.knobs.malformed = true
        yield* Effect.all([runAttack(h, asb), runAttack(h, empty)]).pipe(Effect.ensuring(Effect.sync(() => h.fake.reset())), Effect.orDie)

        const faithful = yield* results(h, asb)
        expect(faithful.core).toMatchObject({ n_rows: 10, n: 10, infra_errors: 0 })
        expect(faithful.core.asr.k).toBe(0) // the attacker tool never ran: the answer carried no call
        const log = fs.readFileSync(path.join(asbRunDir(asb, MODEL, baseline(asb)), TAG, "shard00.log"), "utf8")
        expect(log).toContain("tool-call arguments that are not JSON: no tool call, as ASB's backend")
        expect(log).toMatch(/tool-call arguments are not JSON \(Expecting .*line 1 column \d+ \(char \d+\)\); the answer has no tool call, as in ASB/)
        expect(faithful.audit.rows).toHaveLength(10)

        const kept = yield* results(h, empty)
        expect(kept.core).toMatchObject({ n_rows: 10, infra_errors: 0 })
        expect(kept.core.asr.k).toBe(10)

        const s1 = (yield* buildSummary(asb, h.settings, { iterations: 200 })).asb[MODEL]![TAG]!.baseline!
        const s2 = yield* buildSummary(empty, h.settings, { iterations: 200 })
        expect(s1.malformed_tool_replies).toBeGreaterThanOrEqual(10)
        expect(s2.asb[MODEL]![TAG]!.baseline!.malformed_tool_replies).toBeGreaterThanOrEqual(10)
        expect(s2.experiment.asb_malformed_arguments).toBe("empty")
      }), 180_000)

    it.effect("an unknown agent in asb.agents stops the attack before anything runs", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const exp = yield* experiment(h, "asb-agents", ["agents: [system_admin_agent, legal_consultant]"])
        const err = yield* Effect.flip(runAttack(h, exp))
        expect(err.message).toMatch(/^asb\.agents in .*exp\.yaml: ASB has no agent 'legal_consultant'; did you mean 'legal_consultant_agent'\?/)
        expect(fs.existsSync(path.join(asbRunDir(exp, MODEL, baseline(exp)), TAG))).toBe(false)
      }), 60_000)
  })
})
