/**
 * A GPU-free stand-in for vLLM's OpenAI-compatible server (reference §14.5, with vLLM's own error
 * and streaming shapes), and of its Anthropic Messages endpoint (`fake-vllm/messages-wire.ts`) and
 * OpenAI Responses endpoint (`fake-vllm/responses-wire.ts`).
 * Used in-process by tests (`FakeVllm.layer()`) and by `vetobench fake-vllm --port N` (`serveFakeVllm`).
 *
 * Plain `node:http`/`node:https`: answers never depend on Effect's Clock, so the server also works
 * under @effect/vitest's TestClock. The scope owns the server: closing it drops every connection.
 */
import { Context, Data, Effect, Layer, type Scope } from "effect"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import {
  chatAnswer,
  chatPromptTokens,
  completionText,
  type FakeScript,
  isServedModel,
  promptText,
  roughTokens,
  SERVED_MODELS
} from "./fake-vllm/behaviour.js"
import {
  chatChunks,
  chatCompletion,
  completionChunks,
  type Envelope,
  errorBody,
  modelNotFound,
  modelsList,
  SSE_DONE,
  sseData,
  textCompletion,
  usage
} from "./fake-vllm/wire.js"
import { chatBodyOfMessages, MESSAGES_ERRORS, messagesAnswer, messagesEvents, messagesSse } from "./fake-vllm/messages-wire.js"
import { chatBodyOfResponses, responsesAnswer, responsesEvents, responsesSse } from "./fake-vllm/responses-wire.js"
import { isObject } from "../src/domain/is-object.js"

export {
  AGENT_MODELS,
  CLASSIFIER_BENIGN,
  CLASSIFIER_INJECTION,
  completionLabel,
  type FakeScript,
  type FakeTurn,
  INJECTION_PHRASE,
  isInjection,
  isMalicious,
  MALICIOUS,
  SERVED_MODELS,
  SMALL_MODELS
} from "./fake-vllm/behaviour.js"
export { collectSse } from "./fake-vllm/wire.js"

export interface FakeVllmOptions {
  /** interface to bind; default `127.0.0.1` (never all interfaces unless asked) */
  readonly host?: string
  /** port to bind; default 0 (a free port, reported in `url`) */
  readonly port?: number
  /** PEM key and certificate: serve HTTPS */
  readonly tls?: { readonly key: string; readonly cert: string }
  /** keep every request in `requests` (default true; a long-running CLI may turn it off) */
  readonly record?: boolean
  /** called for every request once its body is read (e.g. CLI request logging) */
  readonly onRequest?: (request: RecordedRequest) => void
}

/** One request as the fake received it. */
export interface RecordedRequest {
  readonly method: string
  /** URL path without the query string, e.g. `/v1/chat/completions` */
  readonly path: string
  /** header names lower-cased; repeated headers joined with `, ` */
  readonly headers: Readonly<Record<string, string>>
  /** the parsed JSON body; the raw text when it is not JSON; `null` when empty */
  readonly body: unknown
}

export interface FakeCall {
  readonly name: string
  /** a string is sent verbatim as `function.arguments` (so tests can send invalid JSON); anything else is JSON-encoded */
  readonly arguments: unknown
}

/** Mutable per-test controls; `reset()` restores the defaults. */
export interface FakeVllmKnobs {
  /** answer generation requests (chat and text completions) with this status and a JSON error body */
  failStatus: number | null
  /** restrict `failStatus` to these models; empty = every model */
  failModels: Set<string>
  /** wait this long before sending the response headers of generation requests */
  delayMs: number
  /** restrict `delayMs` to these models; empty = every model (e.g. delay only the judge) */
  delayModels: Set<string>
  /** wait this long between SSE chunks */
  chunkDelayMs: number
  /**
   * judge models answer unparsable text (`I am not sure.`; guards answer an empty string, the only
   * guard output that fails to parse); agents send tool calls whose arguments are invalid JSON
   */
  malformed: boolean
  /** agents propose exactly these calls (ids `call_0`, `call_1`, …) instead of the heuristic */
  nextCalls: Array<FakeCall> | null
  /** assistant content sent along with agent tool calls (also the text answer when `nextCalls` is `[]`) */
  content: string | null
  /**
   * scripted multi-turn agents, chosen by the system prompt and user text, answered turn by turn
   * (see `FakeScript` in `fake-vllm/behaviour.ts`); used when `nextCalls` is null. Unset by
   * default and by `reset()`.
   */
  scripts?: Array<FakeScript>
}

