/**
 * Enforce: the refusal sentence for a removed call, and how a choice's message changes when calls
 * are removed (reference §2.5 with architecture decision 3: partial enforce tells the agent).
 */
export const DEFAULT_REFUSAL_TEMPLATE =
  "I did not perform this action. The tool call `{tool_name}` was blocked by the tool-call safety judge ({category}): {reason}"

export interface RefusalFields {
  readonly tool_name: string
  readonly category: string
  readonly reason: string
}

/** `str.format`-style: `{tool_name}`, `{category}`, `{reason}`; `{{` and `}}` are literal braces. */
export const renderRefusal = (template: string, f: RefusalFields): string =>
  template.replace(/\{\{|\}\}|\{(tool_name|category|reason)\}/g, (m, key: keyof RefusalFields | undefined) => {
    if (m === "{{") return "{"
    if (m === "}}") return "}"
    if (key === "reason") return f.reason.trim() === "" ? "no reason given" : f.reason
    return key ? f[key] : m
  })

export type PartialRefusal = "content" | "drop"

/** The notes appended to prior content: trimmed prior content, a blank line, then the notes. */
export const withNotes = (prior: unknown, notes: string): string => {
  const p = typeof prior === "string" ? prior.trim() : ""
  return p === "" ? notes : `${p}\n\n${notes}`
}

/** The refusal sentences of the removed calls (call index → sentence), in call order, joined by a space. */
export const refusalNotes = (removed: ReadonlyMap<number, string>): string =>
  [...removed.entries()].sort(([a], [b]) => a - b).map(([, s]) => s).join(" ")

/**
 * Remove the calls whose index is in `removed` from an assistant message (mutated in place).
 * Returns the new finish_reason: `tool_calls` when some survive, `stop` when none do.
 */
export const stripCalls = (
  message: Record<string, unknown>,
  removed: ReadonlyMap<number, string>,
  partial: PartialRefusal
): "tool_calls" | "stop" => {
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : []
  const kept = calls.filter((_, i) => !removed.has(i))
  const notes = refusalNotes(removed)
  if (kept.length > 0) {
    message.tool_calls = kept
    if (partial === "content") message.content = withNotes(message.content, notes)
    return "tool_calls"
  }
  message.tool_calls = null
  message.content = withNotes(message.content, notes)
  return "stop"
}
