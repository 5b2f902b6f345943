/**
 * Shared steps of the two POST endpoints: read and parse the body, map upstream failures to
 * proxy errors, answer an upstream error or a passthrough response unchanged.
 */
import type { IncomingMessage } from "node:http"
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Effect, Exit, Scope } from "effect"
import type { NoRoute, RawResponse, SendOptions, Target, TransportError, UpstreamPath, UpstreamsShape } from "../../layers/Upstreams.js"
import { readBody } from "./body.js"
import { ProxyError } from "./errors.js"
import { isObject } from "../domain/is-object.js"
import { finiteNumbers, jsonTextDepth, MAX_JSON_DEPTH, mayOverflow, tooDeep } from "../domain/json-depth.js"

/** Read the body of the request in context (limit first) as {@link readJsonObjectFrom} does. */
export const readJsonObject = (limit: number) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (req) => readJsonObjectFrom(NodeHttpServerRequest.toIncomingMessage(req), limit))

/** Read the body (limit first) and parse it as a JSON object nested at most MAX_JSON_DEPTH deep. */
export const readJsonObjectFrom = (msg: IncomingMessage, limit: number) =>
  Effect.gen(function* () {
    const raw = yield* readBody(msg, limit)
    const body = yield* Effect.try({
      try: () => JSON.parse(raw) as unknown,
      catch: (e) => new ProxyError({ code: "invalid_json", message: `request body is not valid JSON: ${(e as Error).message}` })
    })
    if (jsonTextDepth(raw) > MAX_JSON_DEPTH) {
      return yield* new ProxyError({ code: "invalid_request", message: `${tooDeep("the request body")} (the proxy's limit)` })
    }
    if (mayOverflow(raw) && !finiteNumbers(body)) {
      return yield* new ProxyError({ code: "invalid_request", message: "the request body holds a number too large for a double (e.g. 1e400)" })
    }
    if (!isObject(body)) {
      return yield* new ProxyError({ code: "invalid_request", message: "request body must be a JSON object" })
    }
    return body
  })

const fieldError = (message: string) => Effect.fail(new ProxyError({ code: "invalid_request", message }))

/** Read the body of the request in context (limit first) as {@link readJsonBodyFrom} does. */
export const readJsonBody = (limit: number) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (req) => readJsonBodyFrom(NodeHttpServerRequest.toIncomingMessage(req), limit))

/** Read the body (limit first) and parse it as a JSON object with a string `model` and, if given, a boolean `stream`. */
export const readJsonBodyFrom = (msg: IncomingMessage, limit: number) =>
  Effect.gen(function* () {
    const body = yield* readJsonObjectFrom(msg, limit)
    if (typeof body.model !== "string") return yield* fieldError("request body needs a string `model`")
    // what the proxy reads must be what the upstream reads: a "true" string would stream there and not here
    if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean") {
      return yield* fieldError("`stream` must be a boolean")
    }
    return body as Record<string, unknown> & { model: string }
  })

/** A chat request: also an array `messages` of objects and, if given, an array `tools` of objects. */
export const readChatBody = (msg: IncomingMessage, limit: number) =>
  Effect.gen(function* () {
    const body = yield* readJsonBodyFrom(msg, limit)
    if (!Array.isArray(body.messages)) return yield* fieldError("`messages` must be an array of message objects")
    const badMessage = body.messages.findIndex((m) => !isObject(m))
    if (badMessage >= 0) return yield* fieldError(`\`messages[${badMessage}]\` must be an object`)
    if (body.tools !== undefined && body.tools !== null) {
      if (!Array.isArray(body.tools)) return yield* fieldError("`tools` must be an array of tool objects")
      const badTool = body.tools.findIndex((t) => !isObject(t))
      if (badTool >= 0) return yield* fieldError(`\`tools[${badTool}]\` must be an object`)
    }
    return body
  })

export const fromUpstreamError = (e: NoRoute | TransportError): ProxyError => {
  switch (e._tag) {
    case "NoRoute":
      return new ProxyError({ code: "no_upstream", message: e.message })
    case "UpstreamTimeout":
      return new ProxyError({ code: "upstream_timeout", message: e.message })
    case "UpstreamUnavailable":
      return new ProxyError({ code: "upstream_unavailable", message: `upstream error: ${e.message}` })
  }
}

/** A non-JSON upstream error answer, as an OpenAI-style error object. */
export const openAiUpstreamError = (status: number, text: string): string =>
  JSON.stringify({ error: { message: text, type: "upstream_error", code: status } })

/** The upstream's body unchanged; a non-JSON body wrapped in an error object (`wrap`: the route's error shape). */
export const relayedText = (status: number, contentType: string, text: string, wrap: (status: number, text: string) => string = openAiUpstreamError) =>
  contentType.startsWith("application/json") ? text : wrap(status, text)

/** The upstream's status and body unchanged; a non-JSON body is wrapped in an error object (`wrap`: the route's error shape). */
export const relay = (
  status: number,
  contentType: string,
  text: string,
  headers: Record<string, string>,
  wrap: (status: number, text: string) => string = openAiUpstreamError
) =>
  HttpServerResponse.text(relayedText(status, contentType, text, wrap), {
    status,
    contentType: "application/json",
    headers
  })

/**
 * POST to the upstream and hand the response to `use` together with `release`, which frees the
 * upstream body. On failure or interruption the body is freed here; on success `use` owns it (a
 * buffered answer releases at once, a streamed one when its stream ends).
 */
export const withUpstream = <A, E, R>(
  upstreams: UpstreamsShape,
  target: Target,
  path: UpstreamPath,
  body: string,
  send: SendOptions,
  use: (res: RawResponse, release: Effect.Effect<void>) => Effect.Effect<A, E, R>
): Effect.Effect<A, E | ProxyError, R> =>
  Effect.flatMap(Scope.make(), (scope) => {
    const release = Scope.close(scope, Exit.void)
    return upstreams.send(target, path, body, send).pipe(
      Scope.extend(scope),
      Effect.mapError(fromUpstreamError),
      Effect.flatMap((res) => use(res, release)),
      Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : release))
    )
  })

/** Read a buffered upstream answer and free its body. */
export const readAll = (res: RawResponse, release: Effect.Effect<void>) =>
  Effect.mapError(res.text, fromUpstreamError).pipe(Effect.ensuring(release))
