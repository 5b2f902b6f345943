/**
 * The tools the arm's judge does not grant, hidden from an MCP `tools/list` answer (issue 18): in
 * the enforce arm, when the judge answers `grants` (judges/Judge.ts: the `rule` kind in
 * `mode: scope`, or a `layered` judge over one), the client is shown only the granted tools, and
 * every answer that hid something is recorded as one `tools_hidden` audit record
 * (src/domain/audit-record.ts). Shadow and baseline show every tool. A `tools/call` for a hidden
 * tool is still ruled (the judge denies it) and recorded as usual.
 */
import { Effect } from "effect"
import type { AuditSinkShape, AuditWriteError } from "../../layers/AuditSink.js"
import type { Judge } from "../../judges/Judge.js"
import { judgeContextOf, type McpSessionContext, type McpTool } from "./rule-call.js"

/** The names of the tools to hide from one `tools/list` answer (recorded when any), in the server's order. */
export type ToolsFilter = (tools: ReadonlyArray<McpTool>) => Effect.Effect<ReadonlyArray<string>, AuditWriteError>

/** The filter of a session's `tools/list` answers; null when nothing is ever hidden (not enforce, or a judge without `grants`). */
export const toolsFilter = (judge: Judge | undefined, session: McpSessionContext, audit: AuditSinkShape): ToolsFilter | null => {
  const grants = judge?.grants
  if (session.arm.arm !== "enforce" || judge === undefined || grants === undefined) return null
  const ctx = judgeContextOf(session, `${session.sessionId ?? "mcp"}:tools/list`)
  return (tools) =>
    Effect.gen(function* () {
      const hidden = tools.filter((t) => !grants(t.name, ctx)).map((t) => t.name)
      if (hidden.length === 0) return hidden
      yield* audit.append(session.runId, {
        type: "tools_hidden",
        run_id: session.runId,
        episode_id: session.episodeId,
        session_id: session.sessionId,
        principal: session.principal,
        arm: "enforce",
        wire: "mcp",
        mcp_server: session.server,
        judge: judge.judge,
        hidden,
        shown: tools.length - hidden.length
      })
      return hidden
    })
}
