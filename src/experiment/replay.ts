/**
 * Offline judge replay (reference §7.6, §9.3): every judge over the tool calls logged in an
 * experiment's **baseline** run — what a shadow arm would have recorded, without re-running agents.
 *
 * Source: the baseline run's audit file, `<audit_dir>/<auditFileName(runIdFor(exp, bench, model,
 * baseline))>` — or, for an Agent-SafetyBench run merged from shards, every shard's audit file
 * listed in its `shards.json` (`auditFilesFor`) — its call records with `arm: baseline`, each
 * episode's calls from its final attempt only (scoring/current.ts: a killed and resumed run logs
 * the calls of the cases in flight twice). Output, one line per ruling, appended in batches of up
 * to 1,000 lines (one write + fsync each, serialised; the last batch also when the replay fails or
 * is interrupted) to `<run_dir>/replay/<bench>.<slug(model)>.jsonl`:
 * `{judge, source_hash, run_id, episode_id, agent_model, tool, verdict, layers, effective_decision}`.
 *
 * Ruling: through the gate exactly as the proxy rules a shadow call — layered judges layer by
 * layer, the judge deadline, the concurrency bound (`proxy.max_concurrent_judges`) and
 * `fail_policy` — with the verdict cache off and the gate's audit records captured in memory (the
 * replay line is written instead). Judge failures are verdicts (status error/timeout), never a
 * failure of the replay. Request headers are not in the audit, so judges that read headers see none.
 *
 * Resume, by (judge, source record hash): a pair whose last line has status ok (the verdict and
 * every layer) is done; error/timeout lines are retried on the next replay and the later line wins
 * (the Python reference never retried errors). Stateful judges (trajectory rules) see an episode's
 * calls in order: calls of one episode are ruled one after another (episodes concurrently, bounded),
 * and a done pair is still reported to the judge's `commit` hook as released, so its state is the
 * same as in an uninterrupted replay.
 */
import { Context, Data, Effect, Layer } from "effect"
import { AuditSink } from "../../layers/AuditSink.js"
import type { Judge, JudgeConfigError, JudgeContext } from "../../judges/Judge.js"
import { Judges } from "../../judges/Judges.js"
import type { JudgeKindPlugin } from "../../judges/registry.js"
import { openAppender } from "../run-layout/store.js"
import { auditFilesFor, baselineVariant, type Bench, missingShardAuditFiles, replayFile } from "../run-layout/paths.js"
import type { Experiment } from "../config/experiment.js"
import type { Settings as SettingsShape } from "../config/settings.js"
import { AUDIT_SCHEMA, type AuditRecord, type CallEntry, type CallRecord, GENESIS_HASH } from "../domain/audit-record.js"
import type { ToolCallView } from "../domain/tool-call.js"
import { type Decision, failed, type Verdict } from "../domain/verdict.js"
import { Gate } from "../gate/Gate.js"
import { gateLayer } from "../gate/live.js"
import { currentCalls, loadFinalAttempts } from "../scoring/current.js"
import { readCallRecordsOf } from "../scoring/files.js"
import { isFinal, latestReplay, pairKey, readReplayLines, type ReplayLine } from "../scoring/judge-eval.js"
import { Progress } from "../run-layout/progress.js"

export class ReplayError extends Data.TaggedError("ReplayError")<{ readonly message: string }> {}

/** a read or append failure of the store (its message already names the file) */
const storeError = (e: { readonly message: string }) => new ReplayError({ message: e.message })

const reasonOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** replay lines written per append (one write + fsync) */
const APPEND_BATCH = 1_000

// ---------------------------------------------------------------------------------------------
// the replay gate: the proxy's gate with the cache off and its records captured

export interface Ruled {
  readonly verdict: Verdict
  readonly layers: ReadonlyArray<Verdict>
  readonly effective_decision: Decision | null
}

