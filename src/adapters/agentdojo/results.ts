/**
 * The rows of an AgentDojo run (`results.jsonl`, one JSON line per finished episode, written by
 * `launch.py`; docs/agentdojo.md "Results"). An episode that ran more than once (an error, then a
 * re-run) has several rows: the last one counts.
 */
import { Effect } from "effect"
import * as path from "node:path"
import { readJsonl, type StoreError } from "../../run-layout/store.js"

export const RESULTS_JSONL = "results.jsonl"
export const EPISODES_JSON = "episodes.json"
export const LAUNCH_LOG = "launch.log"

/** `<dir>/results.jsonl` */
export const resultsFile = (dir: string): string => path.join(dir, RESULTS_JSONL)

export interface AgentdojoCall {
  readonly function: string
  readonly args: Readonly<Record<string, unknown>>
}

/** One episode's row (the launcher's format). */
export interface AgentdojoRow {
  readonly episode: string
  readonly suite: string
  readonly user_task: string
  readonly injection_task: string | null
  readonly attack: string | null
  readonly variant: string
  readonly arm: string
  readonly judge: string | null
  readonly defense: string | null
  readonly benchmark_version: string
  readonly model: string
  readonly oracle: boolean
  readonly utility: boolean | null
  /** AgentDojo's: true = the injection task succeeded; null without injection or on error */
  readonly security: boolean | null
  readonly error: string | null
  readonly attempt: number
  readonly duration_s: number
  readonly usage: { readonly prompt_tokens: number; readonly completion_tokens: number } | null
  readonly injection_ground_truth: ReadonlyArray<AgentdojoCall>
  readonly user_ground_truth: ReadonlyArray<AgentdojoCall>
  readonly calls: ReadonlyArray<AgentdojoCall>
  readonly [extra: string]: unknown
}

const isRow = (v: Record<string, unknown>): v is Record<string, unknown> & AgentdojoRow =>
  typeof v.episode === "string" && typeof v.suite === "string" && typeof v.user_task === "string" && (v.error === null || typeof v.error === "string")

/** The last row per episode, in first-seen order (foreign and torn lines skipped); empty when the file does not exist. */
export const readRows = (file: string): Effect.Effect<ReadonlyMap<string, AgentdojoRow>, StoreError> =>
  Effect.map(readJsonl(file), (values) => {
    const out = new Map<string, AgentdojoRow>()
    for (const v of values) if (isRow(v)) out.set(v.episode, v)
    return out
  })

/** What a row must have been run with to count as done for a run. */
export interface RunIdentity {
  readonly benchmark_version: string
  readonly oracle: boolean
}

/**
 * An episode is done when its last row has no error, has AgentDojo's utility (a row without it is
 * re-run, as scoring does not count it), and was run with this run's benchmark version and agent
 * (oracle or model): a changed experiment re-runs its episodes instead of keeping rows of another.
 */
export const isDone = (row: AgentdojoRow | undefined, run: RunIdentity): boolean =>
  row !== undefined && row.error === null && typeof row.utility === "boolean" && row.benchmark_version === run.benchmark_version &&
  (row.oracle === true) === run.oracle
