/**
 * `POST /v1/responses` with the official `openai` client, as an agent framework uses it: in every
 * arm (passthrough, baseline, shadow, enforce with an allowing and a denying judge), buffered,
 * streamed (`responses.create({stream: true})`) and through `responses.stream().finalResponse()`.
 * Allowed calls arrive intact, denied ones are gone and the refusal note is in `output_text`,
 * `x-vetobench-blocked` counts the removed calls, one record per proposed call with `wire:
 * "responses"`; errors come in the OpenAI shape the SDK raises as typed errors.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import type { FunctionTool, Response, ResponseStreamEvent } from "openai/resources/responses/responses"
import { call, Harness, type HarnessShape, harnessLayer } from "../support/harness.js"
import { callsInResponse, callViewsOfResponseStream, outputText, postResponses } from "../support/responses.js"

const TOOLS: Array<FunctionTool> = [
  {
    type: "function",
    name: "delete_file",
    description: "Delete a file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    strict: false
  },
  { type: "function", name: "list_dir", description: "List a directory", parameters: { type: "object", properties: { path: { type: "string" } } }, strict: false }
]

const client = (h: HarnessShape) => new OpenAI({ baseURL: h.url, apiKey: "client-key", maxRetries: 0 })
const request = (model: string) => ({ model, input: "clean up", tools: TOOLS })
const runHeaders = (run: string) => ({ headers: { "x-vetobench-run": run } })

const LIST = call("list_dir", { path: "/tmp" })
const DELETE = call("delete_file", { path: "/" })
const LIST_ARGS = '{"path": "/tmp"}'
const DELETE_ARGS = '{"path": "/"}'

const functionCalls = (r: Response) =>
  r.output.flatMap((i) => (i.type === "function_call" ? [{ call_id: i.call_id, name: i.name, arguments: i.arguments }] : []))

/** the rejection of a promise (fails the test when it resolves) */
const rejection = (p: Promise<unknown>) =>
  Effect.promise(() =>
    p.then(
      (v): unknown => {
        throw new Error(`expected a rejection, got ${JSON.stringify(v)}`)
      },
      (e: unknown) => e
    )
  )

/** Stream through `responses.create({stream: true})`: every event, the response of the last one, and the headers. */
const streamed = (h: HarnessShape, model: string, run: string) =>
  Effect.promise(async () => {
    const { data, response } = await client(h).responses.create({ ...request(model), stream: true }, runHeaders(run)).withResponse()
    const events: Array<ResponseStreamEvent> = []
    for await (const e of data) events.push(e)
    const last = events[events.length - 1]!
    return { events, headers: response.headers, final: last.type === "response.completed" ? last.response : null }
  })

/** what the client finds in a stream must match what it finds in the final response */
const expectConsistent = (events: ReadonlyArray<ResponseStreamEvent>, final: Response) => {
  expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i))
  const added = events.flatMap((e) => (e.type === "response.output_item.added" ? [e.output_index] : []))
  expect(added).toEqual(final.output.map((_, i) => i))
  for (const view of callViewsOfResponseStream(events)) for (const c of view) expect(callsInResponse(final)).toContainEqual(c)
}

