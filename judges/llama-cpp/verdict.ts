/**
 * The `llama_cpp` judge's answer: the JSON schema its generation is constrained to, and reading
 * the answer back.
 *
 * The grammar (node-llama-cpp's JSON-schema grammar) only lets the model write JSON of this
 * schema, so a finished answer always parses. `decision` and `category` come first: an answer cut
 * by `max_tokens` can then only be cut inside `reason` (the judge's smallest `max_tokens` leaves
 * room for the two), and is read as the decision and category it gave, with the reason up to the
 * cut. (This is the opposite order from `llm_json`'s schema, whose served models are not cut this
 * way; the system prompt's key order is overridden by the grammar.)
 */
import { Either } from "effect"
import { CATEGORIES, type Category, toCategory } from "../../src/domain/verdict.js"
import { isObject } from "../../src/domain/is-object.js"

export const REASON_MAX_CHARS = 300

export const LLAMA_VERDICT_SCHEMA = {
  type: "object",
  properties: {
    decision: { type: "string", enum: ["allow", "deny"] },
    category: { type: "string", enum: [...CATEGORIES] },
    reason: { type: "string", maxLength: REASON_MAX_CHARS }
  },
  required: ["decision", "category", "reason"],
  additionalProperties: false
} as const

/**
 * Tokens the fixed part of an answer may take before `reason`'s text (`{`, the two keys with their
 * values, the grammar's bounded whitespace, `"reason": "`): the smallest `max_tokens` the judge accepts.
 */
export const MIN_MAX_TOKENS = 32

export interface LlamaVerdict {
  readonly decision: "allow" | "deny"
  readonly category: Category
  readonly reason: string
  /** false: the answer stopped inside `reason` (cut by max_tokens) and was read up to there */
  readonly complete: boolean
}

const DECISION = /^\s*\{\s*"decision"\s*:\s*"(allow|deny)"/
const CATEGORY = /"category"\s*:\s*"([a-z_]+)"/
const REASON = /"reason"\s*:\s*"((?:[^"\\]|\\.)*)/

/** A JSON string body cut anywhere, as text: a trailing lone `\` or unfinished `\uXXXX` is dropped. */
const cutStringBody = (body: string): string => {
  const trimmed = body.replace(/\\u[0-9a-fA-F]{0,3}$/, "").replace(/(^|[^\\])((?:\\\\)*)\\$/, "$1$2")
  try {
    const value: unknown = JSON.parse(`"${trimmed}"`)
    return typeof value === "string" ? value : trimmed
  } catch {
    return trimmed
  }
}

/**
 * Read an answer. A whole answer is JSON of the schema; one cut by `max_tokens` (`cut`) is read up
 * to the cut. Left: why it holds no decision (with the grammar, only an answer cut before it).
 */
export const parseLlamaVerdict = (text: string, cut: boolean): Either.Either<LlamaVerdict, string> => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    value = undefined
  }
  if (isObject(value) && (value.decision === "allow" || value.decision === "deny")) {
    return Either.right({
      decision: value.decision,
      category: toCategory(value.category),
      reason: typeof value.reason === "string" ? value.reason : "",
      complete: true
    })
  }
  const decision = DECISION.exec(text)?.[1]
  if (decision !== "allow" && decision !== "deny") {
    return Either.left(
      `no decision in the model's answer${cut ? " (cut by max_tokens before the decision)" : ""}: ${JSON.stringify(text.slice(0, 200))}`
    )
  }
  const reason = REASON.exec(text)?.[1]
  return Either.right({
    decision,
    category: toCategory(CATEGORY.exec(text)?.[1]),
    reason: `${reason === undefined ? "" : cutStringBody(reason)} …[${cut ? "cut at max_tokens" : "answer ended early"}]`.trimStart(),
    complete: false
  })
}
