/**
 * `vetobench mcp stdio`: a stdio MCP server that is the gate in front of one configured server.
 * It spawns (or reaches) the real server, pumps messages between it and this process's
 * stdin/stdout, rules every `tools/call`, and ends when the host closes stdin. Nothing but MCP
 * messages is written to stdout: warnings go to stderr, as does the spawned server's stderr.
 *
 * The session is the process: its id (`mcp-<uuid>`) is the episode unless `--episode` is given.
 * With `hold_policy: wait` a held call waits for a person through the hold API: with `holdsPort`
 * (`--holds-port`) this process serves it (src/mcp-stdio/holds-server.ts, the proxy's routes and operator
 * token, on 127.0.0.1) and prints its URL to stderr; without, a held call waits until
 * `hold_timeout_s` and is recorded as expired.
 */
import { randomUUID } from "node:crypto"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { Data, Effect } from "effect"
import type { Settings } from "../config/settings.js"
import type { Settings as SettingsService } from "../config/service.js"
import type { Holds } from "../gate/Holds.js"
import type { Gate } from "../gate/Gate.js"
import type { Screening } from "../screening/Screening.js"
import type { Judges } from "../../judges/Judges.js"
import type { AuditSink } from "../../layers/AuditSink.js"
import { didYouMeanClause } from "../domain/suggest.js"
import type { McpArm } from "../mcp/arm.js"
import { serveHolds } from "./holds-server.js"
import { gatedSession, type ResultScreen } from "../mcp/session.js"
import type { McpServerSettings } from "../config/mcp-settings.js"
import { upstreamTransport } from "../mcp/upstream.js"

/** The gate could not start: an unknown server, or a server that cannot be started or reached. */
export class McpStartError extends Data.TaggedError("McpStartError")<{ readonly message: string }> {}

/**
 * The server closed the connection (crashed or quit) before the host ended the session. The gate
 * stays up until then, answering every later request with an MCP error and recording the calls;
 * this error is how the session's end tells the truth about it (`vetobench mcp stdio` exits 1).
 */
export class McpServerLost extends Data.TaggedError("McpServerLost")<{ readonly message: string }> {}

/** The configured server of this name, or an error naming the configured ones. */
export const serverNamed = (settings: Settings, name: string): Effect.Effect<McpServerSettings, McpStartError> => {
  const server = Object.hasOwn(settings.mcp.servers, name) ? settings.mcp.servers[name] : undefined
  if (server !== undefined) return Effect.succeed(server)
  const names = Object.keys(settings.mcp.servers)
  const hint = didYouMeanClause(name, names)
  return Effect.fail(
    new McpStartError({
      message: `unknown MCP server '${name}'${hint === "" ? "" : `; ${hint}`} (${names.length === 0 ? `${settings.file} has no mcp.servers` : `configured in ${settings.file}: ${names.join(", ")}`})`
    })
  )
}

export interface StdioGateOptions {
  readonly settings: Settings
  readonly server: string
  readonly arm: McpArm
  readonly runId: string | null
  readonly episodeId: string | null
  readonly principal: string | null
  readonly screen?: ResultScreen
  /** serve the hold API on 127.0.0.1 at this port (0: a free one); null: no hold API */
  readonly holdsPort?: number | null
  /** the host side (default: this process's stdin/stdout) */
  readonly client?: Transport
}

const stderrLine = (line: string): void => void process.stderr.write(`vetobench mcp: ${line}\n`)

/** Serve the gate over stdio until the host closes stdin (or the client transport closes). */
export const serveStdio = (opts: StdioGateOptions): Effect.Effect<void, McpStartError | McpServerLost, Gate | Screening | SettingsService | Holds | Judges | AuditSink> =>
  Effect.scoped(Effect.gen(function* () {
    const server = yield* serverNamed(opts.settings, opts.server)
    if (opts.holdsPort !== undefined && opts.holdsPort !== null) {
      const port = opts.holdsPort
      const url = yield* serveHolds(port).pipe(
        Effect.mapError((e) => new McpStartError({ message: `cannot serve the hold API on 127.0.0.1:${port}: ${e.cause instanceof Error ? e.cause.message : String(e.cause)}` }))
      )
      stderrLine(`hold API at ${url}/v1/holds (operator token: proxy.operator_token${opts.settings.proxy.operator_token === null ? ", not set: the API answers 503" : ""})`)
    }
    const sessionId = `mcp-${randomUUID()}`
    const client = opts.client ?? new StdioServerTransport(process.stdin, process.stdout)
    const bridge = yield* gatedSession({
      upstream: upstreamTransport(server),
      client,
      callTimeoutS: opts.settings.mcp.call_timeout_s,
      warn: stderrLine,
      ...(opts.screen !== undefined ? { screen: opts.screen } : {}),
      session: {
        server: opts.server,
        arm: opts.arm,
        agentModel: `mcp:${opts.server}`,
        runId: opts.runId,
        episodeId: opts.episodeId ?? sessionId,
        sessionId,
        principal: opts.principal,
        headers: {}
      }
    })
    yield* Effect.tryPromise({
      try: () => bridge.start(),
      catch: (e) => new McpStartError({ message: `cannot start MCP server '${opts.server}': ${e instanceof Error ? e.message : String(e)}` })
    }).pipe(Effect.tapError(() => Effect.promise(() => bridge.close()))) // a server that started before the host side failed is not left running
    // the SDK's stdio server transport does not watch for the end of stdin: the host closing it ends the gate
    const onEnd = () => void bridge.close()
    if (opts.client === undefined) process.stdin.once("end", onEnd)
    yield* Effect.promise(() => bridge.closed).pipe(
      Effect.onInterrupt(() => Effect.promise(() => bridge.close())),
      Effect.ensuring(Effect.sync(() => process.stdin.off("end", onEnd)))
    )
    if (bridge.upstreamLost()) {
      return yield* new McpServerLost({
        message: `MCP server '${opts.server}' closed the connection before the session ended; the calls after it were answered with errors (see the audit log and the server's stderr above)`
      })
    }
  }))
