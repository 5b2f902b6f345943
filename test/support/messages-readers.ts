/**
 * Independent readers of the Messages format for the trust-boundary tests: what *a* client could
 * find in the proxy's answer. A WHATWG-conformant SSE parser that keeps event names, the tool_use
 * blocks of a Messages answer, and two stream accumulators: the official SDK's (blocks in the order
 * of their starts, deltas by position, events dispatched on their names) and a reader that keys
 * blocks by their `index` and dispatches on the data's `type`.
 */
import { type FoundCall, parseJsonWith } from "./readers.js"

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** One dispatched SSE event: its name (`message` when it has none) and its data. */
export interface NamedEvent {
  readonly event: string
  readonly data: string
}

/** The events of an SSE text as the WHATWG EventSource parser dispatches them, with their names. */
export const sseNamedEvents = (text: string): Array<NamedEvent> => {
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text
  const out: Array<NamedEvent> = []
  let data: Array<string> = []
  let name = ""
  let has = false
  for (const line of body.split(/\r\n|\r|\n/)) {
    if (line === "") {
      if (has) out.push({ event: name === "" ? "message" : name, data: data.join("\n") })
      data = []
      name = ""
      has = false
      continue
    }
    if (line.startsWith(":")) continue
    const colon = line.indexOf(":")
    const field = colon < 0 ? line : line.slice(0, colon)
    let value = colon < 0 ? "" : line.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    if (field === "data") {
      data.push(value)
      has = true
    } else if (field === "event") name = value
  }
  return out
}

/** The SSE comments of a text (`: x-vetobench-blocked=N` and the like), without the colon and space. */
export const sseComments = (text: string): Array<string> =>
  text
    .split(/\r\n|\r|\n/)
    .filter((l) => l.startsWith(":"))
    .map((l) => l.slice(1).trimStart())

const inputCall = (name: unknown, input: unknown): FoundCall => ({
  name: typeof name === "string" ? name : String(name),
  arguments: JSON.stringify(input) ?? ""
})

/** The callable calls a client finds in a parsed Messages answer: its `content[]` tool_use blocks. */
export const callsInMessage = (answer: unknown): Array<FoundCall> => {
  if (!isObj(answer) || !Array.isArray(answer.content)) return []
  return answer.content.filter((b): b is Record<string, unknown> => isObj(b) && b.type === "tool_use").map((b) => inputCall(b.name, b.input))
}

interface Block {
  readonly type: unknown
  readonly name: unknown
  input: unknown
  json: string
}

const tracksInput = (b: Block | undefined): b is Block => b !== undefined && (b.type === "tool_use" || b.type === "server_tool_use")

/** a block's input as a reader ends with it: the joined deltas (JSON, else the text), or the start's input */
const finalInput = (b: Block): unknown => {
  if (b.json === "") return b.input
  try {
    return JSON.parse(b.json) as unknown
  } catch {
    return b.json
  }
}

/**
 * The tool_use calls a streaming reader assembles from the parsed events, until message_stop or
 * an error (which it raises: what it assembled so far still counts, as a client may have acted on
 * it). `sdk`: the official SDK (events named `ping` or without a name skipped, `error` raises, any
 * other named event dispatched on its data's `type`; blocks pushed in start order, deltas found by
 * position). `keyed`: every event dispatched on its `type`, blocks kept by their `index`.
 */
export const callsInMessageStream = (events: ReadonlyArray<{ readonly event: string; readonly value: unknown }>, reader: "sdk" | "keyed"): Array<FoundCall> => {
  const list: Array<Block> = []
  const keyed = new Map<unknown, Block>()
  const at = (index: unknown): Block | undefined =>
    reader === "keyed" ? keyed.get(index) : typeof index === "number" ? list.at(index) : undefined
  for (const { event, value } of events) {
    if (reader === "sdk" && (event === "message" || event === "ping")) continue
    if (event === "error" || (isObj(value) && value.type === "error")) break
    if (!isObj(value)) continue
    if (value.type === "message_stop") break
    if (value.type === "message_start" && isObj(value.message) && Array.isArray(value.message.content)) {
      for (const b of value.message.content) if (isObj(b)) list.push({ type: b.type, name: b.name, input: b.input, json: "" })
    }
    if (value.type === "content_block_start" && isObj(value.content_block)) {
      const cb = value.content_block
      const b: Block = { type: cb.type, name: cb.name, input: cb.input, json: "" }
      if (reader === "keyed") keyed.set(value.index, b)
      else list.push(b)
    }
    if (value.type === "content_block_delta" && isObj(value.delta) && value.delta.type === "input_json_delta") {
      const b = at(value.index)
      if (tracksInput(b) && typeof value.delta.partial_json === "string") b.json += value.delta.partial_json
    }
  }
  const blocks = reader === "keyed" ? [...keyed.values()] : list
  return blocks.filter((b) => b.type === "tool_use").map((b) => inputCall(b.name, finalInput(b)))
}

/** Each event's data read by a JSON parser (`first` or `last` of duplicate keys); a reader stops at the first one it cannot parse. */
export const parsedEvents = (events: ReadonlyArray<NamedEvent>, duplicates: "first" | "last"): Array<{ readonly event: string; readonly value: unknown }> => {
  const out: Array<{ readonly event: string; readonly value: unknown }> = []
  for (const e of events) {
    try {
      out.push({ event: e.event, value: parseJsonWith(e.data, duplicates) })
    } catch {
      break
    }
  }
  return out
}
