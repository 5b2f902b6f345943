/**
 * Independent readers for the trust-boundary tests: what *a* client could find in the proxy's
 * answer. A JSON parser that keeps the first (or the last) of duplicate keys, a WHATWG-conformant
 * SSE parser, and the callable calls an SDK finds in a completion or assembles from a stream.
 */

/** A small JSON parser (RFC 8259) with a choice for duplicate keys; throws on invalid text. */
export const parseJsonWith = (text: string, duplicates: "first" | "last"): unknown => {
  let i = 0
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++
  }
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at ${i}`)
  }
  const str = (): string => {
    if (text[i] !== '"') fail("expected a string")
    i++
    let out = ""
    for (;;) {
      if (i >= text.length) fail("unterminated string")
      const c = text[i++]!
      if (c === '"') return out
      if (c === "\\") {
        const e = text[i++]
        if (e === "u") {
          const hex = text.slice(i, i + 4)
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("bad \\u escape")
          out += String.fromCharCode(parseInt(hex, 16))
          i += 4
        } else {
          const m: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" }
          if (e === undefined || m[e] === undefined) fail("bad escape")
          out += m[e!]!
        }
      } else if (c.charCodeAt(0) < 0x20) fail("control character in string")
      else out += c
    }
  }
  const value = (): unknown => {
    ws()
    const c = text[i]
    if (c === "{") {
      i++
      const obj: Record<string, unknown> = Object.create(null) as Record<string, unknown>
      ws()
      if (text[i] === "}") {
        i++
        return { ...obj }
      }
      for (;;) {
        ws()
        const k = str()
        ws()
        if (text[i++] !== ":") fail("expected :")
        const v = value()
        if (duplicates === "last" || !(k in obj)) obj[k] = v
        ws()
        const d = text[i++]
        if (d === "}") return Object.fromEntries(Object.entries(obj))
        if (d !== ",") fail("expected , or }")
      }
    }
    if (c === "[") {
      i++
      const arr: Array<unknown> = []
      ws()
      if (text[i] === "]") {
        i++
        return arr
      }
      for (;;) {
        arr.push(value())
        ws()
        const d = text[i++]
        if (d === "]") return arr
        if (d !== ",") fail("expected , or ]")
      }
    }
    if (c === '"') return str()
    const m = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400))
    if (m === null) return fail("unexpected token")
    i += m[0].length
    return JSON.parse(m[0]) as unknown
  }
  const v = value()
  ws()
  if (i !== text.length) fail("trailing text")
  return v
}

/** Both readings of a JSON text (null when it is not JSON). */
export const readings = (text: string): ReadonlyArray<unknown> => {
  try {
    return [parseJsonWith(text, "first"), parseJsonWith(text, "last"), JSON.parse(text) as unknown]
  } catch {
    return []
  }
}

/** The `data` of each event of an SSE text, as the WHATWG EventSource parser dispatches them. */
export const sseEvents = (text: string): Array<string> => {
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text
  const lines = body.split(/\r\n|\r|\n/)
  const out: Array<string> = []
  let data: Array<string> = []
  let has = false
  for (const line of lines) {
    if (line === "") {
      if (has) out.push(data.join("\n"))
      data = []
      has = false
      continue
    }
    if (line.startsWith(":")) continue
    const colon = line.indexOf(":")
    const field = colon < 0 ? line : line.slice(0, colon)
    let value = colon < 0 ? "" : line.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    if (field === "data") {
      data.push(value)
      has = true
    }
  }
  // an event not closed by a blank line is not dispatched
  return out
}

export interface FoundCall {
  readonly name: string
  readonly arguments: string
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)
const callOf = (fn: unknown): FoundCall | null =>
  isObj(fn) ? { name: typeof fn.name === "string" ? fn.name : String(fn.name), arguments: typeof fn.arguments === "string" ? fn.arguments : JSON.stringify(fn.arguments) ?? "" } : null

/** The callable calls a client finds in a parsed chat completion (tool_calls and the legacy function_call). */
export const callsInCompletion = (answer: unknown): Array<FoundCall> => {
  const out: Array<FoundCall> = []
  if (!isObj(answer) || !Array.isArray(answer.choices)) return out
  for (const c of answer.choices) {
    if (!isObj(c) || !isObj(c.message)) continue
    const m = c.message
    if (Array.isArray(m.tool_calls)) for (const tc of m.tool_calls) if (isObj(tc)) out.push(callOf(tc.function) ?? { name: "", arguments: "" })
    const fc = callOf(m.function_call)
    if (fc !== null) out.push(fc)
  }
  return out
}

/**
 * The calls a streaming client assembles from chunk values (as the SDKs' accumulators do: tool-call
 * deltas by choice and index, names and arguments concatenated; function_call deltas per choice),
 * until `[DONE]`; an error event stops it as it throws in the SDKs.
 */
export const callsInStream = (events: ReadonlyArray<unknown>): Array<FoundCall> => {
  const calls = new Map<string, { name: string; arguments: string }>()
  for (const e of events) {
    if (!isObj(e) || e.error !== undefined || !Array.isArray(e.choices)) {
      if (isObj(e) && e.error !== undefined) break
      continue
    }
    for (const c of e.choices) {
      if (!isObj(c) || !isObj(c.delta)) continue
      const ci = String(c.index)
      const d = c.delta
      if (Array.isArray(d.tool_calls)) {
        for (const tc of d.tool_calls) {
          if (!isObj(tc)) continue
          const key = `${ci}/tool/${String(tc.index)}`
          const cur = calls.get(key) ?? { name: "", arguments: "" }
          if (isObj(tc.function) && typeof tc.function.name === "string") cur.name += tc.function.name
          if (isObj(tc.function) && typeof tc.function.arguments === "string") cur.arguments += tc.function.arguments
          calls.set(key, cur)
        }
      }
      if (isObj(d.function_call)) {
        const key = `${ci}/fn`
        const cur = calls.get(key) ?? { name: "", arguments: "" }
        if (typeof d.function_call.name === "string") cur.name += d.function_call.name
        if (typeof d.function_call.arguments === "string") cur.arguments += d.function_call.arguments
        calls.set(key, cur)
      }
    }
  }
  return [...calls.values()]
}
