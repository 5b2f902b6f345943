/**
 * The tool results of an incoming request, per wire format, for the result screen
 * (src/screening/): where they are, which call each answers, their text, whether they are new in
 * this request; and how a flagged one is replaced by the screen's notice (in place).
 *
 * - chat: `messages[i]` with role `tool` (`tool_call_id`) or the legacy `function` (no id); content
 *   a string or a list of `text` parts. Fresh = after the last `assistant` message.
 * - Responses: `input[i]` of the output item types a client sends back for the calls it ran:
 *   `function_call_output` and `custom_tool_call_output` (`call_id`; `output` a string or a list of
 *   `input_text`/`output_text` parts), `local_shell_call_output` (`id` of the call; `output` a
 *   string), `shell_call_output` (`call_id`; `output` a list of `{stdout, stderr, outcome}`),
 *   `apply_patch_call_output` (`call_id`; `output` the tool's log, optional). A
 *   `computer_call_output` is a screenshot: no text. Fresh = after the last model item (a call item
 *   of any client-run kind, or an assistant message).
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

/** Input items the model produced: its calls of every client-run kind, and assistant messages. */
const MODEL_ITEM_TYPES: ReadonlySet<unknown> = new Set(["function_call", "custom_tool_call", "computer_call", "local_shell_call", "shell_call", "apply_patch_call"])

const isModelItem = (i: unknown): boolean =>
  isObject(i) && (MODEL_ITEM_TYPES.has(i.type) || (i.role === "assistant" && (i.type === undefined || i.type === "message")))

const RESPONSES_TEXT_PARTS = ["input_text", "output_text", "text"]

/** The text of a shell call's output chunks: each chunk's stdout then stderr, non-empty ones joined by newlines. */
const shellOutputText = (output: unknown): string | null => {
  if (!Array.isArray(output)) return null
  const parts: Array<string> = []
  for (const chunk of output) {
    if (!isObject(chunk)) continue
    for (const stream of [chunk.stdout, chunk.stderr]) if (typeof stream === "string" && stream !== "") parts.push(stream)
  }
  return parts.length === 0 ? null : parts.join("\n")
}

/** The call id and text of one Responses output item a client sends back; null when it is not one, or has no text. */
const responsesOutput = (item: Record<string, unknown>): { readonly callId: string | null; readonly text: string | null } | null => {
  switch (item.type) {
    case "function_call_output":
    case "custom_tool_call_output":
      return { callId: idOf(item.call_id), text: contentText(item.output, RESPONSES_TEXT_PARTS) }
    case "local_shell_call_output":
      return { callId: idOf(item.id), text: typeof item.output === "string" ? item.output : null }
    case "shell_call_output":
      return { callId: idOf(item.call_id), text: shellOutputText(item.output) }
    case "apply_patch_call_output":
      return { callId: idOf(item.call_id), text: typeof item.output === "string" ? item.output : null }
    default:
      return null
  }
}

export const responsesResults = (body: Record<string, unknown>): ReadonlyArray<ToolResult> => {
  const input = body.input
  if (!Array.isArray(input)) return []
  const lastModel = lastIndex(input, isModelItem)
  const out: Array<ToolResult> = []
  input.forEach((item, index) => {
    if (!isObject(item)) return
    const result = responsesOutput(item)
    if (result === null || result.text === null) return
    out.push({ position: { index, block: null }, callId: result.callId, text: result.text, fresh: index > lastModel })
  })
  return out
}

/** Put the notice in place of an output item's output, in the shape its type has (a shell call's output stays a list of chunks). */
export const replaceResponsesResult = (body: Record<string, unknown>, at: ResultPosition, notice: string): void => {
  const item: unknown = Array.isArray(body.input) ? body.input[at.index] : undefined
  if (!isObject(item)) return
  if (item.type === "shell_call_output") {
    const first: unknown = Array.isArray(item.output) ? item.output[0] : undefined
    const outcome = isObject(first) && isObject(first.outcome) ? first.outcome : { type: "exit", exit_code: 0 }
    item.output = [{ stdout: notice, stderr: "", outcome }]
  } else item.output = notice
}

/**
 * The text of a Messages `tool_result`'s content the model reads: a string, `text` blocks, a
 * `document` block with a text source (or its title/context), a `search_result` block's text parts
 * and title. Null when there is none (images only).
 */
const toolResultText = (content: unknown): string | null => {
  if (!Array.isArray(content)) return contentText(content, ["text"])
  const parts: Array<string> = []
  for (const b of content) {
    if (!isObject(b)) continue
    if (b.type === "text" && typeof b.text === "string") parts.push(b.text)
    else if (b.type === "document") {
      for (const t of [b.title, b.context]) if (typeof t === "string") parts.push(t)
      if (isObject(b.source) && b.source.type === "text" && typeof b.source.data === "string") parts.push(b.source.data)
      if (isObject(b.source) && b.source.type === "content") {
        const inner = contentText(b.source.content, ["text"])
        if (inner !== null) parts.push(inner)
      }
    } else if (b.type === "search_result") {
      for (const t of [b.title, b.source]) if (typeof t === "string") parts.push(t)
      const inner = contentText(b.content, ["text"])
      if (inner !== null) parts.push(inner)
    }
  }
  return parts.length === 0 ? null : parts.join("\n")
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
      const text = toolResultText(b.content)
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
