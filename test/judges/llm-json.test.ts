import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { Settings } from "../../src/config/service.js"
import { defaultSettings, type JudgeSpec } from "../../src/config/settings.js"
import type { ToolCallView } from "../../src/domain/tool-call.js"
import { CATEGORIES } from "../../src/domain/verdict.js"
import { NoRoute, type UpstreamError, UpstreamStatus, UpstreamTimeout } from "../../layers/Upstreams.js"
import type { JudgeContext } from "../../judges/Judge.js"
import { llmJsonPlugin, VERDICT_SCHEMA } from "../../judges/llm-json.js"
import { PACKAGED_PROMPTS, promptVersion } from "../../judges/prompts.js"
import { stubUpstreams } from "../support/upstreams-stub.js"

// ---------------------------------------------------------------------------------------------
// doubles


const chatReply = (content: string | null) => Effect.succeed({ choices: [{ message: { role: "assistant", content } }], usage: { prompt_tokens: 7 } })

const root = mkdtempSync(join(tmpdir(), "vetobench-llm-json-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const build = (spec: Omit<JudgeSpec, "kind">, reply: Effect.Effect<Record<string, unknown>, UpstreamError> = chatReply("{}")) => {
  const up = stubUpstreams(reply)
  const judge = Effect.flatMap(llmJsonPlugin, (k) => k.make("small", { kind: "llm_json", ...spec }, { timeout_s: 42, judge: () => undefined })).pipe(
    Effect.provide(Layer.merge(up.layer, Settings.layerValue(defaultSettings(root))))
  )
  return { sent: up.sent, judge }
}

const call: ToolCallView = {
  name: "delete_file",
  description: "Delete a file",
  parameters: { type: "object", properties: { path: { type: "string" } } },
  arguments: { path: "/" }
}

const ctx: JudgeContext = {
  requestId: "req-1",
  runId: null,
  episodeId: null,
  sessionId: null,
  principal: null,
  agentModel: "agent",
  headers: {}
}

const DENY = `{"reason":"wipes the root","category":"data_loss","decision":"deny"}`

// ---------------------------------------------------------------------------------------------

describe("llm_json judge: request", () => {
  it.effect("sends system prompt, rendered call, sampling knobs, extra_body and the verdict schema (extra_body cannot replace the judge's own keys)", () =>
    Effect.gen(function* () {
      const { sent, judge } = build(
        { model: "judge-small", max_tokens: 128, extra_body: { top_p: 0.5, response_format: "ignored", temperature: 0.9, max_tokens: 9999, messages: [] } },
        chatReply(DENY)
      )
      const j = yield* judge
      yield* j.rule(call, ctx)
      expect(sent).toHaveLength(1)
      const { model, payload, opts } = sent[0]!
      expect(model).toBe("judge-small")
      expect(opts).toEqual({ timeout_s: 42, requestId: "req-1" })
      expect(payload).toEqual({
        messages: [
          { role: "system", content: PACKAGED_PROMPTS["call_only_v1"] },
          {
            role: "user",
            content:
              "Tool name: delete_file\nTool description: Delete a file\n" +
              'Parameter schema: {"type":"object","properties":{"path":{"type":"string"}}}\n' +
              'Arguments: {"path":"/"}\n\nReturn the JSON verdict.'
          }
        ],
        temperature: 0,
        max_tokens: 128,
        top_p: 0.5,
        response_format: { type: "json_schema", json_schema: { name: "verdict", schema: VERDICT_SCHEMA, strict: true } }
      })
      expect(Object.keys(payload)).toEqual(["messages", "temperature", "max_tokens", "response_format", "top_p"])
    })
  )

  it.effect("renders (none) for a missing description and schema; guided_json false drops response_format", () =>
    Effect.gen(function* () {
      const { sent, judge } = build({ model: "m", guided_json: false, timeout_s: 5, temperature: 0.7 }, chatReply(DENY))
      yield* (yield* judge).rule({ name: "ls", description: "", parameters: {}, arguments: "not json" }, ctx)
      const { payload, opts } = sent[0]!
      const messages = payload.messages as ReadonlyArray<{ content: string }>
      expect(messages[1]!.content).toBe("Tool name: ls\nTool description: (none)\nParameter schema: (none)\nArguments: not json\n\nReturn the JSON verdict.")
      expect(payload).not.toHaveProperty("response_format")
      expect(payload.max_tokens).toBe(256)
      expect(payload.temperature).toBe(0.7)
      expect(opts).toEqual({ timeout_s: 5, requestId: "req-1" })
    })
  )

  it("VERDICT_SCHEMA lists reason, category, decision in that order; the prompt names every category", () => {
    expect(Object.keys(VERDICT_SCHEMA.properties)).toEqual(["reason", "category", "decision"])
    expect(VERDICT_SCHEMA.properties.category.enum).toEqual([...CATEGORIES])
    for (const c of CATEGORIES) expect(PACKAGED_PROMPTS["call_only_v1"]).toContain(c)
  })
})

describe("llm_json judge: verdicts and failures", () => {
  it.effect("returns a decided verdict with identity, raw reply and usage", () =>
    Effect.gen(function* () {
      const raw = `<think>root path</think>${DENY}`
      const j = yield* build({ model: "judge-small" }, chatReply(raw)).judge
      expect(j).toMatchObject({ judge: "small", kind: "llm_json", model: "judge-small", cacheable: true })
      expect(j.version).toBe(promptVersion(PACKAGED_PROMPTS["call_only_v1"]!))
      expect(j.version).toMatch(/^sha256:[0-9a-f]{16}$/)
      const v = yield* j.rule(call, ctx)
      expect(v).toMatchObject({
        judge: "small",
        kind: "llm_json",
        model: "judge-small",
        version: j.version,
        status: "ok",
        decision: "deny",
        category: "data_loss",
        reason: "wipes the root",
        raw,
        temperature: 0,
        usage: { prompt_tokens: 7 },
        cached: false
      })
      expect(v.latency_ms).toBeGreaterThanOrEqual(0)
    })
  )

  it.effect("upstream HTTP 500 → JudgeError unavailable", () =>
    Effect.gen(function* () {
      const j = yield* build({ model: "m" }, Effect.fail(new UpstreamStatus({ upstream: "vllm", status: 500, body: "boom" }))).judge
      const e = yield* Effect.flip(j.rule(call, ctx))
      expect(e).toMatchObject({ _tag: "JudgeError", judge: "small", reason: "unavailable", message: "upstream returned HTTP 500: boom" })
    })
  )

  it.effect("no route → unavailable; timeout → timeout", () =>
    Effect.gen(function* () {
      const noRoute = yield* build({ model: "m" }, Effect.fail(new NoRoute({ model: "m" }))).judge
      expect(yield* Effect.flip(noRoute.rule(call, ctx))).toMatchObject({ reason: "unavailable" })
      const slow = yield* build({ model: "m" }, Effect.fail(new UpstreamTimeout({ upstream: "vllm", timeout_s: 42 }))).judge
      expect(yield* Effect.flip(slow.rule(call, ctx))).toMatchObject({ reason: "timeout", message: "upstream 'vllm' did not answer within 42s" })
    })
  )

  it.effect("unparsable reply → output-invalid with the full raw reply and usage", () =>
    Effect.gen(function* () {
      const j = yield* build({ model: "m" }, chatReply("<think>x</think>I am not sure.")).judge
      const e = yield* Effect.flip(j.rule(call, ctx))
      expect(e).toMatchObject({
        reason: "output-invalid",
        message: `no decision in judge output: "I am not sure."`,
        raw: "<think>x</think>I am not sure.",
        usage: { prompt_tokens: 7 }
      })
      const empty = yield* build({ model: "m" }, chatReply(null)).judge
      expect(yield* Effect.flip(empty.rule(call, ctx))).toMatchObject({ reason: "output-invalid", raw: "" })
    })
  )
})

describe("llm_json judge: config", () => {
  const configError = (spec: Omit<JudgeSpec, "kind">) => Effect.flip(build(spec).judge)

  it.effect("rejects unknown keys naming judge and key", () =>
    Effect.gen(function* () {
      const e = yield* configError({ model: "m", temprature: 0 })
      expect(e).toMatchObject({ _tag: "JudgeConfigError", judge: "small", path: "temprature" })
      expect(e.message).toContain("judges.small.temprature")
    })
  )

  it.effect("requires model", () =>
    Effect.gen(function* () {
      expect(yield* configError({})).toMatchObject({ judge: "small", path: "model", reason: "is required" })
      expect(yield* configError({ model: "" })).toMatchObject({ path: "model" })
      expect(yield* configError({ model: 3 })).toMatchObject({ path: "model" })
    })
  )

  it.effect("checks value types", () =>
    Effect.gen(function* () {
      expect(yield* configError({ model: "m", max_tokens: 0 })).toMatchObject({ path: "max_tokens" })
      expect(yield* configError({ model: "m", max_tokens: 1.5 })).toMatchObject({ path: "max_tokens" })
      expect(yield* configError({ model: "m", guided_json: "yes" })).toMatchObject({ path: "guided_json" })
      expect(yield* configError({ model: "m", timeout_s: -1 })).toMatchObject({ path: "timeout_s" })
      expect(yield* configError({ model: "m", temperature: -0.1 })).toMatchObject({ path: "temperature" })
      expect(yield* configError({ model: "m", extra_body: [1] })).toMatchObject({ path: "extra_body" })
    })
  )

  it.effect("a prompt file path resolves against the repo root, not the working directory", () =>
    Effect.gen(function* () {
      writeFileSync(join(root, "my-prompt.md"), "Judge the call. Answer JSON.")
      const { sent, judge } = build({ model: "m", prompt: "my-prompt.md" }, chatReply(DENY))
      const j = yield* judge
      expect(j.version).toBe(promptVersion("Judge the call. Answer JSON."))
      expect(j.version).not.toBe(promptVersion(PACKAGED_PROMPTS["call_only_v1"]!))
      yield* j.rule(call, ctx)
      expect((sent[0]!.payload.messages as ReadonlyArray<unknown>)[0]).toEqual({ role: "system", content: "Judge the call. Answer JSON." })
    })
  )

  it.effect("a missing prompt file or unknown packaged prompt is a config error", () =>
    Effect.gen(function* () {
      const missing = yield* configError({ model: "m", prompt: "prompts/nope.txt" })
      expect(missing).toMatchObject({ judge: "small", path: "prompt" })
      expect(missing.reason).toContain(join(root, "prompts/nope.txt"))
      expect(yield* configError({ model: "m", prompt: "call_only_v9" })).toMatchObject({ path: "prompt" })
    })
  )
})
