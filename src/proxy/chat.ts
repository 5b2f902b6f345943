/**
 * `POST /v1/chat/completions` — the gated chat route (reference §2.2–2.5, architecture 1–6): the
 * chat wire format (`wire/chat.ts` for answers, `wire/chat-sse.ts` for streams) on the one gated route.
 */
import { normaliseChatBody } from "../domain/normalise.js"
import { errorBody } from "./errors.js"
import { openAiUpstreamError, readChatBody } from "./forward.js"
import type { WireFormat } from "./gated-route.js"
import { gateChatText } from "./wire/chat.js"
import { chatResults, replaceChatResult } from "./wire/tool-results.js"
import { frame, gateSseStream } from "./wire/chat-sse.js"

export const chatFormat: WireFormat = {
  wire: "chat",
  path: "chat/completions",
  readBody: readChatBody,
  normalise: (body, target) => {
    normaliseChatBody(body, target.model, target.defaults)
  },
  results: chatResults,
  replaceResult: replaceChatResult,
  tools: (body) => (Array.isArray(body.tools) ? body.tools : undefined),
  gateText: gateChatText,
  gateStream: gateSseStream,
  errorBody,
  errorEvent: (code, message, requestId) => frame(errorBody(code, message, requestId)),
  upstreamError: openAiUpstreamError
}