export interface ReplayGateShape {
  /** the judge names that exist */
  readonly judges: ReadonlyArray<string>
  /** rule one logged call with `judge`, as the proxy rules a shadow call */
  readonly rule: (judge: string, record: CallRecord) => Effect.Effect<Ruled>
  /** the judge (or a layer of it) keeps state across calls (`Judge.commit`) */
  readonly stateful: (judge: string) => boolean
  /** tell a stateful judge about a call ruled in an earlier replay (released, as in shadow) */
  readonly replayed: (judge: string, record: CallRecord) => Effect.Effect<void>
}

export class ReplayGate extends Context.Tag("vetobench/ReplayGate")<ReplayGate, ReplayGateShape>() {}

const contextOf = (judge: string, r: CallRecord): JudgeContext => ({
  requestId: `replay:${judge}:${r.hash}`,
  runId: r.run_id,
  episodeId: r.episode_id,
  sessionId: r.session_id,
  principal: r.principal,
  agentModel: r.agent_model,
  headers: {}
})

/**
 * The OpenAI tool call and request tool that give back `r.tool` through the gate's `toolCallView`:
 * an object or array (as parsed from the log) is passed as it is, anything else is re-serialised as
 * JSON (a raw string and a scalar both read back the same).
 */
export const rawCallOf = (tool: ToolCallView, id: string | null) => ({
  call: { id: id ?? "replay", type: "function", function: { name: tool.name, arguments: argumentsOf(tool.arguments) } },
  tools: [
    {
      type: "function",
      function: { name: tool.name, description: tool.description, ...(tool.parameters !== null ? { parameters: tool.parameters } : {}) }
    }
  ]
})

const argumentsOf = (args: unknown): unknown =>
  typeof args === "object" && args !== null ? args : JSON.stringify(args ?? {}) ?? "{}"

/** the time on the records the capture sink hands back (never written; the replay line has none) */
const CAPTURED_TS = new Date(0).toISOString()

/**
 * An audit sink that keeps the gate's call entries by request id, for `rule` to take. The records
 * it hands back to the gate are never written anywhere: seq 0, the genesis hash, a fixed time.
 */
const captureSink = (captured: Map<string, CallEntry>): Layer.Layer<AuditSink> =>
  Layer.succeed(AuditSink, {
    append: (_runId, entry) =>
      Effect.sync(() => {
        if (entry.type === "call") captured.set(entry.request_id, entry)
        const sealed: AuditRecord = { ...entry, schema: AUDIT_SCHEMA, seq: 0, ts: CAPTURED_TS, prev_hash: GENESIS_HASH, hash: GENESIS_HASH }
        return sealed
      }),
    fileFor: () => "memory:replay",
    checkpoint: () => Effect.void
  })

const hooksOf = (j: Judge) => [...new Set([j, ...(j.layers ?? [])])].flatMap((x) => (x.commit !== undefined ? [x.commit] : []))

