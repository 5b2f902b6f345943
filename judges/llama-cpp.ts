/**
 * `kind: llama_cpp` — a GGUF model run in-process on the CPU (node-llama-cpp, prebuilt binaries
 * only): no GPU, no model server. It sees the one call like `llm_json` (same packaged prompts and
 * prompt files, same rendering of the call) and answers a JSON verdict constrained by a JSON-schema
 * grammar, so the answer always parses (see `llama-cpp/verdict.ts`); the raw answer is kept.
 *
 * The model is loaded once per process when the judge is built (start-up) and shared by every judge
 * naming the same file; rulings queue for it one at a time (`layers/LlamaModels.ts`), waiting in
 * that queue rather than in a gate slot (`Judge.ownQueue`), so a busy model does not starve other
 * judges of `proxy.max_concurrent_judges`. The gate's deadline and fail_policy apply as for every
 * kind; the judge's own `timeout_s` (default: the deadline) bounds waiting plus generating.
 */
import { closeSync, openSync, readSync, statSync } from "node:fs"
import * as path from "node:path"
import { Clock, Duration, Effect, Either, Schema } from "effect"
import { Settings } from "../src/config/service.js"
import type { JudgeSpec } from "../src/config/settings.js"
import type { ToolCallView } from "../src/domain/tool-call.js"
import { decided, type JudgeIdentity } from "../src/domain/verdict.js"
import { type Generation, type GrammarSpec, type LlamaRunner, LlamaModels } from "../layers/LlamaModels.js"
import { type Judge, JudgeConfigError, type JudgeContext, JudgeError } from "./Judge.js"
import { renderCall } from "./llm-json.js"
import { LLAMA_VERDICT_SCHEMA, MIN_MAX_TOKENS, parseLlamaVerdict } from "./llama-cpp/verdict.js"
import { DEFAULT_PROMPT, type LoadedPrompt, loadPrompt, shortHash } from "./prompts.js"
import type { JudgeDefaults, JudgeKind, JudgeKindPlugin } from "./registry.js"
import { decodeSpec, NonEmptyString, NonNegativeNumber, NumberLike, PositiveInt, PositiveNumber } from "./spec-schema.js"

export interface LlamaCppConfig {
  /** absolute path of the GGUF file */
  readonly model_path: string
  /** its size in bytes (part of the version) */
  readonly model_bytes: number
  readonly prompt: LoadedPrompt
  readonly context_size: number
  /** null: the machine's math cores minus one (at least one) */
  readonly threads: number | null
  readonly max_tokens: number
  readonly temperature: number
  readonly timeout_s: number
  readonly max_queue: number
}

const MaxTokens = NumberLike.pipe(Schema.int(), Schema.greaterThanOrEqualTo(MIN_MAX_TOKENS)).annotations({
  message: () => `must be an integer >= ${MIN_MAX_TOKENS} (room for the decision and category before the reason)`
})

const LlamaCppSpec = (timeout_s: number) =>
  Schema.Struct({
    model_path: NonEmptyString,
    prompt: Schema.optionalWith(NonEmptyString, { default: () => DEFAULT_PROMPT }),
    context_size: Schema.optionalWith(PositiveInt, { default: () => 2048 }),
    threads: Schema.optional(PositiveInt),
    max_tokens: Schema.optionalWith(MaxTokens, { default: () => 128 }),
    temperature: Schema.optionalWith(NonNegativeNumber, { default: () => 0 }),
    timeout_s: Schema.optionalWith(PositiveNumber, { default: () => timeout_s }),
    max_queue: Schema.optionalWith(PositiveInt, { default: () => 16 })
  })

const GGUF_MAGIC = "GGUF"

/** The model file, checked: it exists, is a file and starts with the GGUF magic. Left: why not. */
export const checkGgufFile = (file: string): Either.Either<number, string> => {
  let size: number
  try {
    const st = statSync(file)
    if (!st.isFile()) return Either.left(`${file} is not a file`)
    size = st.size
  } catch (e) {
    const code = typeof e === "object" && e !== null && "code" in e ? String(e.code) : "error"
    return Either.left(code === "ENOENT" ? `${file} does not exist` : `cannot read ${file} (${code})`)
  }
  const head = Buffer.alloc(4)
  try {
    const fd = openSync(file, "r")
    try {
      readSync(fd, head, 0, 4, 0)
    } finally {
      closeSync(fd)
    }
  } catch (e) {
    const code = typeof e === "object" && e !== null && "code" in e ? String(e.code) : "error"
    return Either.left(`cannot read ${file} (${code})`)
  }
  return head.toString("latin1") === GGUF_MAGIC ? Either.right(size) : Either.left(`${file} is not a GGUF file (it does not start with "GGUF")`)
}

