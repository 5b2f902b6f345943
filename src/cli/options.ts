/** Options every subcommand shares, and the one error type commands fail with. */
import { Options } from "@effect/cli"
import { Data, Effect, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { DEFAULT_SETTINGS_FILE, SETTINGS_FILE_ENV, settingsFileConfig } from "../config/service.js"
import { loadSettings } from "../config/settings.js"
import { BUILTIN_JUDGES } from "../config/builtin-judges.js"
import { didYouMeanClause } from "../domain/suggest.js"

export const DEFAULT_CONFIG = DEFAULT_SETTINGS_FILE

/**
 * `Options.withDefault(value)` that also says the default in `--help` (`default: keys`): help
 * cannot show a plain default by itself (src/cli/help.ts).
 */
export const withShownDefault =
  <const B extends string | number>(value: B) => <A>(self: Options.Options<A>): Options.Options<A | B> =>
    self.pipe(Options.withDefault(value), Options.withDescription(`default: ${value}`))

/** `-c FILE`: the settings file; without it `VETOBENCH_CONFIG`, else `configs/vetobench.yaml`. */
export const configOption = Options.text("config").pipe(
  Options.withAlias("c"),
  Options.withPseudoName("FILE"),
  Options.withDescription("settings file (YAML)"),
  Options.withDescription(`default: $${SETTINGS_FILE_ENV} when set, else ${DEFAULT_SETTINGS_FILE}`),
  Options.withFallbackConfig(settingsFileConfig)
)

/** A command failed: one line for the user, exit code 1. */
export class CliFailure extends Data.TaggedError("CliFailure")<{ readonly message: string }> {}

export const settingsFrom = (file: string) =>
  loadSettings(file).pipe(Effect.mapError((e) => new CliFailure({ message: e.message })))

/** `--data`: Agent-SafetyBench's released_data.json (resolve it with `asbenchDataFile`). */
export const asbenchDataOption = Options.text("data").pipe(
  Options.withPseudoName("FILE"),
  Options.optional,
  Options.withDescription("Agent-SafetyBench released_data.json (default: <paths.asbench_dir>/data/released_data.json from the settings)")
)

/** `--data`, else the data file of the settings' Agent-SafetyBench checkout. */
export const asbenchDataFile = (config: string, data: Option.Option<string>) =>
  Option.match(data, {
    onSome: Effect.succeed,
    onNone: () =>
      fs.existsSync(config)
        ? settingsFrom(config).pipe(Effect.map((s) => path.join(s.paths.asbench_dir, "data", "released_data.json")))
        : Effect.fail(new CliFailure({ message: `no data file: give --data FILE, or a settings file (-c FILE, else $${SETTINGS_FILE_ENV}, else ${DEFAULT_SETTINGS_FILE}; ${config} not found) whose paths.asbench_dir is the Agent-SafetyBench checkout` }))
  })

/** `--run-dir DIR` of run, score, replay, report and merge: where the experiment's runs are (relative to the working directory). */
export const runDirOption = Options.text("run-dir").pipe(
  Options.withPseudoName("DIR"),
  Options.optional,
  Options.withDescription("the experiment's run directory, instead of its run_dir (default: runs/<name> under the repo root); relative to the working directory")
)

/** The experiment with `--run-dir` (resolved against the working directory) as its `run_dir`, when given. */
export const withRunDir = <E extends { readonly run_dir: string }>(exp: E, runDir: Option.Option<string>): E =>
  Option.match(runDir, { onNone: () => exp, onSome: (dir) => ({ ...exp, run_dir: path.resolve(dir) }) })

/** The judges a command may name: the settings' own, then the built-in controls the settings do not redefine. */
export const configuredJudges = (judges: Readonly<Record<string, unknown>>): ReadonlyArray<string> => [
  ...Object.keys(judges),
  ...Object.keys(BUILTIN_JUDGES).filter((j) => !Object.hasOwn(judges, j))
]

/** One line for judge names that are not configured (with a suggestion for a single typo), or null. */
export const unknownJudges = (names: ReadonlyArray<string>, judges: Readonly<Record<string, unknown>>): CliFailure | null => {
  const configured = configuredJudges(judges)
  const unknown = names.filter((j) => !configured.includes(j))
  if (unknown.length === 0) return null
  const hint = unknown.length === 1 ? didYouMeanClause(unknown[0]!, configured) : ""
  return new CliFailure({
    message: `unknown judge${unknown.length > 1 ? "s" : ""} ${unknown.map((j) => `'${j}'`).join(", ")}${hint === "" ? "" : `; ${hint}`} (configured: ${configured.join(", ")})`
  })
}
