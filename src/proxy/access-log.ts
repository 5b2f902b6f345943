/**
 * The access log: one line per request, written when the response is done (a stream: when it
 * ended), and the two log formats of `vetobench proxy` (`--log-format text|json`, `proxy.log_format`).
 *
 * A request's facts are gathered in an {@link AccessRecord} the observation middleware
 * (`observe.ts`) creates and the handlers fill in (route, judge, calls, upstream). The line is an
 * INFO log entry whose message is an {@link AccessLine} (its fields in a fixed order), so
 * `--log-level warning` hides it and the chosen format applies to it like to every other log line.
 *
 * What a line never holds: message text, tool names or arguments, headers, credentials, query
 * strings. The route is the proxy's fixed path (unknown paths are `unmatched`); the model is the
 * client's model name (quoted, cut at 200 characters, URLs redacted).
 */
import { Cause, Context, Effect, FiberRef, HashMap, HashSet, Logger, type LogLevel, type Scope } from "effect"
import { redactUrlsIn } from "../domain/redact-url.js"

export type LogFormat = "text" | "json"

/** The facts of one request (mutable: the handlers fill it in as they learn them). */
export interface AccessRecord {
  readonly requestId: string
  readonly method: string
  /** the route label: a fixed path of the proxy, or `unmatched`; a route the router matched under another spelling (a trailing slash, other case) sets its own path */
  route: string
  /** content-length of the request, when given */
  readonly bytesIn: number | null
  /** count the response's bytes (access log on) */
  readonly countBytes: boolean
  /** someone reads this record (access log, metrics or tracing on): else nothing fills it */
  readonly observed: boolean
  runId: string | null
  model: string | null
  arm: string | null
  judge: string | null
  proposed: number
  blocked: number
  held: number
  upstream: string | null
  /** the upstream's HTTP status, or `timeout` / `unavailable` */
  upstreamStatus: number | string | null
  upstreamMs: number | null
  bytesOut: number | null
  /** the proxy's error code when it answered with one (`unknown_judge`, `upstream_timeout`, …) */
  error: string | null
}

export class CurrentAccess extends Context.Tag("vetobench/CurrentAccess")<CurrentAccess, AccessRecord>() {}

export const newAccessRecord = (
  requestId: string,
  method: string,
  route: string,
  bytesIn: number | null,
  countBytes: boolean,
  observed: boolean = true
): AccessRecord => ({
  requestId,
  method,
  route,
  bytesIn,
  countBytes,
  observed,
  runId: null,
  model: null,
  arm: null,
  judge: null,
  proposed: 0,
  blocked: 0,
  held: 0,
  upstream: null,
  upstreamStatus: null,
  upstreamMs: null,
  bytesOut: null,
  error: null
})

const round1 = (x: number) => Math.round(x * 10) / 10

/** a client-given name as it may appear in a log: URLs redacted, at most 200 characters */
export const loggable = (s: string): string => {
  const r = s.includes("://") ? redactUrlsIn(s) : s
  return r.length > 200 ? `${r.slice(0, 200)}…` : r
}

/** The message of an access log entry: `access` and its fields, in the order a text line shows them. */
export class AccessLine {
  constructor(readonly fields: Readonly<Record<string, string | number | null>>) {}
  /** what a logger that does not know access lines shows */
  toString(): string {
    return formatFields("access", Object.entries(this.fields))
  }
  toJSON(): Readonly<Record<string, string | number | null>> {
    return this.fields
  }
}

/** The access line's fields (null = not applicable). */
export const accessFields = (rec: AccessRecord, status: number, totalMs: number): Record<string, string | number | null> => {
  // calls are counted where the gate runs: the logged arms of the chat route
  const gated = rec.arm !== null && rec.arm !== "passthrough"
  return {
    request_id: rec.requestId,
    method: rec.method,
    route: rec.route,
    status,
    error: rec.error,
    run_id: rec.runId,
    model: rec.model,
    arm: rec.arm,
    judge: rec.judge,
    calls_proposed: gated ? rec.proposed : null,
    calls_blocked: gated ? rec.blocked : null,
    calls_held: gated ? rec.held : null,
    upstream: rec.upstream,
    upstream_status: rec.upstreamStatus,
    duration_ms: round1(totalMs),
    upstream_ms: rec.upstreamMs === null ? null : round1(rec.upstreamMs),
    bytes_in: rec.bytesIn,
    bytes_out: rec.bytesOut
  }
}

