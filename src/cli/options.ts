/** Options every subcommand shares, and the one error type commands fail with. */
import { Options } from "@effect/cli"
import { Data, Effect, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { loadSettings } from "../config/settings.js"

export const DEFAULT_CONFIG = "configs/vetobench.yaml"

export const configOption = Options.text("config").pipe(
  Options.withAlias("c"),
  Options.withDefault(DEFAULT_CONFIG),
  Options.withDescription("settings file (YAML)")
)

/** A command failed: one line for the user, exit code 1. */
export class CliFailure extends Data.TaggedError("CliFailure")<{ readonly message: string }> {}

export const settingsFrom = (file: string) =>
  loadSettings(file).pipe(Effect.mapError((e) => new CliFailure({ message: e.message })))

/** `--data`: Agent-SafetyBench's released_data.json (resolve it with `asbenchDataFile`). */
export const asbenchDataOption = Options.text("data").pipe(
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
        : Effect.fail(new CliFailure({ message: `no data file: give --data FILE, or a settings file (-c FILE, default configs/vetobench.yaml; ${config} not found) whose paths.asbench_dir is the Agent-SafetyBench checkout` }))
  })
