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
 * `--prices FILE` (the price table `vetobench scenarios` takes: model → `{input_per_1k,
 * output_per_1k}`, USD) adds cost per variant and per blocked unsafe call, for the agent and each
 * judge, to the token counts; an unreadable or malformed table is one line, exit 1.
 *
 * The report is always written; then, when runs the experiment calls for have no results, or
 * Agent-SafetyBench runs have cases without a ShieldAgent label, one summary line says which and
 * the command exits 1 — unless there are at most `--allow-errors N` such runs. Before that, the three
 * files are bound to the experiment's results log (src/audit/results.ts): `verify-results` then names
 * any of them edited since.
 */
import { Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { bindResultsAndSay } from "../audit/results.js"
import { loadExperiment } from "../config/experiment.js"
import { writeReport } from "../report/write.js"
import { gapCount, type ReportGaps, reportGaps } from "../scoring/gaps.js"
import { missingShardAuditFiles } from "../run-layout/paths.js"
import { loadPrices } from "../scenarios/cost.js"
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

const pricesOption = Options.text("prices").pipe(
  Options.withPseudoName("FILE"),
  Options.optional,
  Options.withDescription("price table (YAML: model -> {input_per_1k, output_per_1k}, USD) for cost per variant and per blocked unsafe call")
)

export const reportCommand = Command.make(
  "report",
  {
    config: configOption,
    experiment: experimentOption,
    runDir: runDirOption,
    prices: pricesOption,
    allowErrors: allowErrorsOption("runs are missing or have unscored cases")
  },
  ({ allowErrors, config, experiment, prices, runDir }) =>
    Effect.gen(function*() {
      const settings = yield* settingsFrom(config)
      const exp = withRunDir(yield* loadExperiment(experiment, settings).pipe(Effect.mapError((e) => fail(e.message))), runDir)
      const priced = Option.isSome(prices)
        ? { file: prices.value, table: yield* loadPrices(prices.value).pipe(Effect.mapError((e) => fail(e.message))) }
        : null
      const summary = yield* buildSummary(exp, settings, { prices: priced })
      const files = yield* writeReport(summary, exp.run_dir).pipe(Effect.mapError((e) => fail(e.message)))
      for (const file of [files.markdown, files.json, files.html]) yield* Console.log(`wrote ${file}`)
      if (summary.notes.length > 0) yield* Console.log(`${summary.notes.length} note${summary.notes.length === 1 ? "" : "s"} (see the report's Notes section)`)
      yield* bindResultsAndSay({ runDir: exp.run_dir, command: "report", files: [files.markdown, files.json, files.html], logs: [], audit: settings.audit }).pipe(
        Effect.mapError((e) => fail(`results not bound: ${e.message}`))
      )
      const gaps = reportGaps(exp, summary, (bench, model, v) => missingShardAuditFiles(exp, bench, model, v))
      yield* settleFailures(gapCount(gaps), gapsLine(gaps, files.markdown), allowErrors)
    })
).pipe(Command.withDescription("write report.md, summary.json and report.html for an experiment"))
