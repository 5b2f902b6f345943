/**
 * Gated streaming (architecture decision 1). Text deltas pass through as they arrive (original
 * bytes); tool-call deltas are assembled per choice and held, the choice's finish_reason with them;
 * when a choice finishes, the gate rules its calls exactly as for a non-streaming response, then
 * the surviving calls (or the refusal text) and the finish chunk are emitted; then `[DONE]`.
 */
import { Effect, type Stream } from "effect"
import { type PartialRefusal, refusalNotes } from "../../domain/refusal.js"
import { blockedNotes, type GateRequest, type GateShape } from "../../gate/Gate.js"
import type { AuditWriteError } from "../../../layers/AuditSink.js"
import { isObject } from "../../domain/is-object.js"
import { errorBody } from "../errors.js"
import { callsIn, mayCarryCalls } from "./chat.js"
import { parseJsonText } from "./json-answer.js"
import { pumpSse, type SseOut, type SseStep, streamEndings } from "./sse-driver.js"

interface PendingCall {
  id: string | null
  type: string
  name: string
  arguments: string
}

interface ChoiceState {
  /** tool-call deltas assembled by their `index`, emitted in index order */
  calls: Map<number, PendingCall>
  /** the legacy `function_call` delta, assembled the same way */
  fn: PendingCall | null
  /** text other than whitespace has been streamed in this choice (a refusal note then starts on a new paragraph) */
  hasText: boolean
  finish: string | null
  /** its calls were ruled and emitted: a client has the calls of this choice numbered from 0 */
  settled: boolean
}

const hasText = (content: string): boolean => content.trim() !== ""
const holding = (s: ChoiceState): boolean => s.calls.size > 0 || s.fn !== null

/** a choice index other than 0 in a chunk's text (escaped text inside strings never matches) */
const OTHER_INDEX = /"index"\s*:(?!\s*0\s*[,}])/

/** One SSE event carrying `data` (a line break in it becomes a further `data:` line, as SSE defines). */
export const frame = (data: string) => `data: ${data.includes("\n") ? data.split("\n").join("\ndata: ") : data}\n\n`

/** The stream is over for the client as its SDKs read it: an event whose data starts with `[DONE]`. */
export const isDone = (data: string): boolean => data.startsWith("[DONE]")

const isIndex = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0

export interface SseGateOptions {
  readonly gate: GateShape
  readonly request: GateRequest
  readonly partial: PartialRefusal
  /** the request id, carried by error events */
  readonly requestId?: string
  /** false: parse every event (the slow path), never pass bytes on as they came; the property tests compare the two */
  readonly fastPath?: boolean
  /** one event larger than this (`proxy.max_answer_bytes`, counted in UTF-16 units) ends the stream with an error event */
  readonly maxEventSize?: number
}

/**
 * The per-stream state machine; `onData` and `end` return the SSE text to send next.
 *
 * What the client parses is only ever what this gate wrote: every event is re-framed; tool-call and
 * function-call deltas are never passed on as they came, but held, ruled and re-emitted whole; an
 * event that may name a call (see `mayCarryCalls`) is parsed and re-serialized, so every parser reads
 * the value the gate read. An event the gate cannot read, or a stream that ends before `[DONE]`, ends
 * with an error event: the calls held so far are ruled and recorded, and none is released.
 */
