/** The decoded settings file as a service. */
import { Context, Layer } from "effect"
import type { Settings as SettingsShape } from "./settings.js"

export class Settings extends Context.Tag("vetobench/Settings")<Settings, SettingsShape>() {
  static layerValue = (s: SettingsShape): Layer.Layer<Settings> => Layer.succeed(Settings, s)
}
