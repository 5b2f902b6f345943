/**
 * The result screen: tool results the agent is about to read are rated by `screening.judge` before
 * the agent sees them (issue 18 §2; docs/judges.md "Result screening").
 *
 * - On the HTTP routes the results of an incoming request (`tool` messages, `function_call_output`
 *   items, `tool_result` blocks; src/proxy/wire/tool-results.ts) are screened after the body is read
 *   and before it is forwarded. On MCP the server's `tools/call` result is screened before the client
 *   gets it (the MCP gate calls {@link screenResults}).
 * - The arm is the route's: `enforce` replaces a flagged result by `screening.notice`; `shadow` only
 *   records; `baseline` (and un-gated routes) screen nothing.
 * - Which results: a conversation resends its old results every turn, so only the fresh ones (after
 *   the last model turn, `ToolResult.fresh`) are rated and recorded — one `type: "result"` audit
 *   record each, written before the request goes on. In enforce, every rated result's word is
 *   remembered (by episode, call id and text; the last {@link SCREEN_MEMORY} of them, in this
 *   process) so that when the client resends it on a later turn a flagged one is replaced again and
 *   a clean one passes, without a new judge call or record. The memory is only a cache: a resent
 *   result it has no word on (after a restart, on another replica, or evicted) is rated again and
 *   recorded with `resent: true`, so no resent result reaches the model unrated in enforce.
 * - A judge that fails (error, timeout after `proxy.judge_timeout_s`, defect) gives a failed verdict;
 *   `proxy.fail_policy` decides: `closed` flags the result, `open` lets it through. Both are recorded.
 * - An audit write failure is the only error: the request is then not forwarded (503, as for calls).
 */
import { createHash } from "node:crypto"
import { Cause, Clock, Context, Duration, Effect, Layer, Option } from "effect"
import { defectMessage } from "../domain/defect-message.js"
import { AuditSink, type AuditWriteError } from "../../layers/AuditSink.js"
import { type Judge, JudgeConfigError, type JudgeContext } from "../../judges/Judge.js"
import { Judges } from "../../judges/Judges.js"
import { Settings } from "../config/service.js"
import type { LoggedArm, ResultEntry, Wire } from "../domain/audit-record.js"
import { attemptOf } from "../domain/attempt.js"
import { failed, type Verdict } from "../domain/verdict.js"
import type { ToolResult } from "./results.js"

/** How many rated results an enforcing proxy remembers (flagged or not), to rule them again without a judge call when resent. */
export const SCREEN_MEMORY = 10_000

/** What the screen needs to know about the request whose results it rates. */
export interface ScreenRequest {
  readonly arm: LoggedArm
  readonly wire: Wire
  readonly context: JudgeContext
  /** the MCP server that gave the results (`wire: mcp`) */
  readonly mcpServer?: string
}

/** The screen's word on one result. */
export interface ResultRuling {
  readonly result: ToolResult
  readonly flagged: boolean
  /** the caller must put `notice` in place of the result */
  readonly replaced: boolean
  /** the text the agent reads instead (when replaced) */
  readonly notice: string | null
  /** the judge's verdict; null for a resent result replaced from memory (no new record) */
  readonly verdict: Verdict | null
  /** the seq of the result's audit record (fresh results) */
  readonly seq?: number
}

export interface ScreeningShape {
  /** the screening judge's name; null = the screen is off */
  readonly judge: string | null
  /**
   * Screen a request's results: rate and record the fresh ones, recall the resent flagged ones
   * (enforce). One ruling per fresh result and per result to replace, in the order given.
   */
  readonly screenResults: (req: ScreenRequest, results: ReadonlyArray<ToolResult>) => Effect.Effect<ReadonlyArray<ResultRuling>, AuditWriteError>
}

export class Screening extends Context.Tag("vetobench/Screening")<Screening, ScreeningShape>() {
  /** the screen the settings describe; a `screening.judge` that is unknown or cannot rate text fails start-up */
  static layer: Layer.Layer<Screening, JudgeConfigError, Settings | Judges | AuditSink> = Layer.effect(
    Screening,
    Effect.gen(function* () {
      const settings = yield* Settings
      const judges = yield* Judges
      const audit = yield* AuditSink
      const name = settings.screening.judge
      if (name === null) return off
      const judge = judges.get(name)
      if (judge === undefined) {
        return yield* new JudgeConfigError({ judge: name, path: "", reason: `is named by screening.judge but not configured (configured: ${judges.names.join(", ")})` })
      }
      if (judge.screen === undefined) {
        return yield* new JudgeConfigError({
          judge: name,
          path: "",
          reason: `is named by screening.judge but its kind (${judge.kind}) cannot rate text: use a classifier judge, or llm_json with results_prompt`
        })
      }
      return makeScreening({ settings, judge, screen: judge.screen, audit })
    })
  )

  /** no screen (embedders and tests that build the route without one) */
  static layerOff: Layer.Layer<Screening> = Layer.sync(Screening, () => off)
}

const off: ScreeningShape = { judge: null, screenResults: () => Effect.succeed([]) }

/**
 * Screen results through the {@link Screening} in context: what the MCP gate calls with a server's
 * `tools/call` result (as one fresh {@link ToolResult}; `position.index` 0, `callId` the JSON-RPC
 * request's call id) and the HTTP routes with a request's results. See {@link ScreeningShape.screenResults}.
 */
export const screenResults = (req: ScreenRequest, results: ReadonlyArray<ToolResult>) =>
  Effect.flatMap(Screening, (s) => s.screenResults(req, results))

