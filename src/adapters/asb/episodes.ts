/**
 * Per-episode correlation (architecture decision 4): the launcher sends
 * `x-vetobench-episode: asb:<agent>:<attacker tool>:<task index>` (and `x-vetobench-session:
 * <attack tag>`) with every agent request, so each audit record names the episode it belongs to;
 * here a CSV row gets the same id, and rows and records are joined on it.
 *
 * - `<agent>` is the agent's `agent_name` in ASB's tasks file (the CSV's `Agent Name` is its
 *   `agent_path`, `example/<agent_name>`); `<task index>` is the task's position in that agent's
 *   list, from 0. Components are written as `launch.py` writes them: printable ASCII except `%`
 *   and `:` kept, everything else percent-encoded as UTF-8 (`headerPart`).
 * - A row's task is found in its `messages` field (Python's `str()` of the message list): the user
 *   message that starts with the task text, rendered as Python's `repr` renders a string. The
 *   longest task that matches wins (a task may be a prefix of another). No match → no id.
 * - All attacks of a variant share one run id (one audit file); the session id (the attack tag)
 *   tells their records apart.
 */
import * as fs from "node:fs"
import type { AsbRow } from "./csv.js"
import type { AgentTasks } from "./data.js"
import { isObject } from "../../domain/is-object.js"

/** One component of an episode id, as `launch.py` writes it. */
export const headerPart = (s: string): string => {
  let out = ""
  for (const ch of s) {
    const c = ch.codePointAt(0)!
    if (c >= 0x21 && c <= 0x7e && ch !== "%" && ch !== ":") out += ch
    else for (const b of Buffer.from(ch, "utf8")) out += `%${b.toString(16).toUpperCase().padStart(2, "0")}`
  }
  return out
}

export const episodeId = (agent: string, tool: string, taskIndex: number): string => `asb:${headerPart(agent)}:${headerPart(tool)}:${taskIndex}`

const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u
const hex = (n: number, width: number) => n.toString(16).padStart(width, "0")

/** The inside of Python's `repr` of a string delimited by `quote` (what goes between the quotes). */
export const pyStrBody = (s: string, quote: "'" | '"'): string => {
  let out = ""
  for (const ch of s) {
    const c = ch.codePointAt(0)!
    if (ch === quote || ch === "\\") out += `\\${ch}`
    else if (ch === "\t") out += "\\t"
    else if (ch === "\n") out += "\\n"
    else if (ch === "\r") out += "\\r"
    else if (c < 0x20 || c === 0x7f) out += `\\x${hex(c, 2)}`
    else if (c < 0x7f || ch === " " || !NOT_PRINTABLE.test(ch)) out += ch
    else out += c <= 0xff ? `\\x${hex(c, 2)}` : c <= 0xffff ? `\\u${hex(c, 4)}` : `\\U${hex(c, 8)}`
  }
  return out
}

/** Python's `repr(s)` for a `str`: `'…'`, or `"…"` when s has `'` but no `"`. */
export const pyRepr = (s: string): string => {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'"
  return `${quote}${pyStrBody(s, quote)}${quote}`
}

/** The index of the task this episode ran (its user message starts with it), or null. */
export const taskIndexOf = (messages: string, tasks: ReadonlyArray<string>): number | null => {
  let best: number | null = null
  let bestLength = -1
  for (const [i, task] of tasks.entries()) {
    if (task.length <= bestLength) continue
    const hit = (["'", '"'] as const).some((q) => messages.includes(`'role': 'user', 'content': ${q}${pyStrBody(task, q)}`))
    if (hit) {
      best = i
      bestLength = task.length
    }
  }
  return best
}

/** The agents of the tasks file by `agent_path` and by `agent_name`. */
export const tasksByAgent = (agents: ReadonlyArray<AgentTasks>): ReadonlyMap<string, AgentTasks> => {
  const out = new Map<string, AgentTasks>()
  for (const a of agents) {
    if (a.path !== "") out.set(a.path, a)
    if (a.name !== "" && !out.has(a.name)) out.set(a.name, a)
  }
  return out
}

const basename = (p: string) => p.split("/").filter((x) => x !== "").at(-1) ?? p

export interface RowEpisode {
  /** the `agent_name` of the row's agent */
  readonly agent: string
  readonly task: number | null
  /** null when the task could not be found in the row's messages */
  readonly episode: string | null
}

/** The episode of one CSV row. */
export const rowEpisode = (row: Pick<AsbRow, "agent" | "tool" | "messages">, agents: ReadonlyMap<string, AgentTasks>): RowEpisode => {
  const a = agents.get(row.agent) ?? agents.get(basename(row.agent))
  const agent = a?.name !== undefined && a.name !== "" ? a.name : basename(row.agent)
  const task = a === undefined ? null : taskIndexOf(row.messages, a.tasks)
  return { agent, task, episode: task === null ? null : episodeId(agent, row.tool, task) }
}

