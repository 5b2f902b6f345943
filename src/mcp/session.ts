/**
 * One gated MCP session: the bridge (src/mcp/bridge.ts) between a client transport and a new
 * transport to the configured server, with `tools/call` put to the gate in the caller's runtime.
 * The transport to the server is the caller's (src/mcp/upstream.ts makes the configured one).
 * Used by both ways in: `vetobench mcp stdio` (one session per process) and the proxy's
 * `/mcp/<server>/<arm>` route (one per client session). In the enforce arm of a judge that answers
 * `grants`, `tools/list` answers lose the tools it does not grant (src/mcp/hide-tools.ts).
 */
import { Effect, Runtime } from "effect"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { AuditSink } from "../../layers/AuditSink.js"
import { Judges } from "../../judges/Judges.js"
import { Gate } from "../gate/Gate.js"
import { Screening } from "../screening/Screening.js"
import { type Bridge, type HiddenTools, makeBridge } from "./bridge.js"
import { toolsFilter } from "./hide-tools.js"
import { screenToolResult } from "./screen.js"
import { ruleToolCall, type McpSessionContext, type McpToolCall } from "./rule-call.js"

/** Screen a tool result before the client sees it (default: the result screen of the settings, src/mcp/screen.ts). */
export type ResultScreen = (result: CallToolResult, call: McpToolCall, session: McpSessionContext) => Promise<CallToolResult>

export interface GatedSessionOptions {
  readonly session: McpSessionContext
  /** the transport toward the MCP host */
  readonly client: Transport
  readonly callTimeoutS: number
  /** replace the result screen (default: `screenToolResult` through the `Screening` in context) */
  readonly screen?: ResultScreen
  readonly warn?: (line: string) => void
  /** the transport to the server: `upstreamTransport(settings)` (src/mcp/upstream.ts), or one of the caller's own */
  readonly upstream: Transport
}

/** A bridge whose `tools/call` requests the gate rules and records (one request id per call: `<session>:<JSON-RPC id>`). */
export const gatedSession = (opts: GatedSessionOptions): Effect.Effect<Bridge, never, Gate | Screening | Judges | AuditSink> =>
  Effect.gen(function* () {
    const gate = yield* Gate
    const runtime = yield* Effect.runtime<never>()
    const run = Runtime.runPromise(runtime)
    const screening = yield* Screening
    // the judges and the audit sink of the gate's runtime (src/gate/live.ts): required, so a runtime
    // without them fails to build instead of silently hiding no tools
    const judges = yield* Judges
    const audit = yield* AuditSink
    const filter = opts.session.arm.judge !== null ? toolsFilter(judges.get(opts.session.arm.judge), opts.session, audit) : null
    const screen: ResultScreen =
      opts.screen ?? ((result, call, session) => run(screenToolResult(result, call, session).pipe(Effect.provideService(Screening, screening))))
    return makeBridge({
      server: opts.session.server,
      client: opts.client,
      upstream: opts.upstream,
      callTimeoutMs: opts.callTimeoutS * 1000,
      decide: (call, tools) =>
        run(
          ruleToolCall(gate, opts.session, tools, call, `${opts.session.sessionId ?? "mcp"}:${String(call.requestId)}`).pipe(
            Effect.catchTag("AuditWriteError", (e) => Effect.succeed({ _tag: "DecideFailure" as const, message: `${e.file}: ${e.reason}` }))
          )
        ),
      // no judge named by `screening.judge`: results pass unscreened, without a detour
      ...(opts.screen !== undefined || screening.judge !== null ? { screen: (result, call) => screen(result, call, opts.session) } : {}),
      ...(filter !== null
        ? {
            hideTools: (tools) =>
              run(
                filter(tools).pipe(
                  Effect.map((names): HiddenTools => ({ _tag: "HiddenTools", names })),
                  Effect.catchTag("AuditWriteError", (e) => Effect.succeed({ _tag: "DecideFailure" as const, message: `${e.file}: ${e.reason}` }))
                )
              )
          }
        : {}),
      ...(opts.warn !== undefined ? { warn: opts.warn } : {})
    })
  })