export const makeSseGate = (opts: SseGateOptions) => {
  const choices = new Map<number, ChoiceState>()
  let envelope: Record<string, unknown> = { object: "chat.completion.chunk" }
  let buffering = 0
  let blocked = 0
  let done = false
  let stopped = false

  const state = (i: number): ChoiceState => {
    let s = choices.get(i)
    if (!s) {
      s = { calls: new Map(), fn: null, hasText: false, finish: null, settled: false }
      choices.set(i, s)
    }
    return s
  }

  const chunk = (index: number, delta: Record<string, unknown>, finish: string | null) =>
    frame(JSON.stringify({ ...envelope, choices: [{ index, delta, logprobs: null, finish_reason: finish }] }))

  const asCall = (c: PendingCall) =>
    c.type === "custom"
      ? { id: c.id, type: c.type, custom: { name: c.name, input: c.arguments } }
      : { id: c.id, type: c.type, function: { name: c.name, arguments: c.arguments } }

  /** rule a finished choice and render what the client gets instead of the held deltas */
  const settle = (index: number, s: ChoiceState): Effect.Effect<Array<string>, AuditWriteError> => {
    const tools = [...s.calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => asCall(c))
    const fn = s.fn
    const raw: Array<unknown> = fn === null ? tools : [...tools, { ...asCall(fn), id: null }]
    s.calls = new Map()
    s.fn = null
    s.settled = true
    buffering--
    return opts.gate.ruleChoice(opts.request, index, raw).pipe(
      Effect.map((rulings) => {
        const removed = blockedNotes(rulings)
        blocked += removed.size
        const kept = tools.filter((_, i) => !removed.has(i))
        const keptFn = fn !== null && !removed.has(tools.length) ? fn : null
        const survivors = kept.length + (keptFn !== null ? 1 : 0)
        const notes = refusalNotes(removed)
        const out: Array<string> = []
        if (removed.size > 0 && (survivors === 0 || opts.partial === "content")) {
          out.push(chunk(index, { content: s.hasText ? `\n\n${notes}` : notes }, null))
        }
        if (kept.length > 0) out.push(chunk(index, { tool_calls: kept.map((c, k) => ({ index: k, ...c })) }, null))
        if (keptFn !== null) out.push(chunk(index, { function_call: { name: keptFn.name, arguments: keptFn.arguments } }, null))
        const natural = kept.length > 0 ? "tool_calls" : keptFn !== null ? "function_call" : "stop"
        out.push(chunk(index, {}, removed.size === 0 ? (s.finish ?? natural) : natural))
        return out
      })
    )
  }

  /** rule and record every choice still holding calls; their renderings */
  const settleAll = Effect.suspend(() =>
    Effect.forEach(
      [...choices.entries()].filter(([, s]) => holding(s)),
      ([i, s]) => settle(i, s)
    ).pipe(Effect.map((parts) => parts.flat()))
  )

  const errorEvent = (message: string) =>
    frame(errorBody("upstream_invalid_response", message, opts.requestId ?? null))

  /** the stream cannot go on: record what is held (release none of it), then one error event */
  const fail = (message: string): Effect.Effect<SseStep, AuditWriteError> => {
    stopped = true
    // the count is read once the held calls are ruled (they are in it)
    return settleAll.pipe(Effect.map(() => ({ out: [`: x-vetobench-blocked=${blocked}\n\n`, errorEvent(message)], stop: true })))
  }

  const step = (out: ReadonlyArray<string>): SseStep => ({ out, stop: false })

  const onData = (data: string): Effect.Effect<SseStep, AuditWriteError> => {
    if (stopped || done) return Effect.succeed(step([]))
    // an SSE client dispatches no event without data
    if (data === "") return Effect.succeed(step([]))
    if (isDone(data)) {
      done = true
      return settleAll.pipe(Effect.map((out) => ({ out: [...out, `: x-vetobench-blocked=${blocked}\n\n`, frame("[DONE]")], stop: true })))
    }
    const readable = opts.fastPath === false || mayCarryCalls(data)
    // no parser can find a call here (valid JSON or not): the bytes go on as they came
    if (!readable && buffering === 0) {
      trackContent(data)
      return Effect.succeed(step([frame(data)]))
    }
    const parsed = parseJsonText(data, "an event of the upstream stream")
    if ("problem" in parsed) return readable ? fail(parsed.problem) : Effect.succeed(step([frame(data)]))
    const value = parsed.value
    if (!isObject(value)) return readable ? fail("an event of the upstream stream is not a JSON object") : Effect.succeed(step([frame(data)]))
    const list = value.choices
    if (list !== undefined && list !== null && !Array.isArray(list)) return fail("an event's choices is not an array")
    const ready: Array<number> = []
    let changed = false
    const items: ReadonlyArray<unknown> = Array.isArray(list) ? list : []
    for (let k = 0; k < items.length; k++) {
      const c = items[k]
      if (!isObject(c)) return fail(`an event's choices[${k}] is not an object`)
      if (c.index !== undefined && !isIndex(c.index)) return fail(`an event's choices[${k}].index is not a non-negative integer`)
      const message = callsIn(c.message, `choices[${k}].message`)
      if (typeof message === "string" || message.calls.length > 0) return fail(`an event's choices[${k}] carries a message with calls in a stream`)
      const found = callsIn(c.delta, `choices[${k}].delta`)
      if (typeof found === "string") return fail(`an event's ${found}`)
      const index = c.index ?? 0
      const s = state(index)
      const delta = isObject(c.delta) ? c.delta : undefined
      if (delta && typeof delta.content === "string" && !s.hasText) s.hasText = hasText(delta.content)
      if (delta && found.calls.length > 0) {
        // a client numbers a choice's calls once: calls after the choice finished would be read as
        // parts of the calls already released (the SDKs join deltas by index)
        if (s.settled) return fail(`an event's choices[${k}] continues with calls after its finish_reason`)
        if (!holding(s)) buffering++
        if (Array.isArray(delta.tool_calls)) {
          for (const tc of delta.tool_calls) {
            const problem = accumulate(s, tc)
            if (problem !== null) return fail(`an event's choices[${k}].delta.tool_calls: ${problem}`)
          }
        }
        if (isObject(delta.function_call)) s.fn = merge(s.fn ?? { id: null, type: "function", name: "", arguments: "" }, delta.function_call)
      }
      if (delta && (delta.tool_calls !== undefined || delta.function_call !== undefined)) {
        delete delta.tool_calls
        delete delta.function_call
        changed = true
      }
      if (holding(s) && typeof c.finish_reason === "string") {
        s.finish = c.finish_reason
        c.finish_reason = null
        changed = true
        ready.push(index)
      }
    }
    const out: Array<string> = []
    if (!changed) out.push(frame(readable ? JSON.stringify(value) : data))
    else {
      const kept = items.filter((c) => !(isObject(c) && isEmptyChoice(c)))
      if (kept.length > 0 || value.usage !== undefined) out.push(frame(JSON.stringify({ ...value, choices: kept })))
    }
    const { choices: _, ...rest } = value
    envelope = { ...rest }
    delete envelope.usage
    // no choice finished here (most events): the step is ready now, no ruling to run
    if (ready.length === 0) return Effect.succeed(step(out))
    return Effect.forEach(ready, (i) => settle(i, state(i))).pipe(Effect.map((parts) => step([...out, ...parts.flat()])))
  }

  /**
   * Note which choices have streamed text. Only the enforce arm removes calls (and writes a refusal
   * note after the text); a chunk is parsed only while its choices may still lack text.
   */
  const enforce = opts.request.arm === "enforce"
  const trackContent = (data: string) => {
    if (!enforce || !data.includes('"content"')) return
    if (choices.get(0)?.hasText === true && !OTHER_INDEX.test(data)) return
    try {
      const parsed: unknown = JSON.parse(data)
      if (!isObject(parsed) || !Array.isArray(parsed.choices)) return
      for (const c of parsed.choices) {
        if (isObject(c) && isObject(c.delta) && typeof c.delta.content === "string") {
          const s = state(isIndex(c.index) ? c.index : 0)
          if (!s.hasText) s.hasText = hasText(c.delta.content)
        }
      }
    } catch {
      // not JSON: passed through untouched
    }
  }

  const over = () => done || stopped
  const endings = streamEndings({ over, stop: () => (stopped = true), fail, recordHeld: settleAll, last: "[DONE]" })
  return { onData, ...endings, open: () => !over(), blocked: () => blocked }
}