/** Check and default a `llama_cpp` spec; `model_path` and a prompt path are resolved against `root`. */
export const decodeLlamaCppConfig = (
  name: string,
  spec: JudgeSpec,
  defaults: Pick<JudgeDefaults, "timeout_s">,
  root: string
): Effect.Effect<LlamaCppConfig, JudgeConfigError> =>
  Effect.gen(function* () {
    const c = yield* decodeSpec(name, spec, LlamaCppSpec(defaults.timeout_s))
    const fail = (key: string) => (reason: string) => new JudgeConfigError({ judge: name, path: key, reason })
    const model_path = path.resolve(root, c.model_path)
    const model_bytes = yield* Either.mapLeft(checkGgufFile(model_path), fail("model_path"))
    const prompt = yield* Either.mapLeft(loadPrompt(c.prompt, root), fail("prompt"))
    return {
      model_path,
      model_bytes,
      prompt,
      context_size: c.context_size,
      threads: c.threads ?? null,
      max_tokens: c.max_tokens,
      temperature: c.temperature,
      timeout_s: c.timeout_s,
      max_queue: c.max_queue
    }
  })

/** `llama_cpp:` + short sha256 of what decides a verdict: prompt, schema, model file (name, size), max_tokens, temperature. */
export const llamaCppVersion = (config: LlamaCppConfig): string =>
  `llama_cpp:${shortHash(
    JSON.stringify([config.prompt.text, LLAMA_VERDICT_SCHEMA, path.basename(config.model_path), config.model_bytes, config.max_tokens, config.temperature])
  )}`

const usageOf = (g: Generation): Record<string, unknown> => ({
  prompt_tokens: g.promptTokens,
  completion_tokens: g.completionTokens,
  stop_reason: g.stopReason,
  queue_ms: Math.round(g.queueMs),
  run_ms: Math.round(g.runMs)
})

/** The verdict's JSON-schema grammar (node-llama-cpp's), built once per process. */
const VERDICT_GRAMMAR: GrammarSpec = {
  key: `verdict:${shortHash(JSON.stringify(LLAMA_VERDICT_SCHEMA))}`,
  make: (llama) => llama.createGrammarForJsonSchema(LLAMA_VERDICT_SCHEMA)
}

export const makeLlamaCppJudge = (name: string, config: LlamaCppConfig, runner: LlamaRunner): Judge => {
  const id: JudgeIdentity = { judge: name, kind: "llama_cpp", model: path.basename(config.model_path), version: llamaCppVersion(config) }
  const deadline = Duration.seconds(config.timeout_s)
  const rule = (call: ToolCallView, _ctx: JudgeContext) =>
    Effect.gen(function* () {
      const start = yield* Clock.currentTimeNanos
      const elapsed = Effect.map(Clock.currentTimeNanos, (now) => Number(now - start) / 1e6)
      const ran = yield* Effect.either(
        runner
          .generate({
            judge: name,
            system: config.prompt.text,
            user: renderCall(call),
            maxTokens: config.max_tokens,
            temperature: config.temperature,
            maxQueue: config.max_queue
          })
          .pipe(Effect.timeoutFail({ duration: deadline, onTimeout: () => ({ _tag: "Timeout" as const }) }))
      )
      const latency_ms = yield* elapsed
      if (Either.isLeft(ran)) {
        const e = ran.left
        return yield* e._tag === "Timeout"
          ? new JudgeError({ judge: name, reason: "timeout", message: `the in-process model did not answer within ${config.timeout_s}s`, latency_ms })
          : new JudgeError({ judge: name, reason: "unavailable", message: `${e.reason}: ${e.message}`, latency_ms })
      }
      const g = ran.right
      const usage = usageOf(g)
      const parsed = parseLlamaVerdict(g.text, g.stopReason === "maxTokens")
      if (Either.isLeft(parsed)) {
        return yield* new JudgeError({ judge: name, reason: "output-invalid", message: parsed.left, raw: g.text, latency_ms, usage })
      }
      const v = parsed.right
      return decided(id, v.decision, { category: v.category, reason: v.reason, raw: g.text, latency_ms, usage, temperature: config.temperature })
    })
  return { ...id, cacheable: true, ownQueue: true, rule }
}

export const llamaCppPlugin: JudgeKindPlugin<LlamaModels | Settings> = Effect.gen(function* () {
  const models = yield* LlamaModels
  const settings = yield* Settings
  const kind: JudgeKind = {
    kind: "llama_cpp",
    make: (name, spec, defaults) =>
      Effect.gen(function* () {
        const config = yield* decodeLlamaCppConfig(name, spec, defaults, settings.root)
        const runner = yield* models
          .runner({ file: config.model_path, contextSize: config.context_size, threads: config.threads, grammar: VERDICT_GRAMMAR })
          .pipe(Effect.mapError((e) => new JudgeConfigError({ judge: name, path: e.key, reason: e.reason })))
        return makeLlamaCppJudge(name, config, runner)
      })
  }
  return kind
})
