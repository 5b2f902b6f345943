/**
 * Gated streaming (architecture decision 1). Text deltas pass through as they arrive (original
 * bytes); tool-call deltas are assembled per choice and held, the choice's finish_reason with them;
 * when a choice finishes, the gate rules its calls exactly as for a non-streaming response, then
 * the surviving calls (or the refusal text) and the finish chunk are emitted; then `[DONE]`.
 */
import * as Sse from "@effect/experimental/Sse"
import { Effect, Stream } from "effect"
import { type PartialRefusal, refusalNotes } from "../domain/refusal.js"
import { blockedNotes, type GateRequest, type GateShape } from "../gate/Gate.js"
import type { AuditWriteError } from "../../layers/AuditSink.js"
import { isObject } from "../domain/is-object.js"

interface PendingCall {
  id: string | null
  type: string
  name: string
  arguments: string
}

interface ChoiceState {
  calls: Array<PendingCall>
  /** text other than whitespace has been streamed in this choice (a refusal note then starts on a new paragraph) */
  hasText: boolean
  finish: string | null
}

const hasText = (content: string): boolean => content.trim() !== ""

/** a choice index other than 0 in a chunk's text (escaped text inside strings never matches) */
const OTHER_INDEX = /"index"\s*:(?!\s*0\s*[,}])/

const frame = (data: string) => `data: ${data}\n\n`

export interface SseGateOptions {
  readonly gate: GateShape
  readonly request: GateRequest
  readonly partial: PartialRefusal
}

/** The per-stream state machine; `feed` and `end` return the SSE text to send next. */
export const makeSseGate = (opts: SseGateOptions) => {
  const choices = new Map<number, ChoiceState>()
  let envelope: Record<string, unknown> = { object: "chat.completion.chunk" }
  let buffering = 0
  let blocked = 0
  let done = false

  const state = (i: number): ChoiceState => {
    let s = choices.get(i)
    if (!s) {
      s = { calls: [], hasText: false, finish: null }
      choices.set(i, s)
    }
    return s
  }

  const chunk = (index: number, delta: Record<string, unknown>, finish: string | null) =>
    frame(JSON.stringify({ ...envelope, choices: [{ index, delta, logprobs: null, finish_reason: finish }] }))

  /** rule a finished choice and render what the client gets instead of the held deltas */
  const settle = (index: number, s: ChoiceState): Effect.Effect<Array<string>, AuditWriteError> => {
    const raw = s.calls.map((c) => ({ id: c.id, type: c.type, function: { name: c.name, arguments: c.arguments } }))
    s.calls = []
    buffering--
    return opts.gate.ruleChoice(opts.request, index, raw).pipe(
      Effect.map((rulings) => {
        const removed = blockedNotes(rulings)
        blocked += removed.size
        const kept = raw.filter((_, i) => !removed.has(i))
        const notes = refusalNotes(removed)
        const out: Array<string> = []
        if (removed.size > 0 && (kept.length === 0 || opts.partial === "content")) {
          out.push(chunk(index, { content: s.hasText ? `\n\n${notes}` : notes }, null))
        }
        if (kept.length > 0) {
          out.push(chunk(index, { tool_calls: kept.map((c, k) => ({ index: k, ...c })) }, null))
        }
        const finish = removed.size === 0 ? (s.finish ?? "tool_calls") : kept.length > 0 ? "tool_calls" : "stop"
        out.push(chunk(index, {}, finish))
        return out
      })
    )
  }

  const onData = (data: string): Effect.Effect<Array<string>, AuditWriteError> => {
    if (data.trim() === "[DONE]") {
      done = true
      return flush.pipe(Effect.map((out) => [...out, `: x-vetobench-blocked=${blocked}\n\n`, frame("[DONE]")]))
    }
    if (buffering === 0 && !data.includes("tool_calls")) {
      trackContent(data)
      return Effect.succeed([frame(data)])
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(data)
    } catch {
      return Effect.succeed([frame(data)])
    }
    if (!isObject(parsed) || !Array.isArray(parsed.choices)) return Effect.succeed([frame(data)])
    const { choices: list, ...rest } = parsed
    envelope = { ...rest }
    delete envelope.usage
    let changed = false
    const ready: Array<number> = []
    for (const c of list) {
      if (!isObject(c)) continue
      const index = typeof c.index === "number" ? c.index : 0
      const s = state(index)
      const delta = isObject(c.delta) ? c.delta : undefined
      if (delta && typeof delta.content === "string" && !s.hasText) s.hasText = hasText(delta.content)
      if (delta && Array.isArray(delta.tool_calls)) {
        if (s.calls.length === 0) buffering++
        for (const tc of delta.tool_calls) accumulate(s, tc)
        delete delta.tool_calls
        changed = true
      }
      if (s.calls.length > 0 && typeof c.finish_reason === "string") {
        s.finish = c.finish_reason
        c.finish_reason = null
        changed = true
        ready.push(index)
      }
    }
    const out: Array<string> = []
    if (!changed) out.push(frame(data))
    else {
      const kept = list.filter((c) => !(isObject(c) && isEmptyChoice(c)))
      if (kept.length > 0 || parsed.usage !== undefined) out.push(frame(JSON.stringify({ ...parsed, choices: kept })))
    }
    return Effect.forEach(ready, (i) => settle(i, state(i))).pipe(Effect.map((parts) => [...out, ...parts.flat()]))
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
          const s = state(typeof c.index === "number" ? c.index : 0)
          if (!s.hasText) s.hasText = hasText(c.delta.content)
        }
      }
    } catch {
      // not JSON: passed through untouched
    }
  }

  /** rule every choice still holding calls (stream ended without a finish_reason) */
  const flush = Effect.suspend(() =>
    Effect.forEach(
      [...choices.entries()].filter(([, s]) => s.calls.length > 0),
      ([i, s]) => settle(i, s)
    ).pipe(Effect.map((parts) => parts.flat()))
  )

  const end = Effect.suspend(() =>
    done ? Effect.succeed<Array<string>>([]) : flush.pipe(Effect.map((out) => [...out, `: x-vetobench-blocked=${blocked}\n\n`]))
  )

  return { onData, end, blocked: () => blocked }
}

