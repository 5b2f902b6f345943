import { isObject } from "../domain/is-object.js"
/**
 * The nine approver-facing fields of a tool-call authorisation record (`shared/spec/toolgate.md`
 * §3.2) as one normalised view, `NineFields`, with the adapters that build it from the record
 * shapes `vetobench audit score` reads, and the §3.2 presence rules.
 *
 * Adapters (each takes one parsed record plus what only the whole file can tell: its integrity
 * and, for vetobench records, an outcome joined from a later record):
 *
 * - `fromV2Record` — our `vetobench/v2` `call` records:
 *   timestamp `ts`; agent `agent_model`; principal `principal`; session `session_id`, else
 *   `episode_id`; tool `tool.name`; args `tool.arguments` (present iff a non-empty object or a
 *   non-empty string); decision `effective_decision` (null in baseline → absent); approval
 *   `approval`; outcome `outcome` (or the joined one); rule/scope from the *ruling verdict*
 *   (see `rulingVerdict`):
 *     - a `rule` or `toolgate` judge that answered: rule / scope = the gate's own `rule` / `scope`
 *       when the verdict carries them — in `usage` (`toolgate_rule`, `toolgate_scope`: the toolgate
 *       judge's cross-reference, present on allows too) or in `raw` as the gate's decision object
 *       (the native rule judge: `{decision, rule, scope, message, approval}`) — else both = the
 *       verdict's `category` (the rule id; `""`/`none` → absent); `rule_version` = its `version`
 *       (the policy version: `sha256:…` of the policy file, `toolgate:<label>`);
 *     - any other judge that answered (model judges, static, plugins): the judge identity counts as
 *       the rule — rule = `<model>@<version>` (`<judge>@<version>` when the verdict has no model),
 *       scope absent, `rule_version` = `version` (the prompt hash). This is the "rule or
 *       scope with policy version, or judge model with prompt version";
 *     - a judge that did not answer (status error/timeout): the decision came from `fail_policy`,
 *       so rule = `fail_policy:<closed|open>`, scope absent.
 * - `fromGateRecord` — records of the Go gate (§3.1 JSON keys `ts`, `agent_id`, `principal`,
 *   `session_id`, `tool`, `args`, `decision`, `rule`, `scope`, `approval`, `outcome`) and plain log
 *   lines that carry only some of them (e.g. `ts` + `tool`). Non-string values count as absent.
 */

export type Integrity = "plain-log" | "append-only" | "hash-chained"

/** §3.2 evidence_integrity_ordinal per record. */
export const INTEGRITY_ORDINAL: Readonly<Record<Integrity, number>> = { "plain-log": 0, "append-only": 1, "hash-chained": 2 }

/** Argument values as recorded: a JSON object, or the raw text when the model's arguments were not JSON. */
export type ArgumentValues = Readonly<Record<string, unknown>> | string

/** One record's nine fields, normalised; `null` = absent. The §3.2 presence rules still apply on top. */
export interface NineFields {
  readonly timestamp: string | null
  /** agent identity (Go `agent_id`; vetobench `agent_model`) */
  readonly agent_id: string | null
  readonly principal: string | null
  /** Go `session_id`; vetobench `session_id`, else `episode_id` */
  readonly session_id: string | null
  readonly tool: string | null
  readonly args: ArgumentValues | null
  readonly decision: string | null
  /** the rule that decided (Go `rule`; vetobench: see the module comment) */
  readonly rule: string | null
  /** policy or prompt version of `rule` when the record names one (not scored: the Go gate has no such field) */
  readonly rule_version: string | null
  readonly scope: string | null
  readonly approval: string | null
  readonly outcome: string | null
  /** a property of the file the record was read from */
  readonly integrity: Integrity
}

/** The nine fields of §3.2, in order. */
export const NINE_FIELDS = [
  "timestamp",
  "agent_identity",
  "tool_name",
  "argument_values",
  "decision",
  "rule_or_scope",
  "approval_status",
  "outcome",
  "record_integrity"
] as const
export type NineFieldName = (typeof NINE_FIELDS)[number]

// ---------------------------------------------------------------------------------------------
// Presence (§3.2)

/** Go's zero `time.Time` as JSON: a record with it has no timestamp. */
const ZERO_TIME = "0001-01-01T00:00:00Z"

