/** The judge kinds the CLI registers. Embedders pass their own list to `JudgeKinds.layer`. */
import { classifierPlugin } from "./classifier.js"
import { guardPlugin } from "./guard.js"
import { llmJsonPlugin } from "./llm-json.js"
import { layeredPlugin } from "./layered.js"
import { pluginKindPlugin } from "./plugin.js"
import { rulePlugin } from "./rule/kind.js"
import { staticPlugin } from "./static.js"
import { toolgatePlugin } from "./toolgate.js"

export const defaultPlugins = [
  staticPlugin,
  llmJsonPlugin,
  guardPlugin,
  classifierPlugin,
  toolgatePlugin,
  rulePlugin,
  layeredPlugin,
  pluginKindPlugin
] as const
