/**
 * A small fake of aex-toolgate (the Agent Exchange tool-call value gate), written from
 * `shared/spec/toolgate.md` §2, for the `toolgate` judge's tests. It implements the HTTP surface a
 * judge uses — `POST /v1/decide/{tool}` (operator auth), `POST /v1/tools/{tool}` (no auth, forwards
 * allowed calls to a built-in stand-in for the tool upstream), `GET /health` — with the gate's
 * status codes, alphabetical JSON bodies with a trailing newline, `X-Toolgate-*` and
 * `X-Request-Id` response headers, and identity headers → record fields (§2.3).
 *
 * It does not evaluate policies: decisions come from a rule table the test sets (tool name →
 * decision, rule, scope, message). A tool missing from the table is denied like a tool missing from
 * the policy's inventory (`P1-scope`, scope `""`). Hashes are 16 lower-case hex characters chained
 * over the records like the gate's, without claiming byte parity with its canonical form.
 *
 * Plain `node:http`/`node:https` (answers never depend on Effect's Clock); binds 127.0.0.1 on a
 * free port; the scope owns the server and closes every connection on release.
 */
import { createHash, randomBytes } from "node:crypto"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer, type Scope } from "effect"
import { isObject } from "../../src/domain/is-object.js"

export type GateDecision = "allow" | "deny" | "escalate"

/** What the gate decides for one tool (the fake's stand-in for a policy). */
export interface FakeRule {
  readonly decision: GateDecision
  /** default `P1-scope` (the gate records P1-scope for an allow and for scope denials) */
  readonly rule?: string
  /** the tool's required scope; default `""` */
  readonly scope?: string
  /** default `""` */
  readonly message?: string
}

/** One request as the fake received it. */
export interface ToolgateRequest {
  readonly method: string
  readonly path: string
  /** header names lower-cased */
  readonly headers: Readonly<Record<string, string>>
  /** the body text as received */
  readonly body: string
}

/** The record the gate appended (the subset of §3.1 the tests read). */
export interface ToolgateRecord {
  readonly tool: string
  readonly args: Readonly<Record<string, unknown>> | null
  readonly decision: GateDecision
  readonly rule: string
  readonly scope: string
  readonly approval: "automatic" | "pending-human"
  readonly outcome: string
  readonly agent_id: string
  readonly principal: string
  readonly session_id: string
  readonly tenant_id: string
  readonly trace_id: string
  readonly call_id: string
  readonly prev_hash: string
  readonly hash: string
}

/** Mutable controls; `reset()` restores the options' values. */
export interface FakeToolgateKnobs {
  /** the gate's OPERATOR_TOKEN; null = unset (operator endpoints answer 503) */
  operatorToken: string | null
  /** tool name → decision */
  readonly rules: Map<string, FakeRule>
  /** wait this long before answering decide/tools requests */
  delayMs: number
  /** tools mode, allowed calls: the status the tool upstream answers, or `down` (gate answers 502) */
  upstream: number | "down"
}

export interface FakeToolgateShape {
  /** base URL without a trailing slash, e.g. `http://127.0.0.1:43123` */
  readonly url: string
  readonly port: number
  /** every request, oldest first (live view) */
  readonly requests: ReadonlyArray<ToolgateRequest>
  /** the gate's chain (live view) */
  readonly records: ReadonlyArray<ToolgateRecord>
  /** calls the gate forwarded to the tool upstream (tools mode, allowed calls) */
  readonly forwarded: ReadonlyArray<{ readonly tool: string; readonly body: string }>
  readonly knobs: FakeToolgateKnobs
  /** clear requests, records and forwarded calls; restore the knobs */
  readonly reset: () => void
}

export interface FakeToolgateOptions {
  /** default `"operator-secret"`; null = the gate runs without OPERATOR_TOKEN */
  readonly operatorToken?: string | null
  readonly rules?: Readonly<Record<string, FakeRule>>
  /** PEM key and certificate: serve HTTPS */
  readonly tls?: { readonly key: string; readonly cert: string }
}

export const DEFAULT_OPERATOR_TOKEN = "operator-secret"
export const GENESIS = "0000000000000000"
export const DECIDED_ONLY = "decided only: not executed by the gate"

/** JSON as Go's encoder writes a map: keys sorted, trailing newline. */
export const goJson = (v: unknown): string => `${JSON.stringify(sortKeys(v))}\n`

const sortKeys = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(sortKeys)
  if (typeof v === "object" && v !== null) {
    const o = v as Record<string, unknown>
    return Object.fromEntries(Object.keys(o).sort().map((k) => [k, sortKeys(o[k])]))
  }
  return v
}

const lowerHeaders = (req: http.IncomingMessage): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v
  return out
}

