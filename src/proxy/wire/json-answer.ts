/**
 * What every wire format's answer reading shares: a JSON text parsed with the proxy's depth limit,
 * and the error for a 200 answer the gate cannot rule on.
 */
import { Data } from "effect"
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
