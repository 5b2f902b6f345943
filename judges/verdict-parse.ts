/**
 * Reading a judge model's reply: `<think>` stripping, the chat response's content and usage, and
 * the JSON verdict of the `llm_json` judge (reference §4.3, with nested objects recovered: §17.25).
 */
import { Either } from "effect"
import { type Category, toCategory } from "../src/domain/verdict.js"
import { isObject } from "../src/domain/is-object.js"

export interface ParsedVerdict {
  readonly decision: "allow" | "deny"
  readonly category: Category
  readonly reason: string
}

const THINK = /<think>[\s\S]*?<\/think>/g

/** Remove every `<think>…</think>` block (non-greedy, across lines), then trim. */
export const stripThink = (text: string): string => text.replace(THINK, "").trim()

/** `choices[0].message.content` of a chat response ("" when absent or not a string). */
export const replyContent = (response: Record<string, unknown>): string => {
  const choices = response.choices
  const first: unknown = Array.isArray(choices) ? choices[0] : undefined
  const message = isObject(first) ? first.message : undefined
  return isObject(message) && typeof message.content === "string" ? message.content : ""
}

/** The chat response's `usage` object ({} when absent). */
export const replyUsage = (response: Record<string, unknown>): Record<string, unknown> =>
  isObject(response.usage) ? response.usage : {}

/** Every shortest `{…}` substring: a `{` up to the next `}`, left to right, non-overlapping. */
const shortestObjects = (text: string): ReadonlyArray<string> => text.match(/\{[\s\S]*?\}/g) ?? []

/**
 * Every balanced `{…}` span, by start position. Quotes are tracked inside a span so braces in
 * JSON strings do not count; one pass, so the cost stays linear in the reply length.
 */
export const balancedObjects = (text: string): ReadonlyArray<string> => {
  const spans: Array<readonly [number, number]> = []
  const open: Array<number> = []
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === "\\") i++
      else if (c === '"') inString = false
    } else if (c === '"' && open.length > 0) inString = true
    else if (c === "{") open.push(i)
    else if (c === "}" && open.length > 0) spans.push([open.pop()!, i + 1])
  }
  return spans.sort((a, b) => a[0] - b[0]).map(([s, e]) => text.slice(s, e))
}

const reasonText = (v: unknown): string => (typeof v === "string" ? v : v === undefined || v === null ? "" : JSON.stringify(v))

const fromCandidate = (candidate: string): ParsedVerdict | undefined => {
  let value: unknown
  try {
    value = JSON.parse(candidate)
  } catch {
    return undefined
  }
  if (!isObject(value) || typeof value.decision !== "string") return undefined
  const decision = value.decision.trim().toLowerCase()
  if (decision !== "allow" && decision !== "deny") return undefined
  return { decision, category: toCategory(value.category), reason: reasonText(value.reason) }
}

const FALLBACK = /["']?decision["']?\s*[:=]\s*["']?(allow|deny)/i

/**
 * Parse an `llm_json` reply. Candidates, first hit wins: the whole text, every shortest `{…}`,
 * every balanced `{…}`; a candidate counts when it is a JSON object whose `decision` is allow or
 * deny. Then a `decision: allow|deny` pattern (category `other`). Left = why nothing was found.
 */
export const parseJsonVerdict = (reply: string): Either.Either<ParsedVerdict, string> => {
  const text = stripThink(reply)
  for (const candidate of [text, ...shortestObjects(text), ...balancedObjects(text)]) {
    const parsed = fromCandidate(candidate)
    if (parsed) return Either.right(parsed)
  }
  const m = FALLBACK.exec(text)
  if (m?.[1] !== undefined) {
    return Either.right({ decision: m[1].toLowerCase() as "allow" | "deny", category: "other", reason: text.slice(0, 300) })
  }
  return Either.left(`no decision in judge output: ${JSON.stringify(text.slice(0, 200))}`)
}
