/**
 * The judge-kind registry: kind name → constructor. Plugins register by being passed to
 * `JudgeKinds.layer`; their construction effects may require services (e.g. Upstreams), which the
 * layer then requires. `Judges` builds every configured judge once, at start-up.
 */
import { Context, Effect, Layer } from "effect"
import type { JudgeSpec } from "../src/config/settings.js"
import { JudgeConfigError, type Judge } from "./Judge.js"

export interface JudgeKind {
  readonly kind: string
  /** names of other configured judges this spec is built from (built first; cycles are errors) */
  readonly references?: (spec: JudgeSpec) => ReadonlyArray<string>
  /** build a judge named `name` from its config; the gate's defaults are passed in `defaults` */
  readonly make: (name: string, spec: JudgeSpec, defaults: JudgeDefaults) => Effect.Effect<Judge, JudgeConfigError>
}

export interface JudgeDefaults {
  readonly timeout_s: number
  /** an already built judge (only the names returned by the kind's `references`) */
  readonly judge: (name: string) => Judge | undefined
}

/** A plugin: an effect that yields its kind, possibly needing services. */
export type JudgeKindPlugin<R = never> = Effect.Effect<JudgeKind, never, R>

export interface JudgeKindsShape {
  readonly kinds: ReadonlyArray<string>
  /** what a spec refers to (empty for kinds that build alone) */
  readonly references: (spec: JudgeSpec) => ReadonlyArray<string>
  readonly build: (name: string, spec: JudgeSpec, defaults: JudgeDefaults) => Effect.Effect<Judge, JudgeConfigError>
}

export class JudgeKinds extends Context.Tag("vetobench/JudgeKinds")<JudgeKinds, JudgeKindsShape>() {
  static layer = <R>(plugins: ReadonlyArray<JudgeKindPlugin<R>>): Layer.Layer<JudgeKinds, never, R> =>
    Layer.effect(
      JudgeKinds,
      Effect.gen(function* () {
        const all = yield* Effect.all(plugins)
        const byKind = new Map(all.map((k) => [k.kind, k] as const))
        const kinds = [...byKind.keys()].sort()
        return {
          kinds,
          references: (spec) => byKind.get(spec.kind)?.references?.(spec) ?? [],
          build: (name, spec, defaults) => {
            const k = byKind.get(spec.kind)
            return k
              ? k.make(name, spec, defaults)
              : Effect.fail(
                  new JudgeConfigError({
                    judge: name,
                    path: "kind",
                    reason: `unknown kind '${spec.kind}' (expected one of: ${kinds.join(", ")})`
                  })
                )
          }
        }
      })
    )
}
