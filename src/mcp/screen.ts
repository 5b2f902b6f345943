/**
 * The MCP gate's result screen (issue 18 §2): a server's `tools/call` result goes to the result
 * screen (src/screening/Screening.ts: `screenResults`, the `screening:` settings) as one fresh
 * result, its call id `mcp-<JSON-RPC id>`, before the client sees it. In enforce a flagged result is
 * replaced by `screening.notice` (as a tool result the agent reads, `isError: false`); in shadow it
 * is only recorded; baseline screens nothing. A result without text (images only) is not rated.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import type { AuditWriteError } from "../../layers/AuditSink.js"
import { contentText } from "../screening/results.js"
import { screenResults, Screening } from "../screening/Screening.js"
import { judgeContextOf, toolCallIdOf, type McpSessionContext, type McpToolCall } from "./rule-call.js"

/**
 * Everything of a tool result the agent may read as text: the `text` parts, the text of embedded
 * resources, and the structured content (as JSON) — an injection in any of them is rated. Null when
 * there is none (images only).
 */
export const resultText = (result: CallToolResult): string | null => {
  const parts: Array<string> = []
  const texts = contentText(result.content, ["text"])
  if (texts !== null) parts.push(texts)
  for (const c of result.content ?? []) {
    if (c.type === "resource" && "text" in c.resource && typeof c.resource.text === "string") parts.push(c.resource.text)
  }
  if (result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent))
  return parts.length === 0 ? null : parts.join("\n")
}

/** Screen one tool result; the result the client gets (a replaced one has the notice as its only content, no structured content). */
export const screenToolResult = (
  result: CallToolResult,
  call: McpToolCall,
  session: McpSessionContext
): Effect.Effect<CallToolResult, AuditWriteError, Screening> =>
  Effect.gen(function* () {
    if (session.arm.arm === "baseline") return result
    const text = resultText(result)
    if (text === null) return result
    const rulings = yield* screenResults(
      {
        arm: session.arm.arm,
        wire: "mcp",
        mcpServer: session.server,
        context: judgeContextOf(session, `${session.sessionId ?? "mcp"}:${String(call.requestId)}`)
      },
      [{ position: { index: 0, block: null }, callId: toolCallIdOf(call.requestId), text, fresh: true }]
    )
    const ruling = rulings[0]
    return ruling !== undefined && ruling.replaced ? { content: [{ type: "text", text: ruling.notice ?? "" }] } : result
  })
