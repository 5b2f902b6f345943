/**
 * Gated streaming of the Messages format (`event: <type>` + `data: <json>`: message_start,
 * content_block_start/delta/stop, message_delta, message_stop, ping, error). Blocks other than
 * tool_use (text, thinking, server-side tool blocks) pass through as they arrive. A tool_use block's
 * start, its `input_json_delta` deltas and its stop are held per block; at `message_delta` (which
 * carries `stop_reason`) the gate rules every held block as one turn, then the surviving blocks are
 * emitted whole and the denied ones replaced by one text block with the refusal note; then the
 * message_delta (its `stop_reason` fixed when no tool_use survives) and message_stop.
 *
 * A client numbers blocks by the order of their starts (the SDK pushes each `content_block_start`
 * and indexes deltas into that list), so every block event is renumbered: a block's index is the
 * number of blocks the client had been sent before it.
 */
import { Effect, type Stream } from "effect"
import type { AuditWriteError } from "../../../layers/AuditSink.js"
import { isObject } from "../../domain/is-object.js"
import { refusalNotes } from "../../domain/refusal.js"
import { blockedNotes } from "../../gate/Gate.js"
import type { StreamGateOptions } from "../gated-route.js"
import { parseJsonText } from "./json-answer.js"
import { pumpSse, type SseOut, type SseStep, streamEndings } from "./sse-driver.js"
import { messagesErrorEvent, messagesEvent, toolUseCall, toolUseProblem } from "./messages.js"

/** A tool_use block held until the turn's calls are ruled. */
interface HeldBlock {
  readonly held: true
  /** its `content_block_start` event and content block, as the upstream sent them (parsed) */
  readonly start: Record<string, unknown>
  readonly block: Record<string, unknown>
  readonly id: string
  readonly name: string
  /** the start's `input`, which the deltas replace when there are any */
  readonly input: Record<string, unknown>
  /** the `partial_json` of its deltas, joined */
  json: string
  deltas: number
  stopped: boolean
}

/** A block passed through as it arrives, under the client's index. */
interface PassedBlock {
  readonly held: false
  readonly index: number
  open: boolean
}

const isIndex = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0

/** event types are written into an `event:` line: only plain names are passed on */
const EVENT_TYPE = /^[A-Za-z0-9_.-]{1,64}$/

const step = (out: ReadonlyArray<string>): SseStep => ({ out, stop: false })

/**
 * The per-stream state machine; `onEvent` and `end` return the SSE text to send next.
 *
 * What the client parses is only ever what this gate wrote: every event is parsed, checked and
 * re-serialized under the name of its `type`; tool_use blocks are never passed on as they came. An
 * event the gate cannot read, an event out of order, or a stream that ends before message_stop ends
 * with an error event: the blocks held so far are ruled and recorded, and none is released.
 */
