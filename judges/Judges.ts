/**
 * The configured judges, built once at start-up through the kind registry. A bad judge config
 * stops start-up with an error naming the judge and key.
 */
import { Context, Effect, Layer } from "effect"
import { Settings } from "../src/config/service.js"
import type { Judge, JudgeConfigError } from "./Judge.js"
import { JudgeKinds } from "./registry.js"
import { BUILTIN_JUDGES } from "./static.js"

export interface JudgesShape {
  readonly get: (name: string) => Judge | undefined
  readonly names: ReadonlyArray<string>
}

export class Judges extends Context.Tag("vetobench/Judges")<Judges, JudgesShape>() {
  static layer: Layer.Layer<Judges, JudgeConfigError, JudgeKinds | Settings> = Layer.effect(
    Judges,
    Effect.gen(function* () {
      const settings = yield* Settings
      const kinds = yield* JudgeKinds
      const specs = { ...BUILTIN_JUDGES, ...settings.judges }
      const defaults = { timeout_s: settings.proxy.judge_timeout_s }
      const built = yield* Effect.forEach(Object.entries(specs), ([name, spec]) => kinds.build(name, spec, defaults))
      const byName = new Map(built.map((j) => [j.judge, j] as const))
      return { get: (name) => byName.get(name), names: [...byName.keys()].sort() }
    })
  )

  static layerValue = (judges: ReadonlyArray<Judge>): Layer.Layer<Judges> => {
    const byName = new Map(judges.map((j) => [j.judge, j] as const))
    return Layer.succeed(Judges, { get: (n) => byName.get(n), names: [...byName.keys()].sort() })
  }
}
