/**
 * The Agent-SafetyBench runner over each wire format (`agent_safetybench.wire`): the same cases of
 * the fixture checkout, the same scripted fake vLLM and a real veto-proxy, run once as chat
 * completions, once over the Responses API and once over the Messages API, in the baseline,
 * shadow and enforce arms (judge `deny-all`, so every call of the judged arms is denied and the
 * enforce arm's answers carry the refusal note). The results and the audit records must be the
 * same; only the records' `wire` (and the call ids the upstream gave) differ.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { PythonBridge } from "../../layers/PythonBridge.js"
import { CaseError, chatBody, classify, makeProxyClient } from "../../src/adapters/agent-safetybench/client.js"
import type { AsbenchRecord } from "../../src/adapters/agent-safetybench/episode.js"
import { runAsbench } from "../../src/adapters/agent-safetybench/run.js"
import { agentWireFormat } from "../../src/adapters/agent-safetybench/wire-formats.js"
import { messagesWire } from "../../src/adapters/agent-safetybench/wire-messages.js"
import { responsesWire } from "../../src/adapters/agent-safetybench/wire-responses.js"
import { asbenchRunDir, runIdFor } from "../../src/run-layout/paths.js"
import { AGENT_WIRES, type AgentWire, type Experiment, loadExperiment } from "../../src/config/experiment.js"
import { Settings } from "../../src/config/service.js"
import type { CallRecord } from "../../src/domain/audit-record.js"
import { isObject } from "../../src/domain/is-object.js"
import { parsePythonJson, pyJsonDumps, PyFloat } from "../../src/domain/python-json.js"
import { contentText as fakeContentText } from "../../layers/fake-vllm/behaviour.js"
import { chatBodyOfMessages } from "../../layers/fake-vllm/messages-wire.js"
import { chatBodyOfResponses } from "../../layers/fake-vllm/responses-wire.js"
import { Progress } from "../../src/run-layout/progress.js"
import { Harness, harnessLayer, type HarnessShape } from "../support/harness.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const FIXTURE = path.join(ROOT, "examples/agent-safetybench-mini")
const MODEL = "qwen3.8-27b"
/** no tools (0); tools, first call (2); a dialog that already holds a call and its result (4); a tool that raises (5); float parameters (8) */
const IDS = [0, 2, 4, 5, 8]
const ROUTE_OF: Readonly<Record<AgentWire, string>> = { chat: "/v1/chat/completions", responses: "/v1/responses", messages: "/v1/messages" }

const harness = harnessLayer({
  upstream: { models: [] },
  settings: () => ({ paths: { asbench_dir: FIXTURE } })
})
const bridge = PythonBridge.layer({ asbenchDir: FIXTURE, workers: 4 }).pipe(Layer.orDie)

const experiment = (h: HarnessShape, wire: AgentWire) =>
  Effect.gen(function*() {
    const name = `wire-${wire}`
    const dir = fs.mkdtempSync(path.join(h.settings.root, `${name}-`))
    fs.writeFileSync(path.join(dir, "split.json"), JSON.stringify({ seed: 0, dev: [], test: IDS, note: "" }))
    const lines = [
      `name: ${name}`,
      `run_dir: ${path.join(dir, "run")}`,
      `proxy_url: ${h.url}`,
      `models: [${MODEL}]`,
      "judges: [deny-all]",
      "arms: [baseline, shadow, enforce]",
      "agent_safetybench:",
      "  workers: 3",
      `  split: ${path.join(dir, "split.json")}`,
      `  wire: ${wire}`
    ]
    const file = path.join(dir, "exp.yaml")
    fs.writeFileSync(file, lines.join("\n"))
    return yield* loadExperiment(file, h.settings)
  }).pipe(Effect.orDie)

interface WireRun {
  readonly exp: Experiment
  readonly summaries: ReadonlyArray<{ readonly variant: string; readonly ran: unknown }>
  /** requests the fake received, by path, during this run */
  readonly paths: ReadonlyMap<string, number>
  /** what reached the model in each of them, read back as a chat conversation (see `conversations`) */
  readonly conversations: ReadonlyArray<string>
}

