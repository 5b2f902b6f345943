/** Options every subcommand shares, and the one error type commands fail with. */
import { Options } from "@effect/cli"
import { Data, Effect } from "effect"
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
