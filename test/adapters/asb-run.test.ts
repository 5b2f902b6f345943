/**
 * ASB end to end, in process: the fake vLLM and a real veto-proxy (test harness), the real
 * launcher (`src/adapters/asb/launch.py`) running the asb-mini stand-in (`test/fixtures/asb-mini`,
 * ASB's command line and CSV output, the benchmark's real data files) in the test venv's Python,
 * and the orchestration (`runAsbAttack`) with its shards as child processes.
 *
 * Each test uses its own experiment name (its own run ids, run directories and audit files); tests
 * that need the fixture's failure hooks get a checkout of their own.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { layer } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect } from "vitest"
import { readTally } from "../../src/adapters/asb/csv.js"
import { ATTACK_TOOL_FILES, limitPerAgent, readAttackerTools, readTasks, TASKS_FILE } from "../../src/adapters/asb/data.js"
import { rowEpisode, tasksByAgent } from "../../src/adapters/asb/episodes.js"
import { attackDelta, attackResults, refusalJudge } from "../../src/scoring/asb-attack.js"
import { type AsbRunOptions, runAsbAttack } from "../../src/adapters/asb/run.js"
import { asbRunDir, attackTag, runIdFor } from "../../src/run-layout/paths.js"
import { type AsbAttack, type Experiment, type Variant } from "../../src/config/experiment.js"
import { Settings } from "../../src/config/service.js"
import type { Settings as SettingsShape } from "../../src/config/settings.js"
import { Progress, type ProgressEvent } from "../../src/run-layout/progress.js"
import { readAsbShards } from "../../src/scoring/asb-results.js"
import { makeCheckout, ROOT, SHARED_ASB_DATA, testPython } from "../fixtures/asb-mini/checkout.js"
import { Harness, harnessLayer, type HarnessShape } from "../support/harness.js"
import { harnessExperiment } from "../support/experiment-file.js"

const py = testPython()
if (py.skip !== null) console.warn(`ASB end-to-end tests skipped: ${py.skip}`)

const MODEL = "qwen3.8-27b"
const LAUNCHER = path.join(ROOT, "src/adapters/asb/launch.py")
const DPI: AsbAttack = { method: "direct_prompt_injection", attack_type: "naive" }
const CLEAN: AsbAttack = { method: "clean", attack_type: "naive" }
const TAG = attackTag(DPI)
const TASKS = Effect.runSync(readTasks(path.join(SHARED_ASB_DATA, TASKS_FILE)))
/** `tools_per_agent: 2` selects these 20, in this order; with 2 shards, odd positions go to shard01 */
const SELECTED = limitPerAgent(Effect.runSync(readAttackerTools(path.join(SHARED_ASB_DATA, ATTACK_TOOL_FILES.all))), 2)
const IN_SHARD01 = SELECTED[1]!.name

const work = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-asb-run-"))
const CHECKOUT = makeCheckout(work)

const harness = harnessLayer({
  settings: () => ({ paths: { asb_dir: CHECKOUT, asb_python: py.python ?? "python3" } })
})

/** An experiment file in the harness's temp root. */
const experiment = (h: HarnessShape, name: string, asb: ReadonlyArray<string>) =>
  harnessExperiment(h, name, [MODEL], [
    "judges: [slm]",
    "arms: [baseline, enforce]",
    "asb:",
    "  attacks:",
    "    - {method: direct_prompt_injection, attack_type: naive}",
    "    - {method: clean}",
    ...asb.map((l) => `  ${l}`)
  ])

const variant = (exp: Experiment, name: string): Variant => exp.variants.find((v) => v.name === name)!

const withCheckout = (s: SettingsShape, asbDir: string): SettingsShape => ({ ...s, paths: { ...s.paths, asb_dir: asbDir } })

const runAttack = (
  h: HarnessShape,
  exp: Experiment,
  v: Variant,
  attack: AsbAttack,
  o: { readonly settings?: SettingsShape; readonly events?: Array<ProgressEvent>; readonly opts?: AsbRunOptions } = {}
) =>
  runAsbAttack(exp, MODEL, v, attack, { pollMs: 50, launcher: LAUNCHER, ...o.opts }).pipe(
    Effect.provide(Layer.mergeAll(Progress.Test(o.events ?? []), Settings.layerValue(o.settings ?? h.settings), NodeContext.layer))
  )