/** The replay gate from settings (cache forced off) and judge kinds. */
export const replayGateLayer = <R>(settings: SettingsShape, plugins: ReadonlyArray<JudgeKindPlugin<R>>) => {
  const captured = new Map<string, CallEntry>()
  const noCache: SettingsShape = { ...settings, proxy: { ...settings.proxy, judge_cache: false } }
  const make = Effect.gen(function*() {
    const gate = yield* Gate
    const judges = yield* Judges
    const rule = (judge: string, r: CallRecord): Effect.Effect<Ruled> => {
      const ctx = contextOf(judge, r)
      const { call, tools } = rawCallOf(r.tool, r.tool_call_id)
      return gate.ruleChoice({ arm: "shadow", judge, tools, context: ctx, stream: false }, 0, [call]).pipe(
        Effect.flatMap((rulings) =>
          Effect.sync((): Ruled => {
            const entry = captured.get(ctx.requestId)
            captured.delete(ctx.requestId)
            const verdict = entry?.verdict ?? rulings[0]?.verdict ?? null
            if (verdict === null) return failure(judge, "the gate returned no verdict")
            return { verdict, layers: entry?.layers ?? [verdict], effective_decision: entry?.effective_decision ?? rulings[0]?.effective ?? null }
          })
        ),
        // pitfall 30: a judge that dies is a verdict with status error, never the end of the replay
        Effect.catchAllCause((cause) =>
          Effect.sync(() => {
            captured.delete(ctx.requestId)
            return failure(judge, `replay failed: ${reasonOf(cause)}`)
          })
        )
      )
    }
    const failure = (judge: string, reason: string): Ruled => {
      const j = judges.get(judge)
      const id = { judge, kind: j?.kind ?? "unknown", model: j?.model ?? null, version: j?.version ?? null }
      const verdict = failed(id, "error", reason)
      return { verdict, layers: [verdict], effective_decision: settings.proxy.fail_policy === "closed" ? "deny" : "allow" }
    }
    return {
      judges: judges.names,
      rule,
      stateful: (judge) => {
        const j = judges.get(judge)
        return j !== undefined && hooksOf(j).length > 0
      },
      replayed: (judge, r) => {
        const j = judges.get(judge)
        if (j === undefined) return Effect.void
        const ctx = contextOf(judge, r)
        return Effect.forEach(hooksOf(j), (commit) => commit(r.tool, ctx, true), { discard: true })
      }
    } satisfies ReplayGateShape
  })
  return Layer.effect(ReplayGate, make).pipe(
    Layer.provide(gateLayer({ settings: noCache, plugins, audit: captureSink(captured) })),
    // the capture sink never fails; only a judge's config can
    Layer.catchAll((e) => (e._tag === "JudgeConfigError" ? Layer.fail<JudgeConfigError>(e) : Layer.die(e)))
  )
}

// ---------------------------------------------------------------------------------------------
// the replay of one model × bench

export interface ReplayOptions {
  /** episodes ruled at once (default 32); the gate bounds concurrent judge calls on top */
  readonly concurrency?: number
}

export interface ReplaySummary {
  readonly bench: Bench
  readonly model: string
  /** the baseline audit files read (one per shard for a merged sharded run) */
  readonly sources: ReadonlyArray<string>
  /** the replay file written */
  readonly file: string
  readonly judges: ReadonlyArray<string>
  /** baseline call records (of each episode's final attempt) */
  readonly calls: number
  /** (judge, call) pairs done in an earlier replay */
  readonly skipped: number
  /** pairs ruled now */
  readonly ruled: number
  /** of those, verdicts with status error/timeout (retried next time) */
  readonly errors: number
  /** the first of those (in the order they were ruled): judge, episode and the verdict's reason */
  readonly firstError: { readonly judge: string; readonly episode: string | null; readonly status: string; readonly reason: string } | null
}

/**
 * Replay `judges` over the baseline calls of one model × bench; null (nothing done) when the
 * experiment has no baseline arm or it has no audit file.
 */
