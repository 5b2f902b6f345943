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
import { toolCallIdOf, type McpSessionContext, type McpToolCall } from "./rule-call.js"

/** Screen one tool result; the result the client gets. */
export const screenToolResult = (
  result: CallToolResult,
  call: McpToolCall,
  session: McpSessionContext
): Effect.Effect<CallToolResult, AuditWriteError, Screening> =>
  Effect.gen(function* () {
    const text = contentText(result.content, ["text"])
    if (text === null || session.arm.arm === "baseline") return result
    const rulings = yield* screenResults(
      {
        arm: session.arm.arm,
        wire: "mcp",
        mcpServer: session.server,
        context: {
          requestId: `${session.sessionId ?? "mcp"}:${String(call.requestId)}`,
          runId: session.runId,
          episodeId: session.episodeId,
          sessionId: session.sessionId,
          principal: session.principal,
          agentModel: session.agentModel,
          headers: session.headers
        }
      },
      [{ position: { index: 0, block: null }, callId: toolCallIdOf(call.requestId), text, fresh: true }]
    )
    const ruling = rulings[0]
    return ruling !== undefined && ruling.replaced ? { content: [{ type: "text", text: ruling.notice ?? "" }] } : result
  })
