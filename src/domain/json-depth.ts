/**
 * One nesting limit for every JSON value the proxy reads from outside: client request bodies (deeper
 * → 400), upstream answers and streamed chunks (deeper → 502 / an error event) and tool-call
 * arguments (deeper → the call is still ruled and recorded, with the arguments kept as text and a
 * failed verdict, so `fail_policy` decides). Recursive code (JSON.stringify, the canonical JSON of the
 * audit chain, judges walking arguments) overflows the stack at a few thousand levels; real agent
 * traffic (tool schemas with `$defs`, nested arguments) stays far below this limit.
 */
export const MAX_JSON_DEPTH = 128

/**
 * The nesting depth of a JSON text (an array or object = one level), counted without recursion: each
 * `[` or `{` outside strings opens a level. Exact for text that JSON.parse accepts; for other text it
 * is a bound that is never below the real depth. Stops counting past `limit` (returns `limit + 1`).
 */
export const jsonTextDepth = (text: string, limit: number = MAX_JSON_DEPTH): number => {
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92 /* \ */) i++
      else if (c === 34 /* " */) inString = false
      continue
    }
    if (c === 34) inString = true
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max) {
        max = depth
        if (max > limit) return limit + 1
      }
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--
  }
  return max
}

/** The nesting depth of a parsed value (iterative; stops past `limit`, returning `limit + 1`). */
export const valueDepth = (value: unknown, limit: number = MAX_JSON_DEPTH): number => {
  let max = 0
  const stack: Array<readonly [unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [v, d] = stack.pop()!
    if (typeof v !== "object" || v === null) continue
    const depth = d + 1
    if (depth > max) {
      max = depth
      if (max > limit) return limit + 1
    }
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth])
    }
  }
  return max
}

/** The message for a value nested deeper than the limit. */
export const tooDeep = (what: string, limit: number = MAX_JSON_DEPTH): string => `${what} is nested deeper than ${limit} levels`

/** Every number in a parsed value is finite (JSON.parse reads `1e400` as Infinity, which no record can hold). Iterative. */
export const finiteNumbers = (value: unknown): boolean => {
  const stack: Array<unknown> = [value]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return false
    } else if (typeof v === "object" && v !== null) {
      for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push(child)
    }
  }
  return true
}

/**
 * False only when no number in the JSON text can read as Infinity: a literal is finite unless it has
 * an exponent or at least 309 integer digits. A cheap test before {@link finiteNumbers} walks a value.
 */
export const mayOverflow = (text: string): boolean => /\d[eE]|\d{309}/.test(text)