export const replayBench = (
  exp: Experiment,
  auditDir: string,
  bench: Bench,
  model: string,
  judges: ReadonlyArray<string>,
  opts: ReplayOptions = {}
): Effect.Effect<ReplaySummary | null, ReplayError, ReplayGate | Progress> =>
  Effect.scoped(
    Effect.gen(function*() {
      const gate = yield* ReplayGate
      const progress = yield* Progress
      const baseline = baselineVariant(exp)
      if (baseline === undefined) return null
      const lost = missingShardAuditFiles(exp, bench, model, baseline)
      if (lost.length > 0) {
        return yield* new ReplayError({
          message: `${bench} ${model} / ${baseline.name}: shards.json lists audit file${lost.length > 1 ? "s" : ""} that ${lost.length > 1 ? "are" : "is"} not there (${lost.join(", ")}): their calls would be missing from the replay; restore ${lost.length > 1 ? "them" : "it"}, or re-run those shards and merge again`
        })
      }
      const sources = auditFilesFor(auditDir, exp, bench, model, baseline)
      if (sources.length === 0) return null
      const unknown = judges.filter((j) => !gate.judges.includes(j))
      if (unknown.length > 0) {
        return yield* new ReplayError({ message: `unknown judge${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")} (configured: ${gate.judges.join(", ")})` })
      }
      const logged = (yield* Effect.mapError(readCallRecordsOf(sources), storeError)).filter((r) => r.arm === "baseline")
      const records = currentCalls(logged, yield* loadFinalAttempts(exp, bench, model, baseline))
      const file = replayFile(exp, bench, model)
      const existing = yield* Effect.mapError(readReplayLines(file), storeError)
      const latest = latestReplay(existing)
      const done = (judge: string, r: CallRecord) => {
        const l = latest.get(pairKey(judge, r.hash))
        return l !== undefined && isFinal(l)
      }

      // one unit of work = one judge × one episode (session + episode id; calls in log order); calls
      // without an episode stand alone
      const episodes = new Map<string, Array<CallRecord>>()
      for (const [i, r] of records.entries()) {
        const key = r.episode_id === null ? `\u0001${i}` : `${r.session_id ?? ""}\u0000${r.episode_id}`
        let list = episodes.get(key)
        if (list === undefined) episodes.set(key, (list = []))
        list.push(r)
      }
      const units = judges.flatMap((judge) => [...episodes.values()].map((calls) => ({ judge, calls })))
      const todo = units.reduce((a, u) => a + u.calls.filter((r) => !done(u.judge, r)).length, 0)
      const skipped = records.length * judges.length - todo

      // lines are appended in batches (one write + fsync per batch, serialised); a crash loses at
      // most the unwritten batch, whose pairs the next replay rules again
      const appender = yield* openAppender(file, (batch: ReadonlyArray<ReplayLine>) => batch.map((l) => `${JSON.stringify(l)}\n`).join("")).pipe(
        Effect.mapError(storeError)
      )
      let pending: Array<ReplayLine> = []
      const flush = Effect.suspend(() => {
        if (pending.length === 0) return Effect.void
        const batch = pending
        pending = []
        return Effect.mapError(appender.append(batch), storeError)
      })
      const tracker = yield* progress.track(`[replay] ${bench} ${model}`, todo)
      yield* tracker.note(`[replay] ${bench} | ${model}: ${records.length} baseline calls × ${judges.length} judges: ${skipped} done before, ${todo} to rule`)
      let ruled = 0, errors = 0
      let firstError: ReplaySummary["firstError"] = null

      const runUnit = (u: { readonly judge: string; readonly calls: ReadonlyArray<CallRecord> }) =>
        Effect.forEach(
          u.calls,
          (r) =>
            done(u.judge, r)
              ? gate.stateful(u.judge) ? gate.replayed(u.judge, r) : Effect.void
              : Effect.gen(function*() {
                const got = yield* gate.rule(u.judge, r)
                pending.push({
                  judge: u.judge,
                  source_hash: r.hash,
                  run_id: r.run_id,
                  episode_id: r.episode_id,
                  agent_model: r.agent_model,
                  tool: r.tool,
                  verdict: got.verdict,
                  layers: got.layers,
                  effective_decision: got.effective_decision
                })
                if (pending.length >= APPEND_BATCH) yield* flush
                const ok = isFinal(got)
                ruled += 1
                if (!ok) errors += 1
                if (!ok && firstError === null) {
                  const bad = [got.verdict, ...got.layers].find((v) => v.status !== "ok") ?? got.verdict
                  firstError = { judge: bad.judge !== u.judge ? `${u.judge} (layer ${bad.judge})` : u.judge, episode: r.episode_id, status: bad.status, reason: bad.reason }
                }
                yield* tracker.advance(ok ? "ok" : "error")
              }),
          { discard: true }
        )
      // a replay that fails or is interrupted still keeps what it ruled; on success a failed last
      // write fails the replay
      yield* Effect.forEach(units, runUnit, { concurrency: opts.concurrency ?? 32, discard: true }).pipe(
        Effect.onError(() => Effect.ignore(flush))
      )
      yield* flush
      return { bench, model, sources, file, judges, calls: records.length, skipped, ruled, errors, firstError } satisfies ReplaySummary
    })
  )
