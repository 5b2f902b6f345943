/**
 * The gate: one response in, one ruling per proposed call out. Rules all calls of a choice
 * concurrently (bounded by `proxy.max_concurrent_judges`, deadline `proxy.judge_timeout_s`; a judge
 * that answers in process, `Judge.inProcess`, takes neither slot nor deadline), uses
 * the verdict cache, maps judge failures through `fail_policy`, applies `hold_policy`, and writes
 * exactly one audit record per proposed call — also when the judge failed.
 *
 * The only error that escapes is an audit write failure: a call whose record cannot be written is
 * never let through silently (the proxy answers 503).
 *
 * It reports to `Metrics` (judge durations and failures, tool calls by decision, holds pending) and,
 * with tracing on, makes one `execute_tool` span per call ruled (GenAI attributes, never arguments).
 * With metrics and tracing off neither costs more than a flag test.
 */
import { Cause, Context, Duration, Effect, Exit, Fiber, identity, Layer, Option } from "effect"
import { AuditSink } from "../../layers/AuditSink.js"
import { AuditWriteError } from "../../layers/AuditSink.js"
import { cacheKey, JudgeCache } from "../../layers/JudgeCache.js"
import { Metrics } from "../../layers/Metrics.js"
import { Telemetry } from "../../layers/Telemetry.js"
import type { Judge, JudgeContext, JudgeError } from "../../judges/Judge.js"
import { Judges } from "../../judges/Judges.js"
import { Settings } from "../config/service.js"
import { Holds } from "./Holds.js"
import { defectMessage } from "../domain/defect-message.js"
import { attemptOf } from "../domain/attempt.js"
import type { CallEntry, CallRecord, LoggedArm, Wire } from "../domain/audit-record.js"
import { renderRefusal } from "../domain/refusal.js"
import { checkedToolCallView, type ToolCallView } from "../domain/tool-call.js"
import { boundVerdict, type Decision, decided, failed, type Verdict, verdictProblem } from "../domain/verdict.js"
import { isObject } from "../domain/is-object.js"

/** a judge's verdict on one call, with every layer's verdict (one entry for a simple judge) */
interface Ruled {
  readonly verdict: Verdict
  readonly layers: ReadonlyArray<Verdict>
}

/**
 * One turn's calls to rule, whatever the wire format: the format modules (src/proxy/wire/) read
 * calls out of their answers in the chat-completions call shape (`{id, type, function: {name,
 * arguments}}`) and tools in the chat function-tool shape, and write the rulings back.
 */
export interface GateRequest {
  readonly arm: LoggedArm
  /** the wire format the calls came in (recorded; default `chat`) */
  readonly wire?: Wire
  /** the MCP server the calls are bound for (`wire: mcp`; recorded as `mcp_server`) */
  readonly mcpServer?: string
  readonly judge: string | null
  /** the request's (normalised) tools, for descriptions and schemas */
  readonly tools: ReadonlyArray<unknown> | undefined
  readonly context: JudgeContext
  readonly stream: boolean
}

export interface CallRuling {
  readonly callIndex: number
  readonly call: ToolCallView
  readonly verdict: Verdict | null
  readonly effective: Decision | null
  readonly blocked: boolean
  /** the refusal sentence when blocked */
  readonly refusal: string | null
  /** the seq of the call's audit record in its run's log (what `vetobench audit prove --record` takes) */
  readonly seq?: number
}

export interface GateShape {
  /** rule the calls of one choice and record them; order of the result = call order */
  readonly ruleChoice: (
    req: GateRequest,
    choiceIndex: number,
    toolCalls: ReadonlyArray<unknown>
  ) => Effect.Effect<ReadonlyArray<CallRuling>, AuditWriteError>
}

export class Gate extends Context.Tag("vetobench/Gate")<Gate, GateShape>() {}

const round3 = (x: number) => Math.round(x * 1000) / 1000

