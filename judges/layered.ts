/**
 * `kind: layered` — an ordered stack of other configured judges, cheapest first (injection guard →
 * value gate → residual model judge → hold). The gate runs the layers; the first deny or hold
 * decides and later layers are skipped unless `run_all: true`. Every layer's verdict is recorded.
 */
import { createHash } from "node:crypto"
import { Effect, Schema } from "effect"
import { failed } from "../src/domain/verdict.js"
import { type Judge, JudgeConfigError, type JudgeContext } from "./Judge.js"
import type { JudgeKind, JudgeKindPlugin } from "./registry.js"
import { BooleanLike, decodeSpec, NonEmptyString } from "./spec-schema.js"

const LayeredConfig = Schema.Struct({
  layers: Schema.Array(NonEmptyString).pipe(Schema.minItems(1)).annotations({ message: () => "must be a non-empty list of judge names" }),
  run_all: Schema.optionalWith(BooleanLike, { default: () => false })
})

const references = (spec: { readonly [k: string]: unknown }) =>
  Array.isArray(spec.layers) ? spec.layers.filter((x): x is string => typeof x === "string") : []

export const LayeredKind: JudgeKind = {
  kind: "layered",
  references,
  make: (name, spec, defaults) =>
    Effect.gen(function* () {
      const config = yield* decodeSpec(name, spec, LayeredConfig)
      const layers: Array<Judge> = []
      for (const [i, ref] of config.layers.entries()) {
        const j = defaults.judge(ref)
        if (j === undefined) return yield* new JudgeConfigError({ judge: name, path: `layers.${i}`, reason: `unknown judge '${ref}'` })
        if (ref === name) return yield* new JudgeConfigError({ judge: name, path: `layers.${i}`, reason: "a stack cannot contain itself" })
        layers.push(j)
      }
      const version = `layered:${createHash("sha256")
        .update(JSON.stringify(layers.map((l) => [l.judge, l.version])))
        .digest("hex")
        .slice(0, 16)}`
      const id = { judge: name, kind: "layered", model: null, version }
      // a tool is granted when every layer that can say so grants it (no such layer: no `grants`)
      const granting = layers.flatMap((l) => (l.grants !== undefined ? [l.grants] : []))
      const grants = granting.length === 0 ? undefined : (toolName: string, ctx: JudgeContext) => granting.every((g) => g(toolName, ctx))
      return {
        ...id,
        cacheable: false,
        layers,
        runAll: config.run_all,
        ...(grants !== undefined ? { grants } : {}),
        // the gate runs `layers` itself; a direct call (e.g. an embedder) gets an explicit error verdict
        rule: () => Effect.succeed(failed(id, "error", "a layered judge is run by the gate, layer by layer"))
      } satisfies Judge
    })
}

export const layeredPlugin: JudgeKindPlugin = Effect.succeed(LayeredKind)
