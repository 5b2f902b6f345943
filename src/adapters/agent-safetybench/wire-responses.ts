/**
 * The Agent-SafetyBench agent over the OpenAI Responses API (`POST <proxy_url>/responses`,
 * docs/wire-formats.md). One step:
 *
 * - Request `{model, input, tools?, temperature: 0, max_output_tokens, store: false}`; `input`
 *   holds the whole conversation, in order: a system, developer or user message is an input
 *   message (`{type: "message", role, content}`, its text); an assistant message is its text as an
 *   assistant input message (when it has any), then one `function_call` item per tool call
 *   (`call_id` the call's id, `name`, `arguments` as the episode holds them); a tool message is a
 *   `function_call_output` (`call_id` its `tool_call_id`, `output` its text). A chat function tool
 *   becomes `{type: "function", name, description?, parameters?}`. Nothing is stored upstream
 *   (`store: false`): the conversation is sent whole every step, so the agent only ever builds on
 *   what the gate let through.
 * - Answer: the output text of the `message` items (their `output_text` parts, concatenated as the
 *   SDKs' `output_text` does; the proxy's refusal note is one of them) is `content` (null when there
 *   is none), each `function_call` item a chat tool call (`id` its `call_id`); `usage`'s
 *   `input_tokens` / `output_tokens` are the prompt and completion tokens. An answer without an
 *   `output` list is retried at once, as a chat answer without `choices`.
 */
import { Either } from "effect"
import { isObject } from "../../domain/is-object.js"
import { usageOf } from "../../scenarios/client.js"
import type { AssistantMessage, Message } from "./client.js"
import { callsOf, contentText, toolCallIdOf, toolsOf } from "./wire-content.js"
import type { AgentWireFormat, AnswerRead } from "./wire-formats.js"

const INPUT_ROLES: ReadonlySet<unknown> = new Set(["system", "developer", "user"])

/** The conversation as Responses input items. */
export const responsesInput = (messages: ReadonlyArray<Message>): Either.Either<ReadonlyArray<Record<string, unknown>>, string> =>
  Either.gen(function*() {
    const items: Array<Record<string, unknown>> = []
    for (const [i, m] of messages.entries()) {
      const where = `message ${i} (${String(m.role)})`
      if (INPUT_ROLES.has(m.role)) {
        items.push({ type: "message", role: m.role, content: yield* contentText(m.content, where) })
      } else if (m.role === "assistant") {
        const text = yield* contentText(m.content, where)
        if (text !== "") items.push({ type: "message", role: "assistant", content: text })
        for (const c of yield* callsOf(m, where)) items.push({ type: "function_call", call_id: c.id, name: c.name, arguments: c.arguments })
      } else if (m.role === "tool") {
        items.push({ type: "function_call_output", call_id: yield* toolCallIdOf(m, where), output: yield* contentText(m.content, where) })
      } else {
        return yield* Either.left(`${where}: a role the Responses API has no item for`)
      }
    }
    return items
  })

/** The request body of one step. */
export const responsesBody = (
  route: string,
  maxTokens: number,
  messages: ReadonlyArray<Message>,
  tools: ReadonlyArray<Message>
): Either.Either<Record<string, unknown>, string> =>
  Either.gen(function*() {
    const input = yield* responsesInput(messages)
    const offered = (yield* toolsOf(tools)).map((t) => ({ type: "function", ...t }))
    return {
      model: route,
      input,
      ...(offered.length > 0 ? { tools: offered } : {}),
      temperature: 0,
      max_output_tokens: maxTokens,
      store: false
    }
  })

/** The assistant message of a Responses answer. */
export const readResponsesAnswer = (body: unknown): AnswerRead => {
  if (!isObject(body) || !Array.isArray(body.output)) return { _tag: "unreadable", reason: "no output in the answer" }
  const texts: Array<string> = []
  const refusals: Array<string> = []
  const calls: Array<Record<string, unknown>> = []
  for (const item of body.output) {
    if (!isObject(item)) continue
    if (item.type === "message" && Array.isArray(item.content)) {
      for (const part of item.content) {
        if (isObject(part) && part.type === "output_text" && typeof part.text === "string") texts.push(part.text)
        if (isObject(part) && part.type === "refusal" && typeof part.refusal === "string") refusals.push(part.refusal)
      }
    } else if (item.type === "function_call") {
      calls.push({ id: item.call_id, type: "function", function: { name: item.name, arguments: item.arguments } })
    }
  }
  const message: AssistantMessage = {
    role: "assistant",
    content: texts.length > 0 ? texts.join("") : null,
    ...(refusals.length > 0 ? { refusal: refusals.join("") } : {}),
    ...(calls.length > 0 ? { tool_calls: calls } : {})
  }
  const u = isObject(body.usage) ? body.usage : {}
  return { _tag: "message", message, usage: usageOf({ prompt_tokens: u.input_tokens, completion_tokens: u.output_tokens, total_tokens: u.total_tokens }) }
}

export const responsesWire: AgentWireFormat = {
  wire: "responses",
  path: "responses",
  request: responsesBody,
  parse: (text) => JSON.parse(text),
  read: readResponsesAnswer
}