const runAll = (h: HarnessShape, wire: AgentWire): Effect.Effect<WireRun, never, PythonBridge> =>
  Effect.gen(function*() {
    const exp = yield* experiment(h, wire)
    expect(exp.agent_safetybench.wire).toBe(wire)
    const before = h.fake.requests.length
    const summaries = []
    for (const v of exp.variants) {
      const s = yield* runAsbench(exp, MODEL, v, { client: { baseDelayMs: 1 } }).pipe(
        Effect.provide(Layer.mergeAll(Progress.Test([]), Settings.layerValue(h.settings))),
        Effect.orDie
      )
      summaries.push({ variant: v.name, ran: s.ran })
    }
    const paths = new Map<string, number>()
    const sent = h.fake.requests.slice(before)
    for (const r of sent) paths.set(r.path, (paths.get(r.path) ?? 0) + 1)
    return { exp, summaries, paths, conversations: conversations(wire, sent.map((r) => r.body)) }
  })

/**
 * Each request as the fake's behaviour read it (its own reading of the Responses and Messages
 * requests), reduced to what the model sees: each message's role, text and calls (name, arguments
 * as a value), and the tools' names, descriptions and schemas; sorted, since episodes interleave.
 */
const conversations = (wire: AgentWire, bodies: ReadonlyArray<unknown>): ReadonlyArray<string> =>
  bodies
    .map((raw) => {
      const body = isObject(raw) ? raw : {}
      const chat = wire === "responses" ? chatBodyOfResponses(body) : wire === "messages" ? chatBodyOfMessages(body) : body
      const messages = (Array.isArray(chat.messages) ? chat.messages.filter(isObject) : []).map((m) => ({
        role: m.role,
        text: fakeContentText(m.content),
        calls: (Array.isArray(m.tool_calls) ? m.tool_calls.filter(isObject) : []).map((c) =>
          isObject(c.function) ? [c.function.name, JSON.parse(String(c.function.arguments || "{}")) as unknown] : []
        )
      }))
      const tools = (Array.isArray(chat.tools) ? chat.tools.filter(isObject) : []).map((t) =>
        isObject(t.function) ? [t.function.name, t.function.description, t.function.parameters] : []
      )
      return JSON.stringify({ messages, tools })
    })
    .sort()

/** Call ids come from the upstream (`call_0` on two routes, `toolu_0` on the Messages route): numbered by first use instead. */
const withIdsNumbered = (records: ReadonlyArray<AsbenchRecord>): unknown => {
  const text = JSON.stringify(records)
  const ids = new Map<string, string>()
  return JSON.parse(text, (key, value: unknown) => {
    if ((key === "id" || key === "tool_call_id") && typeof value === "string") {
      if (!ids.has(value)) ids.set(value, `id-${ids.size}`)
      return ids.get(value)
    }
    return value
  })
}

const genRes = (run: WireRun): Array<Array<AsbenchRecord>> =>
  run.exp.variants.map((v) => parsePythonJson(fs.readFileSync(path.join(asbenchRunDir(run.exp, MODEL, v), "gen_res.json"), "utf8")) as Array<AsbenchRecord>)

/**
 * The records without the run id (the experiment name differs per format) and without `usage`: the
 * fake counts prompt tokens from its own reading of each format's request, and the fixture's
 * `attach_file` spec carries a stray top-level `required` that only the chat tool shape has room for.
 */
const results = (run: WireRun): unknown =>
  genRes(run).map((records) =>
    withIdsNumbered(
      records.map((r) => {
        const { usage, ...info } = r.vetobench
        expect(usage?.completion_tokens).toBeGreaterThan(0)
        return { ...r, vetobench: { ...info, run_id: "-" } }
      })
    )
  )

/** What the audit log holds about each call: everything that is not per-request or per-format. */
const calls = (h: HarnessShape, run: WireRun) =>
  run.exp.variants.map((v) =>
    h
      .records(runIdFor(run.exp, "asbench", MODEL, v))
      .map((r: CallRecord) => ({
        episode: r.episode_id,
        arm: r.arm,
        judge: r.judge,
        stream: r.stream,
        attempt: r.attempt,
        choice: r.choice_index,
        call: r.call_index,
        tool: r.tool,
        verdict: r.verdict === null ? null : { decision: r.verdict.status === "ok" ? r.verdict.decision : r.verdict.status, reason: r.verdict.reason },
        layers: r.layers.length,
        effective: r.effective_decision,
        blocked: r.blocked,
        fail_policy: r.fail_policy,
        approval: r.approval,
        agent_model: r.agent_model
      }))
      .sort((a, b) => String(a.episode).localeCompare(String(b.episode)) || a.call - b.call)
  )

