/**
 * The Agent-SafetyBench run driver (reference §7.4, §7.8, §7.9, §8.1): one model × variant of an
 * experiment, through veto-proxy, into `<run_dir>/asbench/<slug(model)>/<variant>/`.
 *
 * 1. Health check: `GET <proxy base>/healthz` (5 s); unreachable → one line naming the command
 *    that starts the proxy.
 * 2. Cases: `<paths.asbench_dir>/data/released_data.json` (read as Python's `json.load`, so
 *    `21.0` stays a float), restricted to the split's `split_part` ids when the experiment names a
 *    split, in dataset order.
 * 3. Resume: `gen_res.jsonl` — ids whose last line has a status other than `error` are done.
 * 4. `workers` episodes at once, each on a bridge session of its own; a crashed bridge process
 *    → the case is retried once on a fresh one; any other failure → an `error` record (a case
 *    never stops the run). Each finished record is appended to `gen_res.jsonl` (one write + fsync,
 *    serialised): interrupting loses only the cases in flight, and a re-run neither repeats nor
 *    loses finished ones.
 *    Attempts: every start of a case (the crash retry included) is numbered in the directory's
 *    `attempts.jsonl` before its first request (experiment/attempts.ts); its requests carry
 *    `x-vetobench-attempt` and its record `vetobench.attempt`, so the proxy's records of a start
 *    cut short by a kill are told apart from the final start's.
 *    Stop early: when `stopAfter` (default 20; 0 = never) cases in a row, in the order they finish,
 *    are errors with the same text, the run stops with that error (the cases in flight are
 *    interrupted; every finished one is kept) instead of repeating it for every case left.
 * 5. `gen_res.json`: every done record (earlier ones included) sorted by id, indent 1.
 *
 * The agent speaks the experiment's `agent_safetybench.wire` format to the proxy (chat completions,
 * the Responses API or the Messages API: wire-formats.ts); the records are the same whatever it is.
 *
 * With `shard` (`vetobench run --shard I/N`, experiment/shard.ts): only the shard's cases (after the
 * split filter), into `<run_dir>/shards/<I>-of-<N>/asbench/…` under run id `<runId>.shard-<I>-of-<N>`.
 */
import { Data, Effect, Either } from "effect"
import * as path from "node:path"
import { request } from "undici"
import { errorCode } from "../../../layers/http-errors.js"
import { cliCommand } from "../../shell/hint.js"
import { oneLine } from "../../domain/one-line.js"
import { BridgeError, PythonBridge } from "../../../layers/PythonBridge.js"
import type { Experiment, Variant } from "../../config/experiment.js"
import { asbenchRunDir, runIdFor } from "../../run-layout/paths.js"
import { routeFor } from "../../config/experiment.js"
import { Settings } from "../../config/service.js"
import { pyJsonDumps } from "../../domain/python-json.js"
import { openAttemptLog } from "../../run-layout/attempts.js"
import { Progress } from "../../run-layout/progress.js"
import { selectShard, type Shard, shardExperiment, shardRunId } from "../../run-layout/shard.js"
import { type ClientOptions, makeProxyClient } from "./client.js"
import { asbenchEpisode, type AsbenchCase, type AsbenchRecord, decodeCase, errorRecord, recordStatus, runEpisode } from "./episode.js"
import { readSplit } from "./split.js"
import { agentWireFormat } from "./wire-formats.js"
import { lastById, openAppender, readJsonFile, readJsonl, writeFileAtomic } from "../../run-layout/store.js"
import { GEN_RES_JSON, GEN_RES_JSONL } from "../../run-layout/files.js"
import { redactUrl, redactUrlsIn } from "../../domain/redact-url.js"
import { withDeadlineSignal } from "../../domain/deadline-signal.js"

/** The run could not start or could not keep its results: one line for the user. */
export class AsbenchError extends Data.TaggedError("AsbenchError")<{ readonly message: string }> {}

export interface AsbenchRunOptions {
  /** client tuning (tests: a few ms of back-off) */
  readonly client?: Pick<ClientOptions, "attempts" | "baseDelayMs" | "timeoutMs">
  /** health check deadline, default 5 s */
  readonly healthTimeoutMs?: number
  /** run one shard of the cases (experiment/shard.ts) */
  readonly shard?: Shard
  /** stop after this many consecutive cases failed with the same error; default 20, 0 = never */
  readonly stopAfter?: number
}

export const DEFAULT_STOP_AFTER = 20

export interface AsbenchRunSummary {
  readonly route: string
  readonly runId: string
  readonly dir: string
  /** `gen_res.json` */
  readonly genRes: string
  /** cases selected (split part or all) */
  readonly selected: number
  /** selected cases already done before this pass */
  readonly skipped: number
  /** status counts of the cases run in this pass */
  readonly ran: { readonly ok: number; readonly exceeded: number; readonly error: number }
  /** `gen_res.jsonl`, where every case's record (its error included) is */
  readonly jsonl: string
  /** the case in error with the lowest id in this pass, and its error */
  readonly firstError: { readonly id: number; readonly error: string } | null
}

