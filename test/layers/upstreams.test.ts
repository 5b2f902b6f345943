/** Upstream selection: aliases (one lookup), first upstream listing the model, catch-all, no route. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as Upstreams from "../../layers/Upstreams.js"
import { defaultSettings, makeUpstreamSettings } from "../../src/config/settings.js"

const settings = defaultSettings("/tmp", {
  upstreams: [
    makeUpstreamSettings({ name: "a", base_url: "http://127.0.0.1:1/v1", models: ["m1", "shared"] }),
    makeUpstreamSettings({ name: "b", base_url: "http://127.0.0.1:2/v1", models: ["shared", "m2"] }),
    makeUpstreamSettings({ name: "any", base_url: "http://127.0.0.1:3/v1" }),
    makeUpstreamSettings({ name: "any2", base_url: "http://127.0.0.1:4/v1" })
  ],
  aliases: { alias: "m2", chained: "alias" },
  model_defaults: { m2: { temperature: 0.1 } }
})

const pick = (f: (u: Upstreams.UpstreamsShape) => Either.Either<Upstreams.Target, Upstreams.NoRoute>) =>
  Effect.scoped(Effect.map(Upstreams.make(settings), (u) => Either.map(f(u), (t) => [t.upstream.name, t.model, t.defaults])))

describe("Upstreams routing", () => {
  it.effect("first upstream listing the model wins; aliases resolve once; defaults follow the served name", () =>
    Effect.gen(function* () {
      expect(yield* pick((u) => u.resolve("shared"))).toEqual(Either.right(["a", "shared", undefined]))
      expect(yield* pick((u) => u.resolve("alias"))).toEqual(Either.right(["b", "m2", { temperature: 0.1 }]))
      // no chaining: `chained` → `alias`, which no upstream lists → the first catch-all
      expect(yield* pick((u) => u.resolve("chained"))).toEqual(Either.right(["any", "alias", undefined]))
      // judges use literal names: no alias applied
      expect(yield* pick((u) => u.target("alias"))).toEqual(Either.right(["any", "alias", undefined]))
    }))

  it.effect("without a catch-all an unknown model has no route", () =>
    Effect.gen(function* () {
      const only = defaultSettings("/tmp", { upstreams: [makeUpstreamSettings({ name: "a", base_url: "http://127.0.0.1:1/v1", models: ["m1"] })] })
      const r = yield* Effect.scoped(Effect.map(Upstreams.make(only), (u) => u.resolve("ghost")))
      expect(Either.isLeft(r)).toBe(true)
      expect(Either.getLeft(r).pipe((o) => (o._tag === "Some" ? o.value.message : ""))).toContain("no upstream serves model 'ghost'")
    }))

  it.effect("the served list is the sorted union of models and alias names", () =>
    Effect.gen(function* () {
      const served = yield* Effect.scoped(Effect.map(Upstreams.make(settings), (u) => u.served))
      expect(served).toEqual(["alias", "chained", "m1", "m2", "shared"])
    }))
})
