/**
 * The AgentDojo run driver (docs/agentdojo.md): one model × variant of an experiment, through
 * veto-proxy, into `<run_dir>/agentdojo/<slug(model)>/<variant>/` (a shard: below
 * `<run_dir>/shards/<I>-of-<N>/`, run id `….shard-<I>-of-<N>`).
 *
 * 1. Checks: AgentDojo's Python (`agentdojo.python`), the launcher, the run id's grammar, the proxy.
 * 2. Plan: `<python> launch.py plan …` checks the selection against the installed AgentDojo (an
 *    unknown task id is its one-line error) and lists the episodes in a fixed order.
 * 3. Shard: an episode belongs to shard `shardOf(episode id, N)` (run-layout/shard.ts, as the
 *    Agent-SafetyBench cases); the shard's ids go to `episodes.json`.
 * 4. Resume: episodes whose last row in `results.jsonl` has no error (and was run with this
 *    benchmark version and agent: `isDone`) are skipped (the launcher skips them as well); the
 *    rest run in one launcher process (`workers` threads), stdout and stderr appended to
 *    `launch.log` (one `==` line per start). The launcher numbers each episode's start in
 *    `attempts.jsonl`, holds a lock on `results.jsonl` (a second launcher there exits 5) and
 *    stops when this process is gone (`--exit-with-parent`).
 * 5. End: a launcher that exits non-zero, or leaves an episode without a row, fails the run with its
 *    log path; rows with an error are counted (a re-run retries them).
 *
 * Progress: rows of the episodes to run, read from `results.jsonl` every `pollMs`.
 */
