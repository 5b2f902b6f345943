/**
 * `audit outcomes`: the outcome of each call, added as later `type: "outcome"` records that
 * reference the call (by seq and hash) — never by rewriting the call's record.
 *
 * Sources: a blocked call's outcome is `blocked` (the audit says so itself); for the others, a
 * results file from the benchmark run, JSON lines `{"request_id", "tool_call_id"?, "call_index"?,
 * "outcome": "executed" | "not_executed" | "blocked"}`. Calls that already have an outcome record
 * are skipped, so the command can be re-run.
 */
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { AuditSink } from "../../layers/AuditSink.js"
import { type AuditRecord, type CallRecord, isCallRecord, type OutcomeEntry } from "../domain/audit-record.js"
import { AuditInputError } from "./verify-files.js"

export interface ResultLine {
  readonly request_id: string
  readonly tool_call_id?: string | null
  readonly call_index?: number
  readonly outcome: OutcomeEntry["outcome"]
}

const OUTCOMES = new Set(["executed", "not_executed", "blocked"])

export const parseResults = (file: string, text: string): Array<ResultLine> | AuditInputError => {
  const out: Array<ResultLine> = []
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue
    let v: unknown
    try {
      v = JSON.parse(line)
    } catch {
      return new AuditInputError({ file, reason: `line ${i + 1}: not valid JSON` })
    }
    const r = v as Partial<ResultLine>
    if (typeof r.request_id !== "string" || typeof r.outcome !== "string" || !OUTCOMES.has(r.outcome)) {
      return new AuditInputError({ file, reason: `line ${i + 1}: needs request_id and outcome (executed | not_executed | blocked)` })
    }
    out.push(r as ResultLine)
  }
  return out
}

const keyOf = (requestId: string, id: string | null | undefined, index: number | undefined) =>
  `${requestId}\u0000${id ?? ""}\u0000${index ?? ""}`

export interface OutcomePlan {
  readonly entries: ReadonlyArray<OutcomeEntry>
  /** call records with no outcome from any source */
  readonly unmatched: number
  /** calls that already had an outcome record */
  readonly already: number
}

/** Which outcome records to append for `records`, given the benchmark's results (pure). */
export const planOutcomes = (records: ReadonlyArray<AuditRecord>, results: ReadonlyArray<ResultLine>, source: string): OutcomePlan => {
  const done = new Set(records.filter((r) => r.type === "outcome").map((r) => (r as unknown as OutcomeEntry).ref.hash))
  const byKey = new Map<string, ResultLine>()
  for (const r of results) {
    byKey.set(keyOf(r.request_id, r.tool_call_id, undefined), r)
    if (r.call_index !== undefined) byKey.set(keyOf(r.request_id, undefined, r.call_index), r)
  }
  const entries: Array<OutcomeEntry> = []
  let unmatched = 0
  let already = 0
  for (const call of records.filter(isCallRecord)) {
    if (done.has(call.hash)) {
      already++
      continue
    }
    const result = byKey.get(keyOf(call.request_id, call.tool_call_id, undefined)) ?? byKey.get(keyOf(call.request_id, undefined, call.call_index))
    const outcome = call.blocked ? "blocked" : result?.outcome
    if (outcome === undefined) {
      unmatched++
      continue
    }
    entries.push(outcomeFor(call, outcome, call.blocked ? "audit: blocked by the gate" : source))
  }
  return { entries, unmatched, already }
}

const outcomeFor = (call: CallRecord, outcome: OutcomeEntry["outcome"], source: string): OutcomeEntry => ({
  type: "outcome",
  run_id: call.run_id,
  ref: { seq: call.seq, hash: call.hash, request_id: call.request_id, tool_call_id: call.tool_call_id },
  outcome,
  source
})

/**
 * Read the audit file and results and append the planned outcome records through the sink. Closing the
 * sink (the command's scope, right after) writes the final checkpoint (`final: true`) that covers them.
 */
export const appendOutcomes = (runId: string, auditFile: string, resultsFile: string | null) =>
  Effect.gen(function* () {
    const read = (f: string) =>
      Effect.try({ try: () => readFileSync(f, "utf8"), catch: () => new AuditInputError({ file: f, reason: "cannot read" }) })
    const text = yield* read(auditFile)
    const records = text
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as AuditRecord)
    const results = resultsFile === null ? [] : parseResults(resultsFile, yield* read(resultsFile))
    if (results instanceof AuditInputError) return yield* results
    const plan = planOutcomes(records, results, resultsFile ?? "")
    const sink = yield* AuditSink
    yield* Effect.forEach(plan.entries, (e) => sink.append(runId, e), { discard: true })
    return plan
  })
