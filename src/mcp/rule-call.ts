/**
 * One MCP `tools/call` put to the gate: the call in the chat call shape (`{id, type, function:
 * {name, arguments}}`, arguments as JSON text), the server's tools (from the last `tools/list` that
 * passed through) in the chat function-tool shape, `wire: mcp` and the server's name; the gate
 * rules it, applies fail_policy, the cache, the deadline and hold_policy, and records it once.
 *
 * The answer: forward the call, or answer it here with the refusal note as a tool result
 * (`isError: true`) — a denied call never reaches the server.
 */
import { Effect } from "effect"
import type { AuditWriteError } from "../../layers/AuditSink.js"
import type { JudgeContext } from "../../judges/Judge.js"
import type { CallRuling, GateShape } from "../gate/Gate.js"
import type { McpArm } from "./arm.js"

/** What the gate needs to know about one gated MCP session. */
export interface McpSessionContext {
  readonly server: string
  readonly arm: McpArm
  /** recorded as `agent_model` (the MCP server's name, `mcp:<server>`, unless the client says otherwise) */
  readonly agentModel: string
  readonly runId: string | null
  /** `x-vetobench-episode` when given, else the MCP session */
  readonly episodeId: string | null
  readonly sessionId: string | null
  readonly principal: string | null
  /** request headers, lower-cased, without credentials (empty over stdio) */
  readonly headers: Readonly<Record<string, string>>
}

/** The judges' context of one request of the session (a call, a result, a tools/list answer). */
export const judgeContextOf = (session: McpSessionContext, requestId: string): JudgeContext => ({
  requestId,
  runId: session.runId,
  episodeId: session.episodeId,
  sessionId: session.sessionId,
  principal: session.principal,
  agentModel: session.agentModel,
  headers: session.headers
})

/** A `tools/call` as the client sent it. */
export interface McpToolCall {
  /** the JSON-RPC request id */
  readonly requestId: string | number
  readonly name: string
  readonly arguments: Readonly<Record<string, unknown>>
}

/** An MCP tool (`{name, description, inputSchema}`) as far as the gate reads it. */
export interface McpTool {
  readonly name: string
  readonly description?: string | undefined
  readonly inputSchema?: unknown
}

export type McpCallDecision =
  | { readonly _tag: "forward"; readonly ruling: CallRuling | null }
  | { readonly _tag: "refused"; readonly ruling: CallRuling; readonly result: { readonly content: ReadonlyArray<{ readonly type: "text"; readonly text: string }>; readonly isError: true } }

/** The tool id the record carries: `mcp-<JSON-RPC id>`. */
export const toolCallIdOf = (requestId: string | number): string => `mcp-${String(requestId)}`

/** MCP tools in the chat function-tool shape the judges read. */
export const chatTools = (tools: ReadonlyArray<McpTool>): ReadonlyArray<unknown> =>
  tools.map((t) => ({
    type: "function",
    function: { name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), parameters: t.inputSchema ?? { type: "object" } }
  }))

/** Rule one `tools/call` and record it; fails only when the record cannot be written. */
export const ruleToolCall = (
  gate: GateShape,
  session: McpSessionContext,
  tools: ReadonlyArray<McpTool>,
  call: McpToolCall,
  requestId: string
): Effect.Effect<McpCallDecision, AuditWriteError> =>
  gate
    .ruleChoice(
      {
        arm: session.arm.arm,
        wire: "mcp",
        mcpServer: session.server,
        judge: session.arm.judge,
        tools: chatTools(tools),
        stream: false,
        context: judgeContextOf(session, requestId)
      },
      0,
      [{ id: toolCallIdOf(call.requestId), type: "function", function: { name: call.name, arguments: JSON.stringify(call.arguments) } }]
    )
    .pipe(
      Effect.map((rulings): McpCallDecision => {
        const ruling = rulings[0] ?? null
        if (ruling === null || !ruling.blocked) return { _tag: "forward", ruling }
        return { _tag: "refused", ruling, result: { content: [{ type: "text", text: ruling.refusal ?? `${call.name} was not allowed` }], isError: true } }
      })
    )
