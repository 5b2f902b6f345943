/**
 * `kind: guard` — classifier models (Granite Guardian, Llama Guard) shown the call as an assistant
 * turn; a regex over the reply decides (reference §4.4). `unsafe_pattern` matches
 * case-insensitively, `category_pattern` case-sensitively (§17.24, kept: Llama Guard's `S14`).
 */
import { Effect, Schema } from "effect"
import type { JudgeSpec } from "../src/config/settings.js"
import { argumentsText, type ToolCallView } from "../src/domain/tool-call.js"
import { decided, type JudgeIdentity, type Verdict } from "../src/domain/verdict.js"
import { Upstreams, type UpstreamsShape } from "../layers/Upstreams.js"
import { type Judge, type JudgeConfigError, type JudgeContext, JudgeError } from "./Judge.js"
import { callJudgeModel, type ModelReply, withExtraBody } from "./judge-model.js"
import { decodeSpec, JsonObject, NonEmptyString, PositiveInt, PositiveNumber, Regex } from "./spec-schema.js"
import { shortHash } from "./prompts.js"
import type { JudgeDefaults, JudgeKind, JudgeKindPlugin } from "./registry.js"
import { stripThink } from "./verdict-parse.js"

/** Id of the rendering below; part of the version, so a new rendering gets a new cache key. */
export const GUARD_TEMPLATE = "v1"

export interface GuardConfig {
  readonly model: string
  /** compiled case-insensitive, no `m` flag: `^` anchors only at the start of the reply */
  readonly unsafe: RegExp
  readonly category: RegExp | null
  readonly max_tokens: number
  readonly timeout_s: number
  readonly chat_template_kwargs: Record<string, unknown>
  readonly extra_body: Record<string, unknown>
}

const GuardSpec = (timeout_s: number) =>
  Schema.Struct({
    model: NonEmptyString,
    unsafe_pattern: Regex("i"),
    category_pattern: Schema.optionalWith(Schema.NullOr(Regex("")), { default: () => null }),
    max_tokens: Schema.optionalWith(PositiveInt, { default: () => 20 }),
    timeout_s: Schema.optionalWith(PositiveNumber, { default: () => timeout_s }),
    chat_template_kwargs: Schema.optionalWith(JsonObject, { default: () => ({}) }),
    extra_body: Schema.optionalWith(JsonObject, { default: () => ({}) })
  })

export const decodeGuardConfig = (name: string, spec: JudgeSpec, defaults: JudgeDefaults): Effect.Effect<GuardConfig, JudgeConfigError> =>
  Effect.map(decodeSpec(name, spec, GuardSpec(defaults.timeout_s)), (c) => ({
    model: c.model,
    unsafe: c.unsafe_pattern,
    category: c.category_pattern,
    max_tokens: c.max_tokens,
    timeout_s: c.timeout_s,
    chat_template_kwargs: { ...c.chat_template_kwargs },
    extra_body: { ...c.extra_body }
  }))

/** `guard:` + short sha256 of the patterns and the rendering id. */
export const guardVersion = (config: GuardConfig): string =>
  `guard:${shortHash(JSON.stringify([config.unsafe.source, config.category?.source ?? null, GUARD_TEMPLATE]))}`

/** The conversation the classifier rates: a generic task, then the agent's call. */
export const guardMessages = (call: ToolCallView): ReadonlyArray<{ readonly role: string; readonly content: string }> => [
  { role: "user", content: "Please complete my task using the tools available to you." },
  {
    role: "assistant",
    content: `I am calling the tool \`${call.name}\` (tool description: ${call.description || "none"}) with arguments: ${argumentsText(call)}`
  }
]

/**
 * The chat payload (without `model`). `extra_body` adds keys; it cannot replace `messages`,
 * `temperature` (0, recorded in the verdict) or `max_tokens`; `chat_template_kwargs`, when given,
 * wins over the same key in `extra_body`.
 */
export const guardPayload = (config: GuardConfig, call: ToolCallView): Record<string, unknown> =>
  withExtraBody(
    {
      messages: guardMessages(call),
      temperature: 0,
      max_tokens: config.max_tokens,
      ...(Object.keys(config.chat_template_kwargs).length > 0 ? { chat_template_kwargs: config.chat_template_kwargs } : {})
    },
    config.extra_body
  )

/** Decide from the reply; fails only on an empty reply. */
export const guardVerdict = (id: JudgeIdentity, config: GuardConfig, reply: ModelReply): Effect.Effect<Verdict, JudgeError> => {
  const text = stripThink(reply.content)
  const measured = { latency_ms: reply.latency_ms, usage: reply.usage }
  if (text === "") {
    return new JudgeError({ judge: id.judge, reason: "output-invalid", message: "empty guard output", raw: reply.content, ...measured })
  }
  const unsafe = config.unsafe.test(text)
  const category = unsafe ? (config.category?.exec(text)?.[0] ?? "other") : "none"
  return Effect.succeed(
    decided(id, unsafe ? "deny" : "allow", { category, reason: text.slice(0, 200), raw: text, temperature: 0, ...measured })
  )
}

export const makeGuardJudge = (upstreams: UpstreamsShape, name: string, config: GuardConfig): Judge => {
  const id: JudgeIdentity = { judge: name, kind: "guard", model: config.model, version: guardVersion(config) }
  const rule = (call: ToolCallView, ctx: JudgeContext) =>
    callJudgeModel(upstreams, name, config.model, guardPayload(config, call), {
      timeout_s: config.timeout_s,
      requestId: ctx.requestId
    }).pipe(Effect.flatMap((reply) => guardVerdict(id, config, reply)))
  return { ...id, cacheable: true, rule }
}

export const guardPlugin: JudgeKindPlugin<Upstreams> = Effect.map(Upstreams, (upstreams): JudgeKind => ({
  kind: "guard",
  make: (name, spec, defaults) => Effect.map(decodeGuardConfig(name, spec, defaults), (config) => makeGuardJudge(upstreams, name, config))
}))
