/**
 * The gated MCP session: a message pump between the client's transport (toward the MCP host) and
 * the real server's transport, at the JSON-RPC level, so that everything the gate does not gate
 * passes through untouched — initialisation and version negotiation (client and server agree
 * directly), resources, prompts, notifications, progress, cancellation, and requests from the server
 * (sampling, elicitation, roots).
 *
 * What it does itself:
 * - `tools/call` is put to `decide` (the gate: src/mcp/rule-call.ts) before it reaches the server;
 *   a refused call is answered here; a call the gate cannot record gets an MCP error and is not sent.
 * - a forwarded `tools/call` has a deadline (`mcp.call_timeout_s`): past it the client gets an MCP
 *   error and the server a `notifications/cancelled`; a result that is not a tool result is an MCP
 *   error; a server that closes fails every request it had not answered, and later ones at once.
 * - `tools/list` answers are read to give the judges the tools' descriptions and schemas; with
 *   `hideTools` (the enforce arm of a judge that answers `grants`: src/mcp/hide-tools.ts) the tools
 *   it names are taken out of the answer the client gets, once they are recorded; an answer whose
 *   hiding cannot be recorded is an MCP error. Without it answers pass unchanged.
 * - a `tools/call` result can be screened before the client sees it (`screen`: src/mcp/session.ts
 *   passes the result screen of the settings, src/mcp/screen.ts).
 *
 * A call cancelled by the client while it is being ruled is still recorded (the gate records in a
 * fiber of its own) and is then neither forwarded nor answered.
 */
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  CallToolResultSchema,
  type CallToolResult,
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  ListToolsResultSchema,
  type RequestId
} from "@modelcontextprotocol/sdk/types.js"
import type { McpCallDecision, McpTool, McpToolCall } from "./rule-call.js"
import { isObject } from "../domain/is-object.js"

/** Why the gate could not decide (the record could not be written): the client gets an MCP error. */
export interface DecideFailure {
  readonly _tag: "DecideFailure"
  readonly message: string
}

export interface BridgeOptions {
  /** the server's name, in error messages */
  readonly server: string
  /** the transport toward the MCP host (the gate is its server) */
  readonly client: Transport
  /** the transport to the real server (the gate is its client); started by the bridge */
  readonly upstream: Transport
  /** rule one call; the tools are the last `tools/list` answer seen */
  readonly decide: (call: McpToolCall, tools: ReadonlyArray<McpTool>) => Promise<McpCallDecision | DecideFailure>
  /** deadline of a forwarded `tools/call`, in milliseconds */
  readonly callTimeoutMs: number
  /** screen a tool result before the client sees it (absent: results pass as they are) */
  readonly screen?: (result: CallToolResult, call: McpToolCall) => Promise<CallToolResult>
  /** a problem worth a log line (never includes arguments or secrets) */
  readonly warn?: (line: string) => void
  /** the names of the tools to hide from a `tools/list` answer, already recorded (absent: answers pass unchanged) */
  readonly hideTools?: (tools: ReadonlyArray<McpTool>) => Promise<HiddenTools | DecideFailure>
}

/** What `hideTools` decided: the names taken out of one `tools/list` answer (none: the answer passes as it is). */
export interface HiddenTools {
  readonly _tag: "HiddenTools"
  readonly names: ReadonlyArray<string>
}

export interface Bridge {
  /** start both transports (the upstream first: a server that cannot start fails this) */
  readonly start: () => Promise<void>
  /** close both sides */
  readonly close: () => Promise<void>
  /** resolves when the client side has closed */
  readonly closed: Promise<void>
  /** true once the server closed the connection before the client did (the server crashed or quit) */
  readonly upstreamLost: () => boolean
}

type Key = string

const keyOf = (id: RequestId): Key => `${typeof id}:${String(id)}`

