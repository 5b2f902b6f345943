/**
 * The Agent-SafetyBench agent's client to veto-proxy (OpenAI-compatible chat completions, plain
 * undici). One call = one agent step:
 *
 * - `POST <proxy_url>/chat/completions` (or, with `wire`, the Responses or Messages route:
 *   wire-formats.ts, the same headers) with `x-vetobench-run`, `x-vetobench-episode:
 *   asbench:<id>`, `x-vetobench-attempt: <n>` (which start of the case, when the runner numbers
 *   them: src/domain/attempt.ts) and `authorization: Bearer vetobench`; body `{model, messages,
 *   tools?, temperature: 0, max_tokens}` (`tools` omitted when there are none).
 * - Up to `attempts` (10) tries. Transport errors, 429 and 5xx are retried after
 *   `min(2^k, 30) × baseDelayMs` (k = 0, 1, …; 1 s by default, as eval.py's client), an answer
 *   without `choices` (Responses: `output`, Messages: `content`) is retried at once; a 4xx is the
 *   case's error (the request itself is wrong, retrying cannot help) — design decision 12.
 * - When every attempt failed the step is `Failed`: the episode spends the round and goes on
 *   (eval.py: a `None` completion consumes a round).
 * - `x-vetobench-blocked` (non-streaming) is the number of calls the proxy removed.
 * - The answer's `usage` (prompt and completion tokens) comes back with the step: the runner adds
 *   up an episode's steps, so the record holds exactly what the episode's answers cost.
 */
import { Data, Duration, Effect, Either, type Scope } from "effect"
import { Agent, request } from "undici"
import { errorCode } from "../../../layers/http-errors.js"
import { ATTEMPT_HEADER } from "../../domain/attempt.js"
import { usageOf } from "../../scenarios/client.js"
import type { Usage } from "../../scenarios/trajectory.js"
import { pyJsonDumps } from "../../domain/python-json.js"
import { isObject } from "../../domain/is-object.js"
import type { AgentWireFormat, AnswerRead } from "./wire-formats.js"
import { withDeadlineSignal } from "../../domain/deadline-signal.js"

export class CaseError extends Data.TaggedError("CaseError")<{ readonly message: string }> {}

export type Message = Readonly<Record<string, unknown>>

/** The assistant message of `choices[0]`. */
export interface AssistantMessage {
  readonly content?: unknown
  readonly tool_calls?: unknown
  readonly [key: string]: unknown
}

export type ChatStep =
  | { readonly _tag: "Answer"; readonly message: AssistantMessage; readonly blocked: number; readonly usage: Usage }
  | { readonly _tag: "Failed"; readonly reason: string }

/** One agent step: the messages so far and the tools offered (empty: none). */
export type ChatFn = (
  messages: ReadonlyArray<Message>,
  tools: ReadonlyArray<Message>
) => Effect.Effect<ChatStep, CaseError>

export interface ClientOptions {
  /** the proxy's OpenAI base URL including `/v1` */
  readonly proxyUrl: string
  /** the model name sent (`model@arm:judge`) */
  readonly route: string
  readonly runId: string
  readonly maxTokens: number
  /** default 10 */
  readonly attempts?: number
  /** back-off unit; default 1000 ms (tests use a few ms) */
  readonly baseDelayMs?: number
  /** per request, default 900 s */
  readonly timeoutMs?: number
  /** a retried request (`[asbench:<id>] request failed (k/10): …`) */
  readonly onRetry?: (line: string) => Effect.Effect<void>
  /** the wire format spoken to the proxy (wire-formats.ts); default chat completions */
  readonly wire?: AgentWireFormat
}

export const DEFAULT_ATTEMPTS = 10
export const DEFAULT_BASE_DELAY_MS = 1000
export const DEFAULT_TIMEOUT_MS = 900_000

/** Delay before the retry that follows failed attempt `k` (0-based): min(2^k, 30) units. */
export const backoffMs = (k: number, baseDelayMs: number): number => Math.min(2 ** k, 30) * baseDelayMs

/** The request body of one step. */
export const chatBody = (
  route: string,
  maxTokens: number,
  messages: ReadonlyArray<Message>,
  tools: ReadonlyArray<Message>
): Record<string, unknown> => ({
  model: route,
  messages,
  ...(tools.length > 0 ? { tools } : {}),
  temperature: 0,
  max_tokens: maxTokens
})

/** The assistant message of a chat answer: `choices[0].message`. */
export const readChoices = (body: unknown): AnswerRead => {
  const choices = isObject(body) && Array.isArray(body.choices) ? body.choices : []
  const first: unknown = choices[0]
  if (!isObject(first)) return { _tag: "unreadable", reason: "no choices in the answer" }
  return { _tag: "message", message: isObject(first.message) ? first.message : {}, usage: usageOf(isObject(body) ? body.usage : undefined) }
}

/** Chat completions (`POST <proxy_url>/chat/completions`), the benchmark's own format. */
export const chatWire: AgentWireFormat = {
  wire: "chat",
  path: "chat/completions",
  request: (route, maxTokens, messages, tools) => Either.right(chatBody(route, maxTokens, messages, tools)),
  parse: (text): unknown => JSON.parse(text),
  read: readChoices
}

/** What one attempt came to. */
type Attempt =
  | { readonly _tag: "ok"; readonly message: AssistantMessage; readonly blocked: number; readonly usage: Usage }
  | { readonly _tag: "retry"; readonly reason: string; readonly backoff: boolean }
  | { readonly _tag: "fatal"; readonly reason: string }

