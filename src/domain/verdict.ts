/**
 * Verdicts and decisions: what a judge says about one proposed tool call.
 *
 * A verdict has a `status` (did the judge answer?) and, when it answered, a `decision`.
 * `fail_policy` turns a verdict whose status is not `ok` into an effective decision (gate).
 */
import { Schema } from "effect"
import { canonicalize } from "./canonical-json.js"

export const Decision = Schema.Literal("allow", "deny", "hold")
export type Decision = typeof Decision.Type

export const VerdictStatus = Schema.Literal("ok", "error", "timeout")
export type VerdictStatus = typeof VerdictStatus.Type

export const CATEGORIES = [
  "none",
  "data_loss",
  "financial_loss",
  "privacy_leak",
  "security_compromise",
  "physical_harm",
  "harmful_content",
  "illegal_or_unethical",
  "availability",
  "other"
] as const
export type Category = (typeof CATEGORIES)[number]

/** Who produced a verdict: judge name, kind, model (or policy) and version (prompt or policy hash). */
export interface JudgeIdentity {
  readonly judge: string
  readonly kind: string
  readonly model: string | null
  readonly version: string | null
}

export const Verdict = Schema.Struct({
  judge: Schema.String,
  kind: Schema.String,
  model: Schema.NullOr(Schema.String),
  version: Schema.NullOr(Schema.String),
  status: VerdictStatus,
  /** null unless status is `ok` */
  decision: Schema.NullOr(Decision),
  category: Schema.String,
  reason: Schema.String,
  raw: Schema.String,
  probability: Schema.NullOr(Schema.Number),
  temperature: Schema.NullOr(Schema.Number),
  latency_ms: Schema.Number,
  cached: Schema.Boolean,
  usage: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
export type Verdict = typeof Verdict.Type

export interface VerdictFields {
  readonly category?: string
  readonly reason?: string
  readonly raw?: string
  readonly probability?: number | null
  readonly temperature?: number | null
  readonly latency_ms?: number
  readonly usage?: Record<string, unknown>
}

const base = (id: JudgeIdentity, f: VerdictFields) => ({
  judge: id.judge,
  kind: id.kind,
  model: id.model,
  version: id.version,
  category: f.category ?? "none",
  reason: f.reason ?? "",
  raw: f.raw ?? "",
  probability: f.probability ?? null,
  temperature: f.temperature ?? null,
  latency_ms: f.latency_ms ?? 0,
  cached: false,
  usage: f.usage ?? {}
})

/** A verdict from a judge that answered. */
export const decided = (id: JudgeIdentity, decision: Decision, f: VerdictFields = {}): Verdict => ({
  ...base(id, f),
  status: "ok",
  decision
})

/** A verdict from a judge that failed (status error or timeout); the gate applies fail_policy. */
export const failed = (id: JudgeIdentity, status: "error" | "timeout", reason: string, f: VerdictFields = {}): Verdict => ({
  ...base(id, { category: "other", ...f }),
  status,
  decision: null,
  reason: reason.length > 500 ? reason.slice(0, 500) : reason
})

/** Normalise a category to the vocabulary: lower-cased, empty → other, unknown → other. */
export const toCategory = (value: unknown): Category => {
  const c = typeof value === "string" ? value.trim().toLowerCase() : ""
  return (CATEGORIES as ReadonlyArray<string>).includes(c) && c !== "" ? (c as Category) : "other"
}

const DECISIONS: ReadonlyArray<unknown> = ["allow", "deny", "hold"]
const STATUSES: ReadonlyArray<unknown> = ["ok", "error", "timeout"]

/**
 * Why a judge's answer is not a verdict the gate can record (null when it is one): the fields and
 * their types, an `ok` status with a decision, and a `usage` that JSON can hold. A judge is plugin
 * code: what it returns is checked like any other input before it reaches the audit chain.
 */
export const verdictProblem = (v: unknown): string | null => {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return "the judge returned no verdict object"
  const r = v as Record<string, unknown>
  if (!STATUSES.includes(r.status)) return "the verdict's status is not ok, error or timeout"
  if (r.status === "ok" ? !DECISIONS.includes(r.decision) : r.decision !== null) {
    return "the verdict's decision is not allow, deny or hold (or not null for a failed verdict)"
  }
  for (const k of ["judge", "kind", "category", "reason", "raw"] as const) {
    if (typeof r[k] !== "string") return `the verdict's ${k} is not a string`
  }
  for (const k of ["model", "version"] as const) {
    if (r[k] !== null && typeof r[k] !== "string") return `the verdict's ${k} is not a string or null`
  }
  for (const k of ["probability", "temperature"] as const) {
    if (r[k] !== null && !(typeof r[k] === "number" && Number.isFinite(r[k]))) return `the verdict's ${k} is not a finite number or null`
  }
  if (!(typeof r.latency_ms === "number" && Number.isFinite(r.latency_ms))) return "the verdict's latency_ms is not a finite number"
  if (typeof r.cached !== "boolean") return "the verdict's cached is not a boolean"
  if (typeof r.usage !== "object" || r.usage === null || Array.isArray(r.usage)) return "the verdict's usage is not an object"
  try {
    // what the audit chain will write: cycles, bigints, non-finite numbers and deep nesting end here
    if (canonicalize(r.usage).length > 65536) return "the verdict's usage is larger than 64 KiB"
  } catch (e) {
    return `the verdict's usage cannot be recorded: ${e instanceof Error ? e.message : String(e)}`
  }
  return null
}

/** How long a verdict's text fields may be in a record: a judge's raw answer, and every other text. */
export const MAX_RAW_CHARS = 256 * 1024
export const MAX_TEXT_CHARS = 4096

const cut = (s: string, max: number): string => (s.length > max ? `${s.slice(0, max)} …[truncated ${s.length - max} characters]` : s)

/**
 * A verdict whose text fits a record: a raw answer longer than MAX_RAW_CHARS, or another text field
 * longer than MAX_TEXT_CHARS, is cut with a note saying how much was cut (the decision stands). The
 * same verdict object when nothing is too long.
 */
export const boundVerdict = (v: Verdict): Verdict => {
  const over =
    v.raw.length > MAX_RAW_CHARS ||
    [v.judge, v.kind, v.category, v.reason, v.model ?? "", v.version ?? ""].some((t) => t.length > MAX_TEXT_CHARS)
  if (!over) return v
  return {
    ...v,
    judge: cut(v.judge, MAX_TEXT_CHARS),
    kind: cut(v.kind, MAX_TEXT_CHARS),
    category: cut(v.category, MAX_TEXT_CHARS),
    reason: cut(v.reason, MAX_TEXT_CHARS),
    raw: cut(v.raw, MAX_RAW_CHARS),
    model: v.model === null ? null : cut(v.model, MAX_TEXT_CHARS),
    version: v.version === null ? null : cut(v.version, MAX_TEXT_CHARS)
  }
}
