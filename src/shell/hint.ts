/**
 * Follow-up commands printed for the user to paste (`Start it with: npx vetobench proxy -c …`).
 *
 * They start with `vetobench` only when that name, looked up on `PATH` as a shell would, is this
 * very bundle (a global install, `npm link`, a PATH entry for `node_modules/.bin`); otherwise with
 * `npx vetobench`, which works in the project that has vetobench installed (or is vetobench). Under
 * `npm run` / `npx` (`npm_command` set) the `node_modules/.bin` folders npm put on `PATH` are not
 * counted: the user's own shell does not have them. Arguments are quoted for a POSIX shell where
 * needed.
 *
 * This module imports only Node built-ins, so src/adapters, src/experiment and src/cli may all use it.
 */
import * as fs from "node:fs"
import * as path from "node:path"

/** What the lookup reads; defaults to this process. */
export interface Invocation {
  /** `PATH` */
  readonly path: string | undefined
  /** the running script (`process.argv[1]`) */
  readonly script: string | undefined
  /** `npm_command`: set when npm started this process (`exec`, `run-script`, …) */
  readonly npmCommand: string | undefined
}

const here = (): Invocation => ({ path: process.env.PATH, script: process.argv[1], npmCommand: process.env.npm_command })

const real = (file: string): string | undefined => {
  try {
    return fs.realpathSync(file)
  } catch {
    return undefined
  }
}

const isExecutableFile = (file: string): boolean => {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

/** The first `vetobench` on `PATH`, as a shell finds it (npm's own `node_modules/.bin` entries skipped under npm). */
const onPath = (inv: Invocation): string | undefined => {
  for (const dir of (inv.path ?? "").split(path.delimiter)) {
    if (dir === "") continue
    if (inv.npmCommand !== undefined && inv.npmCommand !== "" && path.basename(dir) === ".bin" && path.basename(path.dirname(dir)) === "node_modules") continue
    const file = path.join(dir, "vetobench")
    if (isExecutableFile(file)) return file
  }
  return undefined
}

/** `"vetobench"` when that name on `PATH` is the running bundle, else `"npx vetobench"`. */
export const invocationPrefix = (inv: Invocation = here()): "vetobench" | "npx vetobench" => {
  const found = onPath(inv)
  if (found === undefined || inv.script === undefined) return "npx vetobench"
  const a = real(found)
  const b = real(inv.script)
  return a !== undefined && a === b ? "vetobench" : "npx vetobench"
}

let cached: "vetobench" | "npx vetobench" | undefined

/** One argument as a POSIX shell reads it back: unchanged when safe, else in single quotes. */
export const shellQuote = (arg: string): string =>
  /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`

/**
 * A vetobench command line to print for pasting: `cliCommand("verify-audit", file, "--pubkey", key)`
 * → `npx vetobench verify-audit runs/audit/r1.jsonl --pubkey keys/audit.pub`.
 */
export const cliCommand = (...args: ReadonlyArray<string>): string => {
  cached ??= invocationPrefix()
  return [cached, ...args.map(shellQuote)].join(" ")
}
