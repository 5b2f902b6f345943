/** Every judge in configs/vetobench.example.yaml builds through the registry (what `vetobench proxy` does at start-up). */
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { Judges } from "../../judges/Judges.js"
import { defaultPlugins } from "../../judges/plugins.js"
import { JudgeKinds } from "../../judges/registry.js"
import { LlamaModels } from "../../layers/LlamaModels.js"
import { Metrics } from "../../layers/Metrics.js"
import * as Upstreams from "../../layers/Upstreams.js"
import { Settings } from "../../src/config/service.js"
import { loadSettings } from "../../src/config/settings.js"

describe("configs/vetobench.example.yaml", () => {
  it.live("builds every configured judge with the default kinds", () =>
    Effect.gen(function* () {
      const settings = yield* loadSettings(path.resolve("configs/vetobench.example.yaml"), {})
      const base = Layer.mergeAll(
        Settings.layerValue(settings),
        Upstreams.layer.pipe(Layer.provide(Settings.layerValue(settings))),
        LlamaModels.layer.pipe(Layer.provide(Metrics.layerNoop))
      )
      const judges = yield* Effect.scoped(
        Layer.build(Judges.layer.pipe(Layer.provide(JudgeKinds.layer(defaultPlugins)), Layer.provide(base))).pipe(
          Effect.map((ctx) => Context.get(ctx, Judges).names)
        )
      )
      expect(judges).toEqual(["allow-all", "ap-rules", "banking-rules", "deny-all", "granite", "llamaguard", "small"])
    }))
})
