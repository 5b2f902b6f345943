/**
 * `vetobench report -e FILE [-c FILE]` — the experiment's report (reference §10, architecture
 * decision 11): builds the summary of everything under the experiment's `run_dir` (and the
 * proxy's audit directory), then writes `<run_dir>/report.md`, `<run_dir>/summary.json` (strict
 * JSON; schema `docs/summary.schema.json`) and `<run_dir>/report.html` (self-contained: inline SVG
 * charts, no scripts, no network) and prints their paths, one `wrote <path>` line each.
 *
 * Always regenerated. A benchmark that was not run, or whose checkout is absent, gets a one-line
 * note in the report instead of failing it; an unreadable settings/experiment file or an
 * unwritable run directory fail (one line, exit 1).
 *
 * The report is always written; then, when runs the experiment calls for have no results, or
 * Agent-SafetyBench runs have cases without a ShieldAgent label, one summary line says which and
 * the command exits 1 — unless there are at most `--allow-errors N` such runs.
 */
import { Command } from "@effect/cli"
import { Console, Effect } from "effect"
import { loadExperiment } from "../config/experiment.js"
import { writeReport } from "../report/write.js"
import { gapCount, type ReportGaps, reportGaps } from "../scoring/gaps.js"
import { buildSummary } from "../scoring/summary.js"
import { CliFailure, configOption, runDirOption, settingsFrom, withRunDir } from "./options.js"
import { allowErrorsOption, count, settleFailures } from "./failures.js"
import { experimentOption } from "./run.js"

const fail = (message: string) => new CliFailure({ message })

/** `report: 2 of 8 runs without results (first: …), 1 run with unscored cases (first: …); see the Notes of …/report.md` */
const gapsLine = (g: ReportGaps, markdown: string): string => {
  const parts: Array<string> = []
  if (g.missing.length > 0) {
    parts.push(`${g.missing.length} of ${count(g.expected, "run")} without results (first: ${g.missing[0]})`)
  }
  const u = g.unscored[0]
  if (u !== undefined) {
    parts.push(`${count(g.unscored.length, "run")} with unscored cases (first: ${u.run}: ${u.unscored} of ${count(u.cases, "case")} without a ShieldAgent label)`)
  }
  return `report: ${parts.join(", ")}; see the Notes of ${markdown}`
}

export const reportCommand = Command.make(
  "report",
  { config: configOption, experiment: experimentOption, runDir: runDirOption, allowErrors: allowErrorsOption("runs are missing or have unscored cases") },
  ({ allowErrors, config, experiment, runDir }) =>
    Effect.gen(function*() {
      const settings = yield* settingsFrom(config)
      const exp = withRunDir(yield* loadExperiment(experiment, settings).pipe(Effect.mapError((e) => fail(e.message))), runDir)
      const summary = yield* buildSummary(exp, settings)
      const files = yield* writeReport(summary, exp.run_dir).pipe(Effect.mapError((e) => fail(e.message)))
      for (const file of [files.markdown, files.json, files.html]) yield* Console.log(`wrote ${file}`)
      if (summary.notes.length > 0) yield* Console.log(`${summary.notes.length} note${summary.notes.length === 1 ? "" : "s"} (see the report's Notes section)`)
      const gaps = reportGaps(exp, summary)
      yield* settleFailures(gapCount(gaps), gapsLine(gaps, files.markdown), allowErrors)
    })
).pipe(Command.withDescription("write report.md, summary.json and report.html for an experiment"))