/** non-empty text (Go's `!= ""`) */
export const hasText = (s: string | null | undefined): s is string => typeof s === "string" && s !== ""

/** argument values are present: a non-empty object or a non-empty string */
export const hasArgs = (a: unknown): boolean =>
  typeof a === "string" ? a.trim() !== "" : isObject(a) && Object.keys(a).length > 0

/** decision present: non-empty and not `none` */
export const hasDecision = (d: string | null): boolean => hasText(d) && d !== "none"

/** Which of the nine fields a record has, per the §3.2 rules. */
export const fieldsPresent = (f: NineFields): Readonly<Record<NineFieldName, boolean>> => ({
  timestamp: hasText(f.timestamp) && f.timestamp !== ZERO_TIME,
  agent_identity: hasText(f.agent_id),
  tool_name: hasText(f.tool),
  argument_values: hasArgs(f.args),
  decision: hasDecision(f.decision),
  rule_or_scope: hasText(f.rule) || hasText(f.scope),
  approval_status: hasText(f.approval),
  outcome: hasText(f.outcome),
  record_integrity: f.integrity === "append-only" || f.integrity === "hash-chained"
})

/** How many of the nine fields a record has (0–9). */
export const countFieldsPresent = (f: NineFields): number =>
  Object.values(fieldsPresent(f)).filter((present) => present).length

// ---------------------------------------------------------------------------------------------
// Adapters

const text = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null)

const argsOf = (v: unknown): ArgumentValues | null => {
  if (typeof v === "string") return v.trim() === "" ? null : v
  return isObject(v) && Object.keys(v).length > 0 ? v : null
}

/** The verdict fields the mapping reads. */
export interface VerdictView {
  readonly judge: string | null
  readonly kind: string | null
  readonly model: string | null
  readonly version: string | null
  readonly status: string | null
  readonly decision: string | null
  readonly category: string | null
  /** the value gate's own rule id and scope, from `usage.toolgate_rule` / `usage.toolgate_scope` */
  readonly gate: { readonly rule: string | null; readonly scope: string | null } | null
}

/**
 * The gate's own rule and scope behind a verdict: the toolgate judge's cross-reference in `usage`
 * (`toolgate_rule`, `toolgate_scope`), else `raw` when it is the gate's decision as a JSON object
 * with `rule`/`scope` (the native rule judge's `raw`, a toolgate deny/escalate body).
 */
const gateRuleOf = (v: Readonly<Record<string, unknown>>): VerdictView["gate"] => {
  if (isObject(v.usage) && ("toolgate_rule" in v.usage || "toolgate_scope" in v.usage)) {
    return { rule: text(v.usage.toolgate_rule), scope: text(v.usage.toolgate_scope) }
  }
  if (typeof v.raw !== "string" || !v.raw.trimStart().startsWith("{")) return null
  let raw: unknown
  try {
    raw = JSON.parse(v.raw)
  } catch {
    return null
  }
  return isObject(raw) && (typeof raw.rule === "string" || typeof raw.scope === "string")
    ? { rule: text(raw.rule), scope: text(raw.scope) }
    : null
}

const verdictView = (v: unknown): VerdictView | null =>
  isObject(v)
    ? {
        judge: text(v.judge),
        kind: text(v.kind),
        model: text(v.model),
        version: text(v.version),
        status: text(v.status),
        decision: text(v.decision),
        category: text(v.category),
        gate: gateRuleOf(v)
      }
    : null

/** Judge kinds whose verdicts come from a policy of rules (the native rule judge and the aex-toolgate judge). */
export const RULE_JUDGE_KINDS: ReadonlySet<string> = new Set(["rule", "toolgate"])

export const isRuleKind = (kind: string | null): boolean => kind !== null && RULE_JUDGE_KINDS.has(kind)

const failPolicyOf = (rec: Readonly<Record<string, unknown>>): "closed" | "open" =>
  rec.fail_policy === "open" ? "open" : "closed"

/** The layer verdicts of a record (empty when absent or not a list). */
export const layerVerdicts = (rec: Readonly<Record<string, unknown>>): ReadonlyArray<VerdictView> =>
  Array.isArray(rec.layers) ? rec.layers.flatMap((l) => verdictView(l) ?? []) : []