/** add one tool-call delta to its call (by `index`); why it cannot be read, or null */
const accumulate = (s: ChoiceState, tc: unknown): string | null => {
  if (!isObject(tc)) return "an entry is not an object"
  if (tc.index !== undefined && !isIndex(tc.index)) return "an entry's index is not a non-negative integer"
  const i = tc.index ?? s.calls.size
  s.calls.set(i, merge(s.calls.get(i) ?? { id: null, type: "function", name: "", arguments: "" }, tc.function, tc))
  return null
}

const merge = (call: PendingCall, fn: unknown, tc?: Record<string, unknown>): PendingCall => {
  if (tc !== undefined && typeof tc.id === "string") call.id = tc.id
  if (tc !== undefined && typeof tc.type === "string") call.type = tc.type
  if (isObject(fn) && typeof fn.name === "string") call.name += fn.name
  if (isObject(fn) && typeof fn.arguments === "string") call.arguments += fn.arguments
  // a custom tool's deltas carry `custom: {name, input}`
  if (tc !== undefined && isObject(tc.custom)) {
    if (tc.type === undefined) call.type = "custom"
    if (typeof tc.custom.name === "string") call.name += tc.custom.name
    if (typeof tc.custom.input === "string") call.arguments += tc.custom.input
  }
  return call
}

const isEmptyChoice = (c: Record<string, unknown>) =>
  c.finish_reason == null && (!isObject(c.delta) || Object.values(c.delta).every((v) => v == null))

/**
 * Upstream SSE bytes → gated SSE text, written to `out`. Comments and `retry:` lines are dropped. The stream stops at
 * `[DONE]` or at an error event; if the upstream fails or the client leaves first, the calls held so
 * far are still ruled and recorded (and none is released).
 */
export const gateSseStream = <E>(upstream: Stream.Stream<Uint8Array, E>, opts: SseGateOptions, out: SseOut): Effect.Effect<void, E | AuditWriteError> =>
  pumpSse(upstream, makeSseGate(opts), opts, out)
