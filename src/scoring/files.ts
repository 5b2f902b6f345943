/**
 * Reading the files scoring needs: JSON / JSONL (Python-compatible: `NaN`, integral floats), and
 * the call records of an audit file (checked field by field, so a damaged or foreign line is
 * skipped, never trusted).
 */
import { Data, Effect, Either, Schema } from "effect"
import * as fs from "node:fs"
import type { ApprovalStatus, CallRecord, LoggedArm } from "../domain/audit-record.js"
import { parsePythonJson } from "../domain/python-json.js"
import { Verdict } from "../domain/verdict.js"
import { isObject } from "../domain/is-object.js"

export class ScoringReadError extends Data.TaggedError("ScoringReadError")<{ readonly file: string; readonly reason: string }> {
  override get message(): string {
    return `${this.file}: ${this.reason}`
  }
}

const reasonOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

export const readText = (file: string): Effect.Effect<string, ScoringReadError> =>
  Effect.try({
    try: () => fs.readFileSync(file, "utf8"),
    catch: (e) => {
      const code = isObject(e) ? e.code : undefined
      return new ScoringReadError({ file, reason: code === "ENOENT" ? "not found" : `cannot read: ${reasonOf(e)}` })
    }
  })

/** A JSON file (as Python's `json.load`). */
export const readJson = (file: string): Effect.Effect<unknown, ScoringReadError> =>
  Effect.flatMap(readText(file), (text) =>
    Effect.try({ try: () => parsePythonJson(text), catch: (e) => new ScoringReadError({ file, reason: `not valid JSON: ${reasonOf(e)}` }) })
  )

/**
 * The values of a JSONL text in order; blank and unreadable lines (a torn tail) are skipped.
 * `python`: parse as Python's `json.loads` (files the benchmark side writes); else `JSON.parse`
 * (audit and replay files, written by us).
 */
export const parseJsonLines = (text: string, python = false): Array<unknown> => {
  const out: Array<unknown> = []
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue
    try {
      out.push(python ? parsePythonJson(line) : JSON.parse(line))
    } catch {
      // torn or foreign line: skipped
    }
  }
  return out
}

/** A JSONL file's values; [] when it does not exist. */
export const readJsonLines = (file: string, python = false): Effect.Effect<Array<unknown>, ScoringReadError> =>
  fs.existsSync(file) ? Effect.map(readText(file), (t) => parseJsonLines(t, python)) : Effect.succeed([])

const decodeVerdict = Schema.decodeUnknownEither(Verdict)
const verdictOf = (v: unknown): Verdict | null => {
  const d = decodeVerdict(v)
  return Either.isRight(d) ? d.right : null
}
const str = (v: unknown): string | null => (typeof v === "string" ? v : null)
const ARMS: ReadonlyArray<string> = ["baseline", "shadow", "enforce"]
const APPROVALS: ReadonlyArray<string> = ["automatic", "held", "approved", "rejected", "expired"]
const DECISIONS: ReadonlyArray<string> = ["allow", "deny", "hold"]

/** A call record from a parsed audit line, or null when the line is not one. */
export const callRecordOf = (v: unknown): CallRecord | null => {
  if (!isObject(v) || v.type !== "call" || typeof v.hash !== "string" || !isObject(v.tool) || typeof v.tool.name !== "string") return null
  if (typeof v.arm !== "string" || !ARMS.includes(v.arm)) return null
  const tool = v.tool
  const layers = Array.isArray(v.layers) ? v.layers.map(verdictOf).filter((x): x is Verdict => x !== null) : []
  return {
    schema: "vetobench/v2",
    seq: typeof v.seq === "number" ? v.seq : 0,
    ts: str(v.ts) ?? "",
    prev_hash: str(v.prev_hash) ?? "",
    hash: v.hash,
    type: "call",
    run_id: str(v.run_id),
    request_id: str(v.request_id) ?? "",
    episode_id: str(v.episode_id),
    session_id: str(v.session_id),
    principal: str(v.principal),
    agent_model: str(v.agent_model) ?? "",
    arm: v.arm as LoggedArm,
    judge: str(v.judge),
    stream: v.stream === true,
    choice_index: typeof v.choice_index === "number" ? v.choice_index : 0,
    call_index: typeof v.call_index === "number" ? v.call_index : 0,
    tool_call_id: str(v.tool_call_id),
    tool: {
      name: tool.name as string,
      description: str(tool.description) ?? "",
      parameters: isObject(tool.parameters) ? tool.parameters : null,
      arguments: tool.arguments
    },
    verdict: v.verdict === null || v.verdict === undefined ? null : verdictOf(v.verdict),
    layers,
    effective_decision: typeof v.effective_decision === "string" && DECISIONS.includes(v.effective_decision) ? (v.effective_decision as CallRecord["effective_decision"]) : null,
    blocked: v.blocked === true,
    fail_policy: v.fail_policy === "open" ? "open" : "closed",
    approval: typeof v.approval === "string" && APPROVALS.includes(v.approval) ? (v.approval as ApprovalStatus) : "automatic",
    outcome: str(v.outcome),
    gate_ms: typeof v.gate_ms === "number" ? v.gate_ms : 0,
    ...(typeof v.attempt === "number" && Number.isSafeInteger(v.attempt) && v.attempt > 0 ? { attempt: v.attempt } : {})
  }
}

/**
 * What scoring reads of a result ruling (`type: "result"`, src/screening/): never a call, so it is
 * kept apart from the call records and only counted (flagged results per episode).
 */
export interface ScreenedResult {
  readonly episode_id: string | null
  readonly session_id: string | null
  readonly attempt?: number
  readonly tool_call_id: string | null
  readonly flagged: boolean
  readonly replaced: boolean
  /** a resent result rated again (src/screening/Screening.ts): not counted a second time */
  readonly resent?: true
}

/** A result ruling from a parsed audit line, or null when the line is not one. */
export const resultRecordOf = (v: unknown): ScreenedResult | null => {
  if (!isObject(v) || v.type !== "result" || typeof v.hash !== "string" || typeof v.flagged !== "boolean") return null
  return {
    episode_id: str(v.episode_id),
    session_id: str(v.session_id),
    tool_call_id: str(v.tool_call_id),
    flagged: v.flagged,
    replaced: v.replaced === true,
    ...(v.resent === true ? { resent: true as const } : {}),
    ...(typeof v.attempt === "number" && Number.isSafeInteger(v.attempt) && v.attempt > 0 ? { attempt: v.attempt } : {})
  }
}

/** The result rulings of audit files, in file order (other record types and bad lines skipped). */
export const readResultRecords = (files: ReadonlyArray<string>): Effect.Effect<Array<ScreenedResult>, ScoringReadError> =>
  Effect.map(Effect.forEach(files, (f) => readJsonLines(f)), (lists) =>
    lists.flat().map(resultRecordOf).filter((r): r is ScreenedResult => r !== null)
  )

/** The call records of an audit file, in file order (other record types and bad lines skipped). */
export const readCallRecords = (file: string): Effect.Effect<Array<CallRecord>, ScoringReadError> =>
  Effect.map(readJsonLines(file), (values) => values.map(callRecordOf).filter((r): r is CallRecord => r !== null))

/** The call records of several audit files, in file order. */
export const readCallRecordsOf = (files: ReadonlyArray<string>): Effect.Effect<Array<CallRecord>, ScoringReadError> =>
  Effect.map(Effect.forEach(files, readCallRecords), (lists) => lists.flat())
