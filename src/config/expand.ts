/**
 * `${VAR}` / `${VAR:-default}` expansion in every string value (never in keys), recursively.
 *
 * - `${VAR}` with VAR unset is an error naming the key path where it was referenced.
 * - `${VAR:-default}` gives VAR's value when it is set (even when empty), else the default.
 * - Names match `[A-Za-z_][A-Za-z0-9_]*`; `$VAR` without braces is left alone.
 *
 * Expanded values are always strings. The result records the key paths of the strings that
 * contained an expansion, so decoders may coerce `"true"` / `"8080"` for boolean and number
 * keys only when the text came from the environment.
 */
import { Either } from "effect"
import { ConfigError } from "./errors.js"
import { childPath, indexPath } from "./key-path.js"

export type Env = Readonly<Record<string, string | undefined>>

export interface Expanded {
  readonly value: unknown
  /** key paths (see key-path.ts) of string values that contained at least one `${…}` */
  readonly expanded: ReadonlySet<string>
}

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g
const HAS_REFERENCE = /\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}/

export const isPlainObject = (value: unknown): value is Readonly<Record<string, unknown>> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** Expands one string; `Left(name)` of the first unset `${VAR}` without a default. */
export const expandString = (text: string, env: Env): Either.Either<string, string> => {
  for (const match of text.matchAll(REFERENCE)) {
    const name = match[1] ?? ""
    if (match[2] === undefined && env[name] === undefined) return Either.left(name)
  }
  return Either.right(
    text.replace(REFERENCE, (_whole, name: string, fallback: string | undefined) => env[name] ?? fallback ?? "")
  )
}

export const expandEnv = (
  raw: unknown,
  opts: { readonly file: string; readonly env?: Env }
): Either.Either<Expanded, ConfigError> => {
  const env = opts.env ?? process.env
  const expanded = new Set<string>()

  const walk = (value: unknown, path: string): Either.Either<unknown, ConfigError> => {
    if (typeof value === "string") {
      if (!HAS_REFERENCE.test(value)) return Either.right(value)
      expanded.add(path)
      return Either.mapLeft(expandString(value, env), (name) =>
        new ConfigError({ file: opts.file, path, reason: `environment variable ${name} is not set` }))
    }
    if (Array.isArray(value)) {
      const out: Array<unknown> = []
      for (const [i, item] of value.entries()) {
        const r = walk(item, indexPath(path, i))
        if (Either.isLeft(r)) return r
        out.push(r.right)
      }
      return Either.right(out)
    }
    if (isPlainObject(value)) {
      const entries: Array<[string, unknown]> = []
      for (const [key, item] of Object.entries(value)) {
        const r = walk(item, childPath(path, key))
        if (Either.isLeft(r)) return r
        entries.push([key, r.right])
      }
      // fromEntries defines own properties, so a `__proto__` key stays a plain key
      return Either.right(Object.fromEntries(entries))
    }
    return Either.right(value)
  }

  return Either.map(walk(raw, ""), (value) => ({ value, expanded }))
}