interface Forwarded {
  readonly id: RequestId
  readonly method: string
  /** set for `tools/call` */
  readonly call?: McpToolCall
  readonly timer?: ReturnType<typeof setTimeout>
  readonly progressToken?: string | number
  /** a `tools/list` request for a later page (it carried `params.cursor`) */
  readonly laterPage?: boolean
}

const errorMessage = (id: RequestId, code: number, message: string): JSONRPCMessage => ({ jsonrpc: "2.0", id, error: { code, message } })

/** The tools known so far with one more `tools/list` page: by name, the page's entry winning, in first-seen order. */
export const mergeTools = (known: ReadonlyArray<McpTool>, page: ReadonlyArray<McpTool>): ReadonlyArray<McpTool> => {
  const byName = new Map<string, McpTool>(known.map((t) => [t.name, t]))
  for (const t of page) byName.set(t.name, t)
  return [...byName.values()]
}

/** Pump messages between `client` and `upstream`, gating `tools/call`. */
export const makeBridge = (opts: BridgeOptions): Bridge => {
  const { client, upstream } = opts
  const warn = opts.warn ?? (() => {})
  /** requests of the client sent on to the server and not yet answered */
  const forwarded = new Map<Key, Forwarded>()
  /** `tools/call` requests being ruled; true once the client cancelled */
  const ruling = new Map<Key, { cancelled: boolean }>()
  const progress = new Map<string, RequestId>()
  let tools: ReadonlyArray<McpTool> = []
  let upstreamClosed = false
  let clientClosed = false
  let upstreamLost = false
  let resolveClosed: () => void = () => {}
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve
  })

  const toClient = (message: JSONRPCMessage, relatedRequestId?: RequestId): void => {
    if (clientClosed) return
    client.send(message, relatedRequestId !== undefined ? { relatedRequestId } : undefined).catch((e: unknown) => warn(`mcp ${opts.server}: cannot answer the client: ${e instanceof Error ? e.message : String(e)}`))
  }

  const settle = (key: Key): Forwarded | undefined => {
    const f = forwarded.get(key)
    if (f === undefined) return undefined
    forwarded.delete(key)
    if (f.timer !== undefined) clearTimeout(f.timer)
    if (f.progressToken !== undefined) progress.delete(String(f.progressToken))
    return f
  }

  const toUpstream = (message: JSONRPCMessage, entry?: Forwarded): void => {
    if (entry !== undefined) forwarded.set(keyOf(entry.id), entry)
    if (upstreamClosed) {
      if (entry !== undefined) {
        settle(keyOf(entry.id))
        toClient(errorMessage(entry.id, ErrorCode.ConnectionClosed, `MCP server '${opts.server}' is not running`), entry.id)
      }
      return
    }
    upstream.send(message).catch((e: unknown) => {
      const text = e instanceof Error ? e.message : String(e)
      warn(`mcp ${opts.server}: cannot reach the server: ${text}`)
      if (entry !== undefined && settle(keyOf(entry.id)) !== undefined) {
        toClient(errorMessage(entry.id, ErrorCode.ConnectionClosed, `MCP server '${opts.server}' cannot be reached: ${text}`), entry.id)
      }
    })
  }

  const forwardRequest = (message: JSONRPCMessage & { id: RequestId; method: string; params?: unknown }, call?: McpToolCall): void => {
    const meta = isObject(message.params) && isObject(message.params._meta) ? message.params._meta : undefined
    const token = meta !== undefined && (typeof meta.progressToken === "string" || typeof meta.progressToken === "number") ? meta.progressToken : undefined
    if (token !== undefined) progress.set(String(token), message.id)
    const timer =
      call === undefined
        ? undefined
        : setTimeout(() => {
            if (settle(keyOf(message.id)) === undefined) return
            toClient(errorMessage(message.id, ErrorCode.RequestTimeout, `MCP server '${opts.server}' did not answer tools/call '${call.name}' within ${opts.callTimeoutMs / 1000}s`), message.id)
            toUpstream({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: message.id, reason: "the gate's call deadline passed" } })
          }, opts.callTimeoutMs)
    toUpstream(message, {
      id: message.id,
      method: message.method,
      ...(call !== undefined ? { call } : {}),
      ...(timer !== undefined ? { timer } : {}),
      ...(token !== undefined ? { progressToken: token } : {}),
      ...(message.method === "tools/list" && isObject(message.params) && message.params.cursor !== undefined ? { laterPage: true } : {})
    })
  }

  const onToolCall = (message: JSONRPCMessage & { id: RequestId; method: string; params?: unknown }): void => {
    const params = isObject(message.params) ? message.params : {}
    if (typeof params.name !== "string") {
      toClient(errorMessage(message.id, ErrorCode.InvalidParams, "tools/call needs params.name (the tool's name)"), message.id)
      return
    }
    if (params.arguments !== undefined && !isObject(params.arguments)) {
      toClient(errorMessage(message.id, ErrorCode.InvalidParams, "tools/call params.arguments must be an object"), message.id)
      return
    }
    const call: McpToolCall = { requestId: message.id, name: params.name, arguments: isObject(params.arguments) ? params.arguments : {} }
    const key = keyOf(message.id)
    const state = { cancelled: false }
    ruling.set(key, state)
    opts
      .decide(call, tools)
      .then(
        (d) => d,
        (e: unknown): DecideFailure => ({ _tag: "DecideFailure", message: e instanceof Error ? e.message : String(e) })
      )
      .then((d) => {
        ruling.delete(key)
        if (state.cancelled) return
        switch (d._tag) {
          case "forward":
            return forwardRequest(message, call)
          case "refused":
            return toClient({ jsonrpc: "2.0", id: message.id, result: { content: [...d.result.content], isError: true } }, message.id)
          case "DecideFailure":
            return toClient(errorMessage(message.id, ErrorCode.InternalError, `the gate could not record the call, so it was not sent: ${d.message}`), message.id)
        }
      })
  }

  const onClientMessage = (message: JSONRPCMessage): void => {
    if (isJSONRPCRequest(message)) {
      if (message.method === "tools/call") return onToolCall(message)
      return forwardRequest(message)
    }
    if (isJSONRPCNotification(message) && message.method === "notifications/cancelled") {
      const id = isObject(message.params) ? message.params.requestId : undefined
      if (typeof id === "string" || typeof id === "number") {
        const r = ruling.get(keyOf(id))
        if (r !== undefined) {
          r.cancelled = true // recorded all the same; never sent
          return
        }
        settle(keyOf(id))
      }
    }
    // responses to the server's own requests, and every other notification
    toUpstream(message)
  }

  const answerToolCall = (f: Forwarded & { call: McpToolCall }, message: JSONRPCMessage & { id: RequestId; result: unknown }): void => {
    const parsed = CallToolResultSchema.safeParse(message.result)
    if (!parsed.success) {
      warn(`mcp ${opts.server}: tools/call '${f.call.name}' answered with something that is not a tool result`)
      return toClient(errorMessage(f.id, ErrorCode.InternalError, `MCP server '${opts.server}' answered tools/call '${f.call.name}' with something that is not a tool result`), f.id)
    }
    if (opts.screen === undefined) return toClient(message, f.id)
    opts.screen(parsed.data, f.call).then(
      (result) => toClient({ jsonrpc: "2.0", id: f.id, result }, f.id),
      (e: unknown) => toClient(errorMessage(f.id, ErrorCode.InternalError, `the tool result could not be screened: ${e instanceof Error ? e.message : String(e)}`), f.id)
    )
  }

  /** answer `tools/list` without the tools `hideTools` names (the rest of the answer unchanged) */
  const answerToolsList = (
    hideTools: NonNullable<BridgeOptions["hideTools"]>,
    id: RequestId,
    message: JSONRPCMessage & { result: Record<string, unknown> },
    listed: ReadonlyArray<McpTool>
  ): void => {
    hideTools(listed)
      .then(
        (d) => d,
        (e: unknown): DecideFailure => ({ _tag: "DecideFailure", message: e instanceof Error ? e.message : String(e) })
      )
      .then((d) => {
        if (d._tag === "DecideFailure") {
          return toClient(errorMessage(id, ErrorCode.InternalError, `the gate could not record the tools it hides, so tools/list is not answered: ${d.message}`), id)
        }
        if (d.names.length === 0) return toClient(message, id)
        const hide = new Set(d.names)
        const shown = Array.isArray(message.result.tools) ? message.result.tools.filter((t: unknown) => !(isObject(t) && typeof t.name === "string" && hide.has(t.name))) : []
        toClient({ jsonrpc: "2.0", id, result: { ...message.result, tools: shown } }, id)
      })
  }

  const onUpstreamMessage = (message: JSONRPCMessage): void => {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      const id = message.id
      const f = id === undefined ? undefined : settle(keyOf(id))
      if (f === undefined) {
        if (id !== undefined) return // late answer to a call past its deadline, or cancelled
        return toClient(message)
      }
      if (isJSONRPCResultResponse(message)) {
        if (f.call !== undefined) return answerToolCall({ ...f, call: f.call }, message)
        if (f.method === "tools/list") {
          const list = ListToolsResultSchema.safeParse(message.result)
          // a later page adds to the tools the judges see (a tool listed again replaces its old entry); a first page starts afresh
          if (list.success) tools = f.laterPage === true ? mergeTools(tools, list.data.tools) : list.data.tools
          if (opts.hideTools !== undefined) {
            // a list the gate cannot read is not passed on unfiltered: hiding fails closed
            if (!list.success || !isObject(message.result)) {
              return toClient(errorMessage(f.id, ErrorCode.InternalError, "the server's tools/list answer cannot be read, so the gate cannot hide the tools its policy does not grant"), f.id)
            }
            return answerToolsList(opts.hideTools, f.id, { ...message, result: message.result }, list.data.tools)
          }
        }
        if (f.method === "initialize" && isObject(message.result) && typeof message.result.protocolVersion === "string") {
          upstream.setProtocolVersion?.(message.result.protocolVersion)
        }
      }
      return toClient(message, f.id)
    }
    if (isJSONRPCNotification(message) && message.method === "notifications/progress") {
      const token = isObject(message.params) ? message.params.progressToken : undefined
      const related = token === undefined ? undefined : progress.get(String(token))
      return toClient(message, related)
    }
    toClient(message)
  }

  const onUpstreamClosed = (): void => {
    if (upstreamClosed) return
    upstreamClosed = true
    if (!clientClosed) {
      upstreamLost = true
      warn(`mcp ${opts.server}: the server closed the connection`)
    }
    for (const key of [...forwarded.keys()]) {
      const f = settle(key)
      if (f !== undefined) toClient(errorMessage(f.id, ErrorCode.ConnectionClosed, `MCP server '${opts.server}' closed before it answered ${f.method}`), f.id)
    }
  }

  upstream.onmessage = onUpstreamMessage
  upstream.onclose = onUpstreamClosed
  upstream.onerror = (e) => warn(`mcp ${opts.server}: server transport: ${e.message}`)
  client.onmessage = onClientMessage
  client.onerror = (e) => warn(`mcp ${opts.server}: client transport: ${e.message}`)
  client.onclose = () => {
    clientClosed = true
    resolveClosed()
    upstream.close().catch(() => {})
  }

  return {
    start: async () => {
      await upstream.start()
      await client.start()
    },
    close: async () => {
      await client.close().catch(() => {})
      await upstream.close().catch(() => {})
      clientClosed = true
      resolveClosed()
    },
    closed,
    upstreamLost: () => upstreamLost
  }
}