layer(Layer.mergeAll(harness, bridge), { excludeTestServices: true, timeout: 120_000 })("Agent-SafetyBench over every wire format", (it) => {
  it.effect("the same cases give the same results and the same audit records, whatever the format", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const runs = new Map<AgentWire, WireRun>()
      for (const wire of AGENT_WIRES) runs.set(wire, yield* runAll(h, wire))
      const chat = runs.get("chat")!

      // the chat run itself: every case finishes; the enforce arm's calls are blocked and its answers are the notes
      expect(chat.summaries).toEqual([
        { variant: "baseline", ran: { ok: 5, exceeded: 0, error: 0 } },
        { variant: "shadow-deny-all", ran: { ok: 5, exceeded: 0, error: 0 } },
        { variant: "enforce-deny-all", ran: { ok: 5, exceeded: 0, error: 0 } }
      ])
      const enforce = genRes(chat)
      const blockedCases = enforce[2]!.filter((r) => r.vetobench.blocked_calls > 0).map((r) => r.id)
      expect(blockedCases).toEqual([2, 5, 8])
      for (const r of enforce[2]!.filter((x) => blockedCases.includes(x.id))) {
        expect(String(r.output.at(-1)!.content)).toMatch(/^I did not perform this action\. The tool call `\w+` was blocked/)
      }
      const chatCalls = calls(h, chat)
      expect(chatCalls.map((c) => c.length)).toEqual([3, 3, 3])
      expect(chatCalls[2]!.every((c) => c.effective === "deny" && c.blocked)).toBe(true)
      expect(chatCalls[1]!.every((c) => c.effective === "deny" && !c.blocked)).toBe(true)

      for (const wire of ["responses", "messages"] as const) {
        const run = runs.get(wire)!
        // every request of the run went over the format's route (the agent's and nothing else: the judge is static)
        expect([...run.paths.keys()]).toEqual([ROUTE_OF[wire]])
        expect(run.summaries).toEqual(chat.summaries)
        // the model saw the same conversations and tools, step by step
        expect(run.conversations).toEqual(chat.conversations)
        expect(results(run)).toEqual(results(chat))
        expect(calls(h, run)).toEqual(chatCalls)
        for (const v of run.exp.variants) {
          const records = h.records(runIdFor(run.exp, "asbench", MODEL, v))
          expect(records.length).toBeGreaterThan(0)
          expect(records.every((r) => r.wire === wire)).toBe(true)
        }
      }
      for (const v of chat.exp.variants) expect(h.records(runIdFor(chat.exp, "asbench", MODEL, v)).every((r) => r.wire === "chat")).toBe(true)
      expect([...chat.paths.keys()]).toEqual([ROUTE_OF.chat])
    }))
})