export interface FakeVllmShape {
  /** base URL including `/v1`, e.g. `http://127.0.0.1:43123/v1` */
  readonly url: string
  readonly port: number
  /** live view of every recorded request, oldest first */
  readonly requests: ReadonlyArray<RecordedRequest>
  readonly knobs: FakeVllmKnobs
  /** clear `requests` and restore the default knobs (in place: earlier references stay live) */
  readonly reset: () => void
}

export class FakeVllmServeError extends Data.TaggedError("FakeVllmServeError")<{
  readonly reason: "tls" | "listen"
  readonly host: string
  readonly port: number
  readonly message: string
  readonly cause: unknown
}> {}

const defaultKnobs = (): FakeVllmKnobs => ({
  failStatus: null,
  failModels: new Set(),
  delayMs: 0,
  delayModels: new Set(),
  chunkDelayMs: 0,
  malformed: false,
  nextCalls: null,
  content: null
})

const lowerHeaders = (req: http.IncomingMessage): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v
  }
  return out
}

const readBody = (req: http.IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const parts: Array<Buffer> = []
    req.on("data", (c: Buffer) => parts.push(c))
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")))
    req.on("error", reject)
  })

const parseBody = (raw: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  if (raw.trim() === "") return { ok: true, value: null }
  try {
    return { ok: true, value: JSON.parse(raw) as unknown }
  } catch {
    return { ok: false }
  }
}

/** the errors of the generation prologue on the OpenAI-style routes */
const CHAT_ERRORS = {
  failure: (status: number): unknown => errorBody("fake failure", "InternalServerError", status),
  notFound: (model: string): unknown => modelNotFound(model)
}

const urlHost = (host: string): string => (host.includes(":") && !host.startsWith("[") ? `[${host}]` : host)

