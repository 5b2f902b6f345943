/**
 * The tool results of an incoming request, per wire format, for the result screen
 * (src/screening/): where they are, which call each answers, their text, whether they are new in
 * this request; and how a flagged one is replaced by the screen's notice (in place).
 *
 * - chat: `messages[i]` with role `tool` (`tool_call_id`) or the legacy `function` (no id); content
 *   a string or a list of `text` parts. Fresh = after the last `assistant` message.
 * - Responses: `input[i]` of type `function_call_output` (`call_id`), `output` a string or a list of
 *   `input_text`/`output_text` parts. Fresh = after the last `function_call` item or assistant message.
 * - Messages: the `tool_result` blocks (`tool_use_id`) of `messages[i].content`, content a string or
 *   a list of `text` blocks. Fresh = in a message after the last `assistant` message.
 *
 * A result with no text (images only, empty list) is not returned: there is nothing to rate.
 * A replaced result keeps its id and its place; its content becomes the notice (a string).
 */
import { isObject } from "../../domain/is-object.js"
import { contentText, type ResultPosition, type ToolResult } from "../../screening/results.js"

const lastIndex = <A>(xs: ReadonlyArray<A>, p: (x: A) => boolean): number => {
  for (let i = xs.length - 1; i >= 0; i--) if (p(xs[i]!)) return i
  return -1
}

const idOf = (v: unknown): string | null => (typeof v === "string" ? v : null)

export const chatResults = (body: Record<string, unknown>): ReadonlyArray<ToolResult> => {
  const messages = body.messages
  if (!Array.isArray(messages)) return []
  const lastModel = lastIndex(messages, (m) => isObject(m) && m.role === "assistant")
  const out: Array<ToolResult> = []
  messages.forEach((m, index) => {
    if (!isObject(m) || (m.role !== "tool" && m.role !== "function")) return
    const text = contentText(m.content, ["text"])
    if (text === null) return
    out.push({ position: { index, block: null }, callId: m.role === "tool" ? idOf(m.tool_call_id) : null, text, fresh: index > lastModel })
  })
  return out
}

export const replaceChatResult = (body: Record<string, unknown>, at: ResultPosition, notice: string): void => {
  const m: unknown = Array.isArray(body.messages) ? body.messages[at.index] : undefined
  if (isObject(m)) m.content = notice
}

const isModelItem = (i: unknown): boolean =>
  isObject(i) && (i.type === "function_call" || (i.role === "assistant" && (i.type === undefined || i.type === "message")))

export const responsesResults = (body: Record<string, unknown>): ReadonlyArray<ToolResult> => {
  const input = body.input
  if (!Array.isArray(input)) return []
  const lastModel = lastIndex(input, isModelItem)
  const out: Array<ToolResult> = []
  input.forEach((item, index) => {
    if (!isObject(item) || item.type !== "function_call_output") return
    const text = contentText(item.output, ["input_text", "output_text", "text"])
    if (text === null) return
    out.push({ position: { index, block: null }, callId: idOf(item.call_id), text, fresh: index > lastModel })
  })
  return out
}

export const replaceResponsesResult = (body: Record<string, unknown>, at: ResultPosition, notice: string): void => {
  const item: unknown = Array.isArray(body.input) ? body.input[at.index] : undefined
  if (isObject(item)) item.output = notice
}

export const messagesResults = (body: Record<string, unknown>): ReadonlyArray<ToolResult> => {
  const messages = body.messages
  if (!Array.isArray(messages)) return []
  const lastModel = lastIndex(messages, (m) => isObject(m) && m.role === "assistant")
  const out: Array<ToolResult> = []
  messages.forEach((m, index) => {
    if (!isObject(m) || !Array.isArray(m.content)) return
    m.content.forEach((b: unknown, block) => {
      if (!isObject(b) || b.type !== "tool_result") return
      const text = contentText(b.content, ["text"])
      if (text === null) return
      out.push({ position: { index, block }, callId: idOf(b.tool_use_id), text, fresh: index > lastModel })
    })
  })
  return out
}

export const replaceMessagesResult = (body: Record<string, unknown>, at: ResultPosition, notice: string): void => {
  const m: unknown = Array.isArray(body.messages) ? body.messages[at.index] : undefined
  if (!isObject(m) || !Array.isArray(m.content) || at.block === null) return
  const b: unknown = m.content[at.block]
  if (isObject(b)) b.content = notice
}