describe("the format mappings", () => {
  const dialog = [
    { role: "system", content: "Be safe." },
    { role: "user", content: "Set the nursery to 21." },
    { role: "assistant", content: "On it.", tool_calls: [{ id: "call_a", type: "function", function: { name: "set_temperature", arguments: '{"celsius": 21.0, "room": "Nursery"}' } }] },
    { role: "tool", content: '{"success": true}', tool_call_id: "call_a", name: "set_temperature" },
    { role: "user", content: "Thanks. Now the fan." },
    { role: "assistant", tool_calls: [{ id: "call_b", type: "function", function: { name: "set_fan", arguments: "" } }] },
    { role: "tool", content: '{"success": true}', tool_call_id: "call_b", name: "set_fan" }
  ]
  const tools = [
    { type: "function", function: { name: "set_temperature", description: "Set it.", parameters: { type: "object", properties: { celsius: { type: "number" } } } } },
    { type: "function", function: { name: "set_fan" } }
  ]
  const right = <A>(e: Either.Either<A, string>): A => {
    if (Either.isLeft(e)) throw new Error(`expected a body, got: ${e.left}`)
    return e.right
  }
  const left = (e: Either.Either<unknown, string>): string => {
    if (Either.isRight(e)) throw new Error("expected an error")
    return e.left
  }

  it("responses: the conversation as input items, function tools flat, nothing stored", () => {
    expect(right(responsesWire.request("m@enforce:j", 512, dialog, tools))).toEqual({
      model: "m@enforce:j",
      input: [
        { type: "message", role: "system", content: "Be safe." },
        { type: "message", role: "user", content: "Set the nursery to 21." },
        { type: "message", role: "assistant", content: "On it." },
        { type: "function_call", call_id: "call_a", name: "set_temperature", arguments: '{"celsius": 21.0, "room": "Nursery"}' },
        { type: "function_call_output", call_id: "call_a", output: '{"success": true}' },
        { type: "message", role: "user", content: "Thanks. Now the fan." },
        { type: "function_call", call_id: "call_b", name: "set_fan", arguments: "" },
        { type: "function_call_output", call_id: "call_b", output: '{"success": true}' }
      ],
      tools: [
        { type: "function", name: "set_temperature", description: "Set it.", parameters: { type: "object", properties: { celsius: { type: "number" } } } },
        { type: "function", name: "set_fan" }
      ],
      temperature: 0,
      max_output_tokens: 512,
      store: false
    })
    expect(right(responsesWire.request("m", 8, [{ role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] }], []))).toEqual({
      model: "m",
      input: [{ type: "message", role: "user", content: "ab" }],
      temperature: 0,
      max_output_tokens: 8,
      store: false
    })
  })

  it("responses: output items read back as the chat message, usage as prompt and completion tokens", () => {
    const body = {
      output: [
        { type: "reasoning", summary: [] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Sure." }] },
        { type: "function_call", call_id: "call_7", name: "f", arguments: '{"a": 1.0}' },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "\n\nI did not perform this action." }] }
      ],
      usage: { input_tokens: 11, output_tokens: 4, total_tokens: 15 }
    }
    expect(responsesWire.read(body)).toEqual({
      _tag: "message",
      message: { role: "assistant", content: "Sure.\n\nI did not perform this action.", tool_calls: [{ id: "call_7", type: "function", function: { name: "f", arguments: '{"a": 1.0}' } }] },
      usage: { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 }
    })
    expect(responsesWire.read({ output: [] })).toEqual({ _tag: "message", message: { role: "assistant", content: null }, usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } })
    expect(responsesWire.read({ choices: [] })).toEqual({ _tag: "unreadable", reason: "no output in the answer" })
  })

  it("messages: system apart, tool results in the user turn, neighbours merged, floats kept, schemas filled", () => {
    const body = right(messagesWire.request("m@baseline", 256, dialog, tools))
    expect(body).toEqual({
      model: "m@baseline",
      max_tokens: 256,
      system: "Be safe.",
      messages: [
        { role: "user", content: [{ type: "text", text: "Set the nursery to 21." }] },
        { role: "assistant", content: [{ type: "text", text: "On it." }, { type: "tool_use", id: "call_a", name: "set_temperature", input: { celsius: new PyFloat(21), room: "Nursery" } }] },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "call_a", content: '{"success": true}' },
            { type: "text", text: "Thanks. Now the fan." }
          ]
        },
        { role: "assistant", content: [{ type: "tool_use", id: "call_b", name: "set_fan", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "call_b", content: '{"success": true}' }] }
      ],
      tools: [
        { name: "set_temperature", description: "Set it.", input_schema: { type: "object", properties: { celsius: { type: "number" } } } },
        { name: "set_fan", input_schema: { type: "object", properties: {} } }
      ],
      temperature: 0
    })
    // what goes on the wire: the float as Python writes it
    expect(pyJsonDumps(body)).toContain('"input": {"celsius": 21.0, "room": "Nursery"}')
  })

  it("messages: blocks read back as the chat message, the float arguments as Python writes them", () => {
    const text = '{"content": [{"type": "text", "text": "Sure."}, {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1.0, "b": "\u00e9"}}, {"type": "text", "text": "Note."}], "usage": {"input_tokens": 9, "output_tokens": 2}}'
    expect(messagesWire.read(messagesWire.parse(text))).toEqual({
      _tag: "message",
      message: { role: "assistant", content: "Sure.\n\nNote.", tool_calls: [{ id: "toolu_1", type: "function", function: { name: "f", arguments: '{"a": 1.0, "b": "é"}' } }] },
      usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 }
    })
    expect(messagesWire.read({ type: "error" })).toEqual({ _tag: "unreadable", reason: "no content in the answer" })
  })

  it("a conversation a format cannot carry is an error naming the message", () => {
    const call = (args: string) => [{ role: "assistant", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: args } }] }]
    expect(left(messagesWire.request("m", 8, call("[1, 2]"), []))).toBe("message 0 (assistant), tool call f: its arguments are not a JSON object, which a tool_use block cannot carry")
    expect(left(messagesWire.request("m", 8, call("{"), []))).toMatch(/^message 0 \(assistant\), tool call f: its arguments are not JSON \(/)
    expect(right(responsesWire.request("m", 8, call("{"), []))).toMatchObject({ input: [{ type: "function_call", arguments: "{" }] })
    for (const wire of [responsesWire, messagesWire]) {
      expect(left(wire.request("m", 8, [{ role: "tool", content: "x" }], []))).toBe("message 0 (tool): a tool message without a string tool_call_id")
      expect(left(wire.request("m", 8, [{ role: "user", content: [{ type: "image_url", image_url: {} }] }], []))).toBe(
        "message 0 (user): content[0] is not a text part (only text is carried)"
      )
      expect(left(wire.request("m", 8, [{ role: "assistant", tool_calls: [{ type: "function", function: { name: "f" } }] }], []))).toBe(
        "message 0 (assistant): tool_calls[0] (f) has no string id to answer it by"
      )
      expect(left(wire.request("m", 8, [], [{ type: "function", function: {} }]))).toBe("tools[0] is not a function tool with a name")
      expect(left(wire.request("m", 8, [{ role: "narrator", content: "x" }], []))).toMatch(/^message 0 \(narrator\): a role the/)
    }
  })

  it("the client: answers classified in the format, a conversation it cannot carry is the case's error before any request", () =>
    Effect.runPromise(
      Effect.gen(function*() {
        const answer = '{"content": [{"type": "text", "text": "Done."}], "usage": {"input_tokens": 3, "output_tokens": 1}}'
        expect(classify(200, answer, "2", messagesWire)).toEqual({
          _tag: "ok",
          message: { role: "assistant", content: "Done." },
          blocked: 2,
          usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 }
        })
        expect(classify(200, '{"choices": [{"message": {"content": "x"}}]}', undefined, messagesWire)).toEqual({ _tag: "retry", reason: "no content in the answer", backoff: false })
        expect(classify(200, '{"output": "x"}', undefined, responsesWire)).toEqual({ _tag: "retry", reason: "no output in the answer", backoff: false })
        expect(classify(400, '{"type": "error", "error": {"type": "invalid_request_error", "message": "bad route"}}', undefined, messagesWire)).toEqual({
          _tag: "fatal",
          reason: "veto-proxy answered HTTP 400: bad route"
        })
        // nothing listens on port 1: the error comes from the mapping, not from a request
        const client = yield* makeProxyClient({ proxyUrl: "http://127.0.0.1:1/v1", route: "m@baseline", runId: "r", maxTokens: 8, attempts: 1, wire: messagesWire })
        const error = yield* Effect.flip(client("asbench:1")([{ role: "assistant", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "[1]" } }] }], []))
        expect(error).toBeInstanceOf(CaseError)
        expect(error.message).toBe(
          "the conversation cannot be sent over messages: message 0 (assistant), tool call f: its arguments are not a JSON object, which a tool_use block cannot carry"
        )
      }).pipe(Effect.scoped)
    ))

  it("the formats by name; chat is the benchmark's own request", () => {
    expect(AGENT_WIRES.map((w) => agentWireFormat(w).path)).toEqual(["chat/completions", "responses", "messages"])
    expect(right(agentWireFormat("chat").request("m", 8, [{ role: "user", content: "hi" }], []))).toEqual(chatBody("m", 8, [{ role: "user", content: "hi" }], []))
  })
})
