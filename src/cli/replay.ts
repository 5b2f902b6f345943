/**
 * `vetobench replay -e FILE [-c FILE] [--model M…] [--judges J…] [--bench asbench|asb…]` — every
 * judge over the tool calls logged in the experiment's baseline run (reference §7.6, §9.3;
 * equivalent to a shadow arm without re-running agents).
 *
 * Judges: `--judges` (repeatable or comma-separated) or the experiment's `judges`. For each selected
 * model (experiment order) and bench (`asbench`, then `asb`; `--bench` narrows): if the baseline
 * run's audit file exists (for a run merged from shards: the shards' audit files listed in its
 * `shards.json`), print `== replay | <bench> | <model> | judges=[…]` and replay into
 * `<run_dir>/replay/<bench>.<slug(model)>.jsonl`, else one line saying why it is skipped. Resumable
 * by (judge, source record hash); error verdicts are retried by the next replay. The verdict cache
 * is off; judges are called directly (no proxy needed). Progress goes to stderr.
 *
 * Rulings that end in error or timeout make the command fail with one summary line (exit 1),
 * unless there are at most `--allow-errors N` of them. Before that, the replay files and the tree heads
 * of the baseline audit logs they read are bound to the experiment's results log (src/audit/results.ts).
 */
import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer } from "effect"
import { defaultPlugins } from "../../judges/plugins.js"
import type { Bench } from "../run-layout/paths.js"
import { Progress } from "../run-layout/progress.js"
import { bindResultsAndSay } from "../audit/results.js"
import { auditFileFor, auditFilesFor, baselineVariant } from "../run-layout/paths.js"
import { replayBench, replayGateLayer, type ReplaySummary } from "../experiment/replay.js"
import { CliFailure, configOption, runDirOption, unknownJudges } from "./options.js"
import { allowErrorsOption, count, oneLine, settleFailures } from "./failures.js"
import { experimentOption, modelOption, names, selection } from "./run.js"

const judgesOption = Options.text("judges").pipe(
  Options.withPseudoName("JUDGE"),
  Options.repeated,
  Options.withDescription("judges to replay; repeatable or comma-separated (default: the experiment's judges)")
)
const benchOption = Options.choice("bench", ["asbench", "asb"]).pipe(
  Options.repeated,
  Options.withDescription("benchmarks to replay (default: both, where the baseline was run)")
)

const fail = (message: string) => new CliFailure({ message })

/** `replay: 3 of 14 rulings failed (first: judge small, episode asbench:2: error: …); details in …; …` */
const rulingFailureLine = (ruled: number, errors: number, first: ReplaySummary | null): string => {
  const e = first?.firstError ?? null
  const what = e === null ? "" : ` (first: judge ${e.judge}${e.episode === null ? "" : `, episode ${e.episode}`}: ${e.status}: ${oneLine(e.reason, 200)})`
  const where = first === null ? "" : `; details in ${first.file}`
  return `replay: ${errors} of ${count(ruled, "ruling")} failed${what}${where}; the next replay retries them`
}
const BENCHES: ReadonlyArray<Bench> = ["asbench", "asb"]

export const replayCommand = Command.make(
  "replay",
  {
    config: configOption,
    experiment: experimentOption,
    model: modelOption,
    judges: judgesOption,
    bench: benchOption,
    runDir: runDirOption,
    allowErrors: allowErrorsOption("rulings end in error or timeout")
  },
  ({ allowErrors, bench, config, experiment, judges, model, runDir }) =>
    Effect.gen(function*() {
      const sel = yield* selection(config, experiment, model, [], runDir)
      const { exp, settings } = sel
      const judgeList = names(judges).length > 0 ? names(judges) : [...exp.judges]
      if (judgeList.length === 0) return yield* fail(`no judges to replay: give --judges or list judges in ${exp.file}`)
      const bad = unknownJudges(judgeList, settings.judges)
      if (bad !== null) return yield* bad
      const baseline = baselineVariant(exp)
      if (baseline === undefined) return yield* fail(`${exp.file}: replay needs the baseline arm (arms: ${exp.arms.join(", ")})`)
      const benches = BENCHES.filter((b) => bench.length === 0 || bench.includes(b))
      const auditDir = settings.proxy.audit_dir
      const tally: { ruled: number; errors: number; first: ReplaySummary | null; files: Array<string>; logs: Array<string> } = {
        ruled: 0,
        errors: 0,
        first: null,
        files: [],
        logs: []
      }
      const work = Effect.gen(function*() {
        for (const m of sel.models) {
          for (const b of benches) {
            if (auditFilesFor(auditDir, exp, b, m, baseline).length === 0) {
              yield* Console.log(`== replay | ${b} | ${m}: no baseline audit file ${auditFileFor(auditDir, exp, b, m, baseline)}; skipped`)
              continue
            }
            yield* Console.log(`== replay | ${b} | ${m} | judges=[${judgeList.join(", ")}]`)
            const s = yield* replayBench(exp, auditDir, b, m, judgeList).pipe(Effect.mapError((e) => fail(e.message)))
            if (s === null) continue
            tally.ruled += s.ruled
            tally.errors += s.errors
            tally.files.push(s.file)
            tally.logs.push(...s.sources)
            if (tally.first === null && s.firstError !== null) tally.first = s
            yield* Console.log(
              `[replay] ${b} | ${m}: ${s.ruled} ruled (${s.errors} error${s.errors === 1 ? "" : "s"}, retried next time), ${s.skipped} done before → ${s.file}`
            )
          }
        }
      })
      yield* work.pipe(
        Effect.provide(
          Layer.mergeAll(replayGateLayer(settings, defaultPlugins).pipe(Layer.mapError((e) => fail(e.message))), Progress.Live)
        )
      )
      yield* bindResultsAndSay({ runDir: exp.run_dir, command: "replay", files: tally.files, logs: tally.logs, audit: settings.audit }).pipe(
        Effect.mapError((e) => fail(`results not bound: ${e.message}`))
      )
      yield* settleFailures(tally.errors, rulingFailureLine(tally.ruled, tally.errors, tally.first), allowErrors)
    })
).pipe(Command.withDescription("replay judges over the baseline run's logged tool calls (offline shadow; resumable)"))
