/**
 * `vetobench report -e FILE [-c FILE]` — the experiment's report (reference §10, architecture
 * decision 11): builds the summary of everything under the experiment's `run_dir` (and the
 * proxy's audit directory), then writes `<run_dir>/report.md`, `<run_dir>/summary.json` (strict
 * JSON; schema `docs/summary.schema.json`) and `<run_dir>/report.html` (self-contained: inline SVG
 * charts, no scripts, no network) and prints their paths, one `wrote <path>` line each.
 *
 * Always regenerated. A benchmark that was not run, or whose checkout is absent, gets a one-line
 * note in the report instead of failing it; only an unreadable settings/experiment file or an
 * unwritable run directory fail (one line, exit 1).
 */
import { Command } from "@effect/cli"
import { Console, Effect } from "effect"
import { loadExperiment } from "../config/experiment.js"
import { writeReport } from "../report/write.js"
import { buildSummary } from "../scoring/summary.js"
import { CliFailure, configOption, settingsFrom } from "./options.js"
import { experimentOption } from "./run.js"

const fail = (message: string) => new CliFailure({ message })

export const reportCommand = Command.make(
  "report",
  { config: configOption, experiment: experimentOption },
  ({ config, experiment }) =>
    Effect.gen(function*() {
      const settings = yield* settingsFrom(config)
      const exp = yield* loadExperiment(experiment, settings).pipe(Effect.mapError((e) => fail(e.message)))
      const summary = yield* buildSummary(exp, settings)
      const files = yield* writeReport(summary, exp.run_dir).pipe(Effect.mapError((e) => fail(e.message)))
      for (const file of [files.markdown, files.json, files.html]) yield* Console.log(`wrote ${file}`)
      if (summary.notes.length > 0) yield* Console.log(`${summary.notes.length} note${summary.notes.length === 1 ? "" : "s"} (see the report's Notes section)`)
    })
).pipe(Command.withDescription("write report.md, summary.json and report.html for an experiment"))
