/**
 * Estimated cost of a run from the agent's `usage` and a per-model price table (`--prices FILE`):
 *
 * ```yaml
 * qwen3.8-27b: {input_per_1k: 0.0004, output_per_1k: 0.0016}   # USD per 1,000 tokens
 * ```
 *
 * The model string of the run is looked up as given, then without its arm suffix
 * (`qwen3.8-27b@enforce:small` → `qwen3.8-27b`). Judge tokens are not included: they are the
 * proxy's, recorded in each verdict's `usage` in the audit log.
 */
import { Effect, Either } from "effect"
import * as D from "../config/decode.js"
import type { ConfigError } from "../config/errors.js"
import { readYamlFile } from "../config/yaml-file.js"
import { parseRoute, RouteError } from "../domain/route.js"
import type { Usage } from "./trajectory.js"

export interface Price {
  readonly input_per_1k: number
  readonly output_per_1k: number
}

export type PriceTable = Readonly<Record<string, Price>>

const price: D.Decoder<Price> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, ["input_per_1k", "output_per_1k"])
    return {
      input_per_1k: yield* f.get("input_per_1k", D.number({ min: 0 })),
      output_per_1k: yield* f.get("output_per_1k", D.number({ min: 0 }))
    }
  })

export const decodePrices = (file: string, doc: unknown): Either.Either<PriceTable, ConfigError> =>
  D.record(price)(new D.Node({ file, root: process.cwd(), expanded: new Set() }, "", doc))

export const loadPrices = (file: string): Effect.Effect<PriceTable, ConfigError> =>
  readYamlFile(file, { what: "price table" }).pipe(Effect.flatMap((doc) => decodePrices(file, doc)))

/** The price of `model` (as given, then its served model without the arm). */
export const priceFor = (table: PriceTable, model: string): Price | null => {
  const exact = table[model]
  if (exact !== undefined) return exact
  const route = parseRoute(model)
  return route instanceof RouteError ? null : (table[route.model] ?? null)
}

/** USD, or null when the table has no price for the model. */
export const costOf = (table: PriceTable | null, model: string, usage: Usage): number | null => {
  const p = table === null ? null : priceFor(table, model)
  return p === null ? null : (usage.prompt_tokens / 1000) * p.input_per_1k + (usage.completion_tokens / 1000) * p.output_per_1k
}
