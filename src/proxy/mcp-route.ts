/**
 * `/mcp/<server>/<arm>`: the MCP gate over Streamable HTTP, served by the proxy next to `/v1`.
 *
 * Mounted in the Effect router (so the access log, metrics and request ids cover it) and handed to
 * the SDK's `StreamableHTTPServerTransport` on Node's own request and response
 * (`NodeHttpServerRequest.toIncomingMessage`/`toServerResponse`): the transport writes the answer
 * (JSON or an SSE stream) itself; the route waits until the response is finished and returns its
 * status, which the platform then leaves alone (the Node response has ended).
 *
 * One gated session per MCP session: an `initialize` without `mcp-session-id` opens one (a new
 * transport to the configured server, src/mcp/session.ts); later requests carry the id. The
 * session's `x-vetobench-run`, `-episode`, `-principal` are read from its `initialize` request;
 * the episode is the MCP session id unless `x-vetobench-episode` is given. A `DELETE`, the
 * proxy's shutdown, or `mcp.session_idle_timeout_s` without a request in progress (an open GET
 * stream is one) ends the session and its server. At most `mcp.max_sessions` are open (or
 * starting) at once: an `initialize` past that is refused with 503, so clients that never close
 * their sessions cannot make the proxy spawn servers without end.
 *
 * Errors the gate answers itself are JSON-RPC error objects (the shape an MCP client reads): an
 * unknown server or a bad arm 404/400, an unknown session 404, a bad run id 400.
 */
import { randomUUID } from "node:crypto"
import type { ServerResponse } from "node:http"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js"
import { Context, Effect, Layer, Option, Runtime } from "effect"
import { Judges } from "../../judges/Judges.js"
import { Settings } from "../config/service.js"
import { runIdProblem } from "../domain/run-id.js"
import { CurrentAccess } from "./access-log.js"
import { CurrentRequest } from "./gated-route.js"
import type { Bridge } from "../mcp/bridge.js"
import { parseArm } from "../mcp/arm.js"
import { gatedSession, type ResultScreen } from "../mcp/session.js"
import { upstreamTransport } from "../mcp/upstream.js"

interface OpenSession {
  readonly server: string
  readonly arm: string
  readonly transport: StreamableHTTPServerTransport
  readonly bridge: Bridge
  /** requests of the session being answered (an open GET stream counts until it ends) */
  inFlight: number
  /** armed while nothing is in flight: closes the session when it fires */
  idleTimer: ReturnType<typeof setTimeout> | null
}

export interface McpSessionsShape {
  readonly sessions: Map<string, OpenSession>
  /** sessions being started (counted against `mcp.max_sessions` with the open ones) */
  readonly starting: { n: number }
  /** replaces the result screen of the settings (src/mcp/screen.ts) for every session; undefined: that screen */
  readonly screen: ResultScreen | undefined
}

/** The open MCP sessions of the proxy; closed (with their servers) when the proxy stops. */
export class McpSessions extends Context.Tag("vetobench/McpSessions")<McpSessions, McpSessionsShape>() {
  static readonly make = (screen?: ResultScreen): Layer.Layer<McpSessions> =>
    Layer.scoped(
      McpSessions,
      Effect.acquireRelease(
        Effect.sync((): McpSessionsShape => ({ sessions: new Map(), starting: { n: 0 }, screen })),
        (s) =>
          Effect.promise(() =>
            Promise.all(
              [...s.sessions.values()].map((o) => {
                if (o.idleTimer !== null) clearTimeout(o.idleTimer)
                return o.bridge.close()
              })
            )
          ).pipe(Effect.asVoid)
      )
    )
  static readonly layer: Layer.Layer<McpSessions> = McpSessions.make()
}

const rpcError = (status: number, code: number, message: string) =>
  HttpServerResponse.unsafeJson({ jsonrpc: "2.0", error: { code, message }, id: null }, { status })

/** Resolves with the response's status once the transport has finished it (or the client went away). */
const finished = (res: ServerResponse): Promise<number> =>
  new Promise((resolve) => {
    if (res.writableEnded) return resolve(res.statusCode)
    res.once("close", () => resolve(res.statusCode))
  })