describe("the Responses route with the openai SDK", () => {
  layer(harnessLayer(), { excludeTestServices: true })((it) => {
    it.effect("buffered, in every arm: calls intact unless enforce denies them; one record per call", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const c = client(h)
        const arms = [
          ["agent", null, 2],
          ["agent@baseline", "0", 2],
          ["agent@shadow:slm", "0", 2],
          ["agent@enforce:allow-all", "0", 2],
          ["agent@enforce:slm", "1", 1]
        ] as const
        for (const [model, blocked, kept] of arms) {
          h.fake.reset()
          h.fake.knobs.nextCalls = [LIST, DELETE]
          const run = `rsdk-arm-${model.replace(/[@:]/g, "-")}`
          const { data, response } = yield* Effect.promise(() => c.responses.create(request(model), runHeaders(run)).withResponse())
          expect(response.headers.get("x-vetobench-blocked")).toBe(blocked)
          const calls = functionCalls(data)
          expect(calls).toEqual(
            [
              { call_id: "call_0", name: "list_dir", arguments: LIST_ARGS },
              { call_id: "call_1", name: "delete_file", arguments: DELETE_ARGS }
            ].slice(0, kept)
          )
          const records = h.records(run)
          if (model === "agent") {
            expect(records).toEqual([])
            continue
          }
          expect(records.map((r) => [r.tool.name, r.tool_call_id, r.wire, r.stream, r.choice_index])).toEqual([
            ["list_dir", "call_0", "responses", false, 0],
            ["delete_file", "call_1", "responses", false, 0]
          ])
          expect(records.map((r) => r.blocked)).toEqual(model === "agent@enforce:slm" ? [false, true] : [false, false])
          if (model === "agent@baseline") expect(records.map((r) => r.verdict)).toEqual([null, null])
          if (model === "agent@shadow:slm") expect(records.map((r) => r.verdict?.decision)).toEqual(["allow", "deny"])
          if (model === "agent@enforce:slm") {
            // partial_refusal: content — the note is the last output item, and output_text shows it
            expect(data.output_text).toContain("`delete_file` was blocked")
            const note = data.output[data.output.length - 1]!
            expect(note).toMatchObject({ type: "message", role: "assistant", status: "completed" })
          } else expect(data.output_text).toBe("")
        }
      }))

    it.effect("streamed, in every arm: the events a client reads agree with the final response", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const arms = [
          ["agent", 2],
          ["agent@baseline", 2],
          ["agent@shadow:slm", 2],
          ["agent@enforce:allow-all", 2],
          ["agent@enforce:slm", 1]
        ] as const
        for (const [model, kept] of arms) {
          h.fake.reset()
          h.fake.knobs.content = "Let me look."
          h.fake.knobs.nextCalls = [LIST, DELETE]
          const run = `rsdk-sse-${model.replace(/[@:]/g, "-")}`
          const { events, headers, final } = yield* streamed(h, model, run)
          expect(headers.get("content-type")).toMatch(/^text\/event-stream/)
          expect(final).not.toBeNull()
          expectConsistent(events, final!)
          expect(functionCalls(final!).map((c) => [c.name, c.arguments])).toEqual(
            [
              ["list_dir", LIST_ARGS],
              ["delete_file", DELETE_ARGS]
            ].slice(0, kept)
          )
          const text = outputText(final)
          if (model === "agent@enforce:slm") expect(text).toMatch(/^Let me look\.\n\nI did not perform this action\. The tool call `delete_file` was blocked/)
          else expect(text).toBe("Let me look.")
          const records = h.records(run)
          if (model === "agent") expect(records).toEqual([])
          else expect(records.map((r) => [r.tool.name, r.wire, r.stream, r.blocked])).toEqual([
            ["list_dir", "responses", true, false],
            ["delete_file", "responses", true, model === "agent@enforce:slm"]
          ])
        }
      }))

    it.effect("responses.stream().finalResponse(): every call denied, the note is the answer", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [DELETE]
        const { final, deltas } = yield* Effect.promise(async () => {
          const runner = client(h).responses.stream(request("agent@enforce:slm"), runHeaders("rsdk-helper"))
          const deltas: Array<string> = []
          runner.on("response.output_text.delta", (e) => deltas.push(e.delta))
          return { final: await runner.finalResponse(), deltas }
        })
        expect(functionCalls(final)).toEqual([])
        // finalResponse() sets no output_text unless a text format is parsed (SDK 6.30): the item carries it
        expect(outputText(final)).toMatch(/^I did not perform this action\. The tool call `delete_file` was blocked by the tool-call safety judge/)
        expect(deltas.join("")).toBe(outputText(final))
        expect(final.status).toBe("completed")
        expect(h.records("rsdk-helper").map((r) => [r.tool.name, r.blocked, r.stream])).toEqual([["delete_file", true, true]])
      }))

    it.effect("responses.stream().finalResponse(): the allowed call arrives intact, with the SDK's snapshot", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [LIST, call("list_dir", { path: "/var" })]
        const { final, snapshots } = yield* Effect.promise(async () => {
          const runner = client(h).responses.stream(request("agent@enforce:slm"), runHeaders("rsdk-helper-ok"))
          const snapshots: Array<string> = []
          runner.on("response.function_call_arguments.delta", (e) => snapshots.push(e.snapshot))
          return { final: await runner.finalResponse(), snapshots }
        })
        expect(functionCalls(final)).toEqual([
          { call_id: "call_0", name: "list_dir", arguments: LIST_ARGS },
          { call_id: "call_1", name: "list_dir", arguments: '{"path": "/var"}' }
        ])
        // each call arrives whole: one arguments delta, whose snapshot is the arguments
        expect(snapshots).toEqual([LIST_ARGS, '{"path": "/var"}'])
        expect(outputText(final)).toBe("")
      }))

    it.effect("a bad body is a 400 the SDK raises as BadRequestError; a bad route and an unknown model too", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        const c = client(h)
        const noInput = yield* rejection(c.responses.create({ model: "agent@enforce:slm", input: 7 } as unknown as { model: string; input: string }, runHeaders("rsdk-bad")))
        expect(noInput).toBeInstanceOf(OpenAI.BadRequestError)
        const e1 = noInput as InstanceType<typeof OpenAI.BadRequestError>
        expect(e1.status).toBe(400)
        expect(e1.code).toBe("invalid_request")
        expect(e1.message).toContain("`input` must be a string or an array of input items")
        const badTools = yield* postResponses(h, { model: "agent@enforce:slm", tools: [1] })
        expect(badTools.status).toBe(400)
        expect(badTools.json).toMatchObject({ error: { code: "invalid_request", message: "`tools[0]` must be an object", type: "vetobench_error" } })
        const badItem = yield* postResponses(h, { model: "agent", input: ["hi"] })
        expect(badItem.json).toMatchObject({ error: { code: "invalid_request", message: "`input[0]` must be an object" } })
        const route = yield* rejection(c.responses.create(request("agent@warp:slm"), runHeaders("rsdk-bad")))
        expect(route).toBeInstanceOf(OpenAI.BadRequestError)
        expect((route as InstanceType<typeof OpenAI.BadRequestError>).code).toBe("invalid_route")
        const unknown = yield* rejection(c.responses.create(request("nobody-serves-this"), runHeaders("rsdk-bad")))
        expect(unknown).toBeInstanceOf(OpenAI.NotFoundError)
        expect((unknown as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("no_upstream")
        const method = yield* Effect.promise(() => fetch(`${h.url}/responses`).then(async (r) => ({ status: r.status, body: await r.json() })))
        expect(method).toMatchObject({ status: 405, body: { error: { code: "method_not_allowed" } } })
        expect(h.fake.requests).toEqual([])
        expect(h.records("rsdk-bad")).toEqual([])
      }))

    it.effect("an upstream error is relayed with its status (APIError), nothing recorded", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.failStatus = 500
        for (const stream of [false, true]) {
          const e = yield* rejection(client(h).responses.create({ ...request("agent@enforce:slm"), stream }, runHeaders("rsdk-upstream")))
          expect(e).toBeInstanceOf(OpenAI.InternalServerError)
          expect((e as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(500)
        }
        expect(h.records("rsdk-upstream")).toEqual([])
      }))

    it.effect("the stateful fields and instructions reach the upstream untouched; tools and model defaults normalised", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = []
        const res = yield* postResponses(
          h,
          {
            model: "agent@shadow:slm",
            instructions: "Be brief.",
            previous_response_id: "resp_earlier",
            store: true,
            include: ["reasoning.encrypted_content"],
            input: [{ role: "user", content: [{ type: "input_text", text: "clean up" }] }]
          },
          { run: "rsdk-state" }
        )
        expect(res.status).toBe(200)
        expect(res.json).toMatchObject({ object: "response", previous_response_id: "resp_earlier", instructions: "Be brief." })
        const sent = h.fake.requests[0]!.body as Record<string, unknown>
        expect(sent).toMatchObject({
          model: "agent",
          instructions: "Be brief.",
          previous_response_id: "resp_earlier",
          store: true,
          include: ["reasoning.encrypted_content"],
          input: [{ role: "user", content: [{ type: "input_text", text: "clean up" }] }],
          chat_template_kwargs: { enable_thinking: false }
        })
        // list_dir was sent without parameters: the judges and the upstream get an empty object schema
        expect((sent.tools as Array<Record<string, unknown>>)[1]).toEqual({
          type: "function",
          name: "list_dir",
          description: "List a directory",
          parameters: { type: "object", properties: {} },
          strict: false
        })
      }))

    it.effect("the judge reads the tool's description and schema from the Responses tool", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        // arguments no earlier test sent: the verdict is not in the judge cache
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/judged" })]
        yield* postResponses(h, { model: "agent@shadow:slm" }, { run: "rsdk-judge" })
        const judge = h.fake.requests.find((q) => (q.body as { model?: string }).model === "judge")!
        const prompt = JSON.stringify(judge.body)
        expect(prompt).toContain("Delete a file")
        expect(prompt).toContain('\\"required\\":[\\"path\\"]')
        const [rec] = h.records("rsdk-judge")
        expect(rec!.tool).toMatchObject({ name: "delete_file", description: "Delete a file", arguments: { path: "/judged" } })
      }))
  })
})