const accumulate = (s: ChoiceState, tc: unknown) => {
  if (!isObject(tc)) return
  const i = typeof tc.index === "number" ? tc.index : s.calls.length
  let call = s.calls[i]
  if (!call) {
    call = { id: null, type: "function", name: "", arguments: "" }
    s.calls[i] = call
  }
  if (typeof tc.id === "string") call.id = tc.id
  if (typeof tc.type === "string") call.type = tc.type
  const fn = isObject(tc.function) ? tc.function : undefined
  if (fn && typeof fn.name === "string") call.name += fn.name
  if (fn && typeof fn.arguments === "string") call.arguments += fn.arguments
}

const isEmptyChoice = (c: Record<string, unknown>) =>
  c.finish_reason == null && (!isObject(c.delta) || Object.values(c.delta).every((v) => v == null))

/** Upstream SSE bytes → gated SSE text. Comments and `retry:` lines are dropped. */
export const gateSseStream = <E>(
  upstream: Stream.Stream<Uint8Array, E>,
  opts: SseGateOptions
): Stream.Stream<string, E | AuditWriteError> =>
  Stream.suspend(() => {
    const g = makeSseGate(opts)
    const events: Array<string> = []
    const parser = Sse.makeParser((ev) => {
      if (ev._tag === "Event") events.push(ev.data)
    })
    const body = upstream.pipe(
      Stream.decodeText(),
      Stream.mapEffect((text) => {
        parser.feed(text)
        const batch = events.splice(0)
        return Effect.forEach(batch, g.onData).pipe(Effect.map((parts) => parts.flat()))
      }),
      Stream.flattenIterables
    )
    return Stream.concat(body, Stream.fromIterableEffect(g.end))
  })