const readBody = (req: http.IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const parts: Array<Buffer> = []
    req.on("data", (c: Buffer) => parts.push(c))
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")))
    req.on("error", reject)
  })

const makeState = (options: FakeToolgateOptions) => {
  const requests: Array<ToolgateRequest> = []
  const records: Array<ToolgateRecord> = []
  const forwarded: Array<{ readonly tool: string; readonly body: string }> = []
  const initialToken = options.operatorToken === undefined ? DEFAULT_OPERATOR_TOKEN : options.operatorToken
  const knobs: FakeToolgateKnobs = { operatorToken: initialToken, rules: new Map(), delayMs: 0, upstream: 200 }
  const timers = new Set<NodeJS.Timeout>()
  let closed = false

  const reset = () => {
    requests.length = 0
    records.length = 0
    forwarded.length = 0
    knobs.operatorToken = initialToken
    knobs.rules.clear()
    for (const [tool, rule] of Object.entries(options.rules ?? {})) knobs.rules.set(tool, rule)
    knobs.delayMs = 0
    knobs.upstream = 200
  }
  reset()

  const sleep = (ms: number): Promise<void> =>
    ms <= 0
      ? Promise.resolve()
      : new Promise((resolve) => {
          const t = setTimeout(() => {
            timers.delete(t)
            resolve()
          }, ms)
          timers.add(t)
        })

  const gone = (res: http.ServerResponse) => closed || res.destroyed || res.writableEnded

  const send = (res: http.ServerResponse, status: number, body: string, contentType: string, headers: Record<string, string> = {}) => {
    if (gone(res)) return
    res.writeHead(status, { ...headers, "Content-Type": contentType, "Content-Length": String(Buffer.byteLength(body)) })
    res.end(body)
  }
  const sendJson = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    send(res, status, goJson(body), "application/json", headers)
  const sendError = (res: http.ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}) =>
    sendJson(res, status, { error: { code, message } }, headers)

  /** §2.2: 503 without OPERATOR_TOKEN; `Bearer ` (exact scheme) + the trimmed token, else 401 */
  const operatorOk = (req: ToolgateRequest, res: http.ServerResponse): boolean => {
    if (knobs.operatorToken === null || knobs.operatorToken.trim() === "") {
      sendError(res, 503, "operator_token_not_configured", "this endpoint needs OPERATOR_TOKEN set on the gate")
      return false
    }
    const auth = req.headers["authorization"] ?? ""
    if (!auth.startsWith("Bearer ") || auth.slice("Bearer ".length).trim() !== knobs.operatorToken.trim()) {
      sendError(res, 401, "unauthorized", "operator credential required")
      return false
    }
    return true
  }

  /** §2.1: empty/whitespace body or `null` = no args; anything but a JSON object is a 400 */
  const parseArgs = (raw: string): { readonly ok: true; readonly args: Record<string, unknown> | null } | { readonly ok: false } => {
    if (raw.trim() === "") return { ok: true, args: null }
    try {
      const v: unknown = JSON.parse(raw)
      if (v === null) return { ok: true, args: null }
      return isObject(v) ? { ok: true, args: v } : { ok: false }
    } catch {
      return { ok: false }
    }
  }

  const append = (rec: Omit<ToolgateRecord, "prev_hash" | "hash">): ToolgateRecord => {
    const prev_hash = records.at(-1)?.hash ?? GENESIS
    const hash = createHash("sha256").update(prev_hash).update(JSON.stringify({ ...rec, prev_hash })).digest("hex").slice(0, 16)
    const full = { ...rec, prev_hash, hash }
    records.push(full)
    return full
  }

  const decideCall = async (req: ToolgateRequest, res: http.ServerResponse, mode: "decide" | "tools", tool: string) => {
    const requestId = req.headers["x-request-id"] || randomBytes(16).toString("hex")
    const echo = { "X-Request-Id": requestId }
    if (mode === "decide" && !operatorOk(req, res)) return
    const parsed = parseArgs(req.body)
    if (!parsed.ok) return sendError(res, 400, "bad_request", "body must be a JSON object of argument values", echo)
    await sleep(knobs.delayMs)
    if (gone(res)) return
    const r: FakeRule = knobs.rules.get(tool) ?? { decision: "deny", rule: "P1-scope", scope: "", message: "tool is not in the provider's inventory" }
    const decision = r.decision
    const rule = r.rule ?? "P1-scope"
    const scope = r.scope ?? ""
    const message = decision === "allow" ? "" : (r.message ?? "")
    const approval = decision === "escalate" ? ("pending-human" as const) : ("automatic" as const)
    const h = req.headers
    const call_id = h["x-aex-call-id"] || requestId
    const outcome =
      mode === "decide"
        ? DECIDED_ONLY
        : decision === "escalate"
          ? "held: awaiting human approval"
          : decision === "deny"
            ? "refused"
            : knobs.upstream === "down"
              ? "failed: connection refused"
              : knobs.upstream >= 400
                ? `failed: upstream returned ${knobs.upstream}`
                : `executed: http ${knobs.upstream}: {"result":"side effect applied","tool":"${tool}"}`
    const record = append({
      tool,
      args: parsed.args,
      decision,
      rule,
      scope,
      approval,
      outcome,
      agent_id: h["x-aex-agent-id"] ?? "",
      principal: h["x-aex-principal"] ?? "",
      session_id: h["x-aex-session-id"] ?? "",
      tenant_id: h["x-tenant-id"] ?? "",
      trace_id: requestId,
      call_id
    })
    const headers = { "X-Toolgate-Decision": decision, "X-Toolgate-Rule": rule, "X-Toolgate-Hash": record.hash, ...echo }
    if (mode === "decide") {
      return sendJson(res, 200, { approval, call_id, decision, hash: record.hash, message, outcome: DECIDED_ONLY, rule, scope }, headers)
    }
    if (decision === "deny") return sendJson(res, 403, { call_id, decision, hash: record.hash, message, rule, scope }, headers)
    if (decision === "escalate") return sendJson(res, 202, { approval, call_id, decision, hold: record.hash, message, rule, scope }, headers)
    if (knobs.upstream === "down") {
      return sendJson(res, 502, { decision, error: "upstream unreachable: connection refused", hash: record.hash, rule }, headers)
    }
    forwarded.push({ tool, body: JSON.stringify(sortKeys(parsed.args ?? {})) })
    return send(res, knobs.upstream, goJson({ result: "side effect applied", tool }), "application/json", headers)
  }

  const route = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const method = req.method ?? "GET"
    const path = new URL(req.url ?? "/", "http://fake").pathname
    const recorded: ToolgateRequest = { method, path, headers: lowerHeaders(req), body: await readBody(req) }
    requests.push(recorded)
    const m = /^\/v1\/(decide|tools)\/([^/]+)$/.exec(path)
    const expected = m !== null ? "POST" : path === "/health" || path === "/ready" ? "GET" : undefined
    if (expected === undefined) return send(res, 404, "404 page not found\n", "text/plain; charset=utf-8")
    if (method !== expected) return send(res, 405, "Method Not Allowed\n", "text/plain; charset=utf-8", { Allow: expected })
    if (m === null) return sendJson(res, 200, { status: "healthy", uptime_s: 0 })
    return decideCall(recorded, res, m[1] as "decide" | "tools", decodeURIComponent(m[2]!))
  }

  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    res.on("error", () => {})
    route(req, res).catch((e: unknown) => {
      if (gone(res)) return
      if (res.headersSent) res.destroy()
      else sendError(res, 500, "internal", `fake-toolgate: ${String(e)}`)
    })
  }

  const shutdown = () => {
    closed = true
    for (const t of timers) clearTimeout(t)
    timers.clear()
  }

  return { handler, requests, records, forwarded, knobs, reset, shutdown } as const
}

