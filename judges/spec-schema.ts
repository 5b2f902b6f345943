/**
 * Judge configs are decoded at start-up with a Schema: unknown keys are errors, and the first
 * problem becomes a JudgeConfigError naming the judge and the key path (e.g. `judges.small.max_tokens`).
 */
import { Effect, ParseResult, Schema } from "effect"
import type { JudgeSpec } from "../src/config/settings.js"
import { JudgeConfigError } from "./Judge.js"

/** Decode `spec` (without its `kind`) with `schema`; excess keys are rejected, listing the allowed ones. */
export const decodeSpec = <A, I>(name: string, spec: JudgeSpec, schema: Schema.Schema<A, I>): Effect.Effect<A, JudgeConfigError> => {
  const { kind, ...rest } = spec
  return Schema.decodeUnknown(schema, { onExcessProperty: "error", errors: "first" })(rest).pipe(
    Effect.mapError((e) => {
      const [issue] = ParseResult.ArrayFormatter.formatErrorSync(e)
      const path = issue?.path.map(String).join(".") ?? ""
      const allowed = Schema.isSchema(schema) && "fields" in schema ? Object.keys((schema as unknown as { fields: object }).fields) : []
      const excess = issue?.message.startsWith("is unexpected") ?? false
      return new JudgeConfigError({
        judge: name,
        path,
        reason: excess
          ? `unknown key for kind '${kind}'${allowed.length > 0 ? ` (allowed: ${["kind", ...allowed].join(", ")})` : ""}`
          : issue?.message === "is missing"
            ? "is required"
            : (issue?.message ?? "invalid config")
      })
    })
  )
}

/** A number, or a numeric string (what `${VAR}` expansion produces). */
export const NumberLike = Schema.Union(Schema.Number, Schema.NumberFromString)
/** A boolean, or "true"/"false" (what `${VAR}` expansion produces). */
export const BooleanLike = Schema.Union(
  Schema.Boolean,
  Schema.transform(Schema.Literal("true", "false"), Schema.Boolean, { strict: true, decode: (s) => s === "true", encode: (b) => (b ? "true" : "false") })
).annotations({ message: () => "must be true or false" })

/** Common field schemas with messages a user can act on. */
export const PositiveInt = NumberLike.pipe(Schema.int(), Schema.positive()).annotations({ message: () => "must be a positive integer" })
export const PositiveNumber = NumberLike.pipe(Schema.positive()).annotations({ message: () => "must be a positive number" })
export const NonNegativeNumber = NumberLike.pipe(Schema.nonNegative()).annotations({ message: () => "must be a number >= 0" })
export const NonEmptyString = Schema.String.pipe(Schema.minLength(1)).annotations({ message: () => "must be a non-empty string" })
export const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({ message: () => "must be a mapping" })
/** A regular expression given as a string; compiled while decoding (flags fixed by the caller). */
export const Regex = (flags: string) =>
  Schema.transformOrFail(NonEmptyString, Schema.instanceOf(RegExp), {
    strict: true,
    decode: (s, _, ast) =>
      ParseResult.try({
        try: () => new RegExp(s, flags),
        catch: (e) => new ParseResult.Type(ast, s, `invalid regular expression: ${e instanceof Error ? e.message : String(e)}`)
      }),
    encode: (r) => ParseResult.succeed(r.source)
  })
