/**
 * `scenarios run` and `scenarios replay` as effects (the CLI only parses options and prints).
 *
 * run: every scenario of every file, `trials` times, through the proxy (any arm: the model string
 * may carry `@enforce:J`), for the candidate prompt and, in a baseline vs candidate run, for the
 * baseline prompt too. Trials of a scenario run concurrently (bounded); the run file gets the
 * scenario's lines in order once they are done, and a summary line when the run finished.
 *
 * replay: re-checks the saved trajectories of a run file with the scenario files as they are now
 * (no model calls) and writes a new run file marked `live: false`.
 */
import * as path from "node:path"
import { Data, Effect } from "effect"
import type { ConfigError } from "../config/errors.js"
import { DEFAULT_MAX_ROUNDS, episodeId, runTrial } from "./agent.js"
import { type ChatFn, makeChat } from "./client.js"
import { costOf, type PriceTable } from "./cost.js"
import { judgeTrajectory } from "./outcome.js"
import { displayPath, headerLines, scenarioLines, summaryLines } from "./report.js"
import {
  appendLines,
  createRunFile,
  type FileRef,
  parseRunFile,
  type PromptInfo,
  readBytes,
  relativeTo,
  resolveFrom,
  type RunFile,
  type RunFileError,
  type RunHeader,
  type SummaryLine,
  type TrialLine,
  type Variant,
  type VariantSummary
} from "./runfile.js"
import { sha256Hex } from "../domain/audit-chain.js"
import { loadScenarioFile, type ScenarioFile } from "./spec.js"
import { addUsage, ZERO_USAGE } from "./trajectory.js"

/** A run cannot start or go on (bad input); failing trials are not errors. */
export class ScenarioRunError extends Data.TaggedError("ScenarioRunError")<{ readonly message: string }> {}

export type ScenarioError = ScenarioRunError | RunFileError | ConfigError

export interface Prompt {
  /** absolute */
  readonly file: string
  readonly text: string
  readonly sha256: string
  readonly version: string | null
}

export const readPrompt = (file: string, version: string | null): Effect.Effect<Prompt, RunFileError> =>
  readBytes(path.resolve(file), "prompt file").pipe(
    Effect.map((bytes) => ({ file: path.resolve(file), text: bytes.toString("utf8"), sha256: sha256Hex(bytes), version }))
  )

