/**
 * Reading a YAML config file (settings or experiment): safe parse, empty file → `{}`,
 * syntax errors with line and column, and the repo-root rule.
 */
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as YAML from "yaml"
import { ConfigError } from "./errors.js"

/** Parses YAML text. An empty document (or comments only) is `{}`. */
export const parseYaml = (text: string, file: string): Either.Either<unknown, ConfigError> => {
  const fail = (reason: string) => Either.left(new ConfigError({ file, path: "", reason }))
  const doc = YAML.parseDocument(text)
  const [first] = doc.errors
  if (first !== undefined) {
    const headline = first.message.split("\n")[0]?.replace(/:$/, "") ?? first.code
    return fail(`YAML syntax error: ${headline}`)
  }
  try {
    const value: unknown = doc.toJS()
    return Either.right(value ?? {})
  } catch (e) {
    return fail(`YAML error: ${e instanceof Error ? e.message : String(e)}`)
  }
}

/**
 * Reads and parses a YAML file. `what` names the file in errors ("settings file");
 * `hint` is appended to the not-found reason.
 */
export const readYamlFile = (
  file: string,
  opts: { readonly what: string; readonly hint?: string }
): Effect.Effect<unknown, ConfigError> =>
  Effect.try({
    try: () => fs.readFileSync(file, "utf8"),
    catch: (e) => {
      const code = typeof e === "object" && e !== null && "code" in e ? e.code : undefined
      const reason = code === "ENOENT"
        ? `${opts.what} not found${opts.hint === undefined ? "" : ` (${opts.hint})`}`
        : `cannot read ${opts.what}: ${e instanceof Error ? e.message : String(e)}`
      return new ConfigError({ file, path: "", reason })
    }
  }).pipe(Effect.flatMap((text) => parseYaml(text, file)))

/**
 * Repo root for a config file: the parent of the file's directory when that directory is
 * named `configs`, else the file's directory. Always absolute.
 */
export const repoRootFor = (file: string): string => {
  const dir = path.dirname(path.resolve(file))
  return path.basename(dir) === "configs" ? path.dirname(dir) : dir
}
