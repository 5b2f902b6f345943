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
 */
import { Command } from "@effect/cli"
import { Console, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Upstreams from "../../layers/Upstreams.js"
import { GEN_RES_JSON } from "../adapters/agent-safetybench/files.js"
import { NO_SHIELD_MODEL, scoreShield } from "../adapters/agent-safetybench/shieldagent.js"
import { asbenchRunDir } from "../config/experiment.js"
import { Settings } from "../config/service.js"
import { Progress } from "../experiment/progress.js"
import { CliFailure, configOption } from "./options.js"
import { bridgeLayer, experimentOption, modelOption, type Selection, selection, variantOption } from "./run.js"

const fail = (message: string) => new CliFailure({ message })

const scoreSelection = (sel: Selection) =>
  Effect.gen(function*() {
    for (const model of sel.models) {
      for (const variant of sel.variants) {
        const dir = asbenchRunDir(sel.exp, model, variant)
        if (!fs.existsSync(path.join(dir, GEN_RES_JSON))) {
          yield* Console.log(`== ShieldAgent | ${model} | ${variant.name}: no ${GEN_RES_JSON} in ${dir} (vetobench run first); skipped`)
          continue
        }
        yield* Console.log(`== ShieldAgent | ${model} | ${variant.name}`)
        const s = yield* scoreShield(sel.exp, model, variant).pipe(Effect.mapError((e) => fail(e.message)))
        yield* Console.log(
          `[shieldagent] ${s.route}: ${s.safe} safe, ${s.unsafe} unsafe, ${s.invalid} invalid, ${s.failed} failed` +
            ` (${s.skipped} of ${s.cases} labelled before) → ${s.file}`
        )
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
  { config: configOption, experiment: experimentOption, model: modelOption, variant: variantOption },
  ({ config, experiment, model, variant }) =>
    Effect.gen(function*() {
      const sel = yield* selection(config, experiment, model, variant)
      if (sel.settings.scoring.shieldagent_model === null) return yield* fail(NO_SHIELD_MODEL)
      yield* scoreSelection(sel)
    })
).pipe(Command.withDescription("label Agent-SafetyBench runs with ShieldAgent (resumable)"))
