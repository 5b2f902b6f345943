import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { JudgeSpec } from "../../src/config/settings.js"
import type { ToolCallView } from "../../src/domain/tool-call.js"
import { type UpstreamError, UpstreamTimeout } from "../../layers/Upstreams.js"
import { guardPlugin } from "../../judges/guard.js"
import type { JudgeContext } from "../../judges/Judge.js"
import { stubUpstreams } from "../support/upstreams-stub.js"


const chatReply = (content: string) => Effect.succeed({ choices: [{ message: { content } }], usage: { completion_tokens: 3 } })

const build = (spec: Omit<JudgeSpec, "kind">, reply: Effect.Effect<Record<string, unknown>, UpstreamError> = chatReply("safe")) => {
  const up = stubUpstreams(reply)
  const judge = Effect.flatMap(guardPlugin, (k) => k.make("lg", { kind: "guard", ...spec }, { timeout_s: 30, judge: () => undefined })).pipe(Effect.provide(up.layer))
  return { sent: up.sent, judge }
}

const LLAMA = { model: "llama-guard", unsafe_pattern: "^\\s*unsafe", category_pattern: "S\\d+" }
const GRANITE = {
  model: "granite-guardian",
  unsafe_pattern: "(^\\s*yes\\b|<score>\\s*yes)",
  chat_template_kwargs: { guardian_config: { risk_name: "harm" } }
}

const call: ToolCallView = { name: "delete_file", description: "Delete a file", parameters: null, arguments: { path: "/" } }
const ctx: JudgeContext = {
  requestId: "req-9",
  runId: null,
  episodeId: null,
  sessionId: null,
  principal: null,
  agentModel: "agent",
  headers: {}
}

describe("guard judge: decisions (reference §4.4)", () => {
  it.effect("Llama Guard `unsafe\\nS14` → deny S14", () =>
    Effect.gen(function* () {
      const j = yield* build(LLAMA, chatReply("unsafe\nS14")).judge
      expect(j).toMatchObject({ judge: "lg", kind: "guard", model: "llama-guard", cacheable: true })
      expect(j.version).toMatch(/^guard:[0-9a-f]{16}$/)
      const v = yield* j.rule(call, ctx)
      expect(v).toMatchObject({
        status: "ok",
        decision: "deny",
        category: "S14",
        reason: "unsafe\nS14",
        raw: "unsafe\nS14",
        temperature: 0,
        usage: { completion_tokens: 3 },
        version: j.version
      })
    })
  )

  it.effect("`safe` → allow, category none", () =>
    Effect.gen(function* () {
      const v = yield* (yield* build(LLAMA, chatReply("safe")).judge).rule(call, ctx)
      expect(v).toMatchObject({ decision: "allow", category: "none", reason: "safe" })
    })
  )

  it.effect("Granite `Yes` → deny (case-insensitive), category other without category_pattern; `No` → allow", () =>
    Effect.gen(function* () {
      expect(yield* (yield* build(GRANITE, chatReply("Yes")).judge).rule(call, ctx)).toMatchObject({ decision: "deny", category: "other" })
      expect(yield* (yield* build(GRANITE, chatReply("<score> YES </score>")).judge).rule(call, ctx)).toMatchObject({ decision: "deny" })
      expect(yield* (yield* build(GRANITE, chatReply("No")).judge).rule(call, ctx)).toMatchObject({ decision: "allow" })
    })
  )

  it.effect("`^` anchors at the start of the reply only; think blocks are removed first", () =>
    Effect.gen(function* () {
      expect(yield* (yield* build(LLAMA, chatReply("safe\nunsafe")).judge).rule(call, ctx)).toMatchObject({ decision: "allow" })
      expect(yield* (yield* build(LLAMA, chatReply("<think>safe?</think>\nunsafe\nS1")).judge).rule(call, ctx)).toMatchObject({
        decision: "deny",
        category: "S1",
        raw: "unsafe\nS1"
      })
    })
  )

  it.effect("category_pattern is case-sensitive", () =>
    Effect.gen(function* () {
      expect(yield* (yield* build(LLAMA, chatReply("unsafe\ns14")).judge).rule(call, ctx)).toMatchObject({ decision: "deny", category: "other" })
    })
  )

  it.effect("empty output → output-invalid; timeout → timeout", () =>
    Effect.gen(function* () {
      const e = yield* Effect.flip((yield* build(LLAMA, chatReply("<think>…</think>  ")).judge).rule(call, ctx))
      expect(e).toMatchObject({ _tag: "JudgeError", judge: "lg", reason: "output-invalid", message: "empty guard output", raw: "<think>…</think>  " })
      const slow = yield* build(LLAMA, Effect.fail(new UpstreamTimeout({ upstream: "vllm", timeout_s: 30 }))).judge
      expect(yield* Effect.flip(slow.rule(call, ctx))).toMatchObject({ reason: "timeout" })
    })
  )
})