import * as Command from "@effect/platform/Command"
import * as CommandExecutor from "@effect/platform/CommandExecutor"
import type { PlatformError } from "@effect/platform/Error"
import { Data, Effect, Either, Fiber, Schedule, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { type AgentdojoExperiment, agentdojoOff, type AgentdojoVariant, selectionJson } from "../../config/agentdojo.js"
import type { Experiment } from "../../config/experiment.js"
import { Settings } from "../../config/service.js"
import { formatRoute, makeRoute } from "../../domain/route.js"
import { runIdProblem } from "../../domain/run-id.js"
import { attemptsFile } from "../../run-layout/attempts.js"
import { agentdojoRunDir, runIdFor } from "../../run-layout/paths.js"
import { Progress } from "../../run-layout/progress.js"
import { inShard, type Shard, shardExperiment, shardRunId } from "../../run-layout/shard.js"
import { checkProxy } from "../agent-safetybench/run.js"
import { EPISODES_JSON, isDone, LAUNCH_LOG, readRows, resultsFile } from "./results.js"

/** The run could not start, or the launcher failed: one line for the user. */
export class AgentdojoError extends Data.TaggedError("AgentdojoError")<{ readonly message: string }> {}

export const SETUP_COMMAND = "bash scripts/setup_agentdojo_env.sh"

export interface AgentdojoRunOptions {
  readonly shard?: Shard
  /** the launcher script; default `src/adapters/agentdojo/launch.py` of this installation */
  readonly launcher?: string
  /** how often `results.jsonl` is read for progress; default 2 s */
  readonly pollMs?: number
  /** health check deadline, default 5 s */
  readonly healthTimeoutMs?: number
}

export interface PlannedEpisode {
  readonly episode: string
  readonly suite: string
  readonly user_task: string
  readonly injection_task: string | null
  readonly attack: string | null
}

export interface AgentdojoRunSummary {
  readonly route: string
  readonly runId: string
  readonly dir: string
  readonly results: string
  readonly log: string
  readonly benchmarkVersion: string
  /** episodes of this run (this shard's, when sharded) */
  readonly episodes: number
  /** done before this start */
  readonly skipped: number
  readonly ran: { readonly ok: number; readonly error: number }
  /** the first episode in error, for the summary line */
  readonly firstError: { readonly episode: string; readonly error: string } | null
}

/** `launch.py` next to this module (sources, tests) or under `src/` (the bundle in `dist/`). */
export const defaultLauncher = (): string => {
  const candidates = [new URL("./launch.py", import.meta.url), new URL("../src/adapters/agentdojo/launch.py", import.meta.url)].map((u) => fileURLToPath(u))
  return candidates.find((c) => fs.existsSync(c)) ?? candidates[0]!
}

/** The section of an experiment (disabled when the file has none). */
export const agentdojoOf = (exp: Experiment, root: string): AgentdojoExperiment => exp.agentdojo ?? agentdojoOff(root)

/**
 * `--name=value`: one argv entry, so a value that starts with `-` (a model or attack model name
 * from the experiment file) is read as the value, never as another option.
 */
export const launcherOption = (name: string, value: string): string => `--${name}=${value}`

/** The launcher's plan options for a section and defense. */
export const planArgs = (ad: AgentdojoExperiment, defense: string | null): ReadonlyArray<string> => {
  const users = selectionJson(ad.user_tasks, ad.suites)
  const injections = selectionJson(ad.injection_tasks, ad.suites)
  const opt = launcherOption
  return [
    opt("suites", ad.suites.join(",")),
    opt("attacks", ad.attacks.join(",")),
    opt("attack-model-name", ad.attack_model_name),
    ...(ad.benchmark_version === null ? [] : [opt("benchmark-version", ad.benchmark_version)]),
    ...(users === null ? [] : [opt("user-tasks", users)]),
    ...(injections === null ? [] : [opt("injection-tasks", injections)]),
    ...(defense === null ? [] : [opt("defense", defense)])
  ]
}

/** An episode id as the launcher makes them: `agentdojo:<suite>:<user_task>:<injection_task|none>:<attack|none>`. */
const EPISODE_ID = /^agentdojo:[a-z_]+:user_task_\d+:(?:injection_task_\d+|none):[a-z0-9_]+$/

/** Why a plan's episode is not one the launcher makes, or null. */
const episodeProblem = (e: unknown): string | null => {
  if (typeof e !== "object" || e === null) return `not an object: ${JSON.stringify(e)?.slice(0, 100)}`
  const o = e as Record<string, unknown>
  if (typeof o.episode !== "string" || !EPISODE_ID.test(o.episode)) return `episode id ${JSON.stringify(o.episode)?.slice(0, 100)}`
  const [, suite, user, injection, attack] = o.episode.split(":")
  const same = o.suite === suite && o.user_task === user && o.injection_task === (injection === "none" ? null : injection) &&
    o.attack === (attack === "none" ? null : attack)
  return same ? null : `${o.episode}: suite, user_task, injection_task or attack differ from the id`
}

const text = (s: Stream.Stream<Uint8Array, PlatformError>) => s.pipe(Stream.decodeText(), Stream.mkString, Effect.orElseSucceed(() => ""))

/** The last non-empty line of a text (the launcher's one-line errors). */
const lastLine = (s: string): string => s.trim().split("\n").filter((l) => l.trim() !== "").pop()?.replace(/^\[vetobench\] /, "") ?? ""

/** `launch.py plan`: the benchmark version and the episodes, or the launcher's one-line error. */
export const planEpisodes = (python: string, launcher: string, args: ReadonlyArray<string>) =>
  Effect.scoped(
    Effect.gen(function*() {
      const executor = yield* CommandExecutor.CommandExecutor
      const cmd = Command.make(python, launcher, "plan", ...args).pipe(Command.stdin(Stream.empty), Command.env({ PYTHONUNBUFFERED: "1" }))
      const proc = yield* executor.start(cmd).pipe(Effect.mapError((e) => new AgentdojoError({ message: `could not start ${python}: ${e.message}` })))
      const [code, out, err] = yield* Effect.all([Effect.orElseSucceed(proc.exitCode, () => -1), text(proc.stdout), text(proc.stderr)], { concurrency: "unbounded" })
      if (code !== 0) {
        const why = lastLine(err) || `exit ${code}`
        return yield* new AgentdojoError({ message: code === 2 ? `agentdojo: ${why}` : `agentdojo: the launcher's plan failed (${why})` })
      }
      const parsed = yield* Effect.try({ try: () => JSON.parse(out) as unknown, catch: () => new AgentdojoError({ message: `agentdojo: the launcher's plan is not JSON: ${out.slice(0, 200)}` }) })
      const plan = parsed as { benchmark_version?: unknown; episodes?: unknown }
      if (typeof plan.benchmark_version !== "string" || !Array.isArray(plan.episodes)) {
        return yield* new AgentdojoError({ message: "agentdojo: the launcher's plan has no benchmark_version or episodes" })
      }
      const episodes: ReadonlyArray<unknown> = plan.episodes
      const bad = episodes.map(episodeProblem).find((p) => p !== null)
      if (bad !== undefined) return yield* new AgentdojoError({ message: `agentdojo: the launcher's plan has an episode that is not AgentDojo's (${bad})` })
      const ids = new Set(episodes.map((e) => (e as PlannedEpisode).episode))
      if (ids.size !== episodes.length) return yield* new AgentdojoError({ message: "agentdojo: the launcher's plan lists an episode twice" })
      return { benchmarkVersion: plan.benchmark_version, episodes: episodes as ReadonlyArray<PlannedEpisode> }
    })
  )

/** Run (or resume) one model × variant (a shard of it with `opts.shard`). */
export const runAgentdojo = (
  exp: Experiment,
  model: string,
  variant: AgentdojoVariant,
  opts: AgentdojoRunOptions = {}
): Effect.Effect<AgentdojoRunSummary, AgentdojoError, Settings | Progress | CommandExecutor.CommandExecutor> =>
  Effect.scoped(
    Effect.gen(function*() {
      const settings = yield* Settings
      const progress = yield* Progress
      const executor = yield* CommandExecutor.CommandExecutor
      const fail = (message: string) => new AgentdojoError({ message })
      const ad = agentdojoOf(exp, settings.root)
      const route = formatRoute(makeRoute(model, variant.arm, variant.judge))
      if (typeof route !== "string") return yield* fail(`agentdojo: ${model} cannot be routed as ${variant.name}: ${route.message}`)
      const baseRunId = runIdFor(exp, "agentdojo", model, variant)
      const runId = opts.shard === undefined ? baseRunId : shardRunId(baseRunId, opts.shard)
      const problem = runIdProblem(runId)
      if (problem !== null) return yield* fail(`agentdojo: ${model} with variant ${variant.name} gives a run id outside the grammar: ${problem}`)
      const dir = agentdojoRunDir(opts.shard === undefined ? exp : shardExperiment(exp, opts.shard), model, variant)
      const launcher = opts.launcher ?? defaultLauncher()
      if (!fs.existsSync(ad.python)) {
        return yield* fail(`AgentDojo's Python not found: ${ad.python} (agentdojo.python in ${exp.file}). Create it with: ${SETUP_COMMAND}`)
      }
      if (!fs.existsSync(launcher)) return yield* fail(`vetobench's AgentDojo launcher is missing: ${launcher}`)
      yield* checkProxy(exp.proxy_url, settings.file, opts.healthTimeoutMs).pipe(Effect.mapError((e) => fail(e.message)))

      const args = planArgs(ad, variant.defense)
      const plan = yield* planEpisodes(ad.python, launcher, args)
      const mine = opts.shard === undefined ? plan.episodes : plan.episodes.filter((e) => inShard(e.episode, opts.shard!))
      const ids = mine.map((e) => e.episode)

      const results = resultsFile(dir)
      const log = path.join(dir, LAUNCH_LOG)
      const episodesFile = path.join(dir, EPISODES_JSON)
      yield* Effect.try({
        try: () => {
          fs.mkdirSync(dir, { recursive: true })
          fs.writeFileSync(episodesFile, `${JSON.stringify(ids)}\n`)
        },
        catch: (e) => fail(`cannot write ${episodesFile}: ${String(e)}`)
      })
      const storeError = (e: { readonly message: string }) => fail(e.message)
      const before = yield* Effect.mapError(readRows(results), storeError)
      const todo = new Set(ids.filter((id) => !isDone(before.get(id), { benchmark_version: plan.benchmarkVersion, oracle: ad.oracle })))
      const label = `[agentdojo] ${route}${variant.defense === null ? "" : ` ${variant.defense}`}`
      const tracker = yield* progress.track(label, todo.size)
      yield* tracker.note(`${label}: ${ids.length} episodes (${plan.benchmarkVersion}); ${ids.length - todo.size} done, ${todo.size} to run`)

      if (todo.size > 0) {
        // progress: rows of the episodes to run (the attempt of this start only: later rows than `before`)
        const seen = new Set<string>()
        const poll = Effect.flatMap(Effect.orElseSucceed(readRows(results), () => new Map()), (rows) =>
          Effect.forEach([...rows.values()], (r) => {
            if (!todo.has(r.episode) || seen.has(r.episode) || before.get(r.episode)?.attempt === r.attempt) return Effect.void
            seen.add(r.episode)
            return tracker.advance(r.error === null ? "ok" : "error")
          }, { discard: true }))
        const poller = yield* poll.pipe(Effect.repeat(Schedule.spaced(opts.pollMs ?? 2000)), Effect.forkScoped)

        // appended, one header per start: a second runner on the same directory (refused by the
        // launcher's lock) must not wipe the log of the one that runs
        // the launcher's log: a file that cannot be opened or written is the run's failure, one line naming it
        const cannotWrite = (e: unknown) => fail(`agentdojo: cannot write ${log}: ${e instanceof Error ? e.message : String(e)}`)
        const fd = yield* Effect.acquireRelease(Effect.try({ try: () => fs.openSync(log, "a"), catch: cannotWrite }), (fd) => Effect.sync(() => fs.closeSync(fd)))
        yield* Effect.try({
          try: () => fs.writeSync(fd, `== ${new Date().toISOString()} ${route}${variant.defense === null ? "" : ` ${variant.defense}`}: ${todo.size} episodes to run\n`),
          catch: cannotWrite
        })
        const opt = launcherOption
        const runArgs = [
          "run", ...args,
          opt("base-url", exp.proxy_url.replace(/\/+$/, "")),
          opt("route", route),
          opt("model", model),
          opt("variant", variant.name),
          opt("arm", variant.arm),
          ...(variant.judge === null ? [] : [opt("judge", variant.judge)]),
          opt("run-id", runId),
          opt("results", path.resolve(results)),
          opt("attempts", path.resolve(attemptsFile(dir))),
          opt("episodes", path.resolve(episodesFile)),
          opt("workers", String(ad.workers)),
          opt("timeout", String(ad.timeout_s)),
          // the launcher stops when this process is gone (killed): no orphan writes rows under a later run
          opt("exit-with-parent", String(process.pid)),
          ...(ad.oracle ? ["--oracle"] : [])
        ]
        const cmd = Command.make(ad.python, launcher, ...runArgs).pipe(
          Command.env({ OPENAI_API_KEY: "vetobench", PYTHONUNBUFFERED: "1" }),
          Command.stdin(Stream.empty)
        )
        const toLog = (s: Stream.Stream<Uint8Array, PlatformError>) =>
          // a log write that fails mid-run (disk full) loses log lines, not the run: its rows are the results
          Stream.runForEach(s, (chunk) => Effect.try(() => void fs.writeSync(fd, chunk)).pipe(Effect.ignore)).pipe(Effect.ignore)
        const proc = yield* executor.start(cmd).pipe(Effect.mapError((e) => fail(`could not start ${ad.python}: ${e.message}`)))
        const [code] = yield* Effect.all([Effect.either(proc.exitCode), toLog(proc.stdout), toLog(proc.stderr)], { concurrency: "unbounded" })
        yield* poll
        yield* Fiber.interrupt(poller)
        if (Either.isLeft(code)) return yield* fail(`agentdojo: the launcher for ${route} ended abnormally (${code.left.message}); see ${log}`)
        if (code.right !== 0) {
          const why = code.right === 4
            ? "stopped after repeated identical errors"
            : code.right === 5
            ? `another launcher is running on ${results}`
            : `exit ${code.right}`
          return yield* fail(`agentdojo: the launcher for ${route} failed (${why}); see ${log}`)
        }
      }

      const after = yield* Effect.mapError(readRows(results), storeError)
      const missing = ids.filter((id) => !after.has(id))
      if (missing.length > 0) {
        return yield* fail(`agentdojo: ${missing.length} of ${ids.length} episodes of ${route} have no row (first: ${missing[0]}); see ${log}`)
      }
      const ran = [...todo].map((id) => after.get(id)!)
      const errors = ran.filter((r) => r.error !== null)
      const first = errors[0]
      return {
        route,
        runId,
        dir,
        results,
        log,
        benchmarkVersion: plan.benchmarkVersion,
        episodes: ids.length,
        skipped: ids.length - todo.size,
        ran: { ok: ran.length - errors.length, error: errors.length },
        firstError: first === undefined ? null : { episode: first.episode, error: first.error ?? "" }
      } satisfies AgentdojoRunSummary
    })
  )
