/**
 * `kind: toolgate` — a client of aex-toolgate, the Agent Exchange tool-call value gate (a Go
 * service the user runs; `shared/spec/toolgate.md` §2). The gate's policy decides; this judge maps
 * its answer to a verdict.
 *
 * Modes:
 * - `decide` (default): `POST {url}/v1/decide/{tool}` with `Authorization: Bearer <operator_token>`.
 *   The gate records the call and answers 200 whatever the decision; nothing is forwarded or held.
 * - `tools`: `POST {url}/v1/tools/{tool}` (no auth). The gate itself forwards an allowed call to its
 *   `UPSTREAM_URL` — i.e. the tool runs once there, and the agent still receives the call. Decision
 *   from `X-Toolgate-Decision` (200 or the upstream's own status, incl. 502 = allow; 403 deny;
 *   202 escalate).
 *
 * Request: body = the call's arguments as JSON (`ToolCallView.arguments`, re-encoded: a number such
 * as `1250.0` arrives as `1250`, integers beyond 2^53 lose precision). Arguments that are not an
 * object (a raw string the model produced that is not JSON, an array) are sent as they are, JSON
 * encoded; the gate answers 400 and the verdict is an error, so `fail_policy` decides. Headers:
 * `X-Request-ID` = the proxy request id (the gate's `trace_id`); `X-AEX-Call-ID` = the request id
 * too, since the judge context carries no tool_call id (if an embedder's context has a string
 * `toolCallId`, that is sent instead); `X-AEX-Agent-ID` = `agent_id` or the agent model;
 * `X-AEX-Principal` = `x-vetobench-principal` or `principal`; `X-AEX-Session-ID` =
 * `x-vetobench-session`, else the episode id, else `session_id`; `X-Tenant-ID` = `tenant_id`.
 * The client's own `Authorization` is never sent; the operator token only in decide mode.
 *
 * Verdict: decision allow / deny / hold (`escalate`); category = the gate's rule id (else its scope;
 * `none` on allow); reason = the gate's `message`; raw = the response body (cut at 4,000
 * characters); `usage` carries the cross-reference to the gate's own chain (§2.6):
 * `toolgate_hash` (the record hash, for a hold the approval handle), `toolgate_call_id`,
 * `toolgate_trace_id`, `toolgate_rule`, `toolgate_scope`, `toolgate_decision`, `toolgate_approval`,
 * `toolgate_mode`, `toolgate_http_status` (empty values left out). The gate has no policy version
 * (§3.2), so the verdict's `model` is the gate URL (credentials in it redacted: userinfo and
 * credential query parameters become `***`) and `version` is `toolgate:<policy>` or
 * `toolgate:unversioned`. Never cached: the gate keeps state and its own record of every call.
 *
 * Not decisions (→ JudgeError, then `fail_policy`): connection errors, timeouts, 400 `bad_request`,
 * 401 `unauthorized`, 503 `operator_token_not_configured`, 404/405 (wrong URL or a gate without
 * `/v1/decide`), 5xx and any answer without a decision. Messages name the status and the gate's
 * error code, never the token, and show the URL without credentials. Userinfo in `url`
 * (`https://user:pass@gate`) is not sent: the pool is made for the URL's origin.
 *
 * Transport: a keep-alive pool of the judge's own from `HttpTransport` (the one in context when the
 * kind is registered; undici unless a layer replaces it).
 */
import { existsSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { Duration, Effect, Either, ParseResult, Redacted, Schema } from "effect"
import { Settings } from "../src/config/service.js"
import type { JudgeSpec } from "../src/config/settings.js"
import type { ToolCallView } from "../src/domain/tool-call.js"
import { redactUrl, redactUrlsIn } from "../src/domain/redact-url.js"
import { type Decision, decided, type JudgeIdentity, type Verdict } from "../src/domain/verdict.js"
import { type Judge, JudgeConfigError, type JudgeContext, JudgeError } from "./Judge.js"
import type { JudgeDefaults, JudgeKind, JudgeKindPlugin } from "./registry.js"
import { decodeSpec, NonEmptyString, PositiveNumber } from "./spec-schema.js"
import { type HttpHeaders, HttpTransport, type HttpTransportShape, liveTransport, type TransportFailure } from "../layers/HttpTransport.js"

// ---------------------------------------------------------------------------------------------
// config

/** printable ASCII: what may go into an HTTP header value unchanged */
const HEADER_SAFE = /^[\x20-\x7e]*$/

const HttpBase = NonEmptyString.pipe(
  Schema.filter((s) => {
    const t = s.trim()
    const u = URL.canParse(t) ? new URL(t) : undefined
    if (u === undefined || (u.protocol !== "http:" && u.protocol !== "https:")) return `must be an http(s) URL, got ${JSON.stringify(redactUrl(s))}`
    if (u.search !== "" || u.hash !== "") return "must be a base URL without query or fragment"
    return true
  })
)

/** a header value; "" (e.g. from `${VAR:-}`) means none */
const HeaderText = Schema.String.pipe(Schema.filter((s) => HEADER_SAFE.test(s) || "must be printable ASCII (it is sent as an HTTP header)"))

/** true, false ("true"/"false" after `${VAR}` expansion) or the path of a CA bundle */
const VerifyTls = Schema.transformOrFail(Schema.Unknown, Schema.Union(Schema.Boolean, Schema.String), {
  strict: true,
  decode: (v, _, ast) =>
    typeof v === "boolean"
      ? ParseResult.succeed(v)
      : typeof v === "string" && v.trim() !== ""
        ? ParseResult.succeed(v === "true" ? true : v === "false" ? false : v.trim())
        : ParseResult.fail(new ParseResult.Type(ast, v, "must be true, false or the path of a CA bundle")),
  encode: ParseResult.succeed
})

const optional = <A, I>(s: Schema.Schema<A, I>) => Schema.optionalWith(s, { exact: true, nullable: true })

const ToolgateSpec = Schema.Struct({
  url: HttpBase,
  mode: Schema.optionalWith(Schema.Literal("decide", "tools").annotations({ message: () => "must be decide or tools" }), {
    default: () => "decide" as const
  }),
  operator_token: optional(HeaderText),
  timeout_s: optional(PositiveNumber),
  agent_id: optional(HeaderText),
  principal: optional(HeaderText),
  session_id: optional(HeaderText),
  tenant_id: optional(HeaderText),
  verify_tls: Schema.optionalWith(VerifyTls, { default: () => true }),
  policy: optional(NonEmptyString)
})

export type ToolgateMode = "decide" | "tools"

export interface ToolgateConfig {
  /** the base URL as configured, trailing `/` trimmed */
  readonly url: string
  readonly mode: ToolgateMode
  /** null in tools mode when none is configured */
  readonly operator_token: Redacted.Redacted<string> | null
  readonly timeout_s: number
  readonly agent_id: string | null
  readonly principal: string | null
  readonly session_id: string | null
  readonly tenant_id: string | null
  /** true, false, or the absolute path of a CA bundle (then only that bundle is trusted) */
  readonly verify_tls: boolean | string
  /** the CA bundle's contents when verify_tls is a path */
  readonly ca: Buffer | null
  readonly policy: string | null
}

const blankToNull = (s: string | undefined): string | null => (s === undefined || s.trim() === "" ? null : s.trim())

/** Decode a `toolgate` spec; a CA path is resolved against `root` and must exist. */
export const decodeToolgateConfig = (
  name: string,
  spec: JudgeSpec,
  defaults: Pick<JudgeDefaults, "timeout_s">,
  root: string
): Effect.Effect<ToolgateConfig, JudgeConfigError> =>
  Effect.gen(function* () {
    const c = yield* decodeSpec(name, spec, ToolgateSpec)
    const token = blankToNull(c.operator_token)
    if (c.mode === "decide" && token === null) {
      return yield* new JudgeConfigError({
        judge: name,
        path: "operator_token",
        reason: "is required when mode is decide (the gate's OPERATOR_TOKEN, e.g. `${TOOLGATE_TOKEN}`)"
      })
    }
    let verify_tls: boolean | string = c.verify_tls
    let ca: Buffer | null = null
    if (typeof verify_tls === "string") {
      const abs = path.resolve(root, verify_tls)
      if (!existsSync(abs)) return yield* new JudgeConfigError({ judge: name, path: "verify_tls", reason: `CA bundle not found: ${abs}` })
      ca = yield* Effect.try({
        try: () => readFileSync(abs),
        catch: (e) => new JudgeConfigError({ judge: name, path: "verify_tls", reason: `cannot read CA bundle ${abs}: ${e instanceof Error ? e.message : String(e)}` })
      })
      verify_tls = abs
    }
    return {
      url: c.url.trim().replace(/\/+$/, ""),
      mode: c.mode,
      operator_token: token === null ? null : Redacted.make(token),
      timeout_s: c.timeout_s ?? defaults.timeout_s,
      agent_id: blankToNull(c.agent_id),
      principal: blankToNull(c.principal),
      session_id: blankToNull(c.session_id),
      tenant_id: blankToNull(c.tenant_id),
      verify_tls,
      ca,
      policy: c.policy ?? null
    }
  })

// ---------------------------------------------------------------------------------------------
// the gate's answers

const text = Schema.optionalWith(Schema.String, { default: () => "" })

/** `/v1/decide` 200, `/v1/tools` 403 and 202, the 502 of an allowed call (unknown keys ignored) */
const GateAnswer = Schema.Struct({
  decision: Schema.Literal("allow", "deny", "escalate"),
  rule: text,
  scope: text,
  message: text,
  hash: text,
  hold: text,
  call_id: text,
  approval: text,
  outcome: text,
  error: text
})
type GateAnswer = typeof GateAnswer.Type
const decodeAnswer = Schema.decodeUnknownEither(Schema.parseJson(GateAnswer))

/** `{"error":{"code","message"}}` */
const GateErrorBody = Schema.parseJson(Schema.Struct({ error: Schema.Struct({ code: Schema.String, message: text }) }))
const decodeGateError = Schema.decodeUnknownEither(GateErrorBody)

const DECISIONS: Readonly<Record<GateAnswer["decision"], Decision>> = { allow: "allow", deny: "deny", escalate: "hold" }

// ---------------------------------------------------------------------------------------------
// transport

interface GateResponse {
  readonly status: number
  /** lower-cased names */
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
}

/** the gate reads and forwards at most 1 MiB; a bigger answer is not the gate's */
const MAX_BODY_BYTES = 1024 * 1024 + 1
const MAX_RAW_CHARS = 4000

const cut = (s: string): string => (s.length > MAX_RAW_CHARS ? `${s.slice(0, MAX_RAW_CHARS)} …[truncated]` : s)

/** the bytes as UTF-8 text (a BOM is kept, as `Buffer#toString` keeps it) */
const utf8 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")

const flatHeaders = (h: HttpHeaders): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = typeof v === "string" ? v : v.join(", ")
  return out
}

