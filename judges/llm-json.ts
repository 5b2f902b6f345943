/**
 * `kind: llm_json` — a general instruct model with a system prompt answers one JSON verdict per
 * call (reference §4.3). Config is checked when the judge is built; the prompt is loaded then too
 * and its hash is the judge's version (part of the verdict cache key).
 *
 * With `results_prompt` (a prompt file, loaded like `prompt`) the judge can also screen tool
 * results (`screening.judge`, src/screening/): the system prompt is the results prompt, the user
 * message the result's text, the reply the same JSON verdict; `deny` = flagged. Its verdicts carry
 * the results prompt's hash as their version.
 */
import { Effect, Either, Schema } from "effect"
import { Settings } from "../src/config/service.js"
import type { JudgeSpec } from "../src/config/settings.js"
import { argumentsText, schemaText, type ToolCallView } from "../src/domain/tool-call.js"
import { CATEGORIES, decided, type JudgeIdentity } from "../src/domain/verdict.js"
import { Upstreams, type UpstreamsShape } from "../layers/Upstreams.js"
import { type Judge, JudgeConfigError, type JudgeContext, JudgeError } from "./Judge.js"
import { DEFAULT_PROMPT, type LoadedPrompt, loadPrompt } from "./prompts.js"
import type { JudgeDefaults, JudgeKind, JudgeKindPlugin } from "./registry.js"
import { callJudgeModel, withExtraBody } from "./judge-model.js"
import { BooleanLike, decodeSpec, JsonObject, NonEmptyString, NonNegativeNumber, PositiveInt, PositiveNumber } from "./spec-schema.js"
import { parseJsonVerdict } from "./verdict-parse.js"

export interface LlmJsonConfig {
  readonly model: string
  readonly prompt: LoadedPrompt
  readonly max_tokens: number
  readonly guided_json: boolean
  readonly timeout_s: number
  readonly temperature: number
  readonly extra_body: Record<string, unknown>
  /** the prompt for rating tool results; null = this judge cannot screen results */
  readonly results_prompt: LoadedPrompt | null
}

const LlmJsonSpec = (timeout_s: number) =>
  Schema.Struct({
    model: NonEmptyString,
    prompt: Schema.optionalWith(NonEmptyString, { default: () => DEFAULT_PROMPT }),
    max_tokens: Schema.optionalWith(PositiveInt, { default: () => 256 }),
    guided_json: Schema.optionalWith(BooleanLike, { default: () => true }),
    timeout_s: Schema.optionalWith(PositiveNumber, { default: () => timeout_s }),
    temperature: Schema.optionalWith(NonNegativeNumber, { default: () => 0 }),
    extra_body: Schema.optionalWith(JsonObject, { default: () => ({}) }),
    results_prompt: Schema.optional(NonEmptyString)
  })

/** Check and default an `llm_json` spec; a prompt path is resolved against `root`. */
export const decodeLlmJsonConfig = (
  name: string,
  spec: JudgeSpec,
  defaults: JudgeDefaults,
  root: string
): Effect.Effect<LlmJsonConfig, JudgeConfigError> =>
  Effect.gen(function* () {
    const c = yield* decodeSpec(name, spec, LlmJsonSpec(defaults.timeout_s))
    const prompt = yield* Either.mapLeft(loadPrompt(c.prompt, root), (reason) => new JudgeConfigError({ judge: name, path: "prompt", reason }))
    const results_prompt =
      c.results_prompt === undefined
        ? null
        : yield* Either.mapLeft(loadPrompt(c.results_prompt, root), (reason) => new JudgeConfigError({ judge: name, path: "results_prompt", reason }))
    return { ...c, prompt, results_prompt, extra_body: { ...c.extra_body } }
  })

