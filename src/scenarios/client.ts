/**
 * The scenario runner's client to veto-proxy: one `POST <proxy>/chat/completions` per agent round,
 * with `x-vetobench-run` and `x-vetobench-episode: scenario:<id>:<trial>`. Transport errors, 429
 * and 5xx are retried (3 attempts, 0.5 s then 1 s apart); any other non-2xx is the trial's error.
 */
import { isObject } from "../domain/is-object.js"
import { Data, Duration, Effect } from "effect"
import { type Usage, ZERO_USAGE } from "./trajectory.js"
import { redactUrl, redactUrlsIn } from "../domain/redact-url.js"
import { withDeadlineSignal } from "../domain/deadline-signal.js"

export class ChatError extends Data.TaggedError("ChatError")<{ readonly message: string }> {}

export interface ChatReply {
  /** `choices[0].message` */
  readonly message: Readonly<Record<string, unknown>>
  readonly usage: Usage
  /** calls the gate removed (`x-vetobench-blocked`) */
  readonly blocked: number
}

export interface ChatRequest {
  readonly runId: string
  readonly episode: string
  readonly body: Readonly<Record<string, unknown>>
}

/** One round against the proxy. */
export type ChatFn = (req: ChatRequest) => Effect.Effect<ChatReply, ChatError>

const errorText = (status: number, text: string): string => {
  try {
    const v: unknown = JSON.parse(text)
    if (isObject(v) && isObject(v.error) && typeof v.error.message === "string") return `HTTP ${status}: ${v.error.message}`
  } catch {
    // not JSON
  }
  return `HTTP ${status}: ${text.trim().slice(0, 300)}`
}

const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0)

export const usageOf = (v: unknown): Usage => {
  if (!isObject(v)) return ZERO_USAGE
  const prompt = num(v.prompt_tokens)
  const completion = num(v.completion_tokens)
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: num(v.total_tokens) || prompt + completion }
}

type Attempt =
  | { readonly _tag: "ok"; readonly reply: ChatReply }
  | { readonly _tag: "retry"; readonly reason: string }
  | { readonly _tag: "fatal"; readonly reason: string }

const parseReply = (status: number, text: string, blocked: string | null): Attempt => {
  if (status === 429 || status >= 500) return { _tag: "retry", reason: errorText(status, text) }
  if (status < 200 || status >= 300) return { _tag: "fatal", reason: `veto-proxy answered ${errorText(status, text)}` }
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return { _tag: "retry", reason: "the answer is not JSON" }
  }
  const choice: unknown = isObject(body) && Array.isArray(body.choices) ? body.choices[0] : undefined
  if (!isObject(choice) || !isObject(choice.message)) return { _tag: "retry", reason: "no choices[0].message in the answer" }
  const n = Number.parseInt(blocked ?? "0", 10)
  return { _tag: "ok", reply: { message: choice.message, usage: usageOf(isObject(body) ? body.usage : undefined), blocked: Number.isFinite(n) && n > 0 ? n : 0 } }
}

export interface ClientOptions {
  /** the proxy's base URL including `/v1` */
  readonly proxyUrl: string
  /** per request; default 600 s */
  readonly timeoutMs?: number
  readonly attempts?: number
}

/** A chat function over `fetch`. */
export const makeChat = (opts: ClientOptions): ChatFn => {
  const url = `${opts.proxyUrl.replace(/\/+$/, "")}/chat/completions`
  const timeoutMs = opts.timeoutMs ?? 600_000
  const attempts = opts.attempts ?? 3
  const once = (req: ChatRequest): Effect.Effect<Attempt> =>
    Effect.tryPromise({
      try: (outer) =>
        withDeadlineSignal(outer, timeoutMs, async (signal) => {
          const res = await fetch(url, {
            method: "POST",
            signal,
            headers: { "content-type": "application/json", "x-vetobench-run": req.runId, "x-vetobench-episode": req.episode },
            body: JSON.stringify(req.body)
          })
          return parseReply(res.status, await res.text(), res.headers.get("x-vetobench-blocked"))
        }),
      catch: (e): Attempt => ({ _tag: "retry", reason: redactUrlsIn(`cannot reach ${redactUrl(url)}: ${e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e)}`, [url]) })
    }).pipe(Effect.merge)
  return (req) =>
    Effect.gen(function*() {
      let last = ""
      for (let k = 0; k < attempts; k++) {
        const a = yield* once(req)
        if (a._tag === "ok") return a.reply
        if (a._tag === "fatal") return yield* new ChatError({ message: a.reason })
        last = a.reason
        if (k + 1 < attempts) yield* Effect.sleep(Duration.millis(500 * 2 ** k))
      }
      return yield* new ChatError({ message: `${attempts} attempts failed; last: ${last}` })
    })
}