/**
 * Rows in episode order — agent, attacker tool, task index (rows without a task last, in file
 * order) — so the scoring module's occurrence-based pairing key (`agent|tool|occurrence`) lines up
 * with the task index between arms, whatever order the episodes finished in.
 */
export const sortByEpisode = <R extends Pick<AsbRow, "agent" | "tool" | "messages">>(
  rows: ReadonlyArray<R>,
  agents: ReadonlyMap<string, AgentTasks>
): ReadonlyArray<R> => {
  const keyed = rows.map((row, i) => ({ row, i, e: rowEpisode(row, agents) }))
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
  keyed.sort((x, y) =>
    cmp(x.row.agent, y.row.agent) || cmp(x.row.tool, y.row.tool) ||
    (x.e.task ?? Number.MAX_SAFE_INTEGER) - (y.e.task ?? Number.MAX_SAFE_INTEGER) || x.i - y.i
  )
  return keyed.map((k) => k.row)
}

// ---------------------------------------------------------------------------------------------
// audit records

/** What the join needs of one audit call record. */
export interface AuditCall {
  readonly episode_id: string | null
  readonly session_id: string | null
  readonly tool: string
  readonly blocked: boolean
  /** which start of the shard (`x-vetobench-attempt`); null in records written before attempts */
  readonly attempt: number | null
}

const str = (v: unknown): string | null => (typeof v === "string" ? v : null)

/** The call records of an audit file (other record types and unreadable lines skipped); [] when absent. */
export const readAuditCalls = (file: string): ReadonlyArray<AuditCall> => {
  let text: string
  try {
    text = fs.readFileSync(file, "utf8")
  } catch {
    return []
  }
  const out: Array<AuditCall> = []
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue
    let v: unknown
    try {
      v = JSON.parse(line)
    } catch {
      continue
    }
    if (!isObject(v) || v.type !== "call") continue
    out.push({
      episode_id: str(v.episode_id),
      session_id: str(v.session_id),
      tool: isObject(v.tool) ? str(v.tool.name) ?? "" : "",
      blocked: v.blocked === true,
      attempt: typeof v.attempt === "number" && Number.isSafeInteger(v.attempt) && v.attempt > 0 ? v.attempt : null
    })
  }
  return out
}

export interface JoinedRow extends RowEpisode {
  readonly agent_path: string
  readonly tool: string
  /** audit call records of the episode */
  readonly calls: number
  /** of which the proxy removed */
  readonly blocked: number
}

export interface AuditJoin {
  readonly rows: ReadonlyArray<JoinedRow>
  /** rows whose episode id could be made */
  readonly rows_with_episode: number
  /** rows with at least one audit record (episodes where the agent proposed a call) */
  readonly rows_with_calls: number
  /** audit call records of the session (final attempts: the caller filters) */
  readonly calls: number
  /** records of earlier starts of a shard, left out by the caller (0 when it did not filter) */
  readonly stale_calls: number
  /** … whose episode id is a row's */
  readonly calls_joined: number
  /** rows with a call the proxy removed (from the audit, whatever the refusal wording) */
  readonly episodes_with_block: number
  /** episode ids of the session's records that no row has, sorted */
  readonly unmatched_episodes: ReadonlyArray<string>
}

/**
 * Joins CSV rows with the audit call records of `session` (the attack tag; null = records without
 * a session) through the episode id. Several rows may share an id when a shard ran twice; each
 * gets the episode's records.
 */
export const joinAudit = (
  rows: ReadonlyArray<Pick<AsbRow, "agent" | "tool" | "messages">>,
  agents: ReadonlyMap<string, AgentTasks>,
  records: ReadonlyArray<AuditCall>,
  session: string | null,
  stale = 0
): AuditJoin => {
  const byEpisode = new Map<string, { calls: number; blocked: number }>()
  let calls = 0
  for (const r of records) {
    if (r.session_id !== session) continue
    calls += 1
    const key = r.episode_id ?? ""
    const e = byEpisode.get(key) ?? { calls: 0, blocked: 0 }
    e.calls += 1
    if (r.blocked) e.blocked += 1
    byEpisode.set(key, e)
  }
  const joined = rows.map((row): JoinedRow => {
    const e = rowEpisode(row, agents)
    const hit = e.episode === null ? undefined : byEpisode.get(e.episode)
    return { ...e, agent_path: row.agent, tool: row.tool, calls: hit?.calls ?? 0, blocked: hit?.blocked ?? 0 }
  })
  const ids = new Set(joined.flatMap((r) => (r.episode === null ? [] : [r.episode])))
  let callsJoined = 0
  for (const [id, e] of byEpisode) if (ids.has(id)) callsJoined += e.calls
  return {
    rows: joined,
    rows_with_episode: joined.filter((r) => r.episode !== null).length,
    rows_with_calls: joined.filter((r) => r.calls > 0).length,
    calls,
    stale_calls: stale,
    calls_joined: callsJoined,
    episodes_with_block: joined.filter((r) => r.blocked > 0).length,
    unmatched_episodes: [...byEpisode.keys()].filter((id) => !ids.has(id)).sort()
  }
}