// ---------------------------------------------------------------------------------------------
// the judge

/** the context of an embedder may carry the tool_call id (the proxy's does not) */
const toolCallIdOf = (ctx: JudgeContext): string | null =>
  "toolCallId" in ctx && typeof ctx.toolCallId === "string" && ctx.toolCallId.trim() !== "" ? ctx.toolCallId.trim() : null

/** the first value that is non-blank and header-safe */
const firstHeaderValue = (...values: ReadonlyArray<string | null | undefined>): string | undefined => {
  for (const v of values) {
    const t = v?.trim()
    if (t !== undefined && t !== "" && HEADER_SAFE.test(t)) return t
  }
  return undefined
}

/** the request headers for one call (exported for tests and docs) */
export const toolgateHeaders = (config: ToolgateConfig, ctx: JudgeContext): Record<string, string> => {
  const h: Record<string, string> = { "content-type": "application/json", accept: "application/json" }
  if (config.mode === "decide" && config.operator_token !== null) h.authorization = `Bearer ${Redacted.value(config.operator_token)}`
  const set = (name: string, value: string | undefined) => {
    if (value !== undefined) h[name] = value
  }
  set("x-request-id", firstHeaderValue(ctx.requestId))
  set("x-aex-call-id", firstHeaderValue(toolCallIdOf(ctx), ctx.requestId))
  set("x-aex-agent-id", firstHeaderValue(config.agent_id, ctx.agentModel))
  set("x-aex-principal", firstHeaderValue(ctx.principal, config.principal))
  set("x-aex-session-id", firstHeaderValue(ctx.sessionId, ctx.episodeId, config.session_id))
  set("x-tenant-id", firstHeaderValue(config.tenant_id))
  return h
}