/** Load the scenario files; scenario ids must be unique over the run. */
export const loadSuite = (files: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<ScenarioFile>, ScenarioError> =>
  Effect.gen(function*() {
    const loaded = yield* Effect.forEach(files, loadScenarioFile)
    const seen = new Map<string, string>()
    for (const f of loaded) {
      if (loaded.filter((g) => g.file === f.file).length > 1) return yield* new ScenarioRunError({ message: `${f.file} is given twice` })
      for (const s of f.scenarios) {
        const other = seen.get(s.id)
        if (other !== undefined) return yield* new ScenarioRunError({ message: `scenario id ${s.id} is in both ${other} and ${f.file}` })
        seen.set(s.id, f.file)
      }
    }
    return loaded
  })

/** The candidate prompt: the one given, else the one every scenario file names. */
const candidatePrompt = (suite: ReadonlyArray<ScenarioFile>, given: string | null): Effect.Effect<Prompt, ScenarioError> => {
  if (given !== null) return readPrompt(given, null)
  const named = [...new Set(suite.map((f) => f.prompt?.file ?? ""))]
  const [only] = named
  if (named.length !== 1 || only === undefined || only === "") {
    return new ScenarioRunError({
      message:
        named.includes("") ? "a scenario file names no prompt: give --prompt (or --candidate)" : "the scenario files name different prompts: give --prompt (or --candidate)"
    })
  }
  return readPrompt(only, suite[0]?.prompt?.version ?? null)
}

export interface RunOptions {
  readonly files: ReadonlyArray<string>
  readonly model: string
  readonly proxyUrl: string
  /** the candidate prompt file; null: the scenario files' own */
  readonly prompt: string | null
  /** a baseline prompt file: run both and classify the candidate's failures */
  readonly baseline: string | null
  /** overrides every scenario's `trials` */
  readonly trials: number | null
  /** overrides the files' `max_rounds` (default 8) */
  readonly maxRounds: number | null
  /** the run file to create */
  readonly out: string
  /** `x-vetobench-run` is `<runId>` (or `<runId>.candidate` / `.baseline`) */
  readonly runId: string
  /** trials in flight at once */
  readonly concurrency: number
  readonly prices: PriceTable | null
  /** prints one line (default: nothing) */
  readonly log?: (line: string) => Effect.Effect<void>
  /** the model client (default: HTTP to `proxyUrl`) */
  readonly chat?: ChatFn
}

export interface RunResult {
  readonly run: RunFile
  readonly summary: SummaryLine
}

const promptInfo = (dir: string, p: Prompt): PromptInfo => ({ path: relativeTo(dir, p.file), sha256: p.sha256, version: p.version })

const summarize = (trials: ReadonlyArray<TrialLine>, variant: Variant, model: string, prices: PriceTable | null): VariantSummary => {
  const ts = trials.filter((t) => t.variant === variant)
  const usage = ts.reduce((u, t) => addUsage(u, t.usage), ZERO_USAGE)
  return { trials: ts.length, passed: ts.filter((t) => t.passed).length, usage, cost_usd: costOf(prices, model, usage) }
}

export const makeSummary = (trials: ReadonlyArray<TrialLine>, model: string, prices: PriceTable | null, compare: boolean): SummaryLine => ({
  kind: "scenario-summary",
  finished: new Date().toISOString(),
  candidate: summarize(trials, "candidate", model, prices),
  baseline: compare ? summarize(trials, "baseline", model, prices) : null
})

const readRun = (file: string): Effect.Effect<RunFile, RunFileError> =>
  readBytes(file, "run file").pipe(
    Effect.flatMap((bytes) => {
      const r = parseRunFile(file, sha256Hex(bytes), bytes.toString("utf8"))
      return "header" in r ? Effect.succeed(r) : Effect.fail(r)
    })
  )

export const loadRunFile = (file: string): Effect.Effect<RunFile, RunFileError> => readRun(path.resolve(file))

/** Run the scenarios live through the proxy and write the run file. */
export const runScenarios = (opts: RunOptions): Effect.Effect<RunResult, ScenarioError> =>
  Effect.gen(function*() {
    const log = opts.log ?? (() => Effect.void)
    const out = path.resolve(opts.out)
    const dir = path.dirname(out)
    const suite = yield* loadSuite(opts.files)
    const candidate = yield* candidatePrompt(suite, opts.prompt)
    const baseline = opts.baseline === null ? null : yield* readPrompt(opts.baseline, null)
    const compare = baseline !== null
    const header: RunHeader = {
      kind: "scenario-run",
      format: 1,
      live: true,
      run_id: opts.runId,
      model: opts.model,
      proxy_url: opts.proxyUrl,
      prompt: promptInfo(dir, candidate),
      baseline: baseline === null ? null : promptInfo(dir, baseline),
      scenarios: suite.map((f): FileRef => ({ path: relativeTo(dir, f.file), sha256: f.sha256 })),
      trials: opts.trials,
      max_rounds: opts.maxRounds,
      started: new Date().toISOString(),
      replay_of: null
    }
    yield* createRunFile(out, header)
    yield* Effect.forEach(headerLines(header, out), log, { discard: true })
    const chat = opts.chat ?? makeChat({ proxyUrl: opts.proxyUrl })
    const variants: ReadonlyArray<readonly [Variant, Prompt]> = baseline === null ? [["candidate", candidate]] : [["baseline", baseline], ["candidate", candidate]]
    const all: Array<TrialLine> = []
    for (const file of suite) {
      const rel = relativeTo(dir, file.file)
      yield* log(`\n${file.name} (${displayPath(file.file)})`)
      for (const scenario of file.scenarios) {
        const n = opts.trials ?? scenario.trials
        const jobs = variants.flatMap(([variant, prompt]) => Array.from({ length: n }, (_, i) => ({ variant, prompt, trial: i + 1 })))
        const lines = yield* Effect.forEach(
          jobs,
          ({ prompt, trial, variant }) =>
            Effect.gen(function*() {
              const started = Date.now()
              const t = yield* runTrial({
                chat,
                runId: compare ? `${opts.runId}.${variant}` : opts.runId,
                model: opts.model,
                systemPrompt: prompt.text,
                file,
                scenario,
                trial,
                maxRounds: opts.maxRounds ?? file.max_rounds ?? DEFAULT_MAX_ROUNDS
              })
              const verdict = judgeTrajectory(scenario, t)
              const line: TrialLine = {
                kind: "scenario-trial",
                variant,
                file: rel,
                scenario: scenario.id,
                trial,
                episode: episodeId(scenario.id, trial),
                ...t,
                passed: verdict.passed,
                failures: verdict.failures,
                ms: Date.now() - started
              }
              return line
            }),
          { concurrency: Math.max(1, opts.concurrency) }
        )
        yield* appendLines(out, lines)
        all.push(...lines)
        yield* Effect.forEach(scenarioLines(scenario.id, lines, compare), log, { discard: true })
      }
    }
    const summary = makeSummary(all, opts.model, opts.prices, compare)
    yield* appendLines(out, [summary])
    yield* log("")
    yield* Effect.forEach(summaryLines(summary, all), log, { discard: true })
    return { run: yield* readRun(out), summary }
  })

export interface ReplayOptions {
  readonly runFile: string
  /** the new run file (default `<run>.replay-<ms>.jsonl` beside it) */
  readonly out: string | null
  readonly prices: PriceTable | null
  readonly log?: (line: string) => Effect.Effect<void>
}

export interface ReplayResult extends RunResult {
  /** trials whose scenario is no longer in its file (not re-checked) */
  readonly dropped: ReadonlyArray<string>
  /** scenarios of the files that the run has no trials of */
  readonly missing: ReadonlyArray<string>
}

/** Re-check a run file's trajectories with the current scenario files; writes a `live: false` run file. */
export const replayRun = (opts: ReplayOptions): Effect.Effect<ReplayResult, ScenarioError> =>
  Effect.gen(function*() {
    const log = opts.log ?? (() => Effect.void)
    const source = yield* readRun(path.resolve(opts.runFile))
    const srcDir = path.dirname(source.file)
    const out = path.resolve(opts.out ?? source.file.replace(/\.jsonl$/, "") + `.replay-${Date.now()}.jsonl`)
    const dir = path.dirname(out)
    const suite = yield* loadSuite(source.header.scenarios.map((s) => resolveFrom(srcDir, s.path)))
    const rebase = (p: PromptInfo): PromptInfo => ({ ...p, path: relativeTo(dir, resolveFrom(srcDir, p.path)) })
    const header: RunHeader = {
      ...source.header,
      live: false,
      prompt: rebase(source.header.prompt),
      baseline: source.header.baseline === null ? null : rebase(source.header.baseline),
      scenarios: suite.map((f) => ({ path: relativeTo(dir, f.file), sha256: f.sha256 })),
      started: new Date().toISOString(),
      replay_of: { path: relativeTo(dir, source.file), sha256: source.sha256 }
    }
    const compare = header.baseline !== null
    yield* createRunFile(out, header)
    yield* Effect.forEach(headerLines(header, out), log, { discard: true })
    const dropped: Array<string> = []
    const missing: Array<string> = []
    const all: Array<TrialLine> = []
    for (const file of suite) {
      const oldRel = relativeTo(srcDir, file.file)
      const rel = relativeTo(dir, file.file)
      yield* log(`\n${file.name} (${displayPath(file.file)})`)
      const inFile = source.trials.filter((t) => t.file === oldRel)
      for (const t of inFile) if (!file.scenarios.some((s) => s.id === t.scenario)) dropped.push(`${t.scenario} trial ${t.trial} (${t.variant})`)
      for (const scenario of file.scenarios) {
        const old = inFile.filter((t) => t.scenario === scenario.id)
        if (old.length === 0) {
          missing.push(scenario.id)
          yield* log(`  ----  ${scenario.id}: not in the run (no trajectories to re-check)`)
          continue
        }
        const lines = old.map((t): TrialLine => ({ ...t, file: rel, ...judgeTrajectory(scenario, t) }))
        yield* appendLines(out, lines)
        all.push(...lines)
        yield* Effect.forEach(scenarioLines(scenario.id, lines, compare), log, { discard: true })
      }
    }
    if (dropped.length > 0) yield* log(`\nnot re-checked (scenario no longer in its file): ${dropped.join(", ")}`)
    const summary = makeSummary(all, header.model, opts.prices, compare)
    yield* appendLines(out, [summary])
    yield* log("")
    yield* Effect.forEach(summaryLines(summary, all), log, { discard: true })
    return { run: yield* readRun(out), summary, dropped, missing }
  })
