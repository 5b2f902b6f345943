/** The judge kinds the CLI registers. Embedders pass their own list to `JudgeKinds.layer`. */
import type { Effect } from "effect"
import { classifierPlugin } from "./classifier.js"
import { guardPlugin } from "./guard.js"
import { llmJsonPlugin } from "./llm-json.js"
import { layeredPlugin } from "./layered.js"
import { llamaCppPlugin } from "./llama-cpp.js"
import { pluginKindPlugin } from "./plugin.js"
import type { JudgeKindPlugin } from "./registry.js"
import { rulePlugin } from "./rule/kind.js"
import { staticPlugin } from "./static.js"
import { toolgatePlugin } from "./toolgate.js"

const plugins = [
  staticPlugin,
  llmJsonPlugin,
  guardPlugin,
  classifierPlugin,
  toolgatePlugin,
  rulePlugin,
  layeredPlugin,
  pluginKindPlugin,
  llamaCppPlugin
] as const

/** What the kinds need between them (the gate's graph provides it). */
export type DefaultPluginNeeds = Effect.Effect.Context<(typeof plugins)[number]>

export const defaultPlugins: ReadonlyArray<JudgeKindPlugin<DefaultPluginNeeds>> = plugins