/** `http://h:p/v1/` → `http://h:p` (trailing `/` and `/v1` dropped). */
export const proxyBase = (proxyUrl: string): string => proxyUrl.replace(/\/+$/, "").replace(/\/v1$/, "")

/** GET `<base>/healthz` within the deadline, else the one-line failure. */
export const checkProxy = (proxyUrl: string, settingsFile: string, timeoutMs = 5000): Effect.Effect<void, AsbenchError> => {
  const base = proxyBase(proxyUrl)
  return Effect.tryPromise({
    try: (outer) =>
      withDeadlineSignal(outer, timeoutMs, async (signal) => {
        const res = await request(`${base}/healthz`, { method: "GET", signal })
        await res.body.dump()
        if (res.statusCode !== 200) throw new Error(`GET /healthz answered HTTP ${res.statusCode}`)
      }),
    catch: (e) => {
      const name = e instanceof Error ? e.name : ""
      const code = errorCode(e) ?? ""
      const msg = e instanceof Error ? e.message : String(e)
      const text = name === "TimeoutError" || name === "AbortError"
        ? `no answer within ${timeoutMs / 1000}s`
        : code !== "" && !msg.includes(code) ? `${code}: ${msg}` : msg
      return new AsbenchError({
        message: `veto-proxy is not reachable at ${redactUrl(base)} (${redactUrlsIn(text, [base])}). Start it with: ${
          settingsFile.startsWith("(") ? cliCommand("proxy") : cliCommand("proxy", "-c", settingsFile)
        }`
      })
    }
  })
}

/** The benchmark's cases in file order, restricted to `ids` when given. */
export const loadCases = (dataFile: string, ids: ReadonlySet<number> | null): Effect.Effect<ReadonlyArray<AsbenchCase>, AsbenchError> =>
  readJsonFile(dataFile).pipe(
    Effect.mapError((e) =>
      new AsbenchError({
        message: e.reason === "not found"
          ? `Agent-SafetyBench data not found: ${dataFile} (set paths.asbench_dir to the benchmark checkout)`
          : e.message
      })
    ),
    Effect.flatMap((raw) => {
      if (!Array.isArray(raw)) return Effect.fail(new AsbenchError({ message: `${dataFile}: expected a JSON list of cases` }))
      const out: Array<AsbenchCase> = []
      for (const [i, item] of raw.entries()) {
        const c = decodeCase(item)
        if (Either.isLeft(c)) return Effect.fail(new AsbenchError({ message: `${dataFile}: case [${i}]: ${c.left}` }))
        if (ids === null || ids.has(c.right.id)) out.push(c.right)
      }
      return Effect.succeed(out)
    })
  )

/** The split's part as an id set, or null when the experiment runs every case. */
export const splitIds = (exp: Experiment): Effect.Effect<ReadonlySet<number> | null, AsbenchError> => {
  const { split, split_part } = exp.agent_safetybench
  if (split === null) return Effect.succeed(null)
  return readSplit(split).pipe(
    Effect.map((s) => new Set(s[split_part])),
    Effect.mapError((e) => new AsbenchError({ message: e.message }))
  )
}

/** Done records of an earlier pass: the last line per id, unless its status is `error`. */
export const resumeFrom = (lines: ReadonlyArray<Record<string, unknown>>): Map<number, Record<string, unknown>> => {
  const done = new Map<number, Record<string, unknown>>()
  for (const [id, r] of lastById(lines)) if (recordStatus(r) !== "error") done.set(id, r)
  return done
}

/** `gen_res.json`: records sorted by id, as eval.py writes it (`json.dump(…, indent=1, ensure_ascii=False)`). */
export const genResJson = (records: Iterable<Record<string, unknown>>): string =>
  pyJsonDumps([...records].sort((a, b) => Number(a.id) - Number(b.id)), { indent: 1, ensureAscii: false })

const crashed = (e: BridgeError) => e.reason === "crashed"


/** Run (or resume) one model × variant. */
/** The names of a case's environments (for `x-vetobench-environments`). */
const environmentNames = (c: AsbenchCase): Array<string> =>
  Array.isArray(c.environments)
    ? c.environments.flatMap((e: unknown) =>
        typeof e === "object" && e !== null && typeof (e as { name?: unknown }).name === "string" ? [(e as { name: string }).name] : []
      )
    : []

