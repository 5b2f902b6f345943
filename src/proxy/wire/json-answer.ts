/**
 * What every wire format's answer reading shares: a JSON text parsed with the proxy's depth limit,
 * and the error for a 200 answer the gate cannot rule on.
 */
import { Data, Effect } from "effect"
import type { AuditWriteError } from "../../../layers/AuditSink.js"
import { blockedNotes, type GateRequest, type GateShape } from "../../gate/Gate.js"
import { isObject } from "../../domain/is-object.js"
import { jsonTextDepth, MAX_JSON_DEPTH, tooDeep } from "../../domain/json-depth.js"

/** A parsed JSON text, or why it cannot be read (not JSON, nested too deep). */
export const parseJsonText = (text: string, what: string): { readonly value: unknown } | { readonly problem: string } => {
  if (jsonTextDepth(text) > MAX_JSON_DEPTH) return { problem: tooDeep(what) }
  try {
    return { value: JSON.parse(text) as unknown }
  } catch (e) {
    return { problem: `${what} is not JSON (${e instanceof Error ? e.message : String(e)}): ${text.slice(0, 120)}` }
  }
}

/** A 200 answer the gate cannot rule on; the route answers 502 `upstream_invalid_response`. */
export class InvalidAnswer extends Data.TaggedError("InvalidAnswer")<{ readonly message: string }> {}

/** What a format's buffered gate returns: the text the client gets and how many calls were removed. */
export interface GatedText {
  readonly text: string
  readonly blocked: number
}

/** A 200 answer as the JSON object the gate rules on, or why it is not one. */
export const answerObject = (text: string): Record<string, unknown> | InvalidAnswer => {
  const parsed = parseJsonText(text, "the upstream answer")
  if ("problem" in parsed) return new InvalidAnswer({ message: parsed.problem })
  return isObject(parsed.value) ? parsed.value : new InvalidAnswer({ message: "the upstream answer is not a JSON object" })
}

/**
 * A buffered answer whose calls are one turn (Responses, Messages): parse it, find the calls (or why
 * its shape cannot be ruled on), rule and record them together, let the format strip the blocked
 * ones (`strip` gets the call positions removed → refusal sentence), and return the value the gate
 * read, serialized once.
 */
export const gateOneTurn = <F extends { readonly call: unknown }>(
  gate: GateShape,
  req: GateRequest,
  text: string,
  find: (answer: Record<string, unknown>) => ReadonlyArray<F> | string,
  strip: (answer: Record<string, unknown>, found: ReadonlyArray<F>, removed: ReadonlyMap<number, string>) => void
): Effect.Effect<GatedText, AuditWriteError | InvalidAnswer> =>
  Effect.suspend((): Effect.Effect<GatedText, AuditWriteError | InvalidAnswer> => {
    const answer = answerObject(text)
    if (answer instanceof InvalidAnswer) return Effect.fail(answer)
    const found = find(answer)
    if (typeof found === "string") return Effect.fail(new InvalidAnswer({ message: `the upstream answer's ${found}` }))
    if (found.length === 0) return Effect.succeed({ text: JSON.stringify(answer), blocked: 0 })
    return Effect.map(gate.ruleChoice(req, 0, found.map((f) => f.call)), (rulings) => {
      const removed = blockedNotes(rulings)
      if (removed.size > 0) strip(answer, found, removed)
      return { text: JSON.stringify(answer), blocked: removed.size }
    })
  })
