/**
 * The Agent-SafetyBench agent over the Anthropic Messages API (`POST <proxy_url>/messages`, as
 * vLLM serves it; docs/wire-formats.md). One step:
 *
 * - Request `{model, max_tokens, system?, messages, tools?, temperature: 0}`. The system (and
 *   developer) messages' texts, joined by a blank line, are `system`. The others become turns of
 *   content blocks, neighbours of the same role merged into one turn as the API asks: a user
 *   message is a `text` block; an assistant message its text block (when it has text), then one
 *   `tool_use` block per tool call (`id`, `name`, `input` the arguments read as Python's
 *   `json.loads` reads them, so `21.0` stays a float; "" is `{}`; arguments that are not a JSON
 *   object cannot be carried and are the case's error); a tool message a `tool_result` block of
 *   the user turn (`tool_use_id` its `tool_call_id`, `content` its text). Empty text blocks, which
 *   the API refuses, are left out. A chat function tool becomes `{name, description?,
 *   input_schema}` (`{"type": "object", "properties": {}}` when it declares no parameters).
 * - Answer: the `text` blocks, joined by a blank line (the proxy's refusal note is a block of its
 *   own), are `content` (null when there is none); each `tool_use` block a chat tool call (`id`
 *   the block's id, `arguments` its `input` as Python's `json.dumps` writes it). The answer is read
 *   as Python's `json.loads` reads it, so float literals survive. `usage`'s `input_tokens` /
 *   `output_tokens` are the prompt and completion tokens. An answer without a `content` list is
 *   retried at once, as a chat answer without `choices`.
 */
import { Either } from "effect"
import { isObject } from "../../domain/is-object.js"
import { isPyFloat, parsePythonJson, pyJsonDumps } from "../../domain/python-json.js"
import { usageOf } from "../../scenarios/client.js"
import type { AssistantMessage, Message } from "./client.js"
import { callsOf, contentText, toolCallIdOf, toolsOf } from "./wire-content.js"
import type { AgentWireFormat, AnswerRead } from "./wire-formats.js"

type Block = Readonly<Record<string, unknown>>

interface Turn {
  readonly role: "user" | "assistant"
  readonly content: Array<Block>
}

const EMPTY_SCHEMA = { type: "object", properties: {} }

const isJsonObject = (v: unknown): v is Record<string, unknown> => isObject(v) && !isPyFloat(v)

/** A tool call's arguments as a `tool_use` input object. */
const inputOf = (args: string, where: string): Either.Either<Record<string, unknown>, string> => {
  if (args.trim() === "") return Either.right({})
  let value: unknown
  try {
    value = parsePythonJson(args)
  } catch (e) {
    return Either.left(`${where}: its arguments are not JSON (${e instanceof Error ? e.message : String(e)}), which a tool_use block cannot carry`)
  }
  return isJsonObject(value) ? Either.right(value) : Either.left(`${where}: its arguments are not a JSON object, which a tool_use block cannot carry`)
}

/** The conversation as `system` and Messages turns. */
export const messagesTurns = (
  messages: ReadonlyArray<Message>
): Either.Either<{ readonly system: string; readonly turns: ReadonlyArray<Turn> }, string> =>
  Either.gen(function*() {
    const system: Array<string> = []
    const turns: Array<Turn> = []
    const add = (role: Turn["role"], blocks: ReadonlyArray<Block>) => {
      if (blocks.length === 0) return
      const last = turns[turns.length - 1]
      if (last !== undefined && last.role === role) last.content.push(...blocks)
      else turns.push({ role, content: [...blocks] })
    }
    const textBlock = (text: string): ReadonlyArray<Block> => (text === "" ? [] : [{ type: "text", text }])
    for (const [i, m] of messages.entries()) {
      const where = `message ${i} (${String(m.role)})`
      if (m.role === "system" || m.role === "developer") {
        const text = yield* contentText(m.content, where)
        if (text !== "") system.push(text)
      } else if (m.role === "user") {
        add("user", textBlock(yield* contentText(m.content, where)))
      } else if (m.role === "assistant") {
        const blocks: Array<Block> = [...textBlock(yield* contentText(m.content, where))]
        for (const c of yield* callsOf(m, where)) {
          blocks.push({ type: "tool_use", id: c.id, name: c.name, input: yield* inputOf(c.arguments, `${where}, tool call ${c.name}`) })
        }
        add("assistant", blocks)
      } else if (m.role === "tool") {
        add("user", [{ type: "tool_result", tool_use_id: yield* toolCallIdOf(m, where), content: yield* contentText(m.content, where) }])
      } else {
        return yield* Either.left(`${where}: a role the Messages API has no turn for`)
      }
    }
    return { system: system.join("\n\n"), turns }
  })

/** The request body of one step. */
export const messagesBody = (
  route: string,
  maxTokens: number,
  messages: ReadonlyArray<Message>,
  tools: ReadonlyArray<Message>
): Either.Either<Record<string, unknown>, string> =>
  Either.gen(function*() {
    const { system, turns } = yield* messagesTurns(messages)
    const offered = (yield* toolsOf(tools)).map((t) => ({
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      input_schema: t.parameters ?? EMPTY_SCHEMA
    }))
    return {
      model: route,
      max_tokens: maxTokens,
      ...(system !== "" ? { system } : {}),
      messages: turns,
      ...(offered.length > 0 ? { tools: offered } : {}),
      temperature: 0
    }
  })

/** The assistant message of a Messages answer (parsed by `parsePythonJson`). */
export const readMessagesAnswer = (body: unknown): AnswerRead => {
  if (!isObject(body) || !Array.isArray(body.content)) return { _tag: "unreadable", reason: "no content in the answer" }
  const texts: Array<string> = []
  const calls: Array<Record<string, unknown>> = []
  for (const block of body.content) {
    if (!isObject(block)) continue
    if (block.type === "text" && typeof block.text === "string") texts.push(block.text)
    else if (block.type === "tool_use") {
      calls.push({ id: block.id, type: "function", function: { name: block.name, arguments: pyJsonDumps(block.input ?? {}, { ensureAscii: false }) } })
    }
  }
  const message: AssistantMessage = {
    role: "assistant",
    content: texts.length > 0 ? texts.join("\n\n") : null,
    ...(calls.length > 0 ? { tool_calls: calls } : {})
  }
  const u = isObject(body.usage) ? body.usage : {}
  return { _tag: "message", message, usage: usageOf({ prompt_tokens: u.input_tokens, completion_tokens: u.output_tokens }) }
}

export const messagesWire: AgentWireFormat = {
  wire: "messages",
  path: "messages",
  request: messagesBody,
  parse: parsePythonJson,
  read: readMessagesAnswer
}
