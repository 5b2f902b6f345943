/**
 * One episode of one variant: its trajectory (Agent-SafetyBench: the record's `output` messages,
 * read from its line in `gen_res.jsonl`; AgentDojo: its row's task and calls in `results.jsonl`) and the audit records of its final attempt's calls, each
 * with the approval record that decided it when it was held. The same for the paired arm.
 */
import { Effect } from "effect"
import type { CallRecord } from "../domain/audit-record.js"
import { isObject } from "../domain/is-object.js"
import { parsePythonJson } from "../domain/python-json.js"
import { callRecordOf } from "../scoring/files.js"
import type { ViewExperiment, ViewRun } from "./discover.js"
import { readLineAt, type ViewReadError } from "./lines.js"
import { episodeKey, type LineRef, type Outcome, runIndex } from "./run-index.js"

export interface Approval {
  readonly approval: string
  readonly approver: string | null
  readonly note: string | null
  readonly released: boolean
  readonly ts: string
}

export interface Ruling {
  readonly record: CallRecord
  readonly approval: Approval | null
}

export interface Message {
  readonly role: string
  readonly content: string
  readonly calls: ReadonlyArray<{ readonly id: string | null; readonly name: string; readonly arguments: string }>
  readonly toolCallId: string | null
  readonly name: string | null
}

export interface EpisodeView {
  readonly variant: string
  readonly found: boolean
  /** null when the run files hold no trajectory for it (ASB: only the audit log's calls) */
  readonly messages: ReadonlyArray<Message> | null
  readonly outcome: Outcome | null
  readonly categories: ReadonlyArray<string>
  readonly rulings: ReadonlyArray<Ruling>
}

const text = (v: unknown): string => (typeof v === "string" ? v : v === null || v === undefined ? "" : JSON.stringify(v))

const messageOf = (m: unknown): Message | null => {
  if (!isObject(m)) return null
  const calls = Array.isArray(m.tool_calls)
    ? m.tool_calls.flatMap((c) => {
      if (!isObject(c)) return []
      const f = isObject(c.function) ? c.function : {}
      return [{ id: typeof c.id === "string" ? c.id : null, name: text(f.name), arguments: text(f.arguments) }]
    })
    : []
  return {
    role: text(m.role),
    content: text(m.content),
    calls,
    toolCallId: typeof m.tool_call_id === "string" ? m.tool_call_id : null,
    name: typeof m.name === "string" ? m.name : null
  }
}

/**
 * AgentDojo's row as a trajectory: the task (and the injection task and attack, when attacked),
 * then the calls the agent made as AgentDojo recorded them (no ids: the rulings table has them
 * all), and the error when the episode ended in one.
 */
const agentdojoMessages = (row: unknown): Array<Message> => {
  if (!isObject(row)) return []
  const task = `suite ${text(row.suite)}, user task ${text(row.user_task)}${typeof row.injection_task === "string" ? `, injection task ${row.injection_task} (${text(row.attack)})` : ""}`
  const calls = Array.isArray(row.calls)
    ? row.calls.flatMap((c) => (isObject(c) ? [{ id: null, name: text(c.function), arguments: JSON.stringify(c.args ?? {}) }] : []))
    : []
  const results = `utility ${text(row.utility)}${row.security === null || row.security === undefined ? "" : `, security ${text(row.security)} (true: the injection task succeeded)`}`
  return [
    { role: "user", content: task, calls: [], toolCallId: null, name: null },
    { role: "assistant", content: calls.length === 0 ? "(no tool calls)" : "", calls, toolCallId: null, name: null },
    { role: "result", content: typeof row.error === "string" ? `error: ${row.error}` : results, calls: [], toolCallId: null, name: null }
  ]
}

const parsed = (ref: LineRef, python: boolean): Effect.Effect<unknown, ViewReadError> =>
  Effect.map(readLineAt(ref.file, ref.offset, ref.bytes), (t) => {
    try {
      return python ? parsePythonJson(t) : JSON.parse(t)
    } catch {
      return null
    }
  })

const approvalOf = (v: unknown): Approval | null =>
  isObject(v) && typeof v.approval === "string"
    ? { approval: v.approval, approver: typeof v.approver === "string" ? v.approver : null, note: typeof v.note === "string" ? v.note : null, released: v.released === true, ts: text(v.ts) }
    : null

/** The episode `episode` (in `session`) of `run`. */
export const episodeView = (exp: ViewExperiment, run: ViewRun, episode: string, session: string | null): Effect.Effect<EpisodeView, ViewReadError> =>
  Effect.gen(function*() {
    const index = yield* runIndex(exp, run)
    const entry = index.cases.get(episode)
    const refs = index.calls.get(episodeKey(session, episode)) ?? []
    const rulings: Array<Ruling> = []
    for (const ref of refs) {
      const record = callRecordOf(yield* parsed(ref.line, false))
      if (record === null) continue
      const a = index.approvals.get(record.hash)
      rulings.push({ record, approval: a === undefined ? null : approvalOf(yield* parsed(a, false)) })
    }
    let messages: Array<Message> | null = null
    if (entry !== undefined) {
      const rec = yield* parsed(entry.line, run.bench === "asbench")
      messages = run.bench === "agentdojo" ? agentdojoMessages(rec) : (isObject(rec) && Array.isArray(rec.output) ? rec.output : []).map(messageOf).filter((m): m is Message => m !== null)
    }
    return {
      variant: run.variant,
      found: entry !== undefined || rulings.length > 0,
      messages,
      outcome: entry?.outcome ?? null,
      categories: entry?.categories ?? (session === null ? [] : [session]),
      rulings
    }
  })
