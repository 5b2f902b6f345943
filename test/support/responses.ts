/**
 * Test helpers for the Responses route: requests (function tools in the Responses shape), a POST
 * that reads a buffered or streamed answer, the events of a Responses stream, and what a client
 * finds in an answer: the call items of a `response` and the calls a streaming client assembles.
 */
import { Effect } from "effect"
import type { HarnessShape } from "./harness.js"
import { parseSse, type SseItem } from "./sse.js"

export const RESPONSES_TOOLS = [
  {
    type: "function",
    name: "delete_file",
    description: "Delete a file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    strict: false
  },
  { type: "function", name: "list_dir", description: "List a directory", parameters: null, strict: false }
]

export interface ResponsesPost {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** the parsed body (null when it is not JSON or the answer is a stream) */
  readonly json: Record<string, unknown> | null
  /** a stream's events, parsed (comments included) */
  readonly items: ReadonlyArray<SseItem>
}

/** POST a Responses request (`input` "clean up" and the tools above unless given) to the proxy. */
export const postResponses = (h: HarnessShape, body: Record<string, unknown>, o: { readonly run?: string; readonly headers?: Record<string, string> } = {}) =>
  Effect.promise(async (): Promise<ResponsesPost> => {
    const res = await fetch(`${h.url}/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(o.run !== undefined ? { "x-vetobench-run": o.run } : {}), ...o.headers },
      body: JSON.stringify({ input: "clean up", tools: RESPONSES_TOOLS, ...body })
    })
    const text = await res.text()
    let json: Record<string, unknown> | null = null
    try {
      json = JSON.parse(text) as Record<string, unknown>
    } catch {
      // a stream, or not JSON: tests read `text` / `items`
    }
    const sse = (res.headers.get("content-type") ?? "").startsWith("text/event-stream")
    return { status: res.status, headers: res.headers, text, json: sse ? null : json, items: sse ? parseSse(text) : [] }
  })

/** The JSON events of a parsed stream (comments left out). */
export const eventsOf = (items: ReadonlyArray<SseItem>): Array<Record<string, unknown>> =>
  items.flatMap((i) => (i.kind === "data" ? [JSON.parse(i.data) as Record<string, unknown>] : []))

/** `N` of the `: x-vetobench-blocked=N` comment of a stream; null when absent. */
export const blockedComment = (items: ReadonlyArray<SseItem>): number | null => {
  for (const i of items) {
    const m = i.kind === "comment" ? /^x-vetobench-blocked=(\d+)$/.exec(i.text) : null
    if (m) return Number(m[1])
  }
  return null
}

export interface FoundCall {
  readonly name: string
  readonly arguments: string
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)
const str = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v) ?? "")

/** The action fields of the built-in calls (as the proxy rules them: docs/wire-formats.md). */
const BUILT_INS: Readonly<Record<string, ReadonlyArray<string>>> = {
  computer_call: ["action", "actions"],
  local_shell_call: ["action"],
  shell_call: ["action", "environment"],
  apply_patch_call: ["operation"]
}

/** A call a client executes, as the record names it; null for any other item. */
export const callOfItem = (item: unknown): FoundCall | null => {
  if (!isObj(item)) return null
  if (item.type === "function_call") return { name: str(item.name), arguments: str(item.arguments) }
  if (item.type === "custom_tool_call") return { name: str(item.name), arguments: str(item.input) }
  const fields = typeof item.type === "string" && Object.hasOwn(BUILT_INS, item.type) ? BUILT_INS[item.type]! : null
  if (fields === null) return null
  const args: Record<string, unknown> = {}
  for (const f of fields) if (item[f] !== undefined) args[f] = item[f]
  return { name: String(item.type), arguments: JSON.stringify(args) }
}

/** The calls in a parsed `response` object's output. */
export const callsInResponse = (response: unknown): Array<FoundCall> =>
  isObj(response) && Array.isArray(response.output) ? response.output.flatMap((i) => callOfItem(i) ?? []) : []

/** The text of a `response` as the SDK's `output_text` joins it. */
export const outputText = (response: unknown): string =>
  isObj(response) && Array.isArray(response.output)
    ? response.output
        .flatMap((i) => (isObj(i) && i.type === "message" && Array.isArray(i.content) ? i.content : []))
        .flatMap((p) => (isObj(p) && p.type === "output_text" && typeof p.text === "string" ? [p.text] : []))
        .join("")
    : ""

/**
 * The calls a streaming client can take from a Responses stream's event values (until an `error`
 * event), one list per way of reading them: the items of the `response.output_item.done` events;
 * the `.done` events of an arguments or input stream (named by the item added at that index); the
 * items as the SDK's snapshot holds them at the end (added, then their argument / input deltas
 * appended by output_index); and the output of each `response` object an event carries.
 */
export const callViewsOfResponseStream = (events: ReadonlyArray<unknown>): Array<Array<FoundCall>> => {
  const doneItems: Array<FoundCall> = []
  const doneTexts: Array<FoundCall> = []
  const responses: Array<Array<FoundCall>> = []
  const snapshot = new Map<number, Record<string, unknown>>()
  for (const e of events) {
    if (!isObj(e)) continue
    if (e.type === "error") break
    if (isObj(e.response)) responses.push(callsInResponse(e.response))
    const index = typeof e.output_index === "number" ? e.output_index : -1
    if (e.type === "response.output_item.added" && isObj(e.item)) snapshot.set(index, { ...e.item })
    if (e.type === "response.output_item.done" && isObj(e.item)) {
      const c = callOfItem(e.item)
      if (c !== null) doneItems.push(c)
    }
    const item = snapshot.get(index)
    if (item === undefined) continue
    if (e.type === "response.function_call_arguments.delta" && item.type === "function_call" && typeof e.delta === "string") {
      item.arguments = str(item.arguments) + e.delta
    }
    if (e.type === "response.custom_tool_call_input.delta" && item.type === "custom_tool_call" && typeof e.delta === "string") {
      item.input = str(item.input) + e.delta
    }
    if (e.type === "response.function_call_arguments.done" && item.type === "function_call") doneTexts.push({ name: str(item.name), arguments: str(e.arguments) })
    if (e.type === "response.custom_tool_call_input.done" && item.type === "custom_tool_call") doneTexts.push({ name: str(item.name), arguments: str(e.input) })
  }
  const assembled = [...snapshot.values()].flatMap((item) => callOfItem(item) ?? [])
  return [doneItems, doneTexts, assembled, ...responses]
}
