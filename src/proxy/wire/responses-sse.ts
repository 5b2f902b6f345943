/**
 * The streamed Responses format: `event: <type>` / `data: <json>` events, no `[DONE]`; the stream is
 * over after `response.completed`, `response.incomplete` or `response.failed` (or an `error` event).
 *
 * What the client parses is only ever what this gate wrote: every event is parsed, re-serialized and
 * re-framed (its `event:` name is its `type`), with `output_index` renumbered to the items the client
 * was sent and `sequence_number` counting the events the client gets. Every event of a call item
 * (see `isCallItemType`: its `response.output_item.added` and `.done`, the function-call argument
 * and custom-tool input deltas) is held per item. At `response.completed` / `response.incomplete`
 * the turn's calls are ruled together, like a chat choice; surviving items are then emitted whole
 * (a function call: added with empty arguments, one arguments delta, its done, item done; a custom
 * call: added with its input, its done, item done — the SDKs append no input deltas; a built-in:
 * added and done), and when calls were removed the refusal note follows as a message item. Any event that carries a `response` object (created, in_progress, completed, …) has
 * its `output` replaced by the items the client was sent, so no call reaches the client there either.
 *
 * An `error` event or `response.failed` from the upstream, an event the gate cannot read, a stream
 * that ends before its last event, an event too large: the held calls are ruled and recorded, none
 * is released, and the stream ends (with the upstream's event, or an `error` event of this format).
 */
import { Effect, type Stream } from "effect"
import type { AuditWriteError } from "../../../layers/AuditSink.js"
import { clientMessage, type ProxyErrorCode } from "../errors.js"
import { isObject } from "../../domain/is-object.js"
import { refusalNotes } from "../../domain/refusal.js"
import { blockedNotes } from "../../gate/Gate.js"
import type { StreamGateOptions } from "../gated-route.js"
import { parseJsonText } from "./json-answer.js"
import {
  type CallItemType,
  callProblem,
  gateCallOf,
  hasOutputText,
  isCallItemType,
  noteId,
  noteItem,
  noteText,
  textField
} from "./responses.js"
import { pumpSse, type SseOut, type SseStep, streamEndings } from "./sse-driver.js"

/** One SSE event of this format. */
export const responsesFrame = (type: string, data: string) => `event: ${type}\ndata: ${data}\n\n`

/** The error event that ends a stream, in the shape of the Responses API's `error` event. */
export const responsesErrorEvent = (code: ProxyErrorCode | string, message: string, sequence: number) =>
  responsesFrame("error", JSON.stringify({ type: "error", code, message: clientMessage(message), param: null, sequence_number: sequence }))

/** The terminal events: the upstream's answer is complete (its calls are ruled and released) or failed. */
const FINISHED = new Set(["response.completed", "response.incomplete"])
const FAILED = new Set(["response.failed", "error"])

/** The streamed-text events of a call item type, and the item field they build. */
const DELTAS: ReadonlyMap<string, { readonly item: CallItemType; readonly done: boolean }> = new Map([
  ["response.function_call_arguments.delta", { item: "function_call", done: false }],
  ["response.function_call_arguments.done", { item: "function_call", done: true }],
  ["response.custom_tool_call_input.delta", { item: "custom_tool_call", done: false }],
  ["response.custom_tool_call_input.done", { item: "custom_tool_call", done: true }]
])

interface HeldItem {
  readonly type: CallItemType
  /** the item as added, replaced by the one of `response.output_item.done` */
  item: Record<string, unknown>
  /** `response.output_item.done` was seen: its item is final */
  final: boolean
  /** the argument / input deltas, concatenated */
  deltas: string
  /** the text of the `.done` event of the arguments / input, when seen */
  doneText: string | null
}

const isIndex = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0

/**
 * The item a held call came to: the item of `response.output_item.done`; else the added item with
 * its arguments / input from the `.done` event, or the added text followed by the deltas.
 */
const finalItem = (h: HeldItem): Record<string, unknown> => {
  const field = textField(h.type)
  if (h.final || field === null) return h.item
  const added = typeof h.item[field] === "string" ? (h.item[field] as string) : ""
  return { ...h.item, [field]: h.doneText ?? added + h.deltas }
}

