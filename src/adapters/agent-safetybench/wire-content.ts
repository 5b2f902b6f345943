/**
 * Reading the episode's chat conversation for the other wire formats (wire-responses.ts,
 * wire-messages.ts): a message's text, its tool calls and the tools offered, each checked, so a
 * conversation a format cannot carry is one clear error naming the message, never a silent loss.
 */
import { Either } from "effect"
import { isObject } from "../../domain/is-object.js"
import { pyJsonDumps } from "../../domain/python-json.js"
import type { Message } from "./client.js"

/**
 * The text of a message's `content`: a string, nothing (`null`, absent: ""), or a list of text
 * parts (`{type: "text", text}`) joined; any other part (an image, …) is not carried.
 */
export const contentText = (content: unknown, where: string): Either.Either<string, string> => {
  if (content === undefined || content === null) return Either.right("")
  if (typeof content === "string") return Either.right(content)
  if (!Array.isArray(content)) return Either.left(`${where}: content is neither text nor a list of parts`)
  const texts: Array<string> = []
  for (const [i, part] of content.entries()) {
    if (!isObject(part) || part.type !== "text" || typeof part.text !== "string") {
      return Either.left(`${where}: content[${i}] is not a text part (only text is carried)`)
    }
    texts.push(part.text)
  }
  return Either.right(texts.join(""))
}

/** One tool call of an assistant message, as the other formats need it. */
export interface CallOf {
  readonly id: string
  readonly name: string
  /** the `function.arguments` text as the episode holds it ("" when absent; a non-string is JSON-encoded) */
  readonly arguments: string
}

/** The tool calls of an assistant message (`tool_calls`, chat shape); each needs a string id and name. */
export const callsOf = (m: Message, where: string): Either.Either<ReadonlyArray<CallOf>, string> => {
  const calls = m.tool_calls
  if (calls === undefined || calls === null) return Either.right([])
  if (!Array.isArray(calls)) return Either.left(`${where}: tool_calls is not a list`)
  const out: Array<CallOf> = []
  for (const [i, c] of calls.entries()) {
    const fn = isObject(c) && isObject(c.function) ? c.function : undefined
    if (!isObject(c) || fn === undefined || typeof fn.name !== "string") return Either.left(`${where}: tool_calls[${i}] has no function name`)
    if (typeof c.id !== "string") return Either.left(`${where}: tool_calls[${i}] (${fn.name}) has no string id to answer it by`)
    const raw = fn.arguments
    const args = typeof raw === "string" ? raw : raw === undefined || raw === null ? "" : pyJsonDumps(raw, { ensureAscii: false })
    out.push({ id: c.id, name: fn.name, arguments: args })
  }
  return Either.right(out)
}

/** The `tool_call_id` a tool message answers. */
export const toolCallIdOf = (m: Message, where: string): Either.Either<string, string> =>
  typeof m.tool_call_id === "string" ? Either.right(m.tool_call_id) : Either.left(`${where}: a tool message without a string tool_call_id`)

/** A tool offered, from the chat shape `{type: "function", function: {name, description?, parameters?}}`. */
export interface ToolOf {
  readonly name: string
  readonly description?: string
  readonly parameters?: Readonly<Record<string, unknown>>
}

export const toolsOf = (tools: ReadonlyArray<Message>): Either.Either<ReadonlyArray<ToolOf>, string> => {
  const out: Array<ToolOf> = []
  for (const [i, t] of tools.entries()) {
    const fn = t.type === "function" && isObject(t.function) ? t.function : undefined
    if (fn === undefined || typeof fn.name !== "string") return Either.left(`tools[${i}] is not a function tool with a name`)
    out.push({
      name: fn.name,
      ...(typeof fn.description === "string" ? { description: fn.description } : {}),
      ...(isObject(fn.parameters) ? { parameters: fn.parameters } : {})
    })
  }
  return Either.right(out)
}
