/**
 * The `vetobench/v2` audit record (architecture decision 7): one record per proposed tool call
 * (and, later, per outcome / approval / manifest), chained by SHA-256 over RFC 8785 canonical JSON.
 *
 * Field groups (the nine fields of the tool-call authorisation record):
 *  1 timestamp `ts`; 2 identity `agent_model`, `principal`, `session_id`, `episode_id`, `run_id`,
 *  `request_id`; 3 `tool.name`; 4 `tool.arguments`; 5 decision `effective_decision` + `layers`;
 *  6 rule/scope or judge model + version inside each verdict; 7 `approval`; 8 `outcome`;
 *  9 integrity `seq`, `prev_hash`, `hash`.
 */
import type { Decision, Verdict } from "./verdict.js"
import type { ToolCallView } from "./tool-call.js"

export const AUDIT_SCHEMA = "vetobench/v2"
export const GENESIS_HASH = "0".repeat(64)
/** Domain-separation prefix hashed before the canonical bytes of a record. */
export const HASH_PREFIX = "vetobench/v2 record\n"

export type ApprovalStatus = "automatic" | "held" | "approved" | "rejected" | "expired"
export type LoggedArm = "baseline" | "shadow" | "enforce"
/** the wire format a call arrived in; records written before formats were recorded are `chat` */
export type Wire = "chat" | "responses" | "messages" | "mcp"

/** Where a ruling's request came from: the fields every call and result record carries. */
export interface RequestOrigin {
  readonly run_id: string | null
  readonly request_id: string
  readonly episode_id: string | null
  readonly session_id: string | null
  readonly principal: string | null
  readonly agent_model: string
}

/** What the gate writes for one proposed call; the sink adds schema, seq, ts and the chain. */
export interface CallEntry extends RequestOrigin {
  readonly type: "call"
  readonly arm: LoggedArm
  readonly judge: string | null
  readonly stream: boolean
  /** always written by the gate; absent in records written before formats were recorded (= `chat`) */
  readonly wire?: Wire
  /** which start of the episode's unit of work (`x-vetobench-attempt`, src/domain/attempt.ts); absent when not sent */
  readonly attempt?: number
  /** the MCP server the call was bound for (`wire: mcp` only; the name under `mcp.servers`) */
  readonly mcp_server?: string
  readonly choice_index: number
  readonly call_index: number
  readonly tool_call_id: string | null
  readonly tool: ToolCallView
  /** the judge's verdict (null in baseline) */
  readonly verdict: Verdict | null
  /** every layer's verdict, in the order they ruled (one entry for a single judge) */
  readonly layers: ReadonlyArray<Verdict>
  /** null in baseline */
  readonly effective_decision: Decision | null
  readonly blocked: boolean
  readonly fail_policy: "closed" | "open"
  readonly approval: ApprovalStatus
  /** filled by a later record that references this call (never by rewriting) */
  readonly outcome: string | null
  readonly gate_ms: number
}

/** A later record that gives a call's outcome (never a rewrite of the call record). */
export interface OutcomeEntry {
  readonly type: "outcome"
  readonly run_id: string | null
  /** the call record this outcome belongs to */
  readonly ref: { readonly seq: number; readonly hash: string; readonly request_id: string; readonly tool_call_id: string | null }
  readonly outcome: "executed" | "blocked" | "not_executed"
  /** where the outcome came from (e.g. the benchmark result file) */
  readonly source: string
}

/** The run's results manifest: sha256 of each output file; the run's final record. */
export interface ManifestEntry {
  readonly type: "manifest"
  readonly run_id: string | null
  readonly files: ReadonlyArray<{ readonly path: string; readonly sha256: string; readonly bytes: number }>
  /** in an experiment's results log (src/audit/results.ts): the command that wrote the files */
  readonly command?: string
  /** in an experiment's results log: the audit logs the results come from, each as its Merkle tree head then */
  readonly logs?: ReadonlyArray<{ readonly path: string; readonly records: number; readonly root: string }>
}

/** A person's decision on a held call (hold_policy wait), or its expiry; joined by `ref`. */
export interface ApprovalEntry {
  readonly type: "approval"
  readonly run_id: string | null
  readonly ref: { readonly seq: number; readonly hash: string; readonly request_id: string; readonly tool_call_id: string | null }
  /** `expired` is never recorded as `rejected` */
  readonly approval: "approved" | "rejected" | "expired"
  readonly approver: string | null
  readonly note: string | null
  /** the call went back to the agent */
  readonly released: boolean
}

