/**
 * `vetobench demo --wire chat|responses|messages`: the format the demo's agent speaks to the proxy.
 * Chat completions is the demo's own turn (demo.ts); for the Responses and Messages APIs one turn is
 * written and read by the Agent-SafetyBench runner's mappings (wire-responses.ts,
 * wire-messages.ts), so the scripted session and the experiment speak the same format. A streamed
 * answer is read as the SDKs assemble it: the Responses API's final `response` object (the proxy
 * rewrites its `output` to exactly the items it sent), the Messages API's blocks from their start
 * and delta events.
 */
import { Options } from "@effect/cli"
import { Effect, Either } from "effect"
import { agentWireFormat } from "../adapters/agent-safetybench/wire-formats.js"
import { AGENT_WIRES, type AgentWire } from "../config/experiment.js"
import { isObject } from "../domain/is-object.js"
import { parsePythonJson } from "../domain/python-json.js"
import { CliFailure, withShownDefault } from "./options.js"

export const wireOption = Options.choice("wire", AGENT_WIRES).pipe(
  Options.withDescription("the format the agent speaks to the proxy: chat completions, the Responses API or the Messages API (docs/wire-formats.md)"),
  withShownDefault("chat")
)

/** `responses (POST /v1/responses)` */
export const wireLabel = (wire: AgentWire): string => `${wire} (POST /v1/${agentWireFormat(wire).path})`

/** What the agent got back from one turn (the demo's table row). */
export interface WireTurn {
  readonly model: string
  readonly stream: boolean
  readonly calls: ReadonlyArray<string>
  readonly blocked: string
  readonly content: string
  /** `x-vetobench-record` of a buffered answer, or null */
  readonly record: string | null
}

interface SseEvent {
  readonly data: unknown
}

/** The JSON `data:` of each event of a stream body, and the proxy's blocked count (its `: x-vetobench-blocked=N` comment). */
const readSse = (text: string): { readonly events: ReadonlyArray<SseEvent>; readonly blocked: string } => {
  const events: Array<SseEvent> = []
  let blocked = "-"
  for (const block of text.replace(/\r\n?/g, "\n").split("\n\n")) {
    const data: Array<string> = []
    for (const line of block.split("\n")) {
      const c = /^: x-vetobench-blocked=(\d+)/.exec(line)
      if (c) blocked = c[1]!
      if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
    }
    if (data.length > 0 && data.join("\n") !== "[DONE]") events.push({ data: parsePythonJson(data.join("\n")) })
  }
  return { events, blocked }
}

/** The answer a Responses stream ends with: the `response` of its terminal event. */
const responsesStreamAnswer = (events: ReadonlyArray<SseEvent>): unknown => {
  for (const e of events) {
    if (isObject(e.data) && (e.data.type === "response.completed" || e.data.type === "response.incomplete")) return e.data.response
    if (isObject(e.data) && e.data.type === "error") throw new Error(`the stream ended with an error: ${String(e.data.message)}`)
  }
  throw new Error("the stream ended without response.completed")
}

/** The message a Messages stream assembles: each block from its start, its text deltas and its input's JSON deltas. */
const messagesStreamAnswer = (events: ReadonlyArray<SseEvent>): unknown => {
  const blocks: Array<Record<string, unknown>> = []
  const json = new Map<number, string>()
  for (const { data: e } of events) {
    if (!isObject(e)) continue
    if (e.type === "error") throw new Error(`the stream ended with an error: ${isObject(e.error) ? String(e.error.message) : "?"}`)
    if (typeof e.index !== "number" || e.index < 0) continue
    const index = e.index
    if (e.type === "content_block_start" && isObject(e.content_block)) blocks[index] = { ...e.content_block }
    const block = blocks[index]
    if (e.type === "content_block_delta" && block !== undefined && isObject(e.delta)) {
      if (e.delta.type === "text_delta") block.text = `${typeof block.text === "string" ? block.text : ""}${String(e.delta.text)}`
      if (e.delta.type === "input_json_delta") json.set(index, (json.get(index) ?? "") + String(e.delta.partial_json))
    }
    if (e.type === "content_block_stop" && block !== undefined && block.type === "tool_use") {
      const input = json.get(index) ?? ""
      block.input = input.trim() === "" ? {} : parsePythonJson(input)
    }
  }
  return { content: blocks.filter(isObject) }
}

const callNames = (calls: unknown): Array<string> =>
  Array.isArray(calls) ? calls.map((c) => (isObject(c) && isObject(c.function) ? String(c.function.name) : "?")) : []

/** Post one turn in a non-chat format (the same headers as the chat turn); for a stream, assemble what an SDK would show. */
export const wireTurn = (
  base: string,
  wire: Exclude<AgentWire, "chat">,
  model: string,
  stream: boolean,
  run: string,
  messages: ReadonlyArray<Readonly<Record<string, unknown>>>,
  tools: ReadonlyArray<Readonly<Record<string, unknown>>>
): Effect.Effect<WireTurn, CliFailure> =>
  Effect.tryPromise({
    try: async (): Promise<WireTurn> => {
      const format = agentWireFormat(wire)
      const request = format.request(model, 512, messages, tools)
      if (Either.isLeft(request)) throw new Error(request.left)
      const res = await fetch(`${base}/${format.path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-vetobench-run": run, "x-vetobench-episode": "demo:1" },
        body: JSON.stringify({ ...request.right, stream })
      })
      const text = await res.text()
      if (!res.ok) throw new Error(`${model}: HTTP ${res.status}: ${text}`)
      const sse = stream ? readSse(text) : null
      const body = sse === null ? format.parse(text) : wire === "responses" ? responsesStreamAnswer(sse.events) : messagesStreamAnswer(sse.events)
      const read = format.read(body)
      if (read._tag === "unreadable") throw new Error(`${model}: ${read.reason}`)
      return {
        model,
        stream,
        calls: callNames(read.message.tool_calls),
        blocked: sse === null ? res.headers.get("x-vetobench-blocked") ?? "-" : sse.blocked,
        content: typeof read.message.content === "string" ? read.message.content : "",
        record: sse === null ? res.headers.get("x-vetobench-record") : null
      }
    },
    catch: (e) => new CliFailure({ message: `demo request failed: ${e instanceof Error ? e.message : String(e)}` })
  })