export const make = Effect.gen(function* () {
  const settings = yield* Settings
  const judges = yield* Judges
  const cache = yield* JudgeCache
  const audit = yield* AuditSink
  const holds = yield* Holds
  const metrics = yield* Metrics
  const tracing = (yield* Telemetry).tracer !== null
  const p = settings.proxy
  const slots = yield* Effect.makeSemaphore(p.max_concurrent_judges)
  const deadline = Duration.seconds(p.judge_timeout_s)

  const effectiveOf = (v: Verdict): Decision =>
    v.status === "ok" && v.decision !== null ? v.decision : p.fail_policy === "closed" ? "deny" : "allow"

  /** the verdict of a judge that failed: a typed error, a defect, an interruption or an invalid answer */
  const failedFrom = (judge: Judge, cause: Cause.Cause<JudgeError>): Verdict => {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure)) {
      const e = failure.value
      return failed(judge, e.reason === "timeout" ? "timeout" : "error", e.message, {
        ...(e.raw !== undefined ? { raw: e.raw } : {}),
        ...(e.latency_ms !== undefined ? { latency_ms: e.latency_ms } : {}),
        ...(e.usage !== undefined ? { usage: e.usage } : {})
      })
    }
    return failed(judge, "error", `judge failed: ${defectMessage(cause)}`)
  }

  /**
   * Run the judge so that nothing it does escapes as anything but a verdict: a throw before it returns
   * an effect, a defect inside it (a throw in `Effect.sync`, a stack overflow), an interruption of
   * its own, an answer that is not a verdict. `Effect.exit` turns each into an `Exit` without a fiber of
   * its own (an `Effect.interrupt` inside the judge is a failed `Exit` here; test/gate/gate-total.test.ts).
   */
  const guarded = (judge: Judge, call: ToolCallView, ctx: JudgeContext): Effect.Effect<Verdict> =>
    Effect.suspend(() => judge.rule(call, ctx)).pipe(
      Effect.exit,
      Effect.map((exit) => {
        if (Exit.isFailure(exit)) return failedFrom(judge, exit.cause)
        const problem = verdictProblem(exit.value)
        return problem === null ? boundVerdict(exit.value) : failed(judge, "error", `invalid verdict: ${problem}`)
      })
    )

  const keyOf = (judge: Judge, call: ToolCallView): string | null => {
    if (!judge.cacheable || !p.judge_cache) return null
    try {
      return cacheKey(judge.judge, judge.version, call)
    } catch {
      return null // arguments the canonical form refuses are simply not cached
    }
  }

  /** `guarded`, timed into the judge's duration histogram (metrics on) */
  const timed = (judge: Judge, call: ToolCallView, ctx: JudgeContext): Effect.Effect<Verdict> =>
    metrics.enabled
      ? Effect.suspend(() => {
          const started = performance.now()
          return Effect.map(guarded(judge, call, ctx), (v) => {
            metrics.judge(judge.judge).ruled((performance.now() - started) / 1000)
            return v
          })
        })
      : guarded(judge, call, ctx)

  const callJudge = (judge: Judge, call: ToolCallView, ctx: JudgeContext): Effect.Effect<Verdict> => {
    const key = keyOf(judge, call)
    if (key !== null) {
      const hit = cache.get(key)
      if (Option.isSome(hit)) return Effect.succeed({ ...hit.value, cached: true, latency_ms: 0, usage: {} })
    }
    const settle = (v: Verdict): Verdict => {
      if (v.status !== "ok") metrics.judge(judge.judge).failed(v.status)
      if (key !== null) cache.set(key, v)
      return v
    }
    // an in-process judge finishes as soon as it runs: no slot to wait for, no deadline to arm
    if (judge.inProcess === true) return Effect.map(timed(judge, call, ctx), settle)
    // a judge that queues its own work waits in its queue, not in a slot other judges need
    return timed(judge, call, ctx).pipe(
      judge.ownQueue === true ? identity : slots.withPermits(1),
      Effect.timeoutTo({
        duration: deadline,
        onTimeout: () => failed(judge, "timeout", `judge timed out after ${p.judge_timeout_s}s`),
        onSuccess: (v) => v
      }),
      Effect.map(settle)
    )
  }

  /** every judge the ruling may call answers in process (the judge, or each layer of a composite) */
  const inProcess = (judge: Judge): boolean => (judge.layers === undefined ? judge.inProcess === true : judge.layers.every((l) => l.inProcess === true))

  /** one `execute_tool` span around a call's ruling (tracing on): what was ruled and how, never the arguments */
  const tracedRuling = (ruling: Effect.Effect<Ruled>, req: GateRequest, judge: Judge, view: ToolCallView, raw: unknown): Effect.Effect<Ruled> => {
    const name = view.name.length > 200 ? `${view.name.slice(0, 200)}…` : view.name
    const callId = isObject(raw) && typeof raw.id === "string" ? raw.id : null
    return ruling.pipe(
      Effect.tap(({ verdict }) => {
        const effective = effectiveOf(verdict)
        return Effect.annotateCurrentSpan({
          "vetobench.verdict.status": verdict.status,
          "vetobench.decision": effective,
          "vetobench.blocked": req.arm === "enforce" && (effective === "deny" || (effective === "hold" && p.hold_policy !== "allow")),
          "vetobench.cached": verdict.cached,
          "vetobench.verdict.category": verdict.category,
          ...(verdict.kind === "rule" ? { "vetobench.policy.rule": verdict.category } : {}),
          ...(verdict.version !== null ? { "vetobench.judge.version": verdict.version } : {})
        })
      }),
      Effect.withSpan(`execute_tool ${name}`, {
        kind: "internal",
        captureStackTrace: false,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": name,
          ...(callId !== null ? { "gen_ai.tool.call.id": callId } : {}),
          "vetobench.judge": judge.judge,
          "vetobench.judge.kind": judge.kind,
          "vetobench.arm": req.arm
        }
      })
    )
  }

  // A client that disconnects must not cost a record: the ruling runs in its own fiber, which the
  // request's interruption does not reach (it is bounded by the judge deadline), or, with judges
  // that answer in process, uninterruptibly in the request's (see `ruleChoice`).
  /**
   * A composite judge runs its layers in order (each through the cache, a slot and the deadline);
   * the first deny or hold (after fail_policy) decides; `runAll` keeps going to measure every layer.
   * The composite's verdict is the deciding layer's, under the composite's identity.
   */
  const ruleWith = (judge: Judge, call: ToolCallView, ctx: JudgeContext): Effect.Effect<Ruled> => {
    if (judge.layers === undefined) return Effect.map(callJudge(judge, call, ctx), (v) => ({ verdict: v, layers: [v] }))
    const layers = judge.layers
    return Effect.gen(function* () {
      const seen: Array<Verdict> = []
      let deciding: Verdict | undefined
      for (const layer of layers) {
        if (deciding !== undefined && !judge.runAll) break
        const v = yield* callJudge(layer, call, ctx)
        seen.push(v)
        if (deciding === undefined && effectiveOf(v) !== "allow") deciding = v
      }
      const latency_ms = seen.reduce((a, v) => a + v.latency_ms, 0)
      const id = { judge: judge.judge, kind: judge.kind, model: judge.model, version: judge.version }
      const verdict: Verdict =
        deciding === undefined
          ? { ...decided(id, "allow", { reason: `all ${seen.length} layers allowed`, latency_ms }), cached: seen.every((v) => v.cached) }
          : { ...deciding, ...id, reason: `${deciding.judge}: ${deciding.reason}`, latency_ms }
      return { verdict, layers: seen }
    })
  }

  /**
   * Tell stateful judges (`Judge.commit`) what became of each call: once per call per judge, on the
   * judge and on every layer that has the hook, `released` = the call went back to the agent.
   */
  const commitAll = (judge: Judge, views: ReadonlyArray<ToolCallView>, ctx: JudgeContext, released: ReadonlyArray<boolean>): Effect.Effect<void> => {
    const hooks = [...new Set([judge, ...(judge.layers ?? [])])].flatMap((j) => (j.commit !== undefined ? [j.commit] : []))
    if (hooks.length === 0) return Effect.void
    // a hook must not fail; one that does (plugin code) is logged, and the rulings stand
    const once = (commit: NonNullable<Judge["commit"]>, v: ToolCallView, i: number) =>
      Effect.suspend(() => commit(v, ctx, released[i] ?? false)).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning(`judge ${judge.judge}: commit hook failed: ${defectMessage(cause)}`))
      )
    return Effect.forEach(hooks, (commit) => Effect.forEach(views, (v, i) => once(commit, v, i)), { discard: true })
  }

  const unreadable = (judge: Judge, problem: string): Ruled => {
    const v = failed(judge, "error", `the judge cannot read the call: ${problem}`)
    return { verdict: v, layers: [v] }
  }

  // A defect while recording (a bug of ours, never a judge's: those are verdicts) must not let the
  // call through unrecorded: it fails like an audit write, and the proxy answers 503.
  // With judges that answer in process and no hold that may wait for a person, the ruling cannot
  // outlast its records' writes: it runs uninterruptibly in the caller's fiber instead of its own.
  const ruleChoice: GateShape["ruleChoice"] = (req, choiceIndex, toolCalls) =>
    (mayWait(req)
      ? // the caller interrupted (its client left, a shutdown cut it) still ends only once the calls are
        // recorded: it waits for the ruling, which its interruption does not reach
        Effect.flatMap(Effect.forkDaemon(ruleAndRecord(req, choiceIndex, toolCalls)), (ruling) =>
          Effect.onInterrupt(Fiber.join(ruling), () => Fiber.await(ruling))
        )
      : Effect.uninterruptible(ruleAndRecord(req, choiceIndex, toolCalls))
    ).pipe(
      Effect.catchAllDefect((d) =>
        Effect.fail(
          new AuditWriteError({ file: audit.fileFor(req.context.runId), reason: `recording failed: ${defectMessage(Cause.die(d))}`, cause: d })
        )
      )
    )

  /** the ruling may wait: on a judge that is not in process, or on a person (`hold_policy: wait`) */
  const mayWait = (req: GateRequest): boolean => {
    if (req.arm === "enforce" && p.hold_policy === "wait") return true
    const judge = req.judge === null ? undefined : judges.get(req.judge)
    return judge !== undefined && !inProcess(judge)
  }

  /** one call's ruling (a call no judge can read — arguments nested too deep — is ruled as a judge failure) */
  const ruleOne = (req: GateRequest, judge: Judge, checked: ReturnType<typeof checkedToolCallView>, raw: unknown): Effect.Effect<Ruled> => {
    const ruling = checked.problem === null ? ruleWith(judge, checked.view, req.context) : Effect.succeed(unreadable(judge, checked.problem))
    return tracing ? tracedRuling(ruling, req, judge, checked.view, raw) : ruling
  }

  const ruleAndRecord: GateShape["ruleChoice"] = (req, choiceIndex, toolCalls) =>
    Effect.gen(function* () {
      const checked = toolCalls.map((c) => checkedToolCallView(c, req.tools))
      const views = checked.map((c) => c.view)
      const judge = req.judge === null ? undefined : judges.get(req.judge)
      const started = performance.now()
      const verdicts: ReadonlyArray<Ruled | null> =
        judge === undefined
          ? views.map(() => null)
          : checked.length === 1
            ? [yield* ruleOne(req, judge, checked[0]!, toolCalls[0])]
            : yield* Effect.forEach(checked, (c, i) => ruleOne(req, judge, c, toolCalls[i]), { concurrency: "unbounded" })
      const gateMs = judge === undefined ? 0 : round3(performance.now() - started)
      // one record per proposed call, in call order; a held call (hold_policy wait) is withheld
      // (`blocked: true`) until a person decides, recorded by a later `approval` record
      const waitForPerson = req.arm === "enforce" && p.hold_policy === "wait"
      const attempt = attemptOf(req.context.headers)
      const records: Array<CallRecord> = []
      for (let i = 0; i < views.length; i++) {
        const ruled = verdicts[i] ?? null
        const verdict = ruled?.verdict ?? null
        const effective = verdict === null ? null : effectiveOf(verdict)
        const blocked = req.arm === "enforce" && (effective === "deny" || (effective === "hold" && p.hold_policy !== "allow"))
        const raw = toolCalls[i]
        const entry: CallEntry = {
          type: "call",
          run_id: req.context.runId,
          request_id: req.context.requestId,
          episode_id: req.context.episodeId,
          session_id: req.context.sessionId,
          principal: req.context.principal,
          agent_model: req.context.agentModel,
          arm: req.arm,
          judge: req.judge,
          stream: req.stream,
          wire: req.wire ?? "chat",
          ...(attempt !== null ? { attempt } : {}),
          ...(req.mcpServer !== undefined ? { mcp_server: req.mcpServer } : {}),
          choice_index: choiceIndex,
          call_index: i,
          tool_call_id: isObject(raw) && typeof raw.id === "string" ? raw.id : null,
          tool: views[i]!,
          verdict,
          layers: ruled?.layers ?? [],
          effective_decision: effective,
          blocked,
          fail_policy: p.fail_policy,
          approval: effective === "hold" ? "held" : "automatic",
          outcome: null,
          gate_ms: gateMs
        }
        records.push((yield* audit.append(req.context.runId, entry)) as CallRecord)
      }
      const released = waitForPerson && records.some((rec) => rec.effective_decision === "hold")
        ? yield* Effect.forEach(
            records,
            (rec) => (rec.effective_decision === "hold" ? awaitPerson(rec) : Effect.succeed(!rec.blocked)),
            { concurrency: "unbounded" }
          )
        : records.map((rec) => !rec.blocked)
      if (judge !== undefined) yield* commitAll(judge, views, req.context, released)
      return records.map((rec, i): CallRuling => {
        const blocked = !released[i]
        metrics.toolCall(req.arm, req.judge ?? "none", rec.effective_decision ?? "none", blocked)
        return {
          callIndex: i,
          call: rec.tool,
          verdict: rec.verdict,
          effective: rec.effective_decision,
          blocked,
          refusal: blocked
            ? renderRefusal(p.refusal_template, {
                tool_name: rec.tool.name,
                category: rec.verdict?.category ?? "other",
                reason: rec.verdict?.reason ?? ""
              })
            : null,
          seq: rec.seq
        }
      })
    })

  /** Park a held call for a person; record the decision (or the expiry); true when released. */
  const awaitPerson = (rec: CallRecord): Effect.Effect<boolean, AuditWriteError> =>
    Effect.gen(function* () {
      metrics.holdsPending(1)
      const decision = yield* holds.wait(
        {
          id: rec.hash,
          seq: rec.seq,
          run_id: rec.run_id,
          request_id: rec.request_id,
          episode_id: rec.episode_id,
          session_id: rec.session_id,
          principal: rec.principal,
          agent_model: rec.agent_model,
          tool_call_id: rec.tool_call_id,
          tool: rec.tool,
          verdict: rec.verdict
        },
        p.hold_timeout_s
      ).pipe(Effect.ensuring(Effect.sync(() => metrics.holdsPending(-1))))
      const released = decision.outcome === "approved"
      yield* audit.append(rec.run_id, {
        type: "approval",
        run_id: rec.run_id,
        ref: { seq: rec.seq, hash: rec.hash, request_id: rec.request_id, tool_call_id: rec.tool_call_id },
        approval: decision.outcome,
        approver: decision.approver,
        note: decision.note,
        released
      })
      return released
    })

  return { ruleChoice } satisfies GateShape
})

/** call index → refusal sentence, for the blocked calls */
export const blockedNotes = (rulings: ReadonlyArray<CallRuling>): ReadonlyMap<number, string> =>
  new Map(rulings.filter((r) => r.blocked).map((r) => [r.callIndex, r.refusal ?? ""] as const))

export const layer: Layer.Layer<Gate, never, Settings | Judges | JudgeCache | AuditSink | Holds | Metrics | Telemetry> = Layer.effect(Gate, make)
