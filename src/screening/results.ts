/**
 * A tool result as the result screen sees it, whatever carried it: a chat `tool` message, a
 * Responses `function_call_output` item, a Messages `tool_result` block, an MCP `tools/call` result.
 */

/** Where a result is in its request: `messages[index]` / `input[index]`, and the content block of a Messages message. */
export interface ResultPosition {
  readonly index: number
  readonly block: number | null
}

export interface ToolResult {
  readonly position: ResultPosition
  /** the id of the call it answers (`tool_call_id`, `call_id`, `tool_use_id`); null if it has none */
  readonly callId: string | null
  /** its text: a string content, or the text parts of a content list joined by newlines */
  readonly text: string
  /**
   * new in this request: it comes after the conversation's last model turn (an assistant message,
   * or in Responses a `function_call` item). Only fresh results are screened and recorded; an
   * older one is one the client resends (see Screening.ts).
   */
  readonly fresh: boolean
}

/** The text of a content value: a string, or the `text` of the list's parts of `textTypes`, joined by newlines; null when none. */
export const contentText = (content: unknown, textTypes: ReadonlyArray<string>): string | null => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return null
  const parts: Array<string> = []
  for (const p of content) {
    if (typeof p === "object" && p !== null && !Array.isArray(p)) {
      const part = p as Record<string, unknown>
      if (typeof part.type === "string" && textTypes.includes(part.type) && typeof part.text === "string") parts.push(part.text)
    }
  }
  return parts.length === 0 ? null : parts.join("\n")
}