/** Server state plus the request handler; no Effect inside (see the module comment). */
const makeHandler = (options: FakeVllmOptions) => {
  const requests: Array<RecordedRequest> = []
  const knobs = defaultKnobs()
  const timers = new Set<NodeJS.Timeout>()
  let closed = false
  let counter = 0

  const sleep = (ms: number): Promise<void> =>
    ms <= 0
      ? Promise.resolve()
      : new Promise((resolve) => {
        const t = setTimeout(() => {
          timers.delete(t)
          resolve()
        }, ms)
        timers.add(t)
      })

  const gone = (res: http.ServerResponse) => closed || res.destroyed || res.writableEnded

  const sendJson = (res: http.ServerResponse, status: number, body: unknown) => {
    if (gone(res)) return
    const text = JSON.stringify(body)
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
    res.end(text)
  }

  /** one SSE event per payload (`frame`), then `end` */
  const sendSse = async <P>(res: http.ServerResponse, payloads: ReadonlyArray<P>, frame: (p: P) => string = sseData, end = SSE_DONE) => {
    if (gone(res)) return
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive"
    })
    for (const p of payloads) {
      if (gone(res)) return
      res.write(frame(p))
      if (knobs.chunkDelayMs > 0) await sleep(knobs.chunkDelayMs)
    }
    if (gone(res)) return
    res.end(end)
  }

  const envelope = (prefix: string, model: string): Envelope => {
    counter += 1
    return { id: `${prefix}-fake-${counter}`, created: Math.floor(Date.now() / 1000), model }
  }

  const includeUsage = (body: Record<string, unknown>): boolean =>
    isObject(body.stream_options) && body.stream_options.include_usage === true

  /** Common prologue of generation requests: delay, then fail/unknown-model checks (error bodies in the route's shape). */
  const generationGate = async (res: http.ServerResponse, body: Record<string, unknown>, errors = CHAT_ERRORS): Promise<string | null> => {
    const model = typeof body.model === "string" ? body.model : ""
    if (knobs.delayModels.size === 0 || knobs.delayModels.has(model)) await sleep(knobs.delayMs)
    if (gone(res)) return null
    if (knobs.failStatus !== null && (knobs.failModels.size === 0 || knobs.failModels.has(model))) {
      sendJson(res, knobs.failStatus, errors.failure(knobs.failStatus))
      return null
    }
    if (!isServedModel(model)) {
      sendJson(res, 404, errors.notFound(model))
      return null
    }
    return model
  }

  const chat = async (res: http.ServerResponse, body: Record<string, unknown>) => {
    const model = await generationGate(res, body)
    if (model === null) return
    const answer = chatAnswer(model, body, knobs)
    const completionTokens = roughTokens((answer.content ?? "") + answer.calls.map((c) => c.name + c.arguments).join(""))
    const u = usage(chatPromptTokens(body), completionTokens)
    const env = envelope("chatcmpl", model)
    if (body.stream === true) await sendSse(res, chatChunks(env, answer, u, includeUsage(body)))
    else sendJson(res, 200, chatCompletion(env, answer, u))
  }

  /** `POST /v1/messages`: the chat behaviour, read from and written in the Messages format */
  const messages = async (res: http.ServerResponse, body: Record<string, unknown>) => {
    const model = await generationGate(res, body, MESSAGES_ERRORS)
    if (model === null) return
    const chatBody = chatBodyOfMessages(body)
    const answer = chatAnswer(model, chatBody, knobs)
    const env = envelope("msg", model)
    if (body.stream === true) await sendSse(res, messagesEvents(env, answer, chatPromptTokens(chatBody)), messagesSse, "")
    else sendJson(res, 200, messagesAnswer(env, answer, chatPromptTokens(chatBody)))
  }

  /** `POST /v1/responses`: the chat behaviour, read from and written in the Responses format */
  const responses = async (res: http.ServerResponse, body: Record<string, unknown>) => {
    const model = await generationGate(res, body)
    if (model === null) return
    const chatBody = chatBodyOfResponses(body)
    const answer = chatAnswer(model, chatBody, knobs)
    const env = envelope("resp", model)
    if (body.stream === true) await sendSse(res, responsesEvents(env, answer, chatPromptTokens(chatBody), body), responsesSse, "")
    else sendJson(res, 200, responsesAnswer(env, answer, chatPromptTokens(chatBody), body))
  }

  const completions = async (res: http.ServerResponse, body: Record<string, unknown>) => {
    const model = await generationGate(res, body)
    if (model === null) return
    const prompt = promptText(body.prompt)
    const text = completionText(prompt, knobs.malformed)
    const u = usage(roughTokens(prompt), roughTokens(text))
    const env = envelope("cmpl", model)
    if (body.stream === true) await sendSse(res, completionChunks(env, text, u, includeUsage(body)))
    else sendJson(res, 200, textCompletion(env, text, u))
  }

  const route = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const method = req.method ?? "GET"
    const path = new URL(req.url ?? "/", "http://fake").pathname
    const raw = await readBody(req)
    const parsed = parseBody(raw)
    const recorded: RecordedRequest = {
      method,
      path,
      headers: lowerHeaders(req),
      body: parsed.ok ? parsed.value : raw
    }
    if (options.record !== false) requests.push(recorded)
    options.onRequest?.(recorded)

    const endpoints: Record<string, string> = {
      "/health": "GET",
      "/v1/models": "GET",
      "/v1/chat/completions": "POST",
      "/v1/completions": "POST",
      "/v1/messages": "POST",
      "/v1/responses": "POST"
    }
    const allowed = endpoints[path]
    if (allowed === undefined) return sendJson(res, 404, { detail: "Not Found" })
    if (allowed !== method) return sendJson(res, 405, { detail: "Method Not Allowed" })
    if (path === "/health") {
      if (gone(res)) return
      res.writeHead(200, { "content-length": 0 })
      return res.end()
    }
    if (path === "/v1/models") return sendJson(res, 200, modelsList(SERVED_MODELS))
    if (!parsed.ok || !isObject(parsed.value)) {
      return sendJson(res, 400, errorBody("request body must be a JSON object", "BadRequestError", 400))
    }
    if (path === "/v1/chat/completions") return chat(res, parsed.value)
    if (path === "/v1/messages") return messages(res, parsed.value)
    if (path === "/v1/responses") return responses(res, parsed.value)
    return completions(res, parsed.value)
  }

  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    res.on("error", () => {})
    route(req, res).catch((e: unknown) => {
      if (gone(res)) return
      if (res.headersSent) res.destroy()
      else sendJson(res, 500, errorBody(`fake-vllm: ${String(e)}`, "InternalServerError", 500))
    })
  }

  const reset = () => {
    requests.length = 0
    const d = defaultKnobs()
    knobs.failStatus = d.failStatus
    knobs.failModels.clear()
    knobs.delayMs = d.delayMs
    knobs.delayModels.clear()
    knobs.chunkDelayMs = d.chunkDelayMs
    knobs.malformed = d.malformed
    knobs.nextCalls = d.nextCalls
    knobs.content = d.content
    delete knobs.scripts
  }

  const shutdown = () => {
    closed = true
    for (const t of timers) clearTimeout(t)
    timers.clear()
  }

  return { handler, requests, knobs, reset, shutdown } as const
}

