/** Typed readers for a judge's config keys; every error names the judge and the key. */
import { Either } from "effect"
import type { JudgeSpec } from "../src/config/settings.js"
import { JudgeConfigError } from "./Judge.js"

type Field<A> = Either.Either<A, JudgeConfigError>

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** Typed readers for one judge spec; errors name the judge and the key. `null` counts as absent. */
export const specFields = (judge: string, spec: JudgeSpec) => {
  const fail = (key: string, reason: string) => Either.left(new JudgeConfigError({ judge, path: key, reason }))
  const value = (key: string): unknown => {
    const v = Object.hasOwn(spec, key) ? spec[key] : undefined
    return v === null ? undefined : v
  }
  const read =
    <A>(check: (v: unknown) => v is A, expected: string) =>
    (key: string, fallback: A): Field<A> => {
      const v = value(key)
      if (v === undefined) return Either.right(fallback)
      return check(v) ? Either.right(v) : fail(key, `must be ${expected}, got ${JSON.stringify(v)}`)
    }
  const isString = (v: unknown): v is string => typeof v === "string" && v.trim() !== ""
  const regex = (key: string, source: string, flags: string): Field<RegExp> => {
    try {
      return Either.right(new RegExp(source, flags))
    } catch (e) {
      return fail(key, `invalid regular expression: ${e instanceof Error ? e.message : String(e)}`)
    }
  }
  return {
    requiredString: (key: string): Field<string> => {
      const v = value(key)
      if (v === undefined) return fail(key, "is required")
      return isString(v) ? Either.right(v) : fail(key, `must be a non-empty string, got ${JSON.stringify(v)}`)
    },
    string: read(isString, "a non-empty string"),
    boolean: read((v): v is boolean => typeof v === "boolean", "true or false"),
    positiveInt: read((v): v is number => Number.isInteger(v) && (v as number) > 0, "a positive integer"),
    positiveNumber: read((v): v is number => typeof v === "number" && Number.isFinite(v) && v > 0, "a positive number"),
    nonNegativeNumber: read((v): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0, "a number >= 0"),
    object: (key: string): Field<Record<string, unknown>> => read(isRecord, "a mapping")(key, {}),
    /** a required regular expression */
    regex: (key: string, flags: string): Field<RegExp> => {
      const v = value(key)
      if (v === undefined) return fail(key, "is required")
      return typeof v === "string" && v !== "" ? regex(key, v, flags) : fail(key, "must be a non-empty regular expression string")
    },
    optionalRegex: (key: string, flags: string): Field<RegExp | null> => {
      const v = value(key)
      if (v === undefined) return Either.right(null)
      return typeof v === "string" && v !== "" ? regex(key, v, flags) : fail(key, "must be a non-empty regular expression string")
    }
  } as const
}
