/** Calling a judge model through Upstreams: timed, with upstream failures mapped to JudgeError. */
import { Clock, Effect, Either } from "effect"
import type { UpstreamError, UpstreamsShape } from "../layers/Upstreams.js"
import { JudgeError } from "./Judge.js"
import { replyContent, replyUsage } from "./verdict-parse.js"

export interface ModelReply {
  /** `choices[0].message.content` as sent (before any stripping) */
  readonly content: string
  readonly usage: Record<string, unknown>
  /** wall time of the upstream call */
  readonly latency_ms: number
}

/**
 * A judge's request body: its own keys (in their order), then the keys of the configured
 * `extra_body` it does not set itself. `extra_body` adds request keys; it never replaces the judge's.
 */
export const withExtraBody = (own: Record<string, unknown>, extra: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const out = { ...own }
  for (const [k, v] of Object.entries(extra)) {
    // a data key even when it is "__proto__" (as a spread copies it)
    if (!Object.prototype.hasOwnProperty.call(own, k)) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true })
  }
  return out
}

/** An upstream failure as the judge's failure: a timeout stays a timeout, the rest is "unavailable". */
export const judgeErrorFromUpstream = (judge: string, e: UpstreamError, latency_ms: number): JudgeError =>
  new JudgeError({ judge, reason: e._tag === "UpstreamTimeout" ? "timeout" : "unavailable", message: e.message, latency_ms })

/** One chat call to the judge model, timed. */
export const callJudgeModel = (
  upstreams: UpstreamsShape,
  judge: string,
  model: string,
  payload: Record<string, unknown>,
  opts: { readonly timeout_s: number; readonly requestId: string }
): Effect.Effect<ModelReply, JudgeError> =>
  Effect.gen(function* () {
    const start = yield* Clock.currentTimeNanos
    const result = yield* Effect.either(upstreams.chat(model, payload, opts))
    const latency_ms = Number((yield* Clock.currentTimeNanos) - start) / 1e6
    if (Either.isLeft(result)) return yield* judgeErrorFromUpstream(judge, result.left, latency_ms)
    return { content: replyContent(result.right), usage: replyUsage(result.right), latency_ms }
  })
