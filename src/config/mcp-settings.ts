/**
 * `mcp:` of the settings file: the MCP servers the gate may front, the tool-call deadline, and the
 * limits on the proxy's Streamable HTTP sessions (`/mcp/<server>/<arm>`).
 *
 * ```yaml
 * mcp:
 *   call_timeout_s: 60
 *   max_sessions: 64
 *   session_idle_timeout_s: 900
 *   servers:
 *     files: { command: npx, args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv"], env: { TOKEN: "${FILES_TOKEN}" } }
 *     search: { url: "https://search.example/mcp", headers: { authorization: "Bearer ${SEARCH_TOKEN}" } }
 * ```
 *
 * A server is either a command to spawn (stdio) or a URL (Streamable HTTP). Env values and header
 * values are secrets (`Redacted`): they reach the server and are never logged or printed.
 */
import { Either, Redacted } from "effect"
import * as D from "./decode.js"

export interface McpStdioServer {
  readonly kind: "stdio"
  readonly command: string
  readonly args: ReadonlyArray<string>
  /** added to the safe default environment the SDK gives a spawned server */
  readonly env: Readonly<Record<string, Redacted.Redacted<string>>>
  /** working directory, absolute (default: the repo root) */
  readonly cwd: string
}

export interface McpHttpServer {
  readonly kind: "http"
  readonly url: string
  readonly headers: Readonly<Record<string, Redacted.Redacted<string>>>
}

export type McpServerSettings = McpStdioServer | McpHttpServer

export interface McpSettings {
  readonly servers: Readonly<Record<string, McpServerSettings>>
  /** how long a forwarded `tools/call` may take before the client gets an MCP error */
  readonly call_timeout_s: number
  /** open HTTP sessions the proxy keeps at once (each has a server process or connection); an initialize past it is refused (503) */
  readonly max_sessions: number
  /** an HTTP session with no request in progress for this long is closed, with its server */
  readonly session_idle_timeout_s: number
}

export const defaultMcpSettings: McpSettings = { servers: {}, call_timeout_s: 60, max_sessions: 64, session_idle_timeout_s: 900 }

/** server names: what `/mcp/<server>/<arm>` and `--server` take */
const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/

const secrets: D.Decoder<Readonly<Record<string, Redacted.Redacted<string>>>> = (n) =>
  Either.map(D.record(D.string)(n), (r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Redacted.make(v)])))

const httpUrl: D.Decoder<string> = (n) =>
  Either.flatMap(D.nonEmptyString(n), (s) => {
    const url = URL.canParse(s.trim()) ? new URL(s.trim()) : undefined
    return url !== undefined && (url.protocol === "http:" || url.protocol === "https:")
      ? Either.right(s.trim())
      : n.fail(`expected an http(s) URL, got ${JSON.stringify(s)}`)
  })

const server: D.Decoder<McpServerSettings> = (n) =>
  Either.gen(function* () {
    const obj = yield* D.mapping(n)
    const hasCommand = Object.hasOwn(obj, "command")
    const hasUrl = Object.hasOwn(obj, "url")
    if (hasCommand === hasUrl) return yield* n.fail("give either `command` (a server to spawn, stdio) or `url` (Streamable HTTP)")
    if (hasCommand) {
      const f = yield* D.fields(n, ["command", "args", "env", "cwd"])
      return {
        kind: "stdio",
        command: yield* f.get("command", D.nonEmptyString),
        args: yield* f.get("args", D.list(D.string), []),
        env: yield* f.get("env", secrets, {}),
        cwd: yield* f.get("cwd", D.rootPath, n.ctx.root)
      } satisfies McpStdioServer
    }
    const f = yield* D.fields(n, ["url", "headers"])
    return { kind: "http", url: yield* f.get("url", httpUrl), headers: yield* f.get("headers", secrets, {}) } satisfies McpHttpServer
  })

const servers: D.Decoder<Readonly<Record<string, McpServerSettings>>> = (n) =>
  Either.gen(function* () {
    const obj = yield* D.mapping(n)
    const bad = Object.keys(obj).find((k) => !SERVER_NAME.test(k))
    if (bad !== undefined) return yield* n.child(bad, obj[bad]).fail("a server name is letters, digits, '_', '.' and '-' (it is a path segment of /mcp/<server>/<arm>)")
    return yield* D.record(server)(n)
  })

/** Decodes `mcp:` (absent: no servers). */
export const mcpSection: D.Decoder<McpSettings> = (n) =>
  Either.gen(function* () {
    const f = yield* D.fields(n, ["servers", "call_timeout_s", "max_sessions", "session_idle_timeout_s"])
    return {
      servers: yield* f.get("servers", servers, defaultMcpSettings.servers),
      call_timeout_s: yield* f.get("call_timeout_s", D.number({ positive: true }), defaultMcpSettings.call_timeout_s),
      max_sessions: yield* f.get("max_sessions", D.number({ integer: true, min: 1, max: 100_000 }), defaultMcpSettings.max_sessions),
      session_idle_timeout_s: yield* f.get("session_idle_timeout_s", D.number({ positive: true, max: 604_800 }), defaultMcpSettings.session_idle_timeout_s)
    }
  })