const round3 = (x: number) => Math.round(x * 1000) / 1000

/** `usage` without empty values */
const compact = (o: Record<string, string | number>): Record<string, string | number> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== ""))

export const makeToolgateJudge = (name: string, config: ToolgateConfig, transport: HttpTransportShape = liveTransport): Judge => {
  const shownUrl = redactUrl(config.url)
  const id: JudgeIdentity = { judge: name, kind: "toolgate", model: shownUrl, version: `toolgate:${config.policy ?? "unversioned"}` }
  const base = new URL(config.url)
  const basePath = base.pathname.replace(/\/+$/, "")
  const ms = Math.max(1, Math.round(config.timeout_s * 1000))
  // one small keep-alive pool per judge, for the process's lifetime (judges are built once);
  // undici unrefs idle sockets, so it never holds the process open
  const pool = transport.pool(base.origin, {
    connections: 32,
    keepAliveTimeoutMs: 10_000,
    connectTimeoutMs: ms,
    rejectUnauthorized: config.verify_tls !== false,
    ...(config.ca !== null ? { ca: config.ca } : {})
  })

  const where = `toolgate ${shownUrl}`
  /** a message shown to anyone (verdict reason, audit, smoke): no credential of the gate URL in it */
  const shown = (message: string) => redactUrlsIn(message, [config.url])

  const transportError = (failure: TransportFailure, latency_ms: number): JudgeError => {
    const fail = (reason: "timeout" | "unavailable", message: string) => new JudgeError({ judge: name, reason, message: shown(message), latency_ms })
    switch (failure.kind) {
      case "timeout":
        return fail("timeout", `${where}: no answer within ${config.timeout_s}s`)
      case "connect-timeout":
        return fail("unavailable", `${where}: connect timeout after ${config.timeout_s}s`)
      case "tls":
        return fail(
          "unavailable",
          `${where}: TLS verification failed (${failure.code})${failure.untrustedCa ? "; set verify_tls to the CA bundle that signed the gate's certificate" : ""}`
        )
      case "too-large": // not asked for: the body is read up to MAX_BODY_BYTES
        return fail("unavailable", `${where}: the answer is larger than ${failure.limit} bytes`)
      case "other":
        return fail("unavailable", `${where}: unreachable (${failure.code}: ${failure.message})`)
    }
  }

  const post = (urlPath: string, headers: Record<string, string>, body: string, started: number): Effect.Effect<GateResponse, JudgeError> =>
    pool
      .request({ method: "POST", path: urlPath, headers, body, timeoutMs: ms }, (e) => transportError(e.failure, round3(performance.now() - started)))
      .pipe(
        Effect.flatMap((r) => Effect.map(r.head(MAX_BODY_BYTES), (bytes) => ({ status: r.status, headers: flatHeaders(r.headers), text: utf8(bytes) }))),
        Effect.scoped
      )

  /** an answer that carries no decision */
  const notADecision = (res: GateResponse, latency_ms: number): JudgeError => {
    const parsed = decodeGateError(res.text)
    const detail = Either.isRight(parsed)
      ? `${parsed.right.error.code}${parsed.right.error.message !== "" ? `: ${parsed.right.error.message}` : ""}`
      : res.text.trim().slice(0, 200) || "(empty body)"
    const hint =
      res.status === 401
        ? " (operator_token does not match the gate's OPERATOR_TOKEN)"
        : res.status === 404 && config.mode === "decide"
          ? " (is url the gate's base, and does the gate have /v1/decide?)"
          : ""
    return new JudgeError({
      judge: name,
      reason: "unavailable",
      message: shown(`${where}: HTTP ${res.status} ${detail}${hint}`),
      raw: cut(res.text),
      latency_ms,
      usage: compact({
        toolgate_mode: config.mode,
        toolgate_http_status: res.status,
        toolgate_error_code: Either.isRight(parsed) ? parsed.right.error.code : ""
      })
    })
  }

  const verdictOf = (answer: GateAnswer, res: GateResponse, callId: string, latency_ms: number): Verdict => {
    const decision = DECISIONS[answer.decision]
    return decided(id, decision, {
      category: decision === "allow" ? "none" : answer.rule || answer.scope || "other",
      reason: answer.message,
      raw: cut(res.text),
      latency_ms,
      usage: compact({
        toolgate_mode: config.mode,
        toolgate_http_status: res.status,
        toolgate_decision: answer.decision,
        toolgate_rule: answer.rule,
        toolgate_scope: answer.scope,
        toolgate_hash: answer.hash || answer.hold || (res.headers["x-toolgate-hash"] ?? ""),
        toolgate_call_id: answer.call_id || callId,
        toolgate_trace_id: res.headers["x-request-id"] ?? "",
        toolgate_approval: answer.approval,
        toolgate_error: answer.error
      })
    })
  }

  /** decide mode: 200 with a decision body; anything else is not a decision */
  const readDecide = (res: GateResponse, callId: string, latency_ms: number): Effect.Effect<Verdict, JudgeError> => {
    if (res.status !== 200) return Effect.fail(notADecision(res, latency_ms))
    const answer = decodeAnswer(res.text)
    return Either.isRight(answer)
      ? Effect.succeed(verdictOf(answer.right, res, callId, latency_ms))
      : Effect.fail(
          new JudgeError({
            judge: name,
            reason: "output-invalid",
            message: `${where}: HTTP 200 without a decision (expected allow, deny or escalate)`,
            raw: cut(res.text),
            latency_ms
          })
        )
  }

  /** tools mode: the decision is in `X-Toolgate-Decision`; an allow's body is the tool's own answer */
  const readTools = (res: GateResponse, callId: string, latency_ms: number): Effect.Effect<Verdict, JudgeError> => {
    const header = res.headers["x-toolgate-decision"]
    if (header !== "allow" && header !== "deny" && header !== "escalate") return Effect.fail(notADecision(res, latency_ms))
    const fromBody = decodeAnswer(res.text)
    const fromHeaders: GateAnswer = {
      decision: header,
      rule: res.headers["x-toolgate-rule"] ?? "",
      scope: "",
      message: "",
      hash: res.headers["x-toolgate-hash"] ?? "",
      hold: "",
      call_id: "",
      approval: "",
      outcome: "",
      error: ""
    }
    // 403, 202 and 502 bodies are the gate's own; any other allow carries the tool's answer
    const gateBody = res.status === 403 || res.status === 202 || res.status === 502
    const answer = gateBody && Either.isRight(fromBody) && fromBody.right.decision === header ? fromBody.right : fromHeaders
    return Effect.succeed(verdictOf(answer, res, callId, latency_ms))
  }

  const rule = (call: ToolCallView, ctx: JudgeContext): Effect.Effect<Verdict, JudgeError> =>
    Effect.suspend(() => {
      const started = performance.now()
      const headers = toolgateHeaders(config, ctx)
      const urlPath = `${basePath}/v1/${config.mode}/${encodeURIComponent(call.name)}`
      const body = JSON.stringify(call.arguments) ?? "null"
      return post(urlPath, headers, body, started).pipe(
        Effect.flatMap((res) => {
          const latency_ms = round3(performance.now() - started)
          const callId = headers["x-aex-call-id"] ?? ""
          return config.mode === "decide" ? readDecide(res, callId, latency_ms) : readTools(res, callId, latency_ms)
        }),
        Effect.timeoutFail({
          duration: Duration.millis(ms),
          onTimeout: () =>
            new JudgeError({ judge: name, reason: "timeout", message: `${where}: no answer within ${config.timeout_s}s`, latency_ms: round3(performance.now() - started) })
        })
      )
    })

  return { ...id, cacheable: false, rule }
}

export const makeToolgateKind = (root: string, transport: HttpTransportShape = liveTransport): JudgeKind => ({
  kind: "toolgate",
  make: (name, spec, defaults) =>
    Effect.flatMap(decodeToolgateConfig(name, spec, defaults, root), (c) => Effect.sync(() => makeToolgateJudge(name, c, transport)))
})

/** `kind: toolgate`; CA bundle paths are resolved against the settings' root; requests go through the `HttpTransport` in context. */
export const toolgatePlugin: JudgeKindPlugin<Settings> = Effect.gen(function* () {
  const settings = yield* Settings
  return makeToolgateKind(settings.root, yield* HttpTransport)
})