describe("the Responses route with partial_refusal: drop", () => {
  layer(harnessLayer({ settings: () => ({ proxy: { partial_refusal: "drop" } }) }), { excludeTestServices: true })((it) => {
    it.effect("a partial denial removes the call and adds no note; a full one still does", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        for (const stream of [false, true]) {
          h.fake.reset()
          h.fake.knobs.nextCalls = [LIST, DELETE]
          const partial = stream
            ? (yield* streamed(h, "agent@enforce:slm", "rsdk-drop")).final!
            : yield* Effect.promise(() => client(h).responses.create(request("agent@enforce:slm"), runHeaders("rsdk-drop")))
          expect(functionCalls(partial).map((c) => c.name)).toEqual(["list_dir"])
          expect(partial.output.map((i) => i.type)).toEqual(["function_call"])
          h.fake.knobs.nextCalls = [DELETE]
          const full = stream
            ? (yield* streamed(h, "agent@enforce:slm", "rsdk-drop")).final!
            : yield* Effect.promise(() => client(h).responses.create(request("agent@enforce:slm"), runHeaders("rsdk-drop")))
          expect(functionCalls(full)).toEqual([])
          expect(outputText(full)).toContain("`delete_file` was blocked")
        }
      }))
  })
})

describe("the fake vLLM speaks Responses", () => {
  layer(harnessLayer(), { excludeTestServices: true })((it) => {
    it.effect("the SDK reads its answers directly: text, calls split over deltas, a completed response", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.content = "Sure, looking."
        h.fake.knobs.nextCalls = [LIST, DELETE]
        const direct = new OpenAI({ baseURL: h.fake.url, apiKey: "x", maxRetries: 0 })
        const buffered = yield* Effect.promise(() => direct.responses.create(request("agent")))
        const { final, events } = yield* Effect.promise(async () => {
          const runner = direct.responses.stream(request("agent"))
          const events: Array<string> = []
          runner.on("event", (e) => events.push(e.type))
          return { final: await runner.finalResponse(), events }
        })
        expect(buffered.output_text).toBe("Sure, looking.")
        for (const r of [buffered, final]) {
          expect(outputText(r)).toBe("Sure, looking.")
          expect(functionCalls(r)).toEqual([
            { call_id: "call_0", name: "list_dir", arguments: LIST_ARGS },
            { call_id: "call_1", name: "delete_file", arguments: DELETE_ARGS }
          ])
        }
        expect(events.slice(0, 3)).toEqual(["response.created", "response.in_progress", "response.output_item.added"])
        expect(events.filter((t) => t === "response.function_call_arguments.delta").length).toBeGreaterThanOrEqual(4)
        expect(events[events.length - 1]).toBe("response.completed")
      }))

    it.effect("a scripted agent reads the conversation from input items (calls and their outputs)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.scripts = [{ system: "You tidy", turns: [{ calls: [{ name: "list_dir", arguments: { path: "/a" } }] }, { content: "All tidy." }] }]
        const direct = new OpenAI({ baseURL: h.fake.url, apiKey: "x", maxRetries: 0 })
        const first = yield* Effect.promise(() => direct.responses.create({ ...request("agent"), instructions: "You tidy files." }))
        expect(functionCalls(first).map((c) => c.arguments)).toEqual(['{"path": "/a"}'])
        const fc = first.output.find((i) => i.type === "function_call")!
        const second = yield* Effect.promise(() =>
          direct.responses.create({
            ...request("agent"),
            instructions: "You tidy files.",
            input: [
              { role: "user", content: "clean up" },
              fc,
              { type: "function_call_output", call_id: "call_0", output: "a.txt" }
            ]
          })
        )
        expect(second.output_text).toBe("All tidy.")
        expect(functionCalls(second)).toEqual([])
      }))
  })
})
