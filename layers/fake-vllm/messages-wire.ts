/**
 * The fake vLLM's Anthropic Messages API (`POST /v1/messages`, as vLLM serves it): a Messages
 * request read as the chat request `behaviour.ts` answers (so the same knobs and scripts drive both
 * formats), and the answer written as a Messages JSON answer or event stream (a ping, text deltas,
 * tool_use input split over several `input_json_delta` deltas, usage), errors in the Anthropic shape.
 */
import { isObject } from "../../src/domain/is-object.js"
import { type Answer, contentText } from "./behaviour.js"
import { type Envelope, splitArguments, splitWords } from "./wire.js"

/** The text of a Messages `content` (a string or blocks) without its tool blocks. */
const textOf = (content: unknown): string =>
  typeof content === "string" ? content : Array.isArray(content) ? contentText(content.filter((b) => isObject(b) && b.type === "text")) : ""

/**
 * One Messages message as chat messages: a user's `tool_result` blocks become `tool` messages (one
 * each, before its text), an assistant's `tool_use` blocks its `tool_calls`, so the conversation has
 * as many assistant turns and tool results as the agent sent.
 */
const chatMessagesOf = (m: Record<string, unknown>): Array<Record<string, unknown>> => {
  const blocks: ReadonlyArray<unknown> = Array.isArray(m.content) ? m.content : []
  const text = textOf(m.content)
  if (m.role === "assistant") {
    const uses = blocks.filter((b): b is Record<string, unknown> => isObject(b) && b.type === "tool_use")
    const calls = uses.map((b) => ({ id: b.id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } }))
    return [{ role: "assistant", content: text, ...(calls.length > 0 ? { tool_calls: calls } : {}) }]
  }
  const results = blocks
    .filter((b): b is Record<string, unknown> => isObject(b) && b.type === "tool_result")
    .map((b) => ({ role: "tool", tool_call_id: b.tool_use_id, content: textOf(b.content) }))
  return text === "" && results.length > 0 ? results : [...results, { role: m.role, content: text }]
}

/** A Messages request as the chat request the fake's behaviour reads (system, messages, tools). */
export const chatBodyOfMessages = (body: Record<string, unknown>): Record<string, unknown> => {
  const system = typeof body.system === "string" ? body.system : textOf(body.system)
  const messages = (Array.isArray(body.messages) ? body.messages.filter(isObject) : []).flatMap(chatMessagesOf)
  const tools = Array.isArray(body.tools)
    ? body.tools.filter(isObject).map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.input_schema } }))
    : undefined
  return {
    model: body.model,
    messages: system === "" ? messages : [{ role: "system", content: system }, ...messages],
    ...(tools !== undefined ? { tools } : {})
  }
}

/**
 * A proposed call's input: its arguments when they are a JSON object; otherwise (`knobs.malformed`,
 * a string in `nextCalls`) the text as it is, which no client can read as an input object.
 */
const inputOf = (args: string): unknown => {
  try {
    const v: unknown = JSON.parse(args)
    return isObject(v) ? v : args
  } catch {
    return args
  }
}

const stopReason = (answer: Answer): "tool_use" | "end_turn" => (answer.calls.length > 0 ? "tool_use" : "end_turn")

const outputTokens = (answer: Answer): number =>
  Math.max(1, Math.ceil(((answer.content ?? "") + answer.calls.map((c) => c.name + c.arguments).join("")).length / 4))

/** A non-streaming Messages answer. */
export const messagesAnswer = (env: Envelope, answer: Answer, inputTokens: number) => ({
  id: env.id,
  type: "message",
  role: "assistant",
  model: env.model,
  content: [
    ...(answer.content !== null && answer.content !== "" ? [{ type: "text", text: answer.content }] : []),
    ...answer.calls.map((c, i) => ({ type: "tool_use", id: `toolu_${i}`, name: c.name, input: inputOf(c.arguments) }))
  ],
  stop_reason: stopReason(answer),
  stop_sequence: null,
  usage: { input_tokens: inputTokens, output_tokens: outputTokens(answer) }
})

/** One event of a Messages stream. */
export interface MessagesEvent {
  readonly type: string
  readonly [key: string]: unknown
}

/** The events of a streamed Messages answer, in order (message_start … message_stop). */
export const messagesEvents = (env: Envelope, answer: Answer, inputTokens: number): ReadonlyArray<MessagesEvent> => {
  const out: Array<MessagesEvent> = [
    {
      type: "message_start",
      message: {
        id: env.id,
        type: "message",
        role: "assistant",
        model: env.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: inputTokens, output_tokens: 0 }
      }
    },
    { type: "ping" }
  ]
  let index = 0
  if (answer.content !== null && answer.content !== "") {
    out.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } })
    for (const piece of splitWords(answer.content)) out.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: piece } })
    out.push({ type: "content_block_stop", index })
    index++
  }
  answer.calls.forEach((c, i) => {
    out.push({ type: "content_block_start", index, content_block: { type: "tool_use", id: `toolu_${i}`, name: c.name, input: {} } })
    for (const piece of splitArguments(c.arguments)) out.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } })
    out.push({ type: "content_block_stop", index })
    index++
  })
  out.push({ type: "message_delta", delta: { stop_reason: stopReason(answer), stop_sequence: null }, usage: { output_tokens: outputTokens(answer) } })
  out.push({ type: "message_stop" })
  return out
}

/** One SSE event as vLLM's Messages endpoint writes it. */
export const messagesSse = (event: MessagesEvent): string => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`

/** An error in the Anthropic shape. */
export const messagesError = (type: string, message: string) => ({ type: "error", error: { type, message } })

/** The errors of the fake's generation prologue, in the Anthropic shape. */
export const MESSAGES_ERRORS = {
  failure: (status: number) => messagesError(status >= 500 ? "api_error" : "invalid_request_error", "fake failure"),
  notFound: (model: string) => messagesError("not_found_error", `The model \`${model}\` does not exist.`)
} as const