/**
 * The verdict that ruled a vetobench call record: the record's `verdict`, except for a `layered`
 * judge, where it is the deciding layer — the first layer whose decision after `fail_policy` is
 * not `allow` (as the gate chooses it). When every layer allowed, the first `rule`/`toolgate`
 * layer counts as deciding (like the Go gate, which records the rule that allowed), else the last
 * layer. A layered verdict without recorded layers stands for itself. `null` in baseline.
 */
export const rulingVerdict = (rec: Readonly<Record<string, unknown>>): VerdictView | null => {
  const verdict = verdictView(rec.verdict)
  if (verdict === null || verdict.kind !== "layered") return verdict
  const layers = layerVerdicts(rec)
  if (layers.length === 0) return verdict
  const failPolicy = failPolicyOf(rec)
  const effective = (v: VerdictView): string =>
    v.status === "ok" && v.decision !== null ? v.decision : failPolicy === "closed" ? "deny" : "allow"
  return layers.find((v) => effective(v) !== "allow") ?? layers.find((v) => isRuleKind(v.kind)) ?? layers[layers.length - 1]!
}

interface RuleFields {
  readonly rule: string | null
  readonly rule_version: string | null
  readonly scope: string | null
}

const NO_RULE: RuleFields = { rule: null, rule_version: null, scope: null }

/** rule / rule_version / scope of a vetobench call record (see the module comment). */
export const ruleFieldsOf = (rec: Readonly<Record<string, unknown>>): RuleFields => {
  const v = rulingVerdict(rec)
  if (v === null) return NO_RULE
  if (v.status !== "ok") return { rule: `fail_policy:${failPolicyOf(rec)}`, rule_version: v.version, scope: null }
  if (isRuleKind(v.kind)) {
    if (v.gate !== null) return { rule: v.gate.rule, rule_version: v.version, scope: v.gate.scope }
    const id = v.category !== null && v.category !== "none" ? v.category : null
    return { rule: id, rule_version: v.version, scope: id }
  }
  const who = v.model ?? v.judge
  const rule = who === null ? v.version : v.version === null ? who : `${who}@${v.version}`
  return { rule, rule_version: v.version, scope: null }
}

/** The `rule`/`toolgate` verdicts of a vetobench record (the verdict and its layers). */
export const policyVerdicts = (rec: Readonly<Record<string, unknown>>): ReadonlyArray<VerdictView> =>
  [verdictView(rec.verdict), ...layerVerdicts(rec)].filter((v): v is VerdictView => v !== null && isRuleKind(v.kind))

/** A vetobench record was ruled (wholly or in one layer) by a policy of rules, so scoring needs R. */
export const ruledByPolicy = (rec: Readonly<Record<string, unknown>>): boolean => policyVerdicts(rec).length > 0

/** From a `vetobench/v2` `call` record; `outcome` is the one joined from a later `outcome` record, if any. */
export const fromV2Record = (
  rec: Readonly<Record<string, unknown>>,
  ctx: { readonly integrity: Integrity; readonly outcome?: string | null }
): NineFields => {
  const tool = isObject(rec.tool) ? rec.tool : {}
  return {
    timestamp: text(rec.ts),
    agent_id: text(rec.agent_model),
    principal: text(rec.principal),
    session_id: text(rec.session_id) ?? text(rec.episode_id),
    tool: text(tool.name),
    args: argsOf(tool.arguments),
    decision: text(rec.effective_decision),
    ...ruleFieldsOf(rec),
    approval: text(rec.approval),
    outcome: text(rec.outcome) ?? ctx.outcome ?? null,
    integrity: ctx.integrity
  }
}

/** From a Go gate record (§3.1) or a plain log line that carries only some of its keys. */
export const fromGateRecord = (rec: Readonly<Record<string, unknown>>, ctx: { readonly integrity: Integrity }): NineFields => ({
  timestamp: text(rec.ts),
  agent_id: text(rec.agent_id),
  principal: text(rec.principal),
  session_id: text(rec.session_id),
  tool: text(rec.tool),
  args: isObject(rec.args) && Object.keys(rec.args).length > 0 ? rec.args : null,
  decision: text(rec.decision),
  rule: text(rec.rule),
  rule_version: null,
  scope: text(rec.scope),
  approval: text(rec.approval),
  outcome: text(rec.outcome),
  integrity: ctx.integrity
})