/**
 * A release approval from `vetobench scenarios approve`: a person vouches that a prompt passed
 * every scenario in a live run. It binds the hashes of the evidence (paths relative to the
 * approvals file's directory); `vetobench scenarios verify` recomputes them.
 */
export interface ScenarioApprovalEntry {
  readonly type: "scenario_approval"
  /** the scenario run's id (its `x-vetobench-run`) */
  readonly run_id: string | null
  readonly approver: string
  /** the model string the run used (may carry an arm) */
  readonly model: string
  readonly prompt_path: string
  readonly prompt_sha256: string
  readonly scenarios: ReadonlyArray<{ readonly path: string; readonly sha256: string }>
  readonly run_file: string
  readonly run_file_sha256: string
  /** passed trials (always equal to `trials`: a run with a failure is never approved) */
  readonly passed: number
  readonly trials: number
}

/**
 * A result ruling (src/screening/): the result screen's verdict on one tool result the agent was
 * about to read — a `tool` message, a `function_call_output` item or a `tool_result` block of an
 * incoming request, or an MCP server's `tools/call` result. Joined to the call it answers by
 * `tool_call_id` (the call record with the same id in the same episode). Never a call ruling:
 * scoring counts call records only and counts flagged results separately.
 */
export interface ResultEntry extends RequestOrigin {
  readonly type: "result"
  readonly arm: "shadow" | "enforce"
  /** the screening judge (`screening.judge`), not the call judge of the route */
  readonly judge: string
  readonly wire: Wire
  /** which start of the episode's unit of work (`x-vetobench-attempt`); absent when not sent */
  readonly attempt?: number
  /** the MCP server that gave the result (`wire: mcp` only) */
  readonly mcp_server?: string
  /** the id of the call this result answers (`tool_call_id`, `call_id`, `tool_use_id`); null if it has none */
  readonly tool_call_id: string | null
  /** where the result is in the request: the index of its message (`messages[i]`, `input[i]`), and the content block in a Messages message (else null) */
  readonly position: { readonly index: number; readonly block: number | null }
  /** the text the judge rated (cut to `screening.max_chars`) */
  readonly text: string
  /** the result's whole text length in UTF-16 units (before the cut) */
  readonly chars: number
  readonly verdict: Verdict
  /** the screen decided the result is a likely injection (deny or hold, or a failed judge under `fail_policy: closed`) */
  readonly flagged: boolean
  /** the agent got the notice instead of the result (enforce and flagged) */
  readonly replaced: boolean
  readonly fail_policy: "closed" | "open"
  readonly screen_ms: number
  /**
   * set when the result was not new in its request (the client resent it) and this proxy had no
   * word on it in memory (a restart, another replica, evicted): enforce rates it again rather than
   * let it through unrated. Scoring counts the first rating of a result, not these.
   */
  readonly resent?: true
}

/**
 * The MCP gate's enforce arm hid tools from one `tools/list` answer: the arm's judge does not grant
 * them (the `rule` kind in `mode: scope`, judges/Judge.ts `grants`). One per answer that hid
 * something. Never a call ruling: scoring and every call count ignore it.
 */
export interface ToolsHiddenEntry {
  readonly type: "tools_hidden"
  readonly run_id: string | null
  readonly episode_id: string | null
  readonly session_id: string | null
  readonly principal: string | null
  readonly arm: "enforce"
  readonly wire: "mcp"
  readonly mcp_server: string
  /** the arm's judge */
  readonly judge: string
  /** the names of the hidden tools, in the server's order */
  readonly hidden: ReadonlyArray<string>
  /** how many tools the client was shown */
  readonly shown: number
}

export type AuditEntry = CallEntry | OutcomeEntry | ManifestEntry | ApprovalEntry | ScenarioApprovalEntry | ResultEntry | ToolsHiddenEntry

/** An entry as written: with schema, position, time and the chain. */
export type Sealed<E> = E & {
  readonly schema: typeof AUDIT_SCHEMA
  readonly seq: number
  /** ISO 8601 UTC with milliseconds */
  readonly ts: string
  readonly prev_hash: string
  readonly hash: string
}

export type AuditRecord = Sealed<AuditEntry>
export type CallRecord = Sealed<CallEntry>

export type ResultRecord = Sealed<ResultEntry>

export const isCallRecord = (r: AuditRecord): r is CallRecord => r.type === "call"
export const isResultRecord = (r: AuditRecord): r is ResultRecord => r.type === "result"
