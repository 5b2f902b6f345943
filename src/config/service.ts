/** The decoded settings file as a service, and which file it is read from. */
import { Config, Context, Layer } from "effect"
import type { Settings as SettingsShape } from "./settings.js"

export class Settings extends Context.Tag("vetobench/Settings")<Settings, SettingsShape>() {
  static layerValue = (s: SettingsShape): Layer.Layer<Settings> => Layer.succeed(Settings, s)
}

/** The settings file when neither `-c` nor `VETOBENCH_CONFIG` names one (relative to the working directory). */
export const DEFAULT_SETTINGS_FILE = "configs/vetobench.yaml"

/** The environment variable that names the settings file when `-c` is not given. */
export const SETTINGS_FILE_ENV = "VETOBENCH_CONFIG"

/**
 * The settings file when `-c` is not given: `VETOBENCH_CONFIG` when set and not empty, else
 * {@link DEFAULT_SETTINGS_FILE}. The precedence is `-c FILE` > `VETOBENCH_CONFIG` > the default.
 */
export const settingsFileConfig: Config.Config<string> = Config.string(SETTINGS_FILE_ENV).pipe(
  Config.withDefault(""),
  Config.map((file) => (file.trim() === "" ? DEFAULT_SETTINGS_FILE : file))
)