/**
 * Start the fake on `host:port` (default `127.0.0.1:0`) for the lifetime of the scope. The release
 * stops listening, cancels pending delays and closes every open connection (SSE included).
 */
export const serveFakeVllm = (
  options: FakeVllmOptions = {}
): Effect.Effect<FakeVllmShape, FakeVllmServeError, Scope.Scope> => {
  const host = options.host ?? "127.0.0.1"
  const port = options.port ?? 0
  const fail = (reason: "tls" | "listen", cause: unknown) =>
    new FakeVllmServeError({
      reason,
      host,
      port,
      message: `fake-vllm: cannot ${reason === "tls" ? "load TLS key/certificate" : `listen on ${host}:${port}`}: ${
        cause instanceof Error ? cause.message : String(cause)
      }`,
      cause
    })

  const acquire = Effect.suspend(() => {
    const state = makeHandler(options)
    return Effect.try({
      try: (): http.Server =>
        options.tls !== undefined
          ? https.createServer({ key: options.tls.key, cert: options.tls.cert }, state.handler)
          : http.createServer(state.handler),
      catch: (e) => fail("tls", e)
    }).pipe(
      Effect.flatMap((server) =>
        Effect.async<{ readonly server: http.Server; readonly state: typeof state }, FakeVllmServeError>((resume) => {
          const onError = (e: Error) => {
            server.off("listening", onListening)
            resume(Effect.fail(fail("listen", e)))
          }
          const onListening = () => {
            server.off("error", onError)
            server.on("error", () => {}) // after start-up a server error must not crash the process
            resume(Effect.succeed({ server, state }))
          }
          server.once("error", onError)
          server.once("listening", onListening)
          server.listen(port, host)
          return Effect.sync(() => {
            server.off("error", onError)
            server.off("listening", onListening)
            server.close()
          })
        })
      )
    )
  })

  const release = ({ server, state }: { readonly server: http.Server; readonly state: ReturnType<typeof makeHandler> }) =>
    Effect.async<void>((resume) => {
      state.shutdown()
      server.close(() => resume(Effect.void))
      server.closeAllConnections()
    })

  return Effect.acquireRelease(acquire, release).pipe(
    Effect.map(({ server, state }): FakeVllmShape => {
      const actual = (server.address() as AddressInfo).port
      const scheme = options.tls !== undefined ? "https" : "http"
      return {
        url: `${scheme}://${urlHost(host)}:${actual}/v1`,
        port: actual,
        requests: state.requests,
        knobs: state.knobs,
        reset: state.reset
      }
    })
  )
}

/** The fake vLLM as a service: `FakeVllm.layer(options)` serves it for the layer's lifetime. */
export class FakeVllm extends Context.Tag("vetobench/FakeVllm")<FakeVllm, FakeVllmShape>() {
  static readonly layer = (options: FakeVllmOptions = {}): Layer.Layer<FakeVllm, FakeVllmServeError> =>
    Layer.scoped(FakeVllm, serveFakeVllm(options))
}