export const runAsbench = (
  exp: Experiment,
  model: string,
  variant: Variant,
  opts: AsbenchRunOptions = {}
): Effect.Effect<AsbenchRunSummary, AsbenchError, Settings | PythonBridge | Progress> =>
  Effect.scoped(
    Effect.gen(function*() {
      const settings = yield* Settings
      const bridge = yield* PythonBridge
      const progress = yield* Progress
      const route = routeFor(model, variant)
      const shard = opts.shard
      const baseRunId = runIdFor(exp, "asbench", model, variant)
      const runId = shard === undefined ? baseRunId : shardRunId(baseRunId, shard)
      const meta = { route, runId }

      yield* checkProxy(exp.proxy_url, settings.file, opts.healthTimeoutMs)

      const ids = yield* splitIds(exp)
      const allCases = yield* loadCases(path.join(settings.paths.asbench_dir, "data", "released_data.json"), ids)
      const cases = shard === undefined ? allCases : selectShard(allCases, shard)
      const dir = asbenchRunDir(shard === undefined ? exp : shardExperiment(exp, shard), model, variant)
      const jsonl = path.join(dir, GEN_RES_JSONL)
      const storeError = (e: { readonly message: string }) => new AsbenchError({ message: e.message })
      const done = resumeFrom(yield* Effect.mapError(readJsonl(jsonl), storeError))
      const todo = cases.filter((c) => !done.has(c.id))
      const skipped = cases.length - todo.length

      const texts = yield* bridge.texts.pipe(Effect.mapError((e) => new AsbenchError({ message: e.message })))
      const appender = yield* Effect.mapError(openAppender(jsonl), storeError)
      const attempts = yield* Effect.mapError(openAttemptLog(dir), storeError)
      const tracker = yield* progress.track(`[asbench] ${route}`, todo.length)
      const client = yield* makeProxyClient({
        proxyUrl: exp.proxy_url,
        route,
        runId,
        maxTokens: exp.agent_safetybench.max_tokens,
        wire: agentWireFormat(exp.agent_safetybench.wire),
        ...opts.client,
        onRetry: tracker.note
      })
      yield* tracker.note(`[asbench] ${route}: ${skipped} done, ${todo.length} to run`)

      const ran = { ok: 0, exceeded: 0, error: 0 }
      let firstError: AsbenchRunSummary["firstError"] = null
      const stopAfter = opts.stopAfter ?? DEFAULT_STOP_AFTER
      const streak = { error: "", count: 0 }
      // each start of a case is numbered before it sends anything (a failure to record it stops the run, as a lost record would)
      const episode = (c: AsbenchCase) =>
        attempts.start(String(c.id)).pipe(
          Effect.mapError(storeError),
          Effect.flatMap((attempt) =>
            bridge.withSession((session) =>
              runEpisode({
                case: c,
                systemPrompt: texts.systemPrompt,
                session,
                chat: client(asbenchEpisode(c.id), environmentNames(c), attempt),
                route,
                runId,
                attempt
              })
            )
          )
        )
      // pitfall 30: a case's failure is a value (an error record), never a failure of the forEach
      const runCase = (c: AsbenchCase): Effect.Effect<AsbenchRecord, AsbenchError> =>
        episode(c).pipe(
          Effect.catchIf((e) => e._tag === "BridgeError" && crashed(e), () => episode(c)),
          Effect.catchTag("BridgeError", (e) => Effect.succeed(errorRecord(c, meta, `bridge (${e.reason}): ${e.message}`))),
          Effect.catchAllDefect((d) => Effect.succeed(errorRecord(c, meta, `unexpected failure: ${d instanceof Error ? d.message : String(d)}`)))
        )

      yield* Effect.forEach(
        todo,
        (c) =>
          Effect.gen(function*() {
            const rec = yield* runCase(c)
            yield* Effect.mapError(appender.append(rec), storeError)
            done.set(rec.id, rec)
            ran[rec.vetobench.status] += 1
            if (rec.vetobench.status === "error") {
              const error = rec.vetobench.error ?? "?"
              if (firstError === null || rec.id < firstError.id) firstError = { id: rec.id, error }
              yield* tracker.note(`[asbench] case ${c.id}: error: ${error}`)
              if (streak.count > 0 && streak.error === error) streak.count += 1
              else Object.assign(streak, { error, count: 1 })
            } else streak.count = 0
            yield* tracker.advance(rec.vetobench.status === "error" ? "error" : "ok")
            if (stopAfter > 0 && streak.count >= stopAfter) {
              return yield* new AsbenchError({
                message: `run stopped: ${streak.count} cases of ${route} in a row failed with the same error: ${oneLine(streak.error)}; ` +
                  `details in ${jsonl} (finished cases are kept; --stop-after 0 never stops)`
              })
            }
          }),
        { concurrency: exp.agent_safetybench.workers, discard: true }
      )

      const genRes = path.join(dir, GEN_RES_JSON)
      yield* Effect.mapError(writeFileAtomic(genRes, genResJson(done.values())), storeError)
      return { route, runId, dir, genRes, selected: cases.length, skipped, ran, jsonl, firstError } satisfies AsbenchRunSummary
    })
  )
