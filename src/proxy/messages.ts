/**
 * `POST /v1/messages` — the Anthropic Messages API as vLLM serves it, on the one gated route:
 * `wire/messages.ts` for answers and errors, `wire/messages-sse.ts` for streams. The request is
 * forwarded as sent, with the upstream's model name and its `model_defaults`; the judges read its
 * tools in the chat function-tool shape.
 */
import type { IncomingMessage } from "node:http"
import { Effect } from "effect"
import { isObject } from "../domain/is-object.js"
import { applyModelDefaults } from "../domain/normalise.js"
import { ProxyError } from "./errors.js"
import { readJsonBodyFrom } from "./forward.js"
import type { WireFormat } from "./gated-route.js"
import { gateMessagesText, messagesErrorBody, messagesErrorEvent, messagesUpstreamError } from "./wire/messages.js"
import { gateMessagesStream } from "./wire/messages-sse.js"
import { messagesResults, replaceMessagesResult } from "./wire/tool-results.js"

const fieldError = (message: string) => Effect.fail(new ProxyError({ code: "invalid_request", message }))

/** the index of the first entry that is not an object, or -1 */
const notObject = (xs: ReadonlyArray<unknown>): number => xs.findIndex((x) => !isObject(x))

/**
 * A Messages request: a string `model`, a boolean `stream` if given, an array `messages` of objects,
 * if given an array `tools` of objects and a `system` that is a string or an array.
 */
export const readMessagesBody = (msg: IncomingMessage, limit: number) =>
  Effect.gen(function* () {
    const body = yield* readJsonBodyFrom(msg, limit)
    if (!Array.isArray(body.messages)) return yield* fieldError("`messages` must be an array of message objects")
    const badMessage = notObject(body.messages)
    if (badMessage >= 0) return yield* fieldError(`\`messages[${badMessage}]\` must be an object`)
    if (body.tools !== undefined && body.tools !== null) {
      if (!Array.isArray(body.tools)) return yield* fieldError("`tools` must be an array of tool objects")
      const badTool = notObject(body.tools)
      if (badTool >= 0) return yield* fieldError(`\`tools[${badTool}]\` must be an object`)
    }
    if (body.system !== undefined && body.system !== null && typeof body.system !== "string" && !Array.isArray(body.system)) {
      return yield* fieldError("`system` must be a string or an array of content blocks")
    }
    return body
  })

/**
 * The request's tools as the judges read them (`{type: "function", function: {name, description,
 * parameters}}` from `{name, description, input_schema}`); tools without a string name are left out.
 */
export const messagesToolsForJudges = (body: Record<string, unknown>): ReadonlyArray<unknown> | undefined => {
  if (!Array.isArray(body.tools)) return undefined
  const out: Array<unknown> = []
  for (const t of body.tools) {
    if (!isObject(t) || typeof t.name !== "string") continue
    out.push({
      type: "function",
      function: {
        name: t.name,
        ...(typeof t.description === "string" ? { description: t.description } : {}),
        ...(isObject(t.input_schema) ? { parameters: t.input_schema } : {})
      }
    })
  }
  return out
}

export const messagesFormat: WireFormat = {
  wire: "messages",
  path: "messages",
  readBody: readMessagesBody,
  normalise: (body, target) => {
    body.model = target.model
    applyModelDefaults(body, target.defaults)
  },
  results: messagesResults,
  replaceResult: replaceMessagesResult,
  tools: messagesToolsForJudges,
  gateText: gateMessagesText,
  gateStream: gateMessagesStream,
  errorBody: messagesErrorBody,
  errorEvent: messagesErrorEvent,
  upstreamError: messagesUpstreamError
}