/** The JSON schema the reply is constrained to; `reason` first so the model explains before deciding. */
export const VERDICT_SCHEMA = {
  type: "object",
  properties: {
    reason: { type: "string", maxLength: 300 },
    category: { type: "string", enum: [...CATEGORIES] },
    decision: { type: "string", enum: ["allow", "deny"] }
  },
  required: ["reason", "category", "decision"],
  additionalProperties: false
} as const

/** The user message: the one call the judge sees. */
export const renderCall = (call: ToolCallView): string =>
  [
    `Tool name: ${call.name}`,
    `Tool description: ${call.description || "(none)"}`,
    `Parameter schema: ${schemaText(call)}`,
    `Arguments: ${argumentsText(call)}`,
    "",
    "Return the JSON verdict."
  ].join("\n")

/**
 * The chat payload (without `model`, which Upstreams sets). `extra_body` adds keys; it cannot replace
 * the judge's own: `messages`, `temperature` (recorded in the verdict), `max_tokens` and, with
 * `guided_json`, `response_format`.
 */
export const llmJsonPayload = (config: LlmJsonConfig, call: ToolCallView): Record<string, unknown> =>
  verdictPayload(config, config.prompt, renderCall(call))

/** The user message of a result screen: the tool result the agent is about to read. */
export const renderResult = (text: string): string => ["Tool result:", text, "", "Return the JSON verdict."].join("\n")

/** A verdict request: `system` as the system prompt, `user` as the one user message. */
const verdictPayload = (config: LlmJsonConfig, system: LoadedPrompt, user: string): Record<string, unknown> =>
  withExtraBody(
    {
      messages: [
        { role: "system", content: system.text },
        { role: "user", content: user }
      ],
      temperature: config.temperature,
      max_tokens: config.max_tokens,
      ...(config.guided_json
        ? { response_format: { type: "json_schema", json_schema: { name: "verdict", schema: VERDICT_SCHEMA, strict: true } } }
        : {})
    },
    config.extra_body
  )

export const makeLlmJsonJudge = (upstreams: UpstreamsShape, name: string, config: LlmJsonConfig): Judge => {
  const id: JudgeIdentity = { judge: name, kind: "llm_json", model: config.model, version: config.prompt.version }
  const ask = (who: JudgeIdentity, payload: Record<string, unknown>, ctx: JudgeContext) =>
    Effect.gen(function* () {
      const reply = yield* callJudgeModel(upstreams, name, config.model, payload, {
        timeout_s: config.timeout_s,
        requestId: ctx.requestId
      })
      const parsed = parseJsonVerdict(reply.content)
      if (Either.isLeft(parsed)) {
        return yield* new JudgeError({
          judge: name,
          reason: "output-invalid",
          message: parsed.left,
          raw: reply.content,
          latency_ms: reply.latency_ms,
          usage: reply.usage
        })
      }
      const v = parsed.right
      return decided(who, v.decision, {
        category: v.category,
        reason: v.reason,
        raw: reply.content,
        latency_ms: reply.latency_ms,
        usage: reply.usage,
        temperature: config.temperature
      })
    })
  const rule = (call: ToolCallView, ctx: JudgeContext) => ask(id, llmJsonPayload(config, call), ctx)
  const rp = config.results_prompt
  if (rp === null) return { ...id, cacheable: true, rule }
  const screenId: JudgeIdentity = { ...id, version: rp.version }
  const screen = (text: string, ctx: JudgeContext) => ask(screenId, verdictPayload(config, rp, renderResult(text)), ctx)
  return { ...id, cacheable: true, rule, screen }
}

export const llmJsonPlugin: JudgeKindPlugin<Upstreams | Settings> = Effect.gen(function* () {
  const upstreams = yield* Upstreams
  const settings = yield* Settings
  const kind: JudgeKind = {
    kind: "llm_json",
    make: (name, spec, defaults) =>
      Effect.map(decodeLlmJsonConfig(name, spec, defaults, settings.root), (config) => makeLlmJsonJudge(upstreams, name, config))
  }
  return kind
})