const isInitialize = (body: unknown): boolean =>
  (Array.isArray(body) ? body : [body]).some((m) => typeof m === "object" && m !== null && (m as { method?: unknown }).method === "initialize")

/**
 * A POST's JSON body, read at most `maxBytes` (`proxy.max_body_bytes`) — the gated routes' limit: the
 * MCP route is served outside the platform's own 10 MiB default. None for other methods; fails
 * when the declared length is larger or the body is not JSON (the route answers 400 itself: the
 * SDK never reads it again); a chunked body that grows past the limit ends the connection.
 */
const readJson = (req: HttpServerRequest.HttpServerRequest, maxBytes: number) =>
  req.method !== "POST"
    ? Effect.succeedNone
    : Number(req.headers["content-length"] ?? "0") > maxBytes
    ? Effect.fail(`the request body is larger than proxy.max_body_bytes (${maxBytes} bytes)`)
    : req.json.pipe(
        HttpIncomingMessage.withMaxBodySize(Option.some(maxBytes)),
        Effect.map(Option.some),
        Effect.mapError(() => `the request body is not JSON, or larger than proxy.max_body_bytes (${maxBytes} bytes)`)
      )

/**
 * Answer one request of a session through its transport, keeping the session's idle clock: no
 * deadline while a request is in flight; when the last one ends, the session closes (with its
 * server) unless another request comes within `idleMs`.
 */
const answered = (open: OpenSession, idleMs: number, onIdle: () => void, answer: () => Promise<number>): Promise<number> => {
  open.inFlight += 1
  if (open.idleTimer !== null) {
    clearTimeout(open.idleTimer)
    open.idleTimer = null
  }
  return answer().finally(() => {
    open.inFlight -= 1
    if (open.inFlight > 0) return
    open.idleTimer = setTimeout(onIdle, idleMs)
    open.idleTimer.unref()
  })
}

