/**
 * The configured judges, built once at start-up through the kind registry. A bad judge config
 * stops start-up with an error naming the judge and key.
 */
import { Context, Effect, Layer } from "effect"
import { Settings } from "../src/config/service.js"
import { type Judge, JudgeConfigError } from "./Judge.js"
import { JudgeKinds } from "./registry.js"
import { BUILTIN_JUDGES } from "../src/config/builtin-judges.js"

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
      const byName = new Map<string, Judge>()
      const defaults = { timeout_s: settings.proxy.judge_timeout_s, judge: (n: string) => byName.get(n) }
      // build in dependency order: a judge after the judges it references
      const building = new Set<string>()
      const build = (name: string, path: ReadonlyArray<string>): Effect.Effect<void, JudgeConfigError> =>
        Effect.suspend(() => {
          if (byName.has(name)) return Effect.void
          const spec = specs[name]!
          if (building.has(name)) {
            return Effect.fail(new JudgeConfigError({ judge: path[0] ?? name, path: "layers", reason: `cycle: ${[...path, name].join(" → ")}` }))
          }
          building.add(name)
          return Effect.forEach(kinds.references(spec), (ref) =>
            ref in specs
              ? build(ref, [...path, name])
              : Effect.fail(
                  new JudgeConfigError({ judge: name, path: "layers", reason: `unknown judge '${ref}' (configured: ${Object.keys(specs).sort().join(", ")})` })
                )
          ).pipe(
            Effect.zipRight(kinds.build(name, spec, defaults)),
            Effect.map((j) => void byName.set(name, j))
          )
        })
      yield* Effect.forEach(Object.keys(specs), (name) => build(name, []), { discard: true })
      return { get: (name) => byName.get(name), names: [...byName.keys()].sort() }
    })
  )

  static layerValue = (judges: ReadonlyArray<Judge>): Layer.Layer<Judges> => {
    const byName = new Map(judges.map((j) => [j.judge, j] as const))
    return Layer.succeed(Judges, { get: (n) => byName.get(n), names: [...byName.keys()].sort() })
  }
}
