/**
 * `vetobench run -e FILE [-c FILE] [--model M…] [--variant V…] [--bench asbench|asb…]` — run an
 * experiment's benchmarks through veto-proxy (reference §7.4).
 *
 * For each selected model (experiment order) × variant (experiment order): print
 * `== Agent-SafetyBench | <model> | <variant>` and run (or resume) the cases into
 * `<run_dir>/asbench/<slug(model)>/<variant>/`. `--model` / `--variant` are exact names,
 * repeatable or comma-separated; none = all. `--bench` defaults to `asbench`; `asb` is accepted
 * but skipped with one line until the ASB runner exists. The proxy must be running (`vetobench
 * proxy -c <same settings>`); the benchmark environments run in `python3` against the checkout at
 * `paths.asbench_dir`. Progress goes to stderr; errors are one line and exit 1.
 */
import { Command, Options } from "@effect/cli"
import { Console, Effect, Either, Layer } from "effect"
import { PythonBridge } from "../../layers/PythonBridge.js"
import { checkProxy, runAsbench } from "../adapters/agent-safetybench/run.js"
import { type Experiment, loadExperiment, selectModels, selectVariants, type Variant } from "../config/experiment.js"
import { Settings } from "../config/service.js"
import type { Settings as SettingsShape } from "../config/settings.js"
import { Progress } from "../experiment/progress.js"
import { CliFailure, configOption, settingsFrom } from "./options.js"

export const experimentOption = Options.text("experiment").pipe(
  Options.withAlias("e"),
  Options.withDescription("experiment file (YAML)")
)

const listOption = (name: string, what: string) =>
  Options.text(name).pipe(Options.repeated, Options.withDescription(`${what}; repeatable or comma-separated (default: all)`))

export const modelOption = listOption("model", "models to run")
export const variantOption = listOption("variant", "variants to run (baseline, enforce-<judge>, …)")
const benchOption = Options.choice("bench", ["asbench", "asb"]).pipe(
  Options.repeated,
  Options.withDescription("benchmarks to run (default: asbench)")
)

/** Names from repeatable, comma-separated options, duplicates dropped. */
export const names = (values: ReadonlyArray<string>): Array<string> =>
  [...new Set(values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v !== ""))]

const fail = (message: string) => new CliFailure({ message })

export interface Selection {
  readonly settings: SettingsShape
  readonly exp: Experiment
  readonly models: ReadonlyArray<string>
  readonly variants: ReadonlyArray<Variant>
}

/** Settings, experiment and the selected models × variants, or a one-line failure. */
export const selection = (config: string, experiment: string, model: ReadonlyArray<string>, variant: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const settings = yield* settingsFrom(config)
    const exp = yield* loadExperiment(experiment, settings).pipe(Effect.mapError((e) => fail(e.message)))
    const models = selectModels(exp, names(model))
    if (Either.isLeft(models)) return yield* fail(models.left.message)
    const variants = selectVariants(exp, names(variant))
    if (Either.isLeft(variants)) return yield* fail(variants.left.message)
    return { settings, exp, models: models.right, variants: variants.right } satisfies Selection
  })

/** The bridge for a settings file: its checkout, `workers` processes. */
export const bridgeLayer = (settings: SettingsShape, workers: number) =>
  PythonBridge.layer({ asbenchDir: settings.paths.asbench_dir, workers }).pipe(Layer.mapError((e) => fail(e.message)))

const runSelection = (sel: Selection) =>
  Effect.gen(function*() {
    for (const model of sel.models) {
      for (const variant of sel.variants) {
        yield* Console.log(`== Agent-SafetyBench | ${model} | ${variant.name}`)
        const s = yield* runAsbench(sel.exp, model, variant).pipe(Effect.mapError((e) => fail(e.message)))
        yield* Console.log(
          `[asbench] ${s.route}: ${s.ran.ok} ok, ${s.ran.exceeded} exceeded, ${s.ran.error} error` +
            ` (${s.skipped} of ${s.selected} done before) → ${s.genRes}`
        )
      }
    }
  }).pipe(
    Effect.provide(
      Layer.mergeAll(bridgeLayer(sel.settings, sel.exp.agent_safetybench.workers), Progress.Live, Settings.layerValue(sel.settings))
    )
  )

export const runCommand = Command.make(
  "run",
  { config: configOption, experiment: experimentOption, model: modelOption, variant: variantOption, bench: benchOption },
  ({ bench, config, experiment, model, variant }) =>
    Effect.gen(function*() {
      const sel = yield* selection(config, experiment, model, variant)
      const benches = bench.length === 0 ? ["asbench"] : bench
      if (benches.includes("asb")) yield* Console.log("== ASB: skipped (ASB runs come with the ASB issue)")
      if (!benches.includes("asbench")) return
      if (!sel.exp.agent_safetybench.enabled) {
        return yield* Console.log(`== Agent-SafetyBench: disabled in ${sel.exp.file} (agent_safetybench.enabled: false)`)
      }
      // before the bridge starts: a missing proxy is the most likely problem and its line names the fix
      yield* checkProxy(sel.exp.proxy_url, sel.settings.file).pipe(Effect.mapError((e) => fail(e.message)))
      yield* runSelection(sel)
    })
).pipe(Command.withDescription("run an experiment's benchmarks through veto-proxy (resumable)"))
