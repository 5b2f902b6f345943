/**
 * The chat-completions wire format, as the gate must read it: where a client finds callable tool
 * calls in an answer (`choices[].message.tool_calls` and the legacy `choices[].message.function_call`;
 * in a streamed chunk `choices[].delta.tool_calls` / `.function_call`), what shape an answer must
 * have for that reading to be unambiguous, and how rulings change a message.
 *
 * The rule the proxy keeps (docs/architecture.md, "the trust boundary"): in a logged arm, every
 * callable call that any conforming JSON parser finds in what the proxy returns was ruled, recorded
 * and released. So the proxy decides on the value JSON.parse gives, and returns that value
 * re-serialized (one reading for every parser: no duplicate keys, no escapes to read differently),
 * except where {@link mayCarryCalls} proves that no parser can find a call in the upstream's bytes.
 */
import { Effect } from "effect"
import type { AuditWriteError } from "../../../layers/AuditSink.js"
import { isObject } from "../../domain/is-object.js"
import { type PartialRefusal, refusalNotes, withNotes } from "../../domain/refusal.js"
import { blockedNotes, type GateRequest, type GateShape } from "../../gate/Gate.js"
import { answerObject, type GatedText, InvalidAnswer } from "./json-answer.js"

/**
 * False only when no JSON parser can find a key named `tool_calls` or `function_call` in `text`:
 * such a key is either spelled out literally or written with a `\u` escape (the other JSON escapes
 * stand for characters that are not in these names). Valid or not, text for which this is false
 * holds no callable call under any reading (JSON.parse, Python's json, first-wins duplicate keys).
 */
export const mayCarryCalls = (text: string): boolean =>
  text.includes("tool_calls") || text.includes("function_call") || text.includes("\\u")

/** The calls a client can find in one choice's message (or a chunk's delta). */
export interface FoundCalls {
  /** `tool_calls` entries, then the legacy `function_call` as a call of type function */
  readonly calls: ReadonlyArray<unknown>
  readonly toolCalls: number
  readonly functionCall: boolean
}

const NONE: FoundCalls = { calls: [], toolCalls: 0, functionCall: false }

/**
 * The calls of a message or delta; a string naming the field when its shape is not one a client
 * reads unambiguously (`tool_calls` not an array, `function_call` not an object; null is absent).
 */
export const callsIn = (holder: unknown, path: string): FoundCalls | string => {
  if (holder === undefined || holder === null) return NONE
  if (!isObject(holder)) return `${path} is not an object`
  const tc = holder.tool_calls
  const fc = holder.function_call
  if (tc !== undefined && tc !== null && !Array.isArray(tc)) return `${path}.tool_calls is not an array`
  if (fc !== undefined && fc !== null && !isObject(fc)) return `${path}.function_call is not an object`
  const toolCalls: ReadonlyArray<unknown> = Array.isArray(tc) ? tc : []
  if (toolCalls.length === 0 && !isObject(fc)) return NONE
  return {
    calls: isObject(fc) ? [...toolCalls, { id: null, type: "function", function: fc }] : toolCalls,
    toolCalls: toolCalls.length,
    functionCall: isObject(fc)
  }
}

/** One choice of an answer whose message carries calls. */
export interface ChoiceWithCalls extends FoundCalls {
  readonly choice: Record<string, unknown>
  readonly message: Record<string, unknown>
  /** the choice's `index` (its position when it has none) */
  readonly index: number
}

/**
 * The choices of a chat completion that carry calls, or why the answer's shape is not one the gate
 * can rule on (`choices` not an array, a choice not an object, …).
 */
