/**
 * The ASB run driver (reference §7.4, §7.8, §7.9, §8.2): one model × variant × attack of an
 * experiment, through veto-proxy, into `<run_dir>/asb/<slug(model)>/<variant>/<attack tag>/`.
 *
 * 1. Checks: the checkout (`paths.asb_dir/main_attacker.py`), ASB's Python (`paths.asb_python`),
 *    the proxy (`GET /healthz`); each failure is one line naming the fix.
 * 2. Shards: the attack's tools (`data.ts`: tool set, the experiment's `asb.agents` — an agent the
 *    tasks file does not have is an error naming the known ones —, clean = one per agent,
 *    `tools_per_agent`), round-robin into `shardNN.tools.jsonl` (rewritten every time).
 * 3. Resume: a shard whose `shardNN.csv` already has its rows (`csv.ts`) is skipped; any other
 *    shard runs again from the start.
 * 4. Every shard to run is a child process in a scope of its own, at most `concurrency` at once
 *    (default: all). Its start is numbered first in the directory's `attempts.jsonl` (key
 *    `shardNN`, with its tools and `malformed_arguments`; experiment/attempts.ts), and its CSV and
 *    `shardNN.usage.jsonl` are removed: `<asb_python> launch.py --asb-dir <asb> --run-id <run id>
 *    --session <tag> --attempt <n> --usage-file <abs shardNN.usage.jsonl> --malformed-arguments
 *    <asb.malformed_arguments> -- --llm_name <route> --attack_type <type> --attacker_tools_path <abs shard file> --res_file
 *    <abs shardNN.csv> --database <abs dir/no_memory_db> --task_num <n> --max_new_tokens <m>
 *    <method flags>`, cwd the checkout, env `OPENAI_BASE_URL=<proxy_url>`, `OPENAI_API_KEY=vetobench`,
 *    `PYTHONUNBUFFERED=1`; stdout and stderr go to `shardNN.log`. The `--database` path never
 *    exists, which keeps ASB's memory store off. Interrupting the run kills the children (their
 *    process groups); finished shards stay finished.
 * 5. A shard that exits non-zero (or exits 0 without all its rows) does not stop the others: when
 *    all have ended, the run fails with every failed shard, its exit status and its log path.
 *
 * Progress: episodes (CSV rows) of the shards being run, read from the CSVs every `pollMs`.
 */