/** The proxy's error message from an error body (`{"error": {"message"}}`), else the text. */
export const errorMessage = (text: string): string => {
  try {
    const v: unknown = JSON.parse(text)
    if (isObject(v) && isObject(v.error) && typeof v.error.message === "string") return v.error.message
  } catch {
    // not JSON
  }
  const t = text.trim()
  return t.length > 300 ? `${t.slice(0, 300)}…` : t
}

/** Classify a response: status, body text and the blocked header; the body is read in `wire`'s format. */
export const classify = (status: number, text: string, blockedHeader: string | undefined, wire: AgentWireFormat = chatWire): Attempt => {
  if (status === 429 || status >= 500) return { _tag: "retry", reason: `HTTP ${status}: ${errorMessage(text)}`, backoff: true }
  if (status < 200 || status >= 300) return { _tag: "fatal", reason: `veto-proxy answered HTTP ${status}: ${errorMessage(text)}` }
  let body: unknown
  try {
    body = wire.parse(text)
  } catch {
    return { _tag: "retry", reason: "the answer is not JSON", backoff: true }
  }
  const read = wire.read(body)
  if (read._tag === "unreadable") return { _tag: "retry", reason: read.reason, backoff: false }
  const blocked = Number.parseInt(blockedHeader ?? "0", 10)
  return { _tag: "ok", message: read.message, blocked: Number.isFinite(blocked) && blocked > 0 ? blocked : 0, usage: read.usage }
}

const headerValue = (v: string | ReadonlyArray<string> | undefined): string | undefined => (Array.isArray(v) ? v[0] : (v as string | undefined))

/**
 * A chat function bound to one run (route, run id, max_tokens). The HTTP agent (keep-alive pool,
 * 900 s header/body timeouts) lives as long as the scope. The episode id, its environments and the
 * attempt number (null: no header) are given per episode.
 */
export const makeProxyClient = (
  opts: ClientOptions
): Effect.Effect<(episode: string, environments?: ReadonlyArray<string>, attempt?: number | null) => ChatFn, never, Scope.Scope> =>
  Effect.gen(function*() {
    const attempts = opts.attempts ?? DEFAULT_ATTEMPTS
    const baseDelayMs = opts.baseDelayMs ?? DEFAULT_BASE_DELAY_MS
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
    const wire = opts.wire ?? chatWire
    const url = `${opts.proxyUrl.replace(/\/+$/, "")}/${wire.path}`
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() => new Agent({ headersTimeout: timeoutMs, bodyTimeout: timeoutMs, keepAliveTimeout: 30_000 })),
      (a) => Effect.promise(() => a.destroy()).pipe(Effect.ignore)
    )

    const once = (episode: string, environments: string, attempt: number | null, body: string): Effect.Effect<Attempt> =>
      Effect.tryPromise({
        try: (outer) =>
          withDeadlineSignal(outer, timeoutMs, async (signal) => {
            const res = await request(url, {
              method: "POST",
              dispatcher: agent,
              signal,
              headers: {
                "content-type": "application/json",
                authorization: "Bearer vetobench",
                "x-vetobench-run": opts.runId,
                "x-vetobench-episode": episode,
                ...(attempt !== null ? { [ATTEMPT_HEADER]: String(attempt) } : {}),
                // the case's environments, so a rule policy can address `<Env>.<tool>` (docs/policy.md)
                ...(environments !== "" ? { "x-vetobench-environments": environments } : {})
              },
              body
            })
            const text = await res.body.text()
            return classify(res.statusCode, text, headerValue(res.headers["x-vetobench-blocked"]), wire)
          }),
        catch: (e): Attempt => ({ _tag: "retry", reason: transportReason(e), backoff: true })
      }).pipe(Effect.merge)

    return (episode, environments = [], attempt = null) => (messages, tools) =>
      Effect.gen(function*() {
        const request = wire.request(opts.route, opts.maxTokens, messages, tools)
        if (Either.isLeft(request)) return yield* new CaseError({ message: `the conversation cannot be sent over ${wire.wire}: ${request.left}` })
        // Python-style numbers (a `PyFloat` 21.0 stays `21.0`), as the benchmark's client would send them
        const body = pyJsonDumps(request.right, { ensureAscii: false, separators: [",", ":"] })
        let last = "no attempt made"
        for (let k = 0; k < attempts; k++) {
          const a = yield* once(episode, environments.filter((e) => e !== "").join(","), attempt, body)
          if (a._tag === "ok") return { _tag: "Answer", message: a.message, blocked: a.blocked, usage: a.usage } satisfies ChatStep
          if (a._tag === "fatal") return yield* new CaseError({ message: a.reason })
          last = a.reason
          if (opts.onRetry !== undefined) yield* opts.onRetry(`[${episode}] request failed (${k + 1}/${attempts}): ${a.reason}`)
          if (a.backoff && k + 1 < attempts) yield* Effect.sleep(Duration.millis(backoffMs(k, baseDelayMs)))
        }
        return { _tag: "Failed", reason: `${attempts} attempts failed; last: ${last}` } satisfies ChatStep
      })
  })

/** A transport failure as one line (`ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1`). */
export const transportReason = (e: unknown): string => {
  const code = errorCode(e)
  const msg = e instanceof Error ? e.message : String(e)
  const inner = e instanceof Error && e.cause instanceof Error ? e.cause.message : ""
  const text = inner !== "" && inner !== msg ? `${msg} (${inner})` : msg
  return code !== undefined && !text.includes(code) ? `${code}: ${text}` : text
}