export const makeMessagesGate = (opts: StreamGateOptions) => {
  /** the upstream's block index → the block */
  const blocks = new Map<number, HeldBlock | PassedBlock>()
  let held: Array<HeldBlock> = []
  /** the client's index of the next block it is sent */
  let next = 0
  let phase: "before" | "message" | "delivered" = "before"
  let blocked = 0
  let done = false
  let stopped = false

  /** a held block's input: the joined deltas parsed (an object), or the start's input when it had none */
  const inputOf = (b: HeldBlock): { readonly value: Record<string, unknown> } | { readonly problem: string } => {
    if (b.deltas === 0) return { value: b.input }
    const parsed = parseJsonText(b.json, `the input of tool_use block ${JSON.stringify(b.id)}`)
    if ("problem" in parsed) return parsed
    return isObject(parsed.value) ? { value: parsed.value } : { problem: `the input of tool_use block ${JSON.stringify(b.id)} is not an object` }
  }

  /** the call the gate rules: the input as it will be serialized, or the text as it came when it cannot be read */
  const callOf = (b: HeldBlock) => {
    const input = inputOf(b)
    return "value" in input ? toolUseCall(b.id, b.name, input.value) : { id: b.id, type: "function", function: { name: b.name, arguments: b.json } }
  }

  const take = (): Array<HeldBlock> => {
    const all = held
    held = []
    return all
  }

  const blockEvents = (index: number, block: Record<string, unknown>, delta: Record<string, unknown>, start: Record<string, unknown> = {}) => [
    messagesEvent({ ...start, type: "content_block_start", index, content_block: block }),
    messagesEvent({ type: "content_block_delta", index, delta }),
    messagesEvent({ type: "content_block_stop", index })
  ]

  /**
   * Rule the held blocks (all readable) and render what the client gets instead: surviving blocks
   * whole, the refusal note where the first denied block was. Returns the events, how many blocks
   * survived and how many were removed.
   */
  const settle = (
    all: ReadonlyArray<HeldBlock>,
    inputs: ReadonlyArray<Record<string, unknown>>
  ): Effect.Effect<{ readonly out: Array<string>; readonly survivors: number; readonly removed: number }, AuditWriteError> =>
    opts.gate.ruleChoice(opts.request, 0, all.map((b, i) => toolUseCall(b.id, b.name, inputs[i]))).pipe(
      Effect.map((rulings) => {
        const removed = blockedNotes(rulings)
        blocked += removed.size
        const survivors = all.length - removed.size
        const note = removed.size > 0 && (survivors === 0 || opts.partial === "content") ? refusalNotes(removed) : null
        const out: Array<string> = []
        let noted = false
        all.forEach((b, i) => {
          if (removed.has(i)) {
            if (note === null || noted) return
            noted = true
            out.push(...blockEvents(next++, { type: "text", text: "" }, { type: "text_delta", text: note }))
            return
          }
          out.push(
            ...blockEvents(next++, { ...b.block, input: {} }, { type: "input_json_delta", partial_json: JSON.stringify(inputs[i]) }, b.start)
          )
        })
        return { out, survivors, removed: removed.size }
      })
    )

  /** rule and record every held block; release none of them */
  const recordHeld = Effect.suspend(() => {
    const all = take()
    if (all.length === 0) return Effect.void
    return opts.gate.ruleChoice(opts.request, 0, all.map(callOf)).pipe(
      Effect.map((rulings) => {
        blocked += blockedNotes(rulings).size
      })
    )
  })

  /** the SSE comment with the number of calls the rulings removed (written after the last ruling) */
  const trailer = () => `: x-vetobench-blocked=${blocked}\n\n`

  /** the stream cannot go on: record what is held (release none of it), then one error event */
  const fail = (message: string): Effect.Effect<SseStep, AuditWriteError> => {
    stopped = true
    return recordHeld.pipe(
      Effect.map(() => ({ out: [trailer(), messagesErrorEvent("upstream_invalid_response", message, opts.requestId ?? null)], stop: true }))
    )
  }

  /** the block an event refers to by `index`, open; or why there is none */
  const openBlock = (value: Record<string, unknown>): HeldBlock | PassedBlock | string => {
    if (!isIndex(value.index)) return `a ${value.type} event's index is not a non-negative integer`
    const b = blocks.get(value.index)
    if (b === undefined) return `a ${value.type} event names block ${value.index}, which was not started`
    if (b.held ? b.stopped : !b.open) return `a ${value.type} event names block ${value.index}, which has stopped`
    return b
  }

  const onStart = (value: Record<string, unknown>): Effect.Effect<SseStep, AuditWriteError> => {
    if (phase !== "message") return fail(`a content_block_start ${phase === "before" ? "before message_start" : "after message_delta"}`)
    if (!isIndex(value.index)) return fail("a content_block_start's index is not a non-negative integer")
    if (blocks.has(value.index)) return fail(`a second content_block_start for block ${value.index}`)
    const block = value.content_block
    if (!isObject(block) || typeof block.type !== "string") return fail("a content_block_start's content_block is not an object with a type")
    if (block.type === "tool_use") {
      const input = block.input === undefined ? {} : block.input
      const problem = toolUseProblem({ ...block, input }, "a content_block_start's tool_use block")
      if (problem !== null) return fail(problem)
      const b: HeldBlock = {
        held: true,
        start: value,
        block,
        id: block.id as string,
        name: block.name as string,
        input: input as Record<string, unknown>,
        json: "",
        deltas: 0,
        stopped: false
      }
      blocks.set(value.index, b)
      held.push(b)
      return Effect.succeed(step([]))
    }
    const index = next++
    blocks.set(value.index, { held: false, index, open: true })
    return Effect.succeed(step([messagesEvent({ ...value, type: "content_block_start", index })]))
  }

  const onDelta = (value: Record<string, unknown>): Effect.Effect<SseStep, AuditWriteError> => {
    const b = openBlock(value)
    if (typeof b === "string") return fail(b)
    const delta = value.delta
    if (!isObject(delta) || typeof delta.type !== "string") return fail("a content_block_delta's delta is not an object with a type")
    if (!b.held) return Effect.succeed(step([messagesEvent({ ...value, type: "content_block_delta", index: b.index })]))
    if (delta.type !== "input_json_delta" || typeof delta.partial_json !== "string") {
      return fail(`a tool_use block's content_block_delta is not an input_json_delta with a string partial_json`)
    }
    b.json += delta.partial_json
    b.deltas++
    return Effect.succeed(step([]))
  }

  const onStop = (value: Record<string, unknown>): Effect.Effect<SseStep, AuditWriteError> => {
    const b = openBlock(value)
    if (typeof b === "string") return fail(b)
    if (b.held) {
      b.stopped = true
      return Effect.succeed(step([]))
    }
    b.open = false
    return Effect.succeed(step([messagesEvent({ ...value, type: "content_block_stop", index: b.index })]))
  }

  /** the turn is complete: rule the held blocks, emit what survives, fix stop_reason */
  const onMessageDelta = (value: Record<string, unknown>): Effect.Effect<SseStep, AuditWriteError> => {
    if (phase !== "message") return fail(phase === "before" ? "a message_delta before message_start" : "a second message_delta")
    const delta = value.delta
    if (!isObject(delta)) return fail("a message_delta's delta is not an object")
    phase = "delivered"
    if (held.length === 0) return Effect.succeed(step([messagesEvent({ ...value, type: "message_delta" })]))
    const open = held.find((b) => !b.stopped)
    if (open !== undefined) return fail(`a message_delta before the content_block_stop of tool_use block ${JSON.stringify(open.id)}`)
    const inputs: Array<Record<string, unknown>> = []
    for (const b of held) {
      const input = inputOf(b)
      if ("problem" in input) return fail(input.problem)
      inputs.push(input.value)
    }
    return Effect.map(settle(take(), inputs), (s) => {
      if (s.removed > 0 && s.survivors === 0) {
        delta.stop_reason = "end_turn"
        delta.stop_sequence = null
      }
      return step([...s.out, messagesEvent({ ...value, type: "message_delta" })])
    })
  }

  const onData = (data: string, name: string): Effect.Effect<SseStep, AuditWriteError> => {
    if (stopped || done) return Effect.succeed(step([]))
    // an SSE client dispatches no event without data
    if (data === "") return Effect.succeed(step([]))
    const parsed = parseJsonText(data, "an event of the upstream stream")
    if ("problem" in parsed) return fail(parsed.problem)
    const value = parsed.value
    if (!isObject(value) || typeof value.type !== "string" || !EVENT_TYPE.test(value.type)) {
      return fail("an event of the upstream stream is not a JSON object with a plain `type`")
    }
    const type = value.type
    // readers dispatch on the event name or on the data's type: the two must agree ("message" = no name)
    if (name !== "message" && name !== type) return fail(`an event named ${JSON.stringify(name.slice(0, 64))} carries a ${type}`)
    switch (type) {
      case "ping":
        return Effect.succeed(step([messagesEvent({ ...value, type })]))
      case "error":
        // the upstream gave up: what is held is recorded and not released, the error goes on
        done = true
        return recordHeld.pipe(Effect.map(() => ({ out: [trailer(), messagesEvent({ ...value, type })], stop: true })))
      case "message_start": {
        if (phase !== "before") return fail("a second message_start")
        const message = value.message
        if (!isObject(message)) return fail("a message_start's message is not an object")
        // the client starts its message from this one: blocks in it would bypass the gate
        if (message.content !== undefined && !(Array.isArray(message.content) && message.content.length === 0)) {
          return fail("a message_start's message carries content blocks")
        }
        phase = "message"
        return Effect.succeed(step([messagesEvent({ ...value, type })]))
      }
      case "content_block_start":
        return onStart(value)
      case "content_block_delta":
        return onDelta(value)
      case "content_block_stop":
        return onStop(value)
      case "message_delta":
        return onMessageDelta(value)
      case "message_stop":
        if (phase === "before") return fail("a message_stop before message_start")
        if (held.length > 0) return fail("a message_stop before message_delta")
        done = true
        return Effect.succeed({ out: [trailer(), messagesEvent({ ...value, type })], stop: true })
      default:
        // an event type this gate does not know carries no block a client reads
        if (phase === "before") return fail(`a ${type} event before message_start`)
        return Effect.succeed(step([messagesEvent({ ...value, type })]))
    }
  }

  const over = () => done || stopped
  const endings = streamEndings({ over, stop: () => (stopped = true), fail, recordHeld, last: "message_stop" })
  return { onData, ...endings, open: () => !over(), blocked: () => blocked }
}

/**
 * Upstream SSE bytes → gated Messages SSE text, written to `out`. Comments and `retry:` lines are dropped. The stream
 * stops at message_stop or at an error event; if the upstream fails or the client leaves first, the
 * blocks held so far are still ruled and recorded (and none is released).
 */
export const gateMessagesStream = <E>(upstream: Stream.Stream<Uint8Array, E>, opts: StreamGateOptions, out: SseOut): Effect.Effect<void, E | AuditWriteError> =>
  pumpSse(upstream, makeMessagesGate(opts), opts, out)