// ---------------------------------------------------------------------------------------------
// log formats

/** a value a text line shows bare; anything else is JSON-quoted (so a newline cannot forge a line) */
const BARE = /^[\w.:/@+,-]+$/

const showValue = (v: unknown): string => {
  if (typeof v === "number" || typeof v === "boolean") return String(v)
  const s = typeof v === "string" ? v : safeJson(v)
  return BARE.test(s) ? s : JSON.stringify(s)
}

const safeJson = (v: unknown): string => {
  try {
    return JSON.stringify(v) ?? String(v)
  } catch {
    return String(v)
  }
}

const messageText = (m: unknown): string =>
  typeof m === "string" ? m : Array.isArray(m) ? m.map((x) => (typeof x === "string" ? x : safeJson(x))).join(" ") : safeJson(m)

/** `message k=v …`, null fields left out */
const formatFields = (message: string, fields: Iterable<readonly [string, unknown]>): string => {
  let line = message
  for (const [k, v] of fields) if (v !== null && v !== undefined) line += ` ${k}=${showValue(v)}`
  return line
}

const levelName = (l: LogLevel.LogLevel) => l.label

/** `2026-05-01T12:00:00.000Z INFO access request_id=… route=/v1/chat/completions status=200 …` (null fields left out) */
export const formatText = (date: Date, level: string, message: string, fields: Iterable<readonly [string, unknown]>, cause: string | null): string =>
  `${date.toISOString()} ${level} ${formatFields(message, fields)}${cause !== null ? ` cause=${JSON.stringify(cause)}` : ""}`

/** one JSON object: `time`, `level` (lower case), `msg`, then the fields (null kept, so every access line has the same keys) */
export const formatJson = (date: Date, level: string, message: string, fields: Iterable<readonly [string, unknown]>, cause: string | null): string => {
  const out: Record<string, unknown> = { time: date.toISOString(), level: level.toLowerCase(), msg: message }
  for (const [k, v] of fields) if (!(k in out)) out[k] = v === undefined ? null : v
  if (cause !== null) out["cause"] = cause
  return safeJson(out)
}

/**
 * The proxy's log line in `format` (the CLI writes it with `Logger.withConsoleLog`). Every log entry
 * goes through it: access lines and the proxy's warnings and errors alike.
 */
export const proxyLogger = (format: LogFormat): Logger.Logger<unknown, string> =>
  Logger.make(({ annotations, cause, date, logLevel, message }) => {
    const render = format === "json" ? formatJson : formatText
    const pretty = Cause.isEmpty(cause) ? null : Cause.pretty(cause)
    const access = Array.isArray(message) && message.length === 1 && message[0] instanceof AccessLine ? message[0] : null
    const fields = HashMap.toEntries(annotations)
    return access === null
      ? render(date, levelName(logLevel), messageText(message), fields, pretty)
      : render(date, levelName(logLevel), "access", [...Object.entries(access.fields), ...fields], pretty)
  })

/**
 * Run `self` with the proxy's logger (to the console) as the only logger: the access log and every
 * other log line in `format`, none twice (it replaces the default and the pretty logger alike).
 */
export const withProxyLogger =
  (format: LogFormat) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.locally(self, FiberRef.currentLoggers, HashSet.make(Logger.withConsoleLog(proxyLogger(format))))

/**
 * Keep serving when the reader of stdout goes away (a log pipe closed: EPIPE). Without an `error`
 * listener on stdout that error would end the process — or, caught elsewhere, leave it up but
 * answering nothing. While in scope: one line to stderr the first time, and the access lines are
 * dropped from then on (the console ignores write errors); requests are served as before.
 */
export const keepServingWithoutStdout: Effect.Effect<void, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => {
    let said = false
    const onError = (e: NodeJS.ErrnoException) => {
      if (said) return
      said = true
      process.stderr.write(`veto-proxy: stdout is gone (${e.code ?? e.message}): access log lines are dropped from now on; still serving\n`)
    }
    process.stdout.on("error", onError)
    return onError
  }),
  (onError) => Effect.sync(() => void process.stdout.off("error", onError))
)