/** Serve the fake on 127.0.0.1 (a free port) for the lifetime of the scope. */
export const serveFakeToolgate = (options: FakeToolgateOptions = {}): Effect.Effect<FakeToolgateShape, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ readonly server: http.Server; readonly state: ReturnType<typeof makeState> }>((resume) => {
      const state = makeState(options)
      const server = options.tls !== undefined ? https.createServer({ key: options.tls.key, cert: options.tls.cert }, state.handler) : http.createServer(state.handler)
      server.once("error", (e) => resume(Effect.die(e)))
      server.listen(0, "127.0.0.1", () => {
        server.on("error", () => {})
        resume(Effect.succeed({ server, state }))
      })
    }),
    ({ server, state }) =>
      Effect.async<void>((resume) => {
        state.shutdown()
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  ).pipe(
    Effect.map(({ server, state }): FakeToolgateShape => {
      const port = (server.address() as AddressInfo).port
      return {
        url: `${options.tls !== undefined ? "https" : "http"}://127.0.0.1:${port}`,
        port,
        requests: state.requests,
        records: state.records,
        forwarded: state.forwarded,
        knobs: state.knobs,
        reset: state.reset
      }
    })
  )

export class FakeToolgate extends Context.Tag("test/FakeToolgate")<FakeToolgate, FakeToolgateShape>() {
  static readonly layer = (options: FakeToolgateOptions = {}): Layer.Layer<FakeToolgate> => Layer.scoped(FakeToolgate, serveFakeToolgate(options))
}
