/**
 * `vetobench score -e FILE [-c FILE] [--model M…] [--variant V…]` — ShieldAgent labels for the
 * Agent-SafetyBench runs of an experiment (reference §7.5, §9.1).
 *
 * Needs `scoring.shieldagent_model` (else one line: "set scoring.shieldagent_model in the
 * config"). For each selected model × variant whose `gen_res.json` exists: print
 * `== ShieldAgent | <model> | <variant>` and label its cases (status ≠ error) into `shield.jsonl`,
 * resumably, `scoring.concurrency` requests at once, straight to the upstream serving the scorer
 * (no proxy; `model_defaults` apply). Requests that fail are counted and retried by the next
 * `score`.
 *
 * Cases left without a label (the request failed, or the answer had no label) make the command
 * fail with one summary line (exit 1), unless there are at most `--allow-errors N` of them. Before
 * that, the label files are bound to the experiment's results log (src/audit/results.ts).
 */
import { Command } from "@effect/cli"
import { Console, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Upstreams from "../../layers/Upstreams.js"
import { GEN_RES_JSON } from "../run-layout/files.js"
import { NO_SHIELD_MODEL, scoreShield, type ShieldSummary } from "../adapters/agent-safetybench/shieldagent.js"
import { bindResultsAndSay } from "../audit/results.js"
import { asbenchRunDir } from "../run-layout/paths.js"
import { Settings } from "../config/service.js"
import { Progress } from "../run-layout/progress.js"
import { cliCommand } from "../shell/hint.js"
import { CliFailure, configOption, runDirOption } from "./options.js"
import { allowErrorsOption, count, oneLine, settleFailures } from "./failures.js"
import { bridgeLayer, experimentOption, modelOption, type Selection, selection, variantOption } from "./run.js"

const fail = (message: string) => new CliFailure({ message })

/** Cases left unlabelled over every model × variant scored (for the summary line). */
interface LabelTally {
  cases: number
  unscored: number
  first: { readonly run: ShieldSummary; readonly id: number; readonly reason: string } | null
  /** the label files written: bound to the results log at the end */
  readonly files: Array<string>
}

/** `score: 2 of 18 cases unscored (first: case 4 of m@baseline: …); labels in …/shield.jsonl; …` */
const unscoredLine = (t: LabelTally): string => {
  const first = t.first === null ? "" : ` (first: case ${t.first.id} of ${t.first.run.route}: ${oneLine(t.first.reason, 200)})`
  const where = t.first === null ? "" : `; labels in ${t.first.run.file}`
  return `score: ${t.unscored} of ${count(t.cases, "case")} unscored${first}${where}; the next score retries them`
}

const scoreSelection = (sel: Selection, tally: LabelTally) =>
  Effect.gen(function*() {
    for (const model of sel.models) {
      for (const variant of sel.variants) {
        const dir = asbenchRunDir(sel.exp, model, variant)
        if (!fs.existsSync(path.join(dir, GEN_RES_JSON))) {
          yield* Console.log(`== ShieldAgent | ${model} | ${variant.name}: no ${GEN_RES_JSON} in ${dir} (${cliCommand("run", "-e", sel.exp.file)} first); skipped`)
          continue
        }
        yield* Console.log(`== ShieldAgent | ${model} | ${variant.name}`)
        const s = yield* scoreShield(sel.exp, model, variant).pipe(Effect.mapError((e) => fail(e.message)))
        yield* Console.log(
          `[shieldagent] ${s.route}: ${s.safe} safe, ${s.unsafe} unsafe, ${s.invalid} invalid, ${s.failed} failed` +
            ` (${s.skipped} of ${s.cases} labelled before) → ${s.file}`
        )
        tally.cases += s.cases
        tally.unscored += s.failed + s.invalid
        tally.files.push(s.file)
        if (tally.first === null && s.firstFailure !== null) tally.first = { run: s, ...s.firstFailure }
      }
    }
  }).pipe(
    Effect.provide(
      Layer.mergeAll(
        bridgeLayer(sel.settings, Math.min(4, sel.settings.scoring.concurrency)),
        Upstreams.layer,
        Progress.Live
      ).pipe(Layer.provideMerge(Settings.layerValue(sel.settings)))
    )
  )

export const scoreCommand = Command.make(
  "score",
  {
    config: configOption,
    experiment: experimentOption,
    model: modelOption,
    variant: variantOption,
    runDir: runDirOption,
    allowErrors: allowErrorsOption("cases are left unscored")
  },
  ({ allowErrors, config, experiment, model, runDir, variant }) =>
    Effect.gen(function*() {
      const sel = yield* selection(config, experiment, model, variant, runDir)
      if (sel.settings.scoring.shieldagent_model === null) return yield* fail(NO_SHIELD_MODEL)
      const tally: LabelTally = { cases: 0, unscored: 0, first: null, files: [] }
      yield* scoreSelection(sel, tally)
      yield* bindResultsAndSay({ runDir: sel.exp.run_dir, command: "score", files: tally.files, logs: [], audit: sel.settings.audit }).pipe(
        Effect.mapError((e) => fail(`results not bound: ${e.message}`))
      )
      yield* settleFailures(tally.unscored, unscoredLine(tally), allowErrors)
    })
).pipe(Command.withDescription("label Agent-SafetyBench runs with ShieldAgent (resumable)"))