export const choicesWithCalls = (answer: Record<string, unknown>): ReadonlyArray<ChoiceWithCalls> | string => {
  const choices = answer.choices
  if (choices === undefined || choices === null) return []
  if (!Array.isArray(choices)) return "choices is not an array"
  const out: Array<ChoiceWithCalls> = []
  for (let i = 0; i < choices.length; i++) {
    const choice: unknown = choices[i]
    if (!isObject(choice)) return `choices[${i}] is not an object`
    const found = callsIn(choice.message, `choices[${i}].message`)
    if (typeof found === "string") return found
    if (found.calls.length === 0) continue
    out.push({ ...found, choice, message: choice.message as Record<string, unknown>, index: typeof choice.index === "number" ? choice.index : i })
  }
  return out
}

/**
 * Remove the calls whose position (in {@link FoundCalls.calls} order) is in `removed` from a message,
 * in place, and add the refusal notes (always when nothing survives, else per `partial`). Returns the
 * finish_reason: `tool_calls` / `function_call` while a call survives, `stop` when none does.
 */
export const stripMessage = (
  message: Record<string, unknown>,
  found: FoundCalls,
  removed: ReadonlyMap<number, string>,
  partial: PartialRefusal
): "tool_calls" | "function_call" | "stop" => {
  const tools = Array.isArray(message.tool_calls) ? message.tool_calls : []
  const keptTools = tools.filter((_, i) => !removed.has(i))
  const keepFunction = found.functionCall && !removed.has(found.toolCalls)
  if (found.toolCalls > 0) message.tool_calls = keptTools.length > 0 ? keptTools : null
  if (found.functionCall && !keepFunction) delete message.function_call
  const notes = refusalNotes(removed)
  if (keptTools.length === 0 && !keepFunction) {
    message.content = withNotes(message.content, notes)
    return "stop"
  }
  if (partial === "content") message.content = withNotes(message.content, notes)
  return keptTools.length > 0 ? "tool_calls" : "function_call"
}

/**
 * Rule every choice of a parsed chat completion that carries calls, record them, and strip the
 * blocked ones in place. Returns the number of calls removed.
 */
export const gateChatAnswer = (
  gate: GateShape,
  req: GateRequest,
  choices: ReadonlyArray<ChoiceWithCalls>,
  partial: PartialRefusal
): Effect.Effect<number, AuditWriteError> => {
  const one = (c: ChoiceWithCalls) =>
    Effect.map(gate.ruleChoice(req, c.index, c.calls), (rulings) => {
      const removed = blockedNotes(rulings)
      if (removed.size > 0) c.choice.finish_reason = stripMessage(c.message, c, removed, partial)
      return removed.size
    })
  // the usual answer has one choice: ruled in this fiber, without forking one per choice
  if (choices.length === 1) return one(choices[0]!)
  return Effect.forEach(choices, one, { concurrency: "unbounded" }).pipe(Effect.map((counts) => counts.reduce((a, b) => a + b, 0)))
}

/**
 * A logged arm's non-streamed answer: parse it, check its shape, rule and record its calls, strip the
 * blocked ones. The text returned is the value the gate read, serialized once, or, when
 * {@link mayCarryCalls} proves that no parser can find a call in the upstream's bytes (the fast path),
 * those bytes unchanged. The fast path skips only the serialization: it fails exactly where the slow
 * path fails.
 * `fastPath: false` always takes the slow path (the property tests compare the two).
 */
export const gateChatText = (
  gate: GateShape,
  req: GateRequest,
  text: string,
  partial: PartialRefusal,
  options: { readonly fastPath?: boolean } = {}
): Effect.Effect<GatedText, AuditWriteError | InvalidAnswer> =>
  Effect.suspend((): Effect.Effect<GatedText, AuditWriteError | InvalidAnswer> => {
    const answer = answerObject(text)
    if (answer instanceof InvalidAnswer) return Effect.fail(answer)
    const choices = choicesWithCalls(answer)
    if (typeof choices === "string") return Effect.fail(new InvalidAnswer({ message: `the upstream answer's ${choices}` }))
    if (options.fastPath !== false && !mayCarryCalls(text)) return Effect.succeed({ text, blocked: 0 })
    return Effect.map(gateChatAnswer(gate, req, choices, partial), (blocked) => ({ text: JSON.stringify(answer), blocked }))
  })
