/**
 * The `llama_cpp` judge without a model: its config (every key, its defaults, one-line errors naming
 * the judge and the key), reading answers (whole, cut by max_tokens), and how a library or platform
 * problem surfaces. The real model's mechanics are in llama-cpp.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import { Settings } from "../../src/config/service.js"
import { defaultSettings, type JudgeSpec } from "../../src/config/settings.js"
import { decodeLlamaCppConfig, llamaCppPlugin, llamaCppVersion } from "../../judges/llama-cpp.js"
import { importNodeLlamaCpp, platformName, startLlama } from "../../layers/llama-binding.js"
import { LLAMA_VERDICT_SCHEMA, MIN_MAX_TOKENS, parseLlamaVerdict } from "../../judges/llama-cpp/verdict.js"
import { PACKAGED_PROMPTS } from "../../judges/prompts.js"
import { LlamaLoadError, LlamaModels } from "../../layers/LlamaModels.js"
import { CATEGORIES } from "../../src/domain/verdict.js"

const root = mkdtempSync(path.join(tmpdir(), "vetobench-llama-config-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

// a file that starts like a GGUF model (the config check reads only the magic)
mkdirSync(path.join(root, "models"))
writeFileSync(path.join(root, "models", "tiny.gguf"), Buffer.concat([Buffer.from("GGUF"), Buffer.alloc(60)]))
writeFileSync(path.join(root, "models", "not-a-model.gguf"), "this is text, not a model\n")
writeFileSync(path.join(root, "prompt.txt"), "Judge the call. Answer JSON.\n")

const decode = (spec: Omit<JudgeSpec, "kind">) => decodeLlamaCppConfig("cpu", { kind: "llama_cpp", ...spec }, { timeout_s: 42 }, root)

const failure = (spec: Omit<JudgeSpec, "kind">) => Effect.flip(decode(spec)).pipe(Effect.map((e) => e.message))

describe("llama_cpp config", () => {
  it.effect("defaults every key; model_path and prompt files are resolved against the repo root", () =>
    Effect.gen(function* () {
      const c = yield* decode({ model_path: "models/tiny.gguf" })
      expect(c).toMatchObject({
        model_path: path.join(root, "models", "tiny.gguf"),
        model_bytes: 64,
        context_size: 2048,
        threads: null,
        max_tokens: 128,
        temperature: 0,
        timeout_s: 42,
        max_queue: 16
      })
      expect(c.prompt.text).toBe(PACKAGED_PROMPTS.call_only_v1)
      const custom = yield* decode({
        model_path: path.join(root, "models", "tiny.gguf"),
        prompt: "prompt.txt",
        context_size: "1024",
        threads: 1,
        max_tokens: 64,
        temperature: 0.5,
        timeout_s: 3,
        max_queue: 2
      })
      expect(custom).toMatchObject({ context_size: 1024, threads: 1, max_tokens: 64, temperature: 0.5, timeout_s: 3, max_queue: 2 })
      expect(custom.prompt.source).toBe(path.join(root, "prompt.txt"))
    }))

  it.effect("the version changes with what decides a verdict (prompt, max_tokens, temperature) and not with threads or queue", () =>
    Effect.gen(function* () {
      const base = llamaCppVersion(yield* decode({ model_path: "models/tiny.gguf" }))
      expect(base).toMatch(/^llama_cpp:[0-9a-f]{16}$/)
      expect(llamaCppVersion(yield* decode({ model_path: "models/tiny.gguf", threads: 1, max_queue: 3, timeout_s: 9 }))).toBe(base)
      expect(llamaCppVersion(yield* decode({ model_path: "models/tiny.gguf", max_tokens: 64 }))).not.toBe(base)
      expect(llamaCppVersion(yield* decode({ model_path: "models/tiny.gguf", temperature: 0.7 }))).not.toBe(base)
      expect(llamaCppVersion(yield* decode({ model_path: "models/tiny.gguf", prompt: "prompt.txt" }))).not.toBe(base)
    }))

  it.effect("every mistake is one line naming the judge and the key", () =>
    Effect.gen(function* () {
      expect(yield* failure({})).toBe("judges.cpu.model_path: is required")
      expect(yield* failure({ model_path: "models/missing.gguf" })).toBe(`judges.cpu.model_path: ${path.join(root, "models", "missing.gguf")} does not exist`)
      expect(yield* failure({ model_path: "models" })).toBe(`judges.cpu.model_path: ${path.join(root, "models")} is not a file`)
      expect(yield* failure({ model_path: "models/not-a-model.gguf" })).toBe(
        `judges.cpu.model_path: ${path.join(root, "models", "not-a-model.gguf")} is not a GGUF file (it does not start with "GGUF")`
      )
      expect(yield* failure({ model_path: "models/tiny.gguf", max_tokens: MIN_MAX_TOKENS - 1 })).toBe(
        `judges.cpu.max_tokens: must be an integer >= ${MIN_MAX_TOKENS} (room for the decision and category before the reason)`
      )
      expect(yield* failure({ model_path: "models/tiny.gguf", context_size: 0 })).toBe("judges.cpu.context_size: must be a positive integer")
      expect(yield* failure({ model_path: "models/tiny.gguf", threads: 0 })).toBe("judges.cpu.threads: must be a positive integer")
      expect(yield* failure({ model_path: "models/tiny.gguf", prompt: "nope" })).toMatch(/^judges\.cpu\.prompt: unknown packaged prompt 'nope'/)
      expect(yield* failure({ model_path: "models/tiny.gguf", model: "x" })).toBe(
        "judges.cpu.model: unknown key for kind 'llama_cpp' (allowed: kind, model_path, prompt, context_size, threads, max_tokens, temperature, timeout_s, max_queue)"
      )
    }))
})

describe("llama_cpp answers", () => {
  it("the grammar's schema puts decision and category first, over the shared category vocabulary", () => {
    expect(Object.keys(LLAMA_VERDICT_SCHEMA.properties)).toEqual(["decision", "category", "reason"])
    expect(LLAMA_VERDICT_SCHEMA.properties.category.enum).toEqual([...CATEGORIES])
  })

  it("a whole answer is read as JSON", () => {
    const v = parseLlamaVerdict('{\n  "decision": "deny",\n  "category": "data_loss",\n  "reason": "wipes \\"/\\""\n}', false)
    expect(v).toEqual(Either.right({ decision: "deny", category: "data_loss", reason: 'wipes "/"', complete: true }))
  })

  it("an answer cut by max_tokens inside the reason keeps its decision and category, with the reason up to the cut", () => {
    const cut = '{\n    "decision": "allow",\n    "category": "none",\n    "reason": "lists a \\"home\\" dir'
    expect(parseLlamaVerdict(cut, true)).toEqual(
      Either.right({ decision: "allow", category: "none", reason: 'lists a "home" dir …[cut at max_tokens]', complete: false })
    )
    // cut in the middle of an escape: the unfinished escape is dropped
    expect(Either.map(parseLlamaVerdict('{"decision": "deny", "category": "other", "reason": "a\\u00', true), (v) => v.reason)).toEqual(
      Either.right("a …[cut at max_tokens]")
    )
    expect(Either.map(parseLlamaVerdict('{"decision": "deny", "category": "other", "reason": "a\\', true), (v) => v.reason)).toEqual(
      Either.right("a …[cut at max_tokens]")
    )
    // cut before the reason began
    expect(parseLlamaVerdict('{"decision": "deny", "category": "privacy_leak", "rea', true)).toEqual(
      Either.right({ decision: "deny", category: "privacy_leak", reason: "…[cut at max_tokens]", complete: false })
    )
  })

  it("an answer without its decision is an error naming why", () => {
    const left = parseLlamaVerdict('{"decis', true)
    expect(Either.isLeft(left) && left.left).toMatch(/^no decision in the model's answer \(cut by max_tokens before the decision\)/)
  })
})

describe("llama_cpp library and platform", () => {
  it.effect("node-llama-cpp loads on this machine (its prebuilt binary package is installed by npm ci)", () =>
    Effect.gen(function* () {
      const imported = yield* Effect.promise(importNodeLlamaCpp)
      expect(imported.ok).toBe(true)
    }))

  it.effect("a platform without a prebuilt binary is one line naming the platform; nothing is built or downloaded", () =>
    Effect.gen(function* () {
      const imported = yield* Effect.promise(importNodeLlamaCpp)
      if (!imported.ok) return yield* Effect.die(imported.reason)
      const asked: Array<Record<string, unknown>> = []
      const started = yield* Effect.promise(() =>
        startLlama({
          LlamaLogLevel: imported.lib.LlamaLogLevel,
          NoBinaryFoundError: imported.lib.NoBinaryFoundError,
          getLlama: (options) => {
            asked.push({ ...(typeof options === "object" ? options : {}) })
            return Promise.reject(new imported.lib.NoBinaryFoundError("no binary"))
          }
        })
      )
      expect(started.ok).toBe(false)
      expect(!started.ok && started.reason).toBe(
        `no prebuilt llama.cpp binary for this platform (${platformName()}): node-llama-cpp@3.21.1 ships them as @node-llama-cpp/<platform> ` +
          "packages for linux x64/arm64/armv7l (glibc), macOS and Windows; vetobench never builds or downloads one"
      )
      expect(platformName()).toContain(`${process.platform}-${process.arch}`)
      expect(asked).toEqual([expect.objectContaining({ gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true })])
    }))

  it.effect("when the model cannot be used, the judge fails to build with one line naming the judge and the key", () =>
    Effect.gen(function* () {
      const models = (key: LlamaLoadError["key"], reason: string) =>
        Layer.succeed(LlamaModels, { runner: () => Effect.fail(new LlamaLoadError({ key, reason })), loaded: () => [] })
      const build = (key: LlamaLoadError["key"], reason: string) =>
        Effect.flatMap(llamaCppPlugin, (k) => k.make("cpu", { kind: "llama_cpp", model_path: "models/tiny.gguf" }, { timeout_s: 5, judge: () => undefined })).pipe(
          Effect.provide(Layer.merge(models(key, reason), Settings.layerValue(defaultSettings(root)))),
          Effect.flip,
          Effect.map((e) => e.message)
        )
      expect(yield* build("kind", "no prebuilt llama.cpp binary for this platform (freebsd-x64)")).toBe(
        "judges.cpu.kind: no prebuilt llama.cpp binary for this platform (freebsd-x64)"
      )
      expect(yield* build("model_path", "cannot load /m.gguf: bad tensor")).toBe("judges.cpu.model_path: cannot load /m.gguf: bad tensor")
    }))
})