const round3 = (x: number) => Math.round(x * 1000) / 1000

/** Cut to `max` UTF-16 units without splitting a surrogate pair. */
const cut = (s: string, max: number): string => {
  if (s.length <= max) return s
  const code = s.charCodeAt(max - 1)
  return s.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max)
}

const memoryKey = (episode: string | null, r: ToolResult): string =>
  createHash("sha256").update(JSON.stringify([episode, r.callId, r.text])).digest("hex")

interface ScreeningDeps {
  readonly settings: Settings["Type"]
  readonly judge: Judge
  readonly screen: NonNullable<Judge["screen"]>
  readonly audit: AuditSink["Type"]
}

export const makeScreening = ({ settings, judge, screen, audit }: ScreeningDeps): ScreeningShape => {
  const p = settings.proxy
  const s = settings.screening
  const deadline = Duration.seconds(p.judge_timeout_s)
  const notice = s.notice.split("{judge}").join(judge.judge)
  /** enforce's word on results rated before: key → flagged (least recently used first) */
  const seen = new Map<string, boolean>()
  const remember = (key: string, flagged: boolean) => {
    seen.delete(key)
    seen.set(key, flagged)
    if (seen.size > SCREEN_MEMORY) {
      const oldest = seen.keys().next()
      if (!oldest.done) seen.delete(oldest.value)
    }
  }
  const recall = (key: string): boolean | undefined => {
    const flagged = seen.get(key)
    if (flagged !== undefined) remember(key, flagged)
    return flagged
  }

  /** the judge's verdict on one text; never fails (a failure is a failed verdict) */
  const rate = (text: string, ctx: JudgeContext): Effect.Effect<Verdict> =>
    screen(text, ctx).pipe(
      Effect.timeoutTo({
        duration: deadline,
        onTimeout: () => failed(judge, "timeout", `judge timed out after ${p.judge_timeout_s}s`),
        onSuccess: (v: Verdict) => v
      }),
      Effect.catchAllCause((cause) => {
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure)) {
          const e = failure.value
          return Effect.succeed(
            failed(judge, e.reason === "timeout" ? "timeout" : "error", e.message, {
              ...(e.raw !== undefined ? { raw: e.raw } : {}),
              ...(e.latency_ms !== undefined ? { latency_ms: e.latency_ms } : {})
            })
          )
        }
        return Effect.succeed(failed(judge, "error", `judge failed: ${defectMessage(cause)}`))
      })
    )

  const isFlagged = (v: Verdict): boolean =>
    v.status === "ok" && v.decision !== null ? v.decision !== "allow" : p.fail_policy === "closed"

  const screenResults = (req: ScreenRequest, results: ReadonlyArray<ToolResult>) =>
    Effect.gen(function* () {
      if (req.arm === "baseline" || results.length === 0) return []
      const enforce = req.arm === "enforce"
      const ctx = req.context
      // what is rated: the fresh results; in enforce also a resent one this process has no word on
      const recalled = new Map<ToolResult, boolean>()
      const toRate: Array<ToolResult> = []
      for (const r of results) {
        if (r.fresh) toRate.push(r)
        else if (enforce) {
          const word = recall(memoryKey(ctx.episodeId, r))
          if (word === undefined) toRate.push(r)
          else recalled.set(r, word)
        }
      }
      const rated = yield* Effect.forEach(
        toRate,
        (r) =>
          Effect.gen(function* () {
            const start = yield* Clock.currentTimeNanos
            const verdict = yield* rate(cut(r.text, s.max_chars), ctx)
            const end = yield* Clock.currentTimeNanos
            return { r, verdict, ms: round3(Number(end - start) / 1e6) }
          }),
        { concurrency: p.max_concurrent_judges }
      )
      const attempt = attemptOf(ctx.headers)
      const rulings: Array<ResultRuling> = []
      // records in the order of the results, one append at a time
      for (const { r, verdict, ms } of rated) {
        const flagged = isFlagged(verdict)
        const replaced = flagged && enforce
        const entry: ResultEntry = {
          type: "result",
          run_id: ctx.runId,
          request_id: ctx.requestId,
          episode_id: ctx.episodeId,
          session_id: ctx.sessionId,
          principal: ctx.principal,
          agent_model: ctx.agentModel,
          arm: enforce ? "enforce" : "shadow",
          judge: judge.judge,
          wire: req.wire,
          ...(attempt !== null ? { attempt } : {}),
          ...(req.mcpServer !== undefined ? { mcp_server: req.mcpServer } : {}),
          tool_call_id: r.callId,
          position: r.position,
          text: cut(r.text, s.max_chars),
          chars: r.text.length,
          verdict,
          flagged,
          replaced,
          fail_policy: p.fail_policy,
          screen_ms: ms,
          ...(r.fresh ? {} : { resent: true as const })
        }
        const record = yield* audit.append(ctx.runId, entry)
        // a failed verdict is not remembered: the next resend asks the judge again
        if (enforce && verdict.status === "ok") remember(memoryKey(ctx.episodeId, r), flagged)
        rulings.push({ result: r, flagged, replaced, notice: replaced ? notice : null, verdict, seq: record.seq })
      }
      for (const [r, flagged] of recalled) {
        if (flagged) rulings.push({ result: r, flagged: true, replaced: true, notice, verdict: null })
      }
      return rulings
    })

  return { judge: judge.judge, screenResults }
}