/** The per-stream state machine of the Responses format. */
export const makeResponsesSseGate = (opts: StreamGateOptions) => {
  /** held call items by their upstream output_index, in the order they were added */
  const held = new Map<number, HeldItem>()
  /** upstream output_index → the client's, for the items passed on */
  const passed = new Map<number, number>()
  /** the items the client was sent, by the client's output_index (their latest version) */
  const sent: Array<Record<string, unknown>> = []
  /** the client's events so far (`sequence_number` of the next); shared with the route, whose error event continues it */
  const events = opts.events ?? { sent: 0 }
  let blocked = 0
  let streamedText = false
  let done = false
  let stopped = false

  /** one event to the client: numbered, re-serialized, named by its type */
  const emit = (event: Record<string, unknown>): string => {
    const numbered: Record<string, unknown> = { ...event, sequence_number: events.sent++ }
    if (isObject(numbered.response)) numbered.response = { ...numbered.response, output: [...sent] }
    return responsesFrame(String(numbered.type), JSON.stringify(numbered))
  }

  const comment = () => `: x-vetobench-blocked=${blocked}\n\n`

  /** rule and record every held call as one turn; the rulings' removed calls, with the items in rule order */
  const rule = Effect.suspend(() => {
    const items = [...held.values()].map((h) => ({ type: h.type, item: finalItem(h) }))
    held.clear()
    if (items.length === 0) return Effect.succeed({ items, removed: new Map<number, string>() })
    return Effect.map(opts.gate.ruleChoice(opts.request, 0, items.map((i) => gateCallOf(i.item, i.type))), (rulings) => {
      const removed = blockedNotes(rulings)
      blocked += removed.size
      return { items, removed }
    })
  })

  /** the events that bring a surviving call item to the client, whole */
  const release = (type: CallItemType, item: Record<string, unknown>): Array<string> => {
    const index = sent.length
    sent.push(item)
    const field = textField(type)
    if (field === null) {
      return [
        emit({ type: "response.output_item.added", output_index: index, item }),
        emit({ type: "response.output_item.done", output_index: index, item })
      ]
    }
    const text = item[field] as string
    const itemId = typeof item.id === "string" ? item.id : (item.call_id as string)
    if (type === "custom_tool_call") {
      // the SDKs append no input deltas to their snapshot: the added item carries the whole input
      return [
        emit({ type: "response.output_item.added", output_index: index, item: { ...item, status: "in_progress" } }),
        emit({ type: "response.custom_tool_call_input.done", item_id: itemId, output_index: index, input: text }),
        emit({ type: "response.output_item.done", output_index: index, item })
      ]
    }
    const out = [emit({ type: "response.output_item.added", output_index: index, item: { ...item, arguments: "", status: "in_progress" } })]
    if (text !== "") out.push(emit({ type: "response.function_call_arguments.delta", item_id: itemId, output_index: index, delta: text }))
    out.push(
      emit({ type: "response.function_call_arguments.done", item_id: itemId, output_index: index, arguments: text, name: item.name }),
      emit({ type: "response.output_item.done", output_index: index, item })
    )
    return out
  }

  /** the refusal note as the events of one message item */
  const note = (notes: string): Array<string> => {
    const index = sent.length
    const id = noteId()
    const text = noteText(notes, streamedText || hasOutputText(sent))
    const part = { type: "output_text", text, annotations: [] }
    const item = noteItem(id, text)
    sent.push(item)
    const at = { item_id: id, output_index: index, content_index: 0 }
    return [
      emit({ type: "response.output_item.added", output_index: index, item: { ...item, status: "in_progress", content: [] } }),
      emit({ type: "response.content_part.added", ...at, part: { ...part, text: "" } }),
      emit({ type: "response.output_text.delta", ...at, delta: text, logprobs: [] }),
      emit({ type: "response.output_text.done", ...at, text, logprobs: [] }),
      emit({ type: "response.content_part.done", ...at, part }),
      emit({ type: "response.output_item.done", output_index: index, item })
    ]
  }

  /** the turn is complete: rule its calls, release the survivors, add the note, then the last event */
  const settle = (last: Record<string, unknown>): Effect.Effect<SseStep, AuditWriteError> => {
    const problems = [...held.entries()].flatMap(([i, h]) => {
      const p = callProblem(finalItem(h), h.type, `the call item at output_index ${i}`)
      return p === null ? [] : [p]
    })
    if (problems.length > 0) return fail(`an event of the upstream stream: ${problems[0]}`)
    done = true
    return Effect.map(rule, ({ items, removed }) => {
      const out: Array<string> = []
      items.forEach((c, k) => {
        if (!removed.has(k)) out.push(...release(c.type, c.item))
      })
      if (removed.size > 0 && (removed.size === items.length || opts.partial === "content")) out.push(...note(refusalNotes(removed)))
      out.push(comment(), emit(last))
      return { out, stop: true }
    })
  }

  /** the upstream ended the turn with a failure: record what is held (release none), pass its event on */
  const failedUpstream = (last: Record<string, unknown>): Effect.Effect<SseStep, AuditWriteError> => {
    stopped = true
    return Effect.map(rule, () => ({ out: [comment(), emit(last)], stop: true }))
  }

  /** the stream cannot go on: record what is held (release none of it), then one error event */
  const fail = (message: string): Effect.Effect<SseStep, AuditWriteError> => {
    stopped = true
    return Effect.map(rule, () => ({
      out: [comment(), responsesErrorEvent("upstream_invalid_response", message, events.sent++)],
      stop: true
    }))
  }

  const step = (out: ReadonlyArray<string>): Effect.Effect<SseStep, AuditWriteError> => Effect.succeed({ out, stop: false })

  const onData = (data: string): Effect.Effect<SseStep, AuditWriteError> => {
    if (stopped || done || data === "") return step([])
    if (data.startsWith("[DONE]")) return fail("the upstream stream sent [DONE] before response.completed")
    const parsed = parseJsonText(data, "an event of the upstream stream")
    if ("problem" in parsed) return fail(parsed.problem)
    const event = parsed.value
    if (!isObject(event)) return fail("an event of the upstream stream is not a JSON object")
    const type = event.type
    if (typeof type !== "string") return fail("an event of the upstream stream has no string type")
    const index = event.output_index
    if (index !== undefined && !isIndex(index)) return fail(`a ${type} event's output_index is not a non-negative integer`)
    if (event.response !== undefined && !isObject(event.response)) return fail(`a ${type} event's response is not an object`)
    if (FINISHED.has(type) || FAILED.has(type)) {
      if (type !== "error" && !isObject(event.response)) return fail(`a ${type} event carries no response object`)
      return FINISHED.has(type) ? settle(event) : failedUpstream(event)
    }
    if (type === "response.output_item.added" || type === "response.output_item.done") {
      const item = event.item
      if (!isObject(item) || typeof item.type !== "string") return fail(`a ${type} event's item is not an object with a string type`)
      if (index === undefined) return fail(`a ${type} event has no output_index`)
      return type === "response.output_item.added" ? added(event, index, item) : itemDone(event, index, item)
    }
    const delta = DELTAS.get(type)
    if (delta !== undefined) {
      const h = index === undefined ? undefined : held.get(index)
      if (h === undefined || h.type !== delta.item) return fail(`a ${type} event does not belong to a ${delta.item} item`)
      const field = delta.done ? textField(delta.item)! : "delta"
      const text = event[field]
      if (typeof text !== "string") return fail(`a ${type} event's ${field} is not a string`)
      if (delta.done) h.doneText = text
      else h.deltas += text
      return step([])
    }
    if (index === undefined) return step([emit(event)])
    // other events about a held call item are not passed on: the item is re-emitted whole
    if (held.has(index)) return step([])
    const mine = passed.get(index)
    if (mine === undefined) return fail(`a ${type} event names output_index ${index}, at which no item was added`)
    if (type === "response.output_text.delta" && typeof event.delta === "string" && event.delta.trim() !== "") streamedText = true
    return step([emit({ ...event, output_index: mine })])
  }

  const added = (event: Record<string, unknown>, index: number, item: Record<string, unknown>): Effect.Effect<SseStep, AuditWriteError> => {
    if (held.has(index) || passed.has(index)) return fail(`a second item was added at output_index ${index}`)
    if (isCallItemType(item.type)) {
      held.set(index, { type: item.type, item, final: false, deltas: "", doneText: null })
      return step([])
    }
    passed.set(index, sent.length)
    sent.push(item)
    return step([emit({ ...event, output_index: sent.length - 1 })])
  }

  const itemDone = (event: Record<string, unknown>, index: number, item: Record<string, unknown>): Effect.Effect<SseStep, AuditWriteError> => {
    const h = held.get(index)
    if (h !== undefined) {
      if (item.type !== h.type) return fail(`the item at output_index ${index} was added as ${h.type} and is done as ${String(item.type)}`)
      h.item = item
      h.final = true
      return step([])
    }
    const mine = passed.get(index)
    if (mine === undefined) return fail(`a response.output_item.done event names output_index ${index}, at which no item was added`)
    if (item.type !== sent[mine]!.type) return fail(`the item at output_index ${index} was added as ${String(sent[mine]!.type)} and is done as ${item.type}`)
    sent[mine] = item
    return step([emit({ ...event, output_index: mine })])
  }

  const over = () => done || stopped
  const endings = streamEndings({ over, stop: () => (stopped = true), fail, recordHeld: rule, last: "response.completed" })
  return { onData, ...endings, open: () => !over(), blocked: () => blocked }
}

/** Upstream Responses SSE bytes → gated SSE text, written to `out`. */
export const gateResponsesStream = <E>(upstream: Stream.Stream<Uint8Array, E>, opts: StreamGateOptions, out: SseOut): Effect.Effect<void, E | AuditWriteError> =>
  pumpSse(upstream, makeResponsesSseGate(opts), opts, out)
