/**
 * `POST /v1/responses` — the gated OpenAI Responses route: the Responses wire format
 * (`wire/responses.ts` for answers, `wire/responses-sse.ts` for streams) on the one gated route,
 * with the OpenAI error shape of the chat route.
 */
import type { IncomingMessage } from "node:http"
import { Effect } from "effect"
import { isObject } from "../domain/is-object.js"
import { errorBody, ProxyError } from "./errors.js"
import { openAiUpstreamError, readJsonBodyFrom } from "./forward.js"
import type { WireFormat } from "./gated-route.js"
import { gateResponsesText, judgeTools, normaliseResponsesBody } from "./wire/responses.js"
import { gateResponsesStream, responsesErrorEvent } from "./wire/responses-sse.js"
import { responsesResults, replaceResponsesResult } from "./wire/tool-results.js"

const fieldError = (message: string) => Effect.fail(new ProxyError({ code: "invalid_request", message }))

/**
 * A Responses request: a string `model`, a boolean `stream` if given, `input` a string or an array
 * of input item objects, and `tools` an array of tool objects if given. The stateful fields
 * (`previous_response_id`, `store`, `conversation`, …) and `instructions` are the upstream's to read.
 */
export const readResponsesBody = (msg: IncomingMessage, limit: number) =>
  Effect.gen(function* () {
    const body = yield* readJsonBodyFrom(msg, limit)
    const input = body.input
    if (typeof input !== "string") {
      if (!Array.isArray(input)) return yield* fieldError("`input` must be a string or an array of input items")
      const bad = input.findIndex((i) => !isObject(i))
      if (bad >= 0) return yield* fieldError(`\`input[${bad}]\` must be an object`)
    }
    if (body.tools !== undefined && body.tools !== null) {
      if (!Array.isArray(body.tools)) return yield* fieldError("`tools` must be an array of tool objects")
      const bad = body.tools.findIndex((t) => !isObject(t))
      if (bad >= 0) return yield* fieldError(`\`tools[${bad}]\` must be an object`)
    }
    return body
  })

export const responsesFormat: WireFormat = {
  wire: "responses",
  path: "responses",
  readBody: readResponsesBody,
  normalise: (body, target) => normaliseResponsesBody(body, target.model, target.defaults),
  results: responsesResults,
  replaceResult: replaceResponsesResult,
  tools: judgeTools,
  gateText: gateResponsesText,
  gateStream: gateResponsesStream,
  errorBody,
  // the route writes this event when the upstream fails mid-stream or the audit cannot be written;
  // the events sent before it are not known there, so it is numbered 0 (the SDKs read the number
  // only to resume a stored response, which this proxy does not serve)
  errorEvent: (code, message, _requestId, eventsSent) => responsesErrorEvent(code, message, eventsSent),
  upstreamError: openAiUpstreamError
}