export const mcpRoute = Effect.gen(function* () {
  const req = yield* HttpServerRequest.HttpServerRequest
  const params = yield* HttpRouter.params
  const access = yield* CurrentAccess
  const meta = yield* CurrentRequest
  const settings = yield* Settings
  const judges = yield* Judges
  const { sessions, starting, screen } = yield* McpSessions
  const runtime = yield* Effect.runtime<never>()
  const idleMs = settings.mcp.session_idle_timeout_s * 1000
  const closeIdle = (id: string, open: OpenSession) => () => {
    if (open.inFlight > 0) return
    Runtime.runFork(runtime)(Effect.logWarning(`closing MCP session ${id} on /mcp/${open.server}/${open.arm}: no request for ${settings.mcp.session_idle_timeout_s}s (mcp.session_idle_timeout_s)`))
    void open.bridge.close()
  }
  const name = params.server ?? ""
  const armSpec = params.arm ?? ""
  const arm = parseArm(armSpec)
  if ("_tag" in arm) {
    access.error = "invalid_arm"
    return rpcError(400, ErrorCode.InvalidRequest, arm.message)
  }
  access.arm = arm.arm
  access.judge = arm.judge
  access.model = `mcp:${name}`
  const server = Object.hasOwn(settings.mcp.servers, name) ? settings.mcp.servers[name] : undefined
  if (server === undefined) {
    access.error = "unknown_mcp_server"
    return rpcError(404, ErrorCode.InvalidRequest, `unknown MCP server '${name}' (configured: ${Object.keys(settings.mcp.servers).join(", ") || "none"})`)
  }
  if (arm.judge !== null && !judges.names.includes(arm.judge)) {
    access.error = "unknown_judge"
    return rpcError(400, ErrorCode.InvalidRequest, `unknown judge '${arm.judge}' (configured: ${judges.names.join(", ")})`)
  }
  const nodeReq = NodeHttpServerRequest.toIncomingMessage(req)
  const nodeRes = NodeHttpServerRequest.toServerResponse(req)
  nodeRes.setHeader("x-request-id", meta.requestId)
  const sid = req.headers["mcp-session-id"]
  if (sid !== undefined) {
    const open = sessions.get(sid)
    if (open === undefined || open.server !== name || open.arm !== armSpec) {
      access.error = "unknown_session"
      return rpcError(404, ErrorCode.ConnectionClosed, `no MCP session ${JSON.stringify(sid.slice(0, 80))} on /mcp/${name}/${armSpec}: initialize a new one`)
    }
    const body = yield* Effect.either(readJson(req, settings.proxy.max_body_bytes))
    if (body._tag === "Left") {
      access.error = "invalid_request"
      return rpcError(400, ErrorCode.ParseError, body.left)
    }
    const parsed = body.right
    const status = yield* Effect.promise(() =>
      answered(open, idleMs, closeIdle(sid, open), () => open.transport.handleRequest(nodeReq, nodeRes, parsed._tag === "Some" ? parsed.value : undefined).then(() => finished(nodeRes)))
    )
    return HttpServerResponse.empty({ status })
  }
  const read = yield* Effect.either(readJson(req, settings.proxy.max_body_bytes))
  if (read._tag === "Left") {
    access.error = "invalid_request"
    return rpcError(400, ErrorCode.ParseError, read.left)
  }
  const body = read.right
  if (req.method !== "POST" || body._tag === "None" || !isInitialize(body.value)) {
    access.error = "no_session"
    return rpcError(400, ErrorCode.InvalidRequest, "no mcp-session-id: start with an initialize request (POST)")
  }
  if (meta.runId !== null) {
    const problem = runIdProblem(meta.runId)
    if (problem !== null) {
      access.error = "invalid_run_id"
      return rpcError(400, ErrorCode.InvalidRequest, `x-vetobench-run: ${problem}`)
    }
  }
  access.runId = meta.runId
  if (sessions.size + starting.n >= settings.mcp.max_sessions) {
    access.error = "too_many_mcp_sessions"
    return rpcError(
      503,
      ErrorCode.InternalError,
      `the proxy has ${settings.mcp.max_sessions} MCP sessions open (mcp.max_sessions): end one (DELETE with its mcp-session-id) or retry after an idle one closes (mcp.session_idle_timeout_s ${settings.mcp.session_idle_timeout_s}s)`
    )
  }
  // the place is taken before anything can yield: concurrent initializes cannot pass the limit together
  starting.n += 1
  const release = Effect.sync(() => void (starting.n -= 1))
  const sessionId = randomUUID()
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => sessionId })
  const bridge = yield* Effect.onExit(gatedSession({
    upstream: upstreamTransport(server),
    client: transport,
    callTimeoutS: settings.mcp.call_timeout_s,
    ...(screen !== undefined ? { screen } : {}),
    warn: (line) => void Runtime.runFork(runtime)(Effect.logWarning(line)),
    session: {
      server: name,
      arm,
      agentModel: `mcp:${name}`,
      runId: meta.runId,
      episodeId: meta.episodeId ?? sessionId,
      sessionId,
      principal: meta.principal,
      headers: meta.headers
    }
  }), (exit) => (exit._tag === "Failure" ? release : Effect.void))
  const started = yield* Effect.promise(() => bridge.start().then(() => null, (e: unknown) => (e instanceof Error ? e.message : String(e)))).pipe(
    // a request interrupted while the server starts (client gone, shutdown) leaves no server behind
    Effect.onInterrupt(() => Effect.promise(() => bridge.close())),
    Effect.ensuring(release)
  )
  if (started !== null) {
    access.error = "mcp_server_unavailable"
    yield* Effect.promise(() => bridge.close())
    return rpcError(502, ErrorCode.ConnectionClosed, `cannot start MCP server '${name}': ${started}`)
  }
  const open: OpenSession = { server: name, arm: armSpec, transport, bridge, inFlight: 0, idleTimer: null }
  sessions.set(sessionId, open)
  void bridge.closed.then(() => {
    if (open.idleTimer !== null) clearTimeout(open.idleTimer)
    sessions.delete(sessionId)
  })
  const status = yield* Effect.promise(() => answered(open, idleMs, closeIdle(sessionId, open), () => transport.handleRequest(nodeReq, nodeRes, body.value).then(() => finished(nodeRes))))
  return HttpServerResponse.empty({ status })
})
