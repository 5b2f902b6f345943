/**
 * The proxy's holds, for `vetobench view --proxy URL`: the client of its hold API (GET /v1/holds,
 * POST /v1/holds/{id}) with the operator token, which only this server sends (the browser never
 * sees it), and what the view remembers of decided holds: the ones decided through it (with the
 * proxy's answer), and the ones that left the pending list otherwise (decided elsewhere or
 * expired), each confirmed by its approval record when the audit log is under the runs directory
 * (logs followed as they grow: `AuditTails`).
 */
import { Data, Effect, Either, Redacted, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { PendingHold } from "../gate/Holds.js"
import { isObject } from "../domain/is-object.js"
import { redactUrl } from "../domain/redact-url.js"
import { Verdict } from "../domain/verdict.js"
import { auditFileName, isRunId } from "../domain/run-id.js"
import { callRecordOf } from "../scoring/files.js"
import type { CallRecord } from "../domain/audit-record.js"
import { forEachLine, readLineAt, type ViewReadError } from "./lines.js"
import { withDeadlineSignal } from "../domain/deadline-signal.js"

/** The environment variable that holds the proxy's operator token (never printed or logged). */
export const OPERATOR_TOKEN_ENV = "VETOBENCH_OPERATOR_TOKEN"

export class ViewProxyError extends Data.TaggedError("ViewProxyError")<{ readonly status: number | null; readonly reason: string }> {
  override get message(): string {
    return this.reason
  }
}

export interface ProxyTarget {
  /** the proxy's origin and path prefix without `/v1` (`http://127.0.0.1:8080`) */
  readonly base: string
  readonly token: Redacted.Redacted<string>
}

/**
 * The proxy base URL from `--proxy` (`http://host:port` or the `…/v1` URL the proxy prints), or
 * why it cannot be used: http(s) only, no credentials in it (the token comes from the environment).
 */
export const proxyBase = (given: string): { readonly base: string } | { readonly problem: string } => {
  let url: URL
  try {
    url = new URL(given)
  } catch {
    return { problem: `--proxy must be the proxy's URL (http://HOST:PORT), got '${redactUrl(given)}'` }
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { problem: `--proxy must be an http or https URL, got '${redactUrl(given)}'` }
  if (url.username !== "" || url.password !== "") return { problem: `--proxy must not carry credentials; the operator token comes from $${OPERATOR_TOKEN_ENV}` }
  if (url.search !== "" || url.hash !== "") return { problem: `--proxy must not have a query or fragment, got '${redactUrl(given)}'` }
  const p = url.pathname.replace(/\/+$/, "").replace(/\/v1$/, "")
  return { base: `${url.origin}${p}` }
}

/** How long one request to the proxy may take. */
const REQUEST_TIMEOUT_MS = 15_000
/** A hold id is the held call record's hash. */
export const HOLD_ID = /^[0-9a-f]{64}$/

/** The proxy's answers are read up to this size (a hold list of thousands of calls fits). */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024

/** The body as text, or null when it is longer than `MAX_ANSWER_BYTES` (not read further). */
const readCapped = async (res: Response): Promise<string | null> => {
  const declared = Number(res.headers.get("content-length") ?? "NaN")
  if (Number.isFinite(declared) && declared > MAX_ANSWER_BYTES) {
    await res.body?.cancel()
    return null
  }
  if (res.body === null) return ""
  const reader = res.body.getReader()
  const chunks: Array<Uint8Array> = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel()
      return null
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString("utf8")
}

const call = (target: ProxyTarget, method: "GET" | "POST", suffix: string, body?: unknown): Effect.Effect<Record<string, unknown>, ViewProxyError> =>
  Effect.tryPromise({
    try: (outer) =>
      withDeadlineSignal(outer, REQUEST_TIMEOUT_MS, async (signal) => {
        const res = await fetch(`${target.base}/v1/holds${suffix}`, {
          method,
          headers: { authorization: `Bearer ${Redacted.value(target.token)}`, accept: "application/json", ...(body === undefined ? {} : { "content-type": "application/json" }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal,
          redirect: "error"
        })
        const text = await readCapped(res)
        if (text === null) return { status: 502, json: { error: { message: `the answer is larger than ${MAX_ANSWER_BYTES} bytes` } } }
        let json: unknown = null
        try {
          json = JSON.parse(text)
        } catch {
          // not JSON: said below
        }
        return { status: res.status, json }
      }),
    catch: (e) => new ViewProxyError({ status: null, reason: `the proxy at ${target.base} did not answer: ${e instanceof Error ? e.message : String(e)}` })
  }).pipe(
    Effect.flatMap(({ json, status }) => {
      if (status >= 200 && status < 300 && isObject(json)) return Effect.succeed(json)
      const err = isObject(json) && isObject(json.error) && typeof json.error.message === "string" ? json.error.message : `HTTP ${status}`
      return Effect.fail(new ViewProxyError({ status, reason: `the proxy refused: ${err.slice(0, 300)}` }))
    })
  )

const str = (v: unknown): string | null => (typeof v === "string" ? v : null)

const decodeVerdict = Schema.decodeUnknownEither(Verdict)

/** A pending hold as the proxy lists it, read field by field (a hold without a valid id is left out; a verdict not of the audit schema is none). */
export const holdOf = (v: unknown): PendingHold | null => {
  if (!isObject(v) || typeof v.id !== "string" || !HOLD_ID.test(v.id) || !isObject(v.tool) || typeof v.tool.name !== "string") return null
  const decoded = decodeVerdict(v.verdict)
  const verdict = Either.isRight(decoded) ? decoded.right : null
  return {
    id: v.id,
    seq: typeof v.seq === "number" ? v.seq : 0,
    created: str(v.created) ?? "",
    expires: str(v.expires) ?? "",
    run_id: str(v.run_id),
    request_id: str(v.request_id) ?? "",
    episode_id: str(v.episode_id),
    session_id: str(v.session_id),
    principal: str(v.principal),
    agent_model: str(v.agent_model) ?? "",
    tool_call_id: str(v.tool_call_id),
    tool: { name: v.tool.name, description: str(v.tool.description) ?? "", parameters: isObject(v.tool.parameters) ? v.tool.parameters : null, arguments: v.tool.arguments },
    verdict
  }
}

export const listHolds = (target: ProxyTarget): Effect.Effect<Array<PendingHold>, ViewProxyError> =>
  Effect.map(call(target, "GET", ""), (json) => (Array.isArray(json.data) ? json.data.map(holdOf).filter((h): h is PendingHold => h !== null) : []))

export const decideHold = (target: ProxyTarget, id: string, approved: boolean, approver: string, note: string | null): Effect.Effect<string, ViewProxyError> =>
  HOLD_ID.test(id)
    ? Effect.map(call(target, "POST", `/${id}`, { approved, approver, ...(note === null ? {} : { note }) }), (json) => str(json.outcome) ?? (approved ? "approved" : "rejected"))
    : Effect.fail(new ViewProxyError({ status: 400, reason: "not a hold id" }))

export interface DecidedHold {
  readonly hold: PendingHold
  /** `approved` / `rejected` through this view; else what the audit log says, or `no longer pending` */
  readonly outcome: string
  readonly approver: string | null
  readonly note: string | null
  readonly at: string
  /** through this view, or seen leaving the pending list */
  readonly via: "view" | "elsewhere"
}

/** At most this many decided holds are remembered. */
const DECIDED_MAX = 200

/** What this view process remembers about holds (one per server). */
export class HoldBook {
  private readonly seen = new Map<string, PendingHold>()
  private readonly decided: Array<DecidedHold> = []

  /** Take a fresh pending list: holds seen before and gone now (not decided here) become decided elsewhere. */
  observe(pending: ReadonlyArray<PendingHold>, now: Date): void {
    const ids = new Set(pending.map((h) => h.id))
    for (const [id, hold] of this.seen) {
      if (ids.has(id)) continue
      this.seen.delete(id)
      if (!this.decided.some((d) => d.hold.id === id)) this.add({ hold, outcome: "no longer pending", approver: null, note: null, at: now.toISOString(), via: "elsewhere" })
    }
    for (const h of pending) this.seen.set(h.id, h)
  }

  /** A decision made through this view. */
  record(id: string, outcome: string, approver: string, note: string | null, now: Date): void {
    const hold = this.seen.get(id)
    if (hold === undefined) return
    this.seen.delete(id)
    this.add({ hold, outcome, approver, note, at: now.toISOString(), via: "view" })
  }

  list(): ReadonlyArray<DecidedHold> {
    return this.decided
  }

  private add(d: DecidedHold): void {
    this.decided.unshift(d)
    this.decided.splice(DECIDED_MAX)
  }
}

/** The audit file of a run id in one of `dirs` (the first that has it), or null (ids outside the grammar never name a file). */
export const localAuditFile = (dirs: ReadonlyArray<string>, runId: string | null, exists: (f: string) => boolean): string | null => {
  if (runId === null || !isRunId(runId)) return null
  for (const d of dirs) {
    const f = path.join(d, auditFileName(runId))
    if (exists(f)) return f
  }
  return null
}

export interface RecordedApproval {
  readonly approval: string
  readonly approver: string | null
  readonly note: string | null
}

interface Tail {
  /** where the next read starts: after the last whole line read */
  offset: number
  /** call lines by episode key (session + episode id) */
  readonly calls: Map<string, Array<{ readonly offset: number; readonly bytes: number }>>
  readonly approvals: Map<string, RecordedApproval>
}

/** At most this many audit logs are followed. */
const TAILS_MAX = 32

const key = (episode: string, session: string | null) => `${session ?? ""}\u0000${episode}`

/**
 * Audit logs followed as they grow: each poll reads only the lines appended since the last one
 * (from the start again when the file got shorter; polls that come together take turns), keeping the offsets of call lines per episode
 * and the approval records by the call they decide.
 */
export class AuditTails {
  private readonly tails = new Map<string, Tail>()
  /** one update at a time: two polls reading the same appended lines would take each call twice */
  private readonly lock = Effect.unsafeMakeSemaphore(1)

  private update(file: string): Effect.Effect<Tail, ViewReadError> {
    return this.lock.withPermits(1)(Effect.suspend(() => {
      let size = 0
      try {
        size = fs.statSync(file).size
      } catch {
        // gone: read as empty
      }
      const known = this.tails.get(file)
      const tail: Tail = known !== undefined && known.offset <= size ? known : { offset: 0, calls: new Map(), approvals: new Map() }
      this.tails.delete(file)
      this.tails.set(file, tail)
      if (this.tails.size > TAILS_MAX) this.tails.delete(this.tails.keys().next().value!)
      if (tail.offset === size) return Effect.succeed(tail)
      return Effect.map(
        forEachLine(file, (l) => {
          let v: unknown
          try {
            v = JSON.parse(l.text)
          } catch {
            return
          }
          if (!isObject(v)) return
          if (v.type === "approval" && isObject(v.ref) && typeof v.ref.hash === "string" && typeof v.approval === "string") {
            tail.approvals.set(v.ref.hash, { approval: v.approval, approver: str(v.approver), note: str(v.note) })
          } else if (v.type === "call" && typeof v.episode_id === "string") {
            const k = key(v.episode_id, str(v.session_id))
            const list = tail.calls.get(k) ?? []
            list.push({ offset: l.offset, bytes: l.bytes })
            tail.calls.set(k, list)
          }
        }, { from: tail.offset, unterminated: false }),
        (end) => {
          tail.offset = end
          return tail
        }
      )
    }))
  }

  /** Every call record of one episode (and session) in `file`, in log order. */
  episodeCalls(file: string, episode: string, session: string | null): Effect.Effect<Array<CallRecord>, ViewReadError> {
    return Effect.flatMap(this.update(file), (tail) =>
      Effect.map(
        Effect.forEach(tail.calls.get(key(episode, session)) ?? [], (ref) => readLineAt(file, ref.offset, ref.bytes)),
        (lines) =>
          lines.flatMap((text) => {
            try {
              const r = callRecordOf(JSON.parse(text))
              return r === null ? [] : [r]
            } catch {
              return []
            }
          })
      ))
  }

  /** The approval record of the call whose hash is `hash`, or null. */
  approval(file: string, hash: string): Effect.Effect<RecordedApproval | null, ViewReadError> {
    return Effect.map(this.update(file), (tail) => tail.approvals.get(hash) ?? null)
  }
}