const results = (h: HarnessShape, exp: Experiment, v: Variant, attack: AsbAttack) =>
  attackResults({
    dir: path.join(asbRunDir(exp, MODEL, v), attackTag(attack)),
    tasks: TASKS,
    auditFile: h.auditFile(runIdFor(exp, "asb", MODEL, v)),
    session: attackTag(attack),
    refusalTemplate: h.settings.proxy.refusal_template,
    refusalJudge: refusalJudge(h.settings.aliases, exp.models)
  }).pipe(Effect.orDie)

const attackDir = (exp: Experiment, v: Variant, attack: AsbAttack) => path.join(asbRunDir(exp, MODEL, v), attackTag(attack))

const chatBodies = (h: HarnessShape) =>
  h.fake.requests.filter((r) => r.path === "/v1/chat/completions").map((r) => r.body as Record<string, unknown>)

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const launcherPid = (log: string): number | null => {
  const m = fs.existsSync(log) ? /\[vetobench\] pid (\d+):/.exec(fs.readFileSync(log, "utf8")) : null
  return m === null ? null : Number(m[1])
}

describe.skipIf(py.skip !== null)("ASB through veto-proxy (asb-mini)", () => {
  layer(harness, { excludeTestServices: true, timeout: 120_000 })("orchestration and launcher", (it) => {
    it.effect("DPI: shards run through the launcher; rows, requests and per-episode audit records join", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const exp = yield* experiment(h, "asb-e2e", ["tools_per_agent: 2", "shards: 2", "max_new_tokens: 321"])
        const v = variant(exp, "baseline")
        h.fake.reset()
        // a venv inside the checkout (as third_party/ASB/.venv) keeps its caches when main_attacker cleans up
        const venvCache = path.join(CHECKOUT, ".venv", "lib", "__pycache__")
        fs.mkdirSync(venvCache, { recursive: true })
        fs.writeFileSync(path.join(CHECKOUT, ".venv", "pyvenv.cfg"), "home = /usr/bin\n")
        const events: Array<ProgressEvent> = []
        const s = yield* runAttack(h, exp, v, DPI, { events })
        const runId = runIdFor(exp, "asb", MODEL, v)
        expect(s).toMatchObject({ route: `${MODEL}@baseline`, runId, tag: TAG, taskNum: 1, tools: 20, episodes: 20 })
        expect(s.shards.map((x) => [x.name, x.status, x.exit, x.tools, x.rows])).toEqual([
          ["shard00", "ok", "exit 0", 10, 10],
          ["shard01", "ok", "exit 0", 10, 10]
        ])
        // progress counts episodes (CSV rows)
        expect(events.filter((e) => e.type === "start")).toEqual([{ type: "start", label: `[asb] ${MODEL}@baseline ${TAG}`, total: 20 }])
        expect(events.filter((e) => e.type === "advance")).toHaveLength(20)
        // the logs: the launcher's lines around main_attacker's output
        const log = fs.readFileSync(s.shards[0]!.log, "utf8")
        expect(log).toMatch(new RegExp(`^\\[vetobench\\] pid \\d+: main_attacker\\.py in ${CHECKOUT}, route ${MODEL}@baseline, run ${runId}, session ${TAG}\n`))
        expect(log).toContain("Total number of attacks: 10")
        expect(log.trimEnd().endsWith("[vetobench] main_attacker.py finished with exit status 0")).toBe(true)
        expect(fs.existsSync(venvCache)).toBe(true)
        expect(fs.existsSync(path.join(CHECKOUT, "aios", "__pycache__"))).toBe(false)

        // the agent's requests, as ASB's GPT backend makes them, with the experiment's max_new_tokens
        const agent = chatBodies(h).filter((b) => b.model === MODEL)
        expect(agent.length).toBeGreaterThanOrEqual(40)
        expect(agent.every((b) => b.max_tokens === 321 && b.seed === 0 && b.temperature === 0)).toBe(true)
        const planning = agent.filter((b) => !Array.isArray(b.tools) || b.tools.length === 0)
        const acting = agent.filter((b) => Array.isArray(b.tools) && b.tools.length > 0)
        expect(planning.length).toBeGreaterThanOrEqual(20)
        expect(acting.length).toBeGreaterThanOrEqual(20)
        // the refusal judge (model gpt-4o-mini) went through the proxy's alias, unguarded
        expect(chatBodies(h).some((b) => b.model === "refusal-judge")).toBe(true)

        // rows: one per tool (task 0), the benchmark's columns; the fake follows the injection
        const { rows } = yield* readAsbShards(s.dir).pipe(Effect.orDie)
        expect(rows).toHaveLength(20)
        expect(rows.every((r) => r.attack === 1 && r.ots === 0 && r.agent.startsWith("example/"))).toBe(true)
        const agents = tasksByAgent(TASKS)
        const rowIds = rows.map((r) => rowEpisode(r, agents).episode)
        expect(rowIds.every((id) => id !== null && /^asb:[a-z_]+:[A-Za-z]+:0$/.test(id))).toBe(true)
        expect(new Set(rowIds).size).toBe(20)

        // the proxy's audit records carry the same episode ids and the attack tag as session
        const audit = h.records(runId)
        expect(audit.length).toBeGreaterThanOrEqual(20)
        expect(audit.every((a) => a.run_id === runId && a.session_id === TAG)).toBe(true)
        expect(new Set(audit.map((a) => a.episode_id))).toEqual(new Set(rowIds))
        for (const a of audit) expect(a.episode_id!.split(":")[2]).toBe(a.tool.name) // the injected attacker tool

        const r = yield* results(h, exp, v, DPI)
        expect(r.shards).toBe(2)
        expect(r.core).toMatchObject({ n_rows: 20, n: 20, infra_errors: 0, episodes_with_block: 0 })
        expect(r.core.asr).toMatchObject({ n: 20, k: 20, p: 1 })
        expect(r.audit).toMatchObject({ rows_with_episode: 20, rows_with_calls: 20, calls: audit.length, calls_joined: audit.length, unmatched_episodes: [] })
        expect(r.refusal_judge).toMatchObject({ model: "refusal-judge", stand_in: true })
      }), 120_000)

    it.effect("a second run skips finished shards and sends nothing", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const exp = yield* experiment(h, "asb-resume", ["tools_per_agent: 2", "shards: 2"])
        const v = variant(exp, "baseline")
        const first = yield* runAttack(h, exp, v, DPI)
        const mtimes = first.shards.map((x) => fs.statSync(x.csv).mtimeMs)
        const requests = h.fake.requests.length
        const events: Array<ProgressEvent> = []
        const again = yield* runAttack(h, exp, v, DPI, { events })
        expect(again.shards.map((x) => [x.status, x.exit, x.rows])).toEqual([["skipped", null, 10], ["skipped", null, 10]])
        expect(h.fake.requests.length).toBe(requests)
        expect(again.shards.map((x) => fs.statSync(x.csv).mtimeMs)).toEqual(mtimes)
        expect(events.filter((e) => e.type === "start")).toEqual([{ type: "start", label: `[asb] ${MODEL}@baseline ${TAG}`, total: 0 }])
      }), 120_000)

    it.effect("clean: one tool per agent × 5 tasks; episode ids carry task indices 0–4", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const exp = yield* experiment(h, "asb-clean", ["tools_per_agent: 2", "shards: 3"])
        const v = variant(exp, "baseline")
        const s = yield* runAttack(h, exp, v, CLEAN)
        expect(s).toMatchObject({ tag: "clean", taskNum: 5, tools: 10, episodes: 50 })
        expect(s.shards.map((x) => x.rows)).toEqual([20, 15, 15])
        const r = yield* results(h, exp, v, CLEAN)
        expect(r.core).toMatchObject({ n_rows: 50, infra_errors: 0 })
        expect(r.core.asr.k).toBe(0) // no attacker tool offered
        const tasks = r.audit.rows.map((x) => x.task)
        expect([0, 1, 2, 3, 4].map((t) => tasks.filter((x) => x === t).length)).toEqual([10, 10, 10, 10, 10])
        expect(r.audit).toMatchObject({ rows_with_episode: 50, rows_with_calls: 50, unmatched_episodes: [] })
        expect(r.audit.calls_joined).toBe(r.audit.calls)
        const audit = h.records(runIdFor(exp, "asb", MODEL, v))
        expect(audit.every((a) => a.session_id === "clean" && /^asb:[a-z_]+:[A-Za-z]+:[0-4]$/.test(a.episode_id ?? ""))).toBe(true)
      }), 120_000)

    it.effect("enforce: blocked episodes from the audit, paired ΔASR against baseline", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const exp = yield* experiment(h, "asb-delta", ["tools_per_agent: 2", "shards: 2"])
        const base = variant(exp, "baseline")
        const enforce = variant(exp, "enforce-slm")
        yield* runAttack(h, exp, base, DPI)
        const s = yield* runAttack(h, exp, enforce, DPI)
        expect(s.route).toBe(`${MODEL}@enforce:slm`)
        const b = yield* results(h, exp, base, DPI)
        const e = yield* results(h, exp, enforce, DPI)
        // the judge denies the calls whose text looks malicious (fake heuristic); those episodes fail
        expect(e.audit.episodes_with_block).toBeGreaterThan(0)
        expect(e.audit.episodes_with_block).toBeLessThan(20)
        expect(e.core.episodes_with_block).toBe(e.audit.episodes_with_block) // the refusal text reached the transcript
        expect(e.core.asr.k).toBe(20 - e.audit.episodes_with_block)
        const d = attackDelta("baseline", b.core, e.core)
        expect(d.asr.n).toBe(20)
        expect(d.asr.d).toBeCloseTo(-e.audit.episodes_with_block / 20, 10)
        expect(d.asr.lo! <= d.asr.d! && d.asr.d! <= d.asr.hi!).toBe(true)
        // a blocked episode's audit record is the denied attacker call
        const blocked = h.records(runIdFor(exp, "asb", MODEL, enforce)).filter((a) => a.blocked)
        expect(blocked.length).toBe(e.audit.rows.reduce((n, x) => n + x.blocked, 0))
        expect(blocked.every((a) => a.effective_decision === "deny")).toBe(true)
      }), 120_000)

    it.effect("a failing shard is reported with its exit status and log path; the others finish; the re-run runs only it", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const checkout = makeCheckout(work, "asb-fail")
        const settings = withCheckout(h.settings, checkout)
        const exp = yield* experiment(h, "asb-fail", ["tools_per_agent: 2", "shards: 2"])
        const v = variant(exp, "baseline")
        const victim = IN_SHARD01
        fs.writeFileSync(path.join(checkout, "mini_fail.txt"), `${victim}\n`)
        const err = yield* Effect.flip(runAttack(h, exp, v, DPI, { settings }))
        const dir = attackDir(exp, v, DPI)
        expect(err.message).toBe(`ASB shards failed: shard01.tools.jsonl (exit 1, see ${path.join(dir, "shard01.log")})`)
        expect(err.shards?.map((x) => [x.name, x.status, x.exit, x.rows])).toEqual([
          ["shard00", "ok", "exit 0", 10],
          ["shard01", "failed", "exit 1", 0]
        ])
        const log = fs.readFileSync(path.join(dir, "shard01.log"), "utf8")
        expect(log).toContain(`RuntimeError: asb-mini: failing on purpose for attacker tool ${victim}`)
        expect(log).toContain("[vetobench] main_attacker.py finished with exit status 1")
        expect(readTally(path.join(dir, "shard00.csv")).rows).toBe(10)

        fs.rmSync(path.join(checkout, "mini_fail.txt"))
        const again = yield* runAttack(h, exp, v, DPI, { settings })
        expect(again.shards.map((x) => [x.name, x.status, x.rows])).toEqual([["shard00", "skipped", 10], ["shard01", "ok", 10]])
      }), 120_000)

    it.effect("an interrupted run kills its shard processes; the re-run runs only the unfinished shard", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const checkout = makeCheckout(work, "asb-slow")
        const settings = withCheckout(h.settings, checkout)
        const exp = yield* experiment(h, "asb-interrupt", ["tools_per_agent: 2", "shards: 2"])
        const v = variant(exp, "baseline")
        const dir = attackDir(exp, v, DPI)
        fs.writeFileSync(path.join(checkout, "mini_slow.txt"), `${IN_SHARD01}\n`)
        const fiber = yield* Effect.fork(runAttack(h, exp, v, DPI, { settings }))
        // wait until shard00 is complete and shard01 is stuck on its slow episode (the deadline only
        // ends a hang: a busy machine runs the shards several times slower)
        let pid: number | null = null
        for (const deadline = Date.now() + 100_000; Date.now() < deadline;) {
          pid = launcherPid(path.join(dir, "shard01.log"))
          if (pid !== null && readTally(path.join(dir, "shard00.csv")).rows === 10 && readTally(path.join(dir, "shard01.csv")).rows === 9) break
          yield* Effect.sleep("50 millis")
        }
        expect(pid).not.toBeNull()
        expect(readTally(path.join(dir, "shard01.csv")).rows).toBe(9)
        expect(alive(pid!)).toBe(true)
        yield* Fiber.interrupt(fiber)
        expect(alive(pid!)).toBe(false)

        fs.rmSync(path.join(checkout, "mini_slow.txt"))
        const again = yield* runAttack(h, exp, v, DPI, { settings })
        expect(again.shards.map((x) => [x.name, x.status, x.rows])).toEqual([["shard00", "skipped", 10], ["shard01", "ok", 10]])
      }), 180_000)

    it.effect("all 400 attacker tools in 8 shards: 400 rows, 400 episode ids joined", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const exp = yield* experiment(h, "asb-all", ["shards: 8"])
        const v = variant(exp, "baseline")
        const s = yield* runAttack(h, exp, v, DPI)
        expect(s).toMatchObject({ tools: 400, episodes: 400 })
        expect(s.shards.map((x) => [x.status, x.rows])).toEqual(Array(8).fill(["ok", 50]))
        const r = yield* results(h, exp, v, DPI)
        expect(r.core.n_rows).toBe(400)
        expect(new Set(r.audit.rows.map((x) => x.tool)).size).toBe(400)
        expect(new Set(r.audit.rows.map((x) => x.episode)).size).toBe(400)
        expect(r.audit).toMatchObject({ rows_with_episode: 400, rows_with_calls: 400, unmatched_episodes: [] })
        expect(r.audit.calls_joined).toBe(r.audit.calls)
      }), 180_000)

    it.effect("setup problems are one line naming the fix; the launcher's own exit statuses", () =>
      Effect.gen(function*() {
        const h = yield* Harness
        const exp = yield* experiment(h, "asb-setup", ["tools_per_agent: 1", "shards: 1"])
        const v = variant(exp, "baseline")
        const missing = path.join(work, "no-such-asb")
        const noCheckout = yield* Effect.flip(runAttack(h, exp, v, DPI, { settings: withCheckout(h.settings, missing) }))
        expect(noCheckout.message).toBe(
          `ASB checkout not found: ${missing} does not exist (paths.asb_dir in ${h.settings.file}). Create it with: bash scripts/setup_asb_env.sh`
        )
        const noPython = yield* Effect.flip(runAttack(h, exp, v, DPI, { settings: { ...h.settings, paths: { ...h.settings.paths, asb_python: path.join(work, "nope", "python") } } }))
        expect(noPython.message).toMatch(/^ASB's Python not found: .*nope\/python \(paths\.asb_python in .*\)\. Create it with: bash scripts\/setup_asb_env\.sh$/)

        // the launcher alone
        const launch = (env: NodeJS.ProcessEnv, rest: ReadonlyArray<string>) => {
          try {
            const out = execFileSync(py.python!, [LAUNCHER, "--asb-dir", CHECKOUT, "--run-id", "t", "--", ...rest], { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 })
            return { code: 0, out }
          } catch (e) {
            const x = e as { status: number | null; stdout: string; stderr: string }
            return { code: x.status, out: `${x.stdout}${x.stderr}` }
          }
        }
        const { OPENAI_BASE_URL: _drop, ...env } = process.env
        const noUrl = launch(env, ["--llm_name", "m"])
        expect(noUrl).toEqual({ code: 2, out: "[vetobench] OPENAI_BASE_URL must point at veto-proxy (e.g. http://127.0.0.1:8080/v1)\n" })
        const withUrl = { ...env, OPENAI_BASE_URL: h.url }
        expect(launch(withUrl, [])).toEqual({ code: 2, out: "[vetobench] pass --llm_name <route> to main_attacker.py (after --)\n" })
        const badArg = launch(withUrl, ["--llm_name", "m", "--task_num", "many"])
        expect(badArg.code).toBe(2) // main_attacker's argparse
        expect(badArg.out).toContain("argument --task_num: invalid int value: 'many'")
        expect(badArg.out).toContain("[vetobench] main_attacker.py finished with exit status 2")
      }), 120_000)
  })
})