import * as Command from "@effect/platform/Command"
import * as CommandExecutor from "@effect/platform/CommandExecutor"
import type { PlatformError } from "@effect/platform/Error"
import { Data, Effect, Either, Schedule, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { asbRunDir, attackTag, runIdFor } from "../../run-layout/paths.js"
import { type AsbAttack, type Experiment, routeFor, type Variant } from "../../config/experiment.js"
import { Settings } from "../../config/service.js"
import { openAttemptLog } from "../../run-layout/attempts.js"
import { Progress, type ProgressTracker } from "../../run-layout/progress.js"
import { didYouMeanClause } from "../../domain/suggest.js"
import { checkProxy } from "../agent-safetybench/run.js"
import { readTally, shardDone } from "./csv.js"
import {
  type AgentTasks,
  attackToolsFile,
  type AttackerTool,
  episodesPerTool,
  methodFlags,
  planShards,
  readAttackerTools,
  readTasks,
  type ShardPlan,
  shardToolsText,
  TASKS_FILE
} from "./data.js"

/** The run could not start, or shards failed: one line for the user. */
export class AsbError extends Data.TaggedError("AsbError")<{
  readonly message: string
  /** the shards as they ended, when the failure is theirs */
  readonly shards?: ReadonlyArray<ShardResult>
}> {}

export const SETUP_COMMAND = "bash scripts/setup_asb_env.sh"

export interface AsbRunOptions {
  /** health check deadline, default 5 s */
  readonly healthTimeoutMs?: number
  /** how often the shard CSVs are read for progress; default 5 s */
  readonly pollMs?: number
  /** at most this many shard processes at once; default all shards */
  readonly concurrency?: number
  /** the launcher script; default `src/adapters/asb/launch.py` of this installation */
  readonly launcher?: string
}

export interface ShardResult {
  /** `shardNN` */
  readonly name: string
  readonly toolsFile: string
  readonly csv: string
  readonly log: string
  readonly tools: number
  /** rows main_attacker writes for this shard */
  readonly episodes: number
  /** complete rows in the CSV when the shard ended (or was found done) */
  readonly rows: number
  readonly status: "skipped" | "ok" | "failed"
  /** how the process ended (`exit 0`, `exit 1`, `signal SIGKILL`, `could not start: …`); null when skipped */
  readonly exit: string | null
}

export interface AsbAttackSummary {
  readonly route: string
  readonly runId: string
  readonly tag: string
  readonly dir: string
  /** tasks per agent per tool (clean: at least 5) */
  readonly taskNum: number
  /** attacker tools selected */
  readonly tools: number
  /** episodes of all shards */
  readonly episodes: number
  readonly shards: ReadonlyArray<ShardResult>
}

/** `launch.py` next to this module (sources, tests) or under `src/` (the bundle in `dist/`). */
export const defaultLauncher = (): string => {
  const candidates = [new URL("./launch.py", import.meta.url), new URL("../src/adapters/asb/launch.py", import.meta.url)].map((u) => fileURLToPath(u))
  return candidates.find((c) => fs.existsSync(c)) ?? candidates[0]!
}

/** The checkout and ASB's Python exist; else one line naming the setting and the setup script. */
export const checkAsbSetup = (asbDir: string, python: string, settingsFile: string): Effect.Effect<void, AsbError> =>
  Effect.suspend(() => {
    const script = path.join(asbDir, "main_attacker.py")
    if (!fs.existsSync(script)) {
      const what = fs.existsSync(asbDir) ? `${asbDir} has no main_attacker.py` : `${asbDir} does not exist`
      return Effect.fail(new AsbError({ message: `ASB checkout not found: ${what} (paths.asb_dir in ${settingsFile}). Create it with: ${SETUP_COMMAND}` }))
    }
    if (!fs.existsSync(python)) {
      return Effect.fail(new AsbError({ message: `ASB's Python not found: ${python} (paths.asb_python in ${settingsFile}). Create it with: ${SETUP_COMMAND}` }))
    }
    return Effect.void
  })

/** `main_attacker.py`'s arguments for one shard. */
export const mainAttackerArgs = (o: {
  readonly route: string
  readonly attack: AsbAttack
  readonly toolsFile: string
  readonly csv: string
  readonly database: string
  readonly taskNum: number
  readonly maxNewTokens: number
}): ReadonlyArray<string> => {
  const flags = methodFlags(o.attack.method)
  if ("error" in flags) throw new Error(flags.error)
  return [
    "--llm_name", o.route,
    "--attack_type", o.attack.attack_type,
    "--attacker_tools_path", path.resolve(o.toolsFile),
    "--res_file", path.resolve(o.csv),
    "--database", path.resolve(o.database),
    "--task_num", String(o.taskNum),
    "--max_new_tokens", String(o.maxNewTokens),
    ...flags
  ]
}

const signalOf = (e: PlatformError): string => {
  const m = /signal:?\s*(SIG[A-Z0-9]+)/.exec(e.message)
  return m?.[1] !== undefined ? `signal ${m[1]}` : `ended abnormally: ${e.message}`
}

interface ShardFiles {
  readonly plan: ShardPlan
  readonly toolsFile: string
  readonly csv: string
  readonly log: string
  /** the launcher's tokens per agent answer */
  readonly usage: string
}

/** `shardNN.usage.jsonl`: one line per agent answer (launch.py `--usage-file`). */
export const usageFileOf = (dir: string, shard: string): string => path.join(dir, `${shard}.usage.jsonl`)

/** The experiment's `asb.agents` that the tasks file does not know, as one line; null when all are known. */
export const unknownAgents = (wanted: ReadonlyArray<string> | null, tasks: ReadonlyArray<AgentTasks>, file: string): string | null => {
  if (wanted === null) return null
  const known = tasks.map((a) => a.name).filter((n) => n !== "")
  const bad = wanted.find((a) => !known.includes(a))
  if (bad === undefined) return null
  const clause = didYouMeanClause(bad, known)
  return `asb.agents in ${file}: ASB has no agent '${bad}'${clause === "" ? "" : `; ${clause}`} (agents: ${known.join(", ")})`
}

/** Run (or resume) one attack of one model × variant. */
export const runAsbAttack = (
  exp: Experiment,
  model: string,
  variant: Variant,
  attack: AsbAttack,
  opts: AsbRunOptions = {}
): Effect.Effect<AsbAttackSummary, AsbError, Settings | Progress | CommandExecutor.CommandExecutor> =>
  Effect.scoped(
    Effect.gen(function*() {
      const settings = yield* Settings
      const progress = yield* Progress
      const executor = yield* CommandExecutor.CommandExecutor
      const asbDir = path.resolve(settings.paths.asb_dir)
      const python = settings.paths.asb_python
      const route = routeFor(model, variant)
      const runId = runIdFor(exp, "asb", model, variant)
      const tag = attackTag(attack)
      const dir = path.join(asbRunDir(exp, model, variant), tag)
      const launcher = opts.launcher ?? defaultLauncher()
      const fail = (message: string) => new AsbError({ message })

      const flags = methodFlags(attack.method)
      if ("error" in flags) return yield* fail(flags.error)
      yield* checkAsbSetup(asbDir, python, settings.file)
      if (!fs.existsSync(launcher)) return yield* fail(`vetobench's ASB launcher is missing: ${launcher}`)
      yield* checkProxy(exp.proxy_url, settings.file, opts.healthTimeoutMs).pipe(Effect.mapError((e) => fail(e.message)))

      const dataError = (e: { readonly message: string }) => fail(`ASB data: ${e.message}`)
      const tools: ReadonlyArray<AttackerTool> = yield* readAttackerTools(attackToolsFile(asbDir, exp.asb.attack_tools)).pipe(Effect.mapError(dataError))
      const tasks: ReadonlyArray<AgentTasks> = yield* readTasks(path.join(asbDir, "data", TASKS_FILE)).pipe(Effect.mapError(dataError))
      const badAgent = unknownAgents(exp.asb.agents, tasks, exp.file)
      if (badAgent !== null) return yield* fail(badAgent)
      const { taskNum, shards } = planShards(tools, tasks, {
        method: attack.method,
        toolsPerAgent: exp.asb.tools_per_agent,
        taskNum: exp.asb.task_num,
        shards: exp.asb.shards,
        agents: exp.asb.agents
      })
      if (shards.length === 0) return yield* fail(`no ASB attacker tools selected from ${attackToolsFile(asbDir, exp.asb.attack_tools)}`)
      const perTool = episodesPerTool(tasks, taskNum)

      yield* Effect.try({ try: () => fs.mkdirSync(dir, { recursive: true }), catch: (e) => fail(`cannot create ${dir}: ${String(e)}`) })
      const attempts = yield* openAttemptLog(dir).pipe(Effect.mapError((e) => fail(e.message)))
      const files: ReadonlyArray<ShardFiles> = shards.map((plan) => ({
        plan,
        toolsFile: path.join(dir, `${plan.name}.tools.jsonl`),
        csv: path.join(dir, `${plan.name}.csv`),
        log: path.join(dir, `${plan.name}.log`),
        usage: usageFileOf(dir, plan.name)
      }))
      for (const f of files) {
        yield* Effect.try({ try: () => fs.writeFileSync(f.toolsFile, shardToolsText(f.plan.tools)), catch: (e) => fail(`cannot write ${f.toolsFile}: ${String(e)}`) })
      }

      const result = (f: ShardFiles, status: ShardResult["status"], exit: string | null, rows: number): ShardResult => ({
        name: f.plan.name,
        toolsFile: f.toolsFile,
        csv: f.csv,
        log: f.log,
        tools: f.plan.tools.length,
        episodes: f.plan.episodes,
        rows,
        status,
        exit
      })
      const done: Array<ShardResult> = []
      const todo: Array<ShardFiles> = []
      for (const f of files) {
        const tally = readTally(f.csv)
        if (shardDone(tally, f.plan.tools, perTool)) done.push(result(f, "skipped", null, tally.rows))
        else todo.push(f)
      }

      const label = `[asb] ${route} ${tag}`
      const tracker = yield* progress.track(label, todo.reduce((n, f) => n + f.plan.episodes, 0))
      yield* tracker.note(
        `${label}: ${shards.length} shards, ${files.reduce((n, f) => n + f.plan.episodes, 0)} episodes; ${done.length} shards done, ${todo.length} to run`
      )

      // progress: complete rows of the running shards' CSVs
      const counted = new Map<string, { csv: string; rows: number }>()
      const advanceTo = (t: ProgressTracker, name: string, rows: number) =>
        Effect.suspend(() => {
          const c = counted.get(name)
          if (c === undefined || rows <= c.rows) return Effect.void
          const n = rows - c.rows
          c.rows = rows
          return Effect.repeatN(t.advance("ok"), n - 1)
        })
      yield* Effect.suspend(() => Effect.forEach([...counted], ([name, c]) => advanceTo(tracker, name, readTally(c.csv).rows), { discard: true })).pipe(
        Effect.repeat(Schedule.spaced(opts.pollMs ?? 5000)),
        Effect.forkScoped
      )

      const env = { OPENAI_BASE_URL: exp.proxy_url.replace(/\/+$/, ""), OPENAI_API_KEY: "vetobench", PYTHONUNBUFFERED: "1" }
      const runShard = (f: ShardFiles): Effect.Effect<ShardResult> =>
        Effect.scoped(
          Effect.gen(function*() {
            fs.rmSync(f.csv, { force: true }) // main_attacker starts it afresh; progress counts from 0
            fs.rmSync(f.usage, { force: true }) // tokens of this start only, as the CSV's rows
            counted.set(f.plan.name, { csv: f.csv, rows: 0 })
            const fd = yield* Effect.acquireRelease(Effect.sync(() => fs.openSync(f.log, "w")), (fd) => Effect.sync(() => fs.closeSync(fd)))
            const numbered = yield* Effect.either(
              attempts.start(f.plan.name, { tools: f.plan.tools.map((t) => t.name), malformed_arguments: exp.asb.malformed_arguments })
            )
            if (Either.isLeft(numbered)) {
              const why = `could not number the attempt: ${numbered.left.message}`
              fs.writeSync(fd, `${why}\n`)
              return result(f, "failed", why, 0)
            }
            const args = mainAttackerArgs({
              route,
              attack,
              toolsFile: f.toolsFile,
              csv: f.csv,
              database: path.join(dir, "no_memory_db"),
              taskNum,
              maxNewTokens: exp.asb.max_new_tokens
            })
            const launch = [
              "--asb-dir", asbDir,
              "--run-id", runId,
              "--session", tag,
              "--attempt", String(numbered.right),
              "--usage-file", path.resolve(f.usage),
              "--malformed-arguments", exp.asb.malformed_arguments
            ]
            const cmd = Command.make(python, launcher, ...launch, "--", ...args).pipe(
              Command.workingDirectory(asbDir),
              Command.env(env),
              Command.stdin(Stream.empty)
            )
            const toLog = (s: Stream.Stream<Uint8Array, PlatformError>) =>
              Stream.runForEach(s, (chunk) => Effect.sync(() => void fs.writeSync(fd, chunk))).pipe(Effect.ignore)
            const started = yield* Effect.either(executor.start(cmd))
            if (Either.isLeft(started)) {
              const why = `could not start ${python}: ${started.left.message}`
              fs.writeSync(fd, `${why}\n`)
              return result(f, "failed", why, 0)
            }
            const proc = started.right
            const [code] = yield* Effect.all([Effect.either(proc.exitCode), toLog(proc.stdout), toLog(proc.stderr)], { concurrency: "unbounded" })
            const tally = readTally(f.csv)
            yield* advanceTo(tracker, f.plan.name, tally.rows)
            counted.delete(f.plan.name)
            const complete = shardDone(tally, f.plan.tools, perTool)
            if (Either.isLeft(code)) return result(f, "failed", signalOf(code.left), tally.rows)
            if (code.right !== 0) return result(f, "failed", `exit ${code.right}`, tally.rows)
            if (!complete) return result(f, "failed", `exit 0 with ${tally.rows} of ${f.plan.episodes} episodes`, tally.rows)
            return result(f, "ok", "exit 0", tally.rows)
          })
        ).pipe(
          Effect.tap((r) =>
            tracker.note(
              r.status === "ok"
                ? `${label}: ${r.name} done, ${r.rows}/${r.episodes} episodes`
                : `${label}: ${r.name} failed (${r.exit}) after ${r.rows}/${r.episodes} episodes, see ${r.log}`
            )
          )
        )

      // pitfall 30: a shard's failure is a value, so the other shards run to their end
      const ran = yield* Effect.forEach(todo, runShard, { concurrency: Math.max(1, opts.concurrency ?? todo.length) })
      const byName = new Map([...done, ...ran].map((r) => [r.name, r] as const))
      const all = files.map((f) => byName.get(f.plan.name)!)
      const failed = all.filter((r) => r.status === "failed")
      if (failed.length > 0) {
        return yield* Effect.fail(
          new AsbError({
            message: `ASB shards failed: ${failed.map((r) => `${path.basename(r.toolsFile)} (${r.exit}, see ${r.log})`).join("; ")}`,
            shards: all
          })
        )
      }
      return {
        route,
        runId,
        tag,
        dir,
        taskNum,
        tools: files.reduce((n, f) => n + f.plan.tools.length, 0),
        episodes: files.reduce((n, f) => n + f.plan.episodes, 0),
        shards: all
      } satisfies AsbAttackSummary
    })
  )
