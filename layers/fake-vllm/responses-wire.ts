/**
 * The fake vLLM's OpenAI Responses endpoint (`POST /v1/responses`): the request read as the chat
 * behaviour reads a conversation (so `knobs.nextCalls`, `knobs.scripts` and the heuristics answer
 * it alike), and the answer written as vLLM's Responses server writes it — a `response` object, or
 * its event stream (`event: <type>` + `data:`; response.created, response.in_progress, the message
 * item's events with its text in word deltas, each function_call item's events with its arguments
 * split over several deltas, response.completed; `sequence_number` on each; no `[DONE]`).
 *
 * The fake keeps no state: `previous_response_id` is echoed, not resolved (send the conversation
 * as `input` to script several turns).
 */
import { isObject } from "../../src/domain/is-object.js"
import { type Answer, contentText, roughTokens } from "./behaviour.js"
import { type Envelope, splitArguments, splitWords } from "./wire.js"

type Message = Record<string, unknown>

const CALL_ITEMS = new Set(["function_call", "custom_tool_call"])
const CALL_OUTPUTS = new Set(["function_call_output", "custom_tool_call_output"])

/** Input items as chat messages: one assistant message per turn (its text and its calls together). */
const messagesOfInput = (input: unknown): Array<Message> => {
  if (typeof input === "string") return [{ role: "user", content: input }]
  if (!Array.isArray(input)) return []
  const out: Array<Message> = []
  for (const item of input) {
    if (!isObject(item)) continue
    const last = out[out.length - 1]
    if (CALL_ITEMS.has(String(item.type))) {
      const call = {
        id: item.call_id,
        type: "function",
        function: { name: item.name, arguments: item.type === "custom_tool_call" ? item.input : item.arguments }
      }
      if (last !== undefined && last.role === "assistant") last.tool_calls = [...(Array.isArray(last.tool_calls) ? last.tool_calls : []), call]
      else out.push({ role: "assistant", content: null, tool_calls: [call] })
    } else if (CALL_OUTPUTS.has(String(item.type))) {
      out.push({ role: "tool", tool_call_id: item.call_id, content: contentText(item.output) })
    } else if (typeof item.role === "string" && (item.type === undefined || item.type === "message")) {
      out.push({ role: item.role === "developer" ? "system" : item.role, content: contentText(item.content) })
    }
  }
  return out
}

/**
 * A Responses request as the chat behaviour reads it: `instructions` as the system message, `input`
 * as the conversation (function_call items as the assistant's tool calls, their outputs as tool
 * messages), function tools in the chat tool shape.
 */
export const chatBodyOfResponses = (body: Record<string, unknown>): Record<string, unknown> => {
  const system = typeof body.instructions === "string" ? [{ role: "system", content: body.instructions }] : []
  const tools = Array.isArray(body.tools)
    ? body.tools.flatMap((t) =>
        isObject(t) && t.type === "function" && typeof t.name === "string"
          ? [{ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } }]
          : []
      )
    : []
  return { model: body.model, messages: [...system, ...messagesOfInput(body.input)], ...(tools.length > 0 ? { tools } : {}) }
}

const usageOf = (promptTokens: number, answer: Answer) => {
  const output = roughTokens((answer.content ?? "") + answer.calls.map((c) => c.name + c.arguments).join(""))
  return {
    input_tokens: promptTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: promptTokens + output
  }
}

const messageId = (env: Envelope) => `msg_${env.id}`
const callItemId = (i: number) => `fc_call_${i}`

const textPart = (text: string) => ({ type: "output_text", text, annotations: [], logprobs: [] })

const messageItem = (env: Envelope, text: string) => ({
  id: messageId(env),
  type: "message",
  role: "assistant",
  status: "completed",
  content: [textPart(text)]
})

const callItem = (c: Answer["calls"][number], i: number) => ({
  id: callItemId(i),
  type: "function_call",
  call_id: `call_${i}`,
  name: c.name,
  arguments: c.arguments,
  status: "completed"
})

const hasText = (answer: Answer): answer is Answer & { readonly content: string } => typeof answer.content === "string" && answer.content !== ""

/** The `response` object's fields other than its output, status and usage. */
const responseBase = (env: Envelope, body: Record<string, unknown>) => ({
  id: `resp_${env.id}`,
  object: "response",
  created_at: env.created,
  model: env.model,
  error: null,
  incomplete_details: null,
  instructions: typeof body.instructions === "string" ? body.instructions : null,
  metadata: {},
  parallel_tool_calls: true,
  previous_response_id: typeof body.previous_response_id === "string" ? body.previous_response_id : null,
  temperature: typeof body.temperature === "number" ? body.temperature : 1,
  tool_choice: body.tool_choice ?? "auto",
  tools: Array.isArray(body.tools) ? body.tools : [],
  top_p: 1,
  truncation: "disabled"
})

/** A non-streamed `response`: the text as a message item, then one function_call item per call. */
export const responsesAnswer = (env: Envelope, answer: Answer, promptTokens: number, body: Record<string, unknown>) => ({
  ...responseBase(env, body),
  status: "completed",
  output: [...(hasText(answer) ? [messageItem(env, answer.content)] : []), ...answer.calls.map(callItem)],
  usage: usageOf(promptTokens, answer)
})

/** The events of a streamed `response`, in order, numbered from 0. */
export const responsesEvents = (
  env: Envelope,
  answer: Answer,
  promptTokens: number,
  body: Record<string, unknown>
): ReadonlyArray<Record<string, unknown>> => {
  const events: Array<Record<string, unknown>> = []
  const add = (type: string, fields: Record<string, unknown>) => events.push({ type, sequence_number: events.length, ...fields })
  const pending = { ...responseBase(env, body), status: "in_progress", output: [], usage: null }
  add("response.created", { response: pending })
  add("response.in_progress", { response: pending })
  let index = 0
  if (hasText(answer)) {
    const at = { item_id: messageId(env), output_index: index, content_index: 0 }
    add("response.output_item.added", { output_index: index, item: { ...messageItem(env, ""), status: "in_progress", content: [] } })
    add("response.content_part.added", { ...at, part: textPart("") })
    for (const piece of splitWords(answer.content)) add("response.output_text.delta", { ...at, delta: piece, logprobs: [] })
    add("response.output_text.done", { ...at, text: answer.content, logprobs: [] })
    add("response.content_part.done", { ...at, part: textPart(answer.content) })
    add("response.output_item.done", { output_index: index, item: messageItem(env, answer.content) })
    index++
  }
  answer.calls.forEach((c, i) => {
    const item = callItem(c, i)
    add("response.output_item.added", { output_index: index, item: { ...item, arguments: "", status: "in_progress" } })
    for (const piece of splitArguments(c.arguments)) {
      add("response.function_call_arguments.delta", { item_id: item.id, output_index: index, delta: piece })
    }
    add("response.function_call_arguments.done", { item_id: item.id, output_index: index, name: c.name, arguments: c.arguments })
    add("response.output_item.done", { output_index: index, item })
    index++
  })
  add("response.completed", { response: responsesAnswer(env, answer, promptTokens, body) })
  return events
}

/** One event as vLLM's Responses server frames it. */
export const responsesSse = (event: Record<string, unknown>): string => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`
