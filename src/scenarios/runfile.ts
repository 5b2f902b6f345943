/**
 * The run file: JSONL, one header line (`kind: "scenario-run"`), one line per trial
 * (`kind: "scenario-trial"`) and, when the run finished, one summary line (`kind: "scenario-summary"`).
 * Paths inside are relative to the run file's directory (POSIX separators), so a run file and the
 * files it names can move together (e.g. a CI checkout at another path).
 */
import { isObject } from "../domain/is-object.js"
import * as fs from "node:fs"
import * as path from "node:path"
import { Data, Effect } from "effect"
import type { CheckResult } from "./checks.js"
import type { Trajectory, TrajectoryCall, Usage } from "./trajectory.js"

export const RUN_FORMAT = 1

export class RunFileError extends Data.TaggedError("RunFileError")<{ readonly file: string; readonly reason: string }> {
  override get message() {
    return `${this.file}: ${this.reason}`
  }
}

/** A file named by a run (path relative to the run file's directory) and its hash at run time. */
export interface FileRef {
  readonly path: string
  readonly sha256: string
}

export interface PromptInfo extends FileRef {
  readonly version: string | null
}

/** `candidate`: the prompt under test (every trial of a single-prompt run); `baseline`: the prompt it is compared with. */
export type Variant = "candidate" | "baseline"

export interface RunHeader {
  readonly kind: "scenario-run"
  readonly format: typeof RUN_FORMAT
  /** true: the trajectories come from model calls made by this run; false: a replay (never approvable) */
  readonly live: boolean
  /** the `x-vetobench-run` prefix (`scenarios.<name>`); variants of an A/B run append `.candidate` / `.baseline` */
  readonly run_id: string
  readonly model: string
  readonly proxy_url: string | null
  readonly prompt: PromptInfo
  readonly baseline: PromptInfo | null
  readonly scenarios: ReadonlyArray<FileRef>
  /** `--trials` (null: each scenario's own) */
  readonly trials: number | null
  readonly max_rounds: number | null
  readonly started: string
  /** a replay: the run file it re-checked */
  readonly replay_of: FileRef | null
}

/** A failed check (or a trial that could not finish: kind `error`), with the calls that caused it. */
export interface Failure {
  readonly check: string
  readonly kind: CheckResult["kind"] | "error"
  readonly why: string | null
  readonly message: string
  readonly calls: ReadonlyArray<TrajectoryCall>
}

export interface TrialLine extends Trajectory {
  readonly kind: "scenario-trial"
  readonly variant: Variant
  /** the scenario file, as in the header */
  readonly file: string
  readonly scenario: string
  readonly trial: number
  readonly episode: string
  readonly passed: boolean
  readonly failures: ReadonlyArray<Failure>
  readonly ms: number
}

export interface VariantSummary {
  readonly trials: number
  readonly passed: number
  readonly usage: Usage
  /** estimated from the price table; null without a price for the model */
  readonly cost_usd: number | null
}

export interface SummaryLine {
  readonly kind: "scenario-summary"
  readonly finished: string
  readonly candidate: VariantSummary
  readonly baseline: VariantSummary | null
}

export interface RunFile {
  /** absolute */
  readonly file: string
  readonly sha256: string
  readonly header: RunHeader
  readonly trials: ReadonlyArray<TrialLine>
  /** null when the run did not finish */
  readonly summary: SummaryLine | null
}

/** `p` relative to `dir`, with POSIX separators. */
export const relativeTo = (dir: string, p: string): string => path.relative(dir, path.resolve(p)).split(path.sep).join("/")

/** A path from a run or approval file, resolved against that file's directory. */
export const resolveFrom = (dir: string, p: string): string => path.resolve(dir, ...p.split("/"))

const codeOf = (e: unknown): unknown => (typeof e === "object" && e !== null && "code" in e ? e.code : undefined)

export const readBytes = (file: string, what: string): Effect.Effect<Buffer, RunFileError> =>
  Effect.try({
    try: () => fs.readFileSync(file),
    catch: (e) => new RunFileError({ file, reason: codeOf(e) === "ENOENT" ? `${what} not found` : `cannot read ${what}: ${e instanceof Error ? e.message : String(e)}` })
  })

/** Parse a run file's text. */
export const parseRunFile = (file: string, sha256: string, text: string): RunFile | RunFileError => {
  const lines = text.split("\n").filter((l) => l.trim() !== "")
  const values: Array<Record<string, unknown>> = []
  for (const [i, l] of lines.entries()) {
    let v: unknown
    try {
      v = JSON.parse(l)
    } catch {
      return new RunFileError({ file, reason: `line ${i + 1}: not valid JSON` })
    }
    if (!isObject(v)) return new RunFileError({ file, reason: `line ${i + 1}: not a JSON object` })
    values.push(v)
  }
  const [head, ...rest] = values
  if (head === undefined || head.kind !== "scenario-run") return new RunFileError({ file, reason: "not a scenario run file (the first line must be the scenario-run header)" })
  if (head.format !== RUN_FORMAT) return new RunFileError({ file, reason: `unsupported run file format ${JSON.stringify(head.format)}` })
  const trials: Array<TrialLine> = []
  let summary: SummaryLine | null = null
  for (const [i, v] of rest.entries()) {
    if (summary !== null) return new RunFileError({ file, reason: `line ${i + 2}: a line after the summary` })
    if (v.kind === "scenario-trial") trials.push(v as unknown as TrialLine)
    else if (v.kind === "scenario-summary") summary = v as unknown as SummaryLine
    else return new RunFileError({ file, reason: `line ${i + 2}: unknown kind ${JSON.stringify(v.kind)}` })
  }
  return { file, sha256, header: head as unknown as RunHeader, trials, summary }
}

/** Append lines (each a JSON object) to the run file. */
export const appendLines = (file: string, lines: ReadonlyArray<object>): Effect.Effect<void, RunFileError> =>
  Effect.try({
    try: () => fs.appendFileSync(file, lines.map((l) => JSON.stringify(l) + "\n").join("")),
    catch: (e) => new RunFileError({ file, reason: `cannot write: ${e instanceof Error ? e.message : String(e)}` })
  })

/** Create the run file with its header; an existing file is never overwritten. */
export const createRunFile = (file: string, header: RunHeader): Effect.Effect<void, RunFileError> =>
  Effect.try({
    try: () => {
      fs.mkdirSync(path.dirname(file), { recursive: true })
      fs.writeFileSync(file, JSON.stringify(header) + "\n", { flag: "wx" })
    },
    catch: (e) =>
      new RunFileError({ file, reason: codeOf(e) === "EEXIST" ? "already exists (choose another --out)" : `cannot create: ${e instanceof Error ? e.message : String(e)}` })
  })