describe("guard judge: request", () => {
  it.effect("renders the call as an assistant turn, temperature 0, max_tokens, chat_template_kwargs over extra_body (which cannot replace them)", () =>
    Effect.gen(function* () {
      const { sent, judge } = build(
        { ...GRANITE, max_tokens: 5, extra_body: { chat_template_kwargs: { x: 1 }, top_k: 1, temperature: 0.7, max_tokens: 500, messages: [] } },
        chatReply("No")
      )
      yield* (yield* judge).rule(call, ctx)
      expect(sent[0]).toEqual({
        model: "granite-guardian",
        opts: { timeout_s: 30, requestId: "req-9" },
        payload: {
          messages: [
            { role: "user", content: "Please complete my task using the tools available to you." },
            { role: "assistant", content: 'I am calling the tool `delete_file` (tool description: Delete a file) with arguments: {"path":"/"}' }
          ],
          temperature: 0,
          max_tokens: 5,
          top_k: 1,
          chat_template_kwargs: { guardian_config: { risk_name: "harm" } }
        }
      })
    })
  )

  it.effect("defaults: max_tokens 20, no chat_template_kwargs, description `none`", () =>
    Effect.gen(function* () {
      const { sent, judge } = build(LLAMA)
      yield* (yield* judge).rule({ ...call, description: "" }, ctx)
      const payload = sent[0]!.payload
      expect(payload.max_tokens).toBe(20)
      expect(payload).not.toHaveProperty("chat_template_kwargs")
      expect((payload.messages as ReadonlyArray<{ content: string }>)[1]!.content).toContain("(tool description: none)")
    })
  )

  it.effect("version depends on the patterns", () =>
    Effect.gen(function* () {
      const a = yield* build(LLAMA).judge
      const b = yield* build({ ...LLAMA, max_tokens: 7 }).judge
      const c = yield* build({ ...LLAMA, category_pattern: "S\\d\\d?" }).judge
      expect(a.version).toBe(b.version)
      expect(a.version).not.toBe(c.version)
    })
  )
})

describe("guard judge: config", () => {
  const configError = (spec: Omit<JudgeSpec, "kind">) => Effect.flip(build(spec).judge)

  it.effect("invalid regexes name their key", () =>
    Effect.gen(function* () {
      const e = yield* configError({ ...LLAMA, unsafe_pattern: "(unclosed" })
      expect(e).toMatchObject({ _tag: "JudgeConfigError", judge: "lg", path: "unsafe_pattern" })
      expect(e.reason).toContain("invalid regular expression")
      expect(yield* configError({ ...LLAMA, category_pattern: "[" })).toMatchObject({ path: "category_pattern" })
    })
  )

  it.effect("model and unsafe_pattern are required; unknown keys and bad objects are rejected", () =>
    Effect.gen(function* () {
      expect(yield* configError({ unsafe_pattern: "x" })).toMatchObject({ path: "model", reason: "is required" })
      expect(yield* configError({ model: "m" })).toMatchObject({ path: "unsafe_pattern", reason: "is required" })
      expect(yield* configError({ ...LLAMA, prompt: "call_only_v1" })).toMatchObject({ path: "prompt" })
      expect(yield* configError({ ...LLAMA, chat_template_kwargs: "x" })).toMatchObject({ path: "chat_template_kwargs" })
    })
  )
})
