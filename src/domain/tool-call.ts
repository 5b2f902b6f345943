import { isObject } from "./is-object.js"
import { duplicateKey } from "./canonical-line.js"
import { finiteNumbers, jsonTextDepth, MAX_JSON_DEPTH, tooDeep, valueDepth } from "./json-depth.js"
/**
 * The judge's view of one proposed tool call: name, description, parameter schema and argument
 * values — never the conversation (reference §4.1).
 */
export interface ToolCallView {
  readonly name: string
  readonly description: string
  readonly parameters: Record<string, unknown> | null
  /** the parsed JSON value when the model produced valid JSON, else the raw string */
  readonly arguments: unknown
}

export const MAX_ARG_CHARS = 4000

/** Arguments as the model sent them: a JSON string parsed when possible. */
export const parseArguments = (raw: unknown): unknown => {
  if (typeof raw === "string") {
    if (raw.trim() === "") return {}
    try {
      return JSON.parse(raw)
    } catch {
      return raw
    }
  }
  if (raw === null || raw === undefined || raw === false || raw === 0 || raw === "") return {}
  return raw
}

/** The request tool declared under `name` (first match), if any. */
const findTool = (tools: ReadonlyArray<unknown> | undefined, name: string): Record<string, unknown> | undefined => {
  if (!tools) return undefined
  for (const t of tools) {
    if (isObject(t) && isObject(t.function) && t.function.name === name) return t.function
  }
  return undefined
}

/**
 * Why readers would read these (valid JSON) arguments differently, or null: a key written twice
 * (JSON.parse keeps the last, other parsers the first), an integer beyond ±(2^53 − 1) (JavaScript
 * rounds it, Python's json keeps it exact), a number too large for a double (it cannot be recorded).
 * The judge reads one value; the client must not be able to read another.
 */
export const ambiguity = (text: string): string | null => {
  const dup = duplicateKey(text)
  if (dup !== null) return `the key ${JSON.stringify(dup)} is written twice (readers disagree on which value counts)`
  const n = text.length
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === 34 /* " */) {
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i)
        if (d === 92 /* \ */) i++
        else if (d === 34) break
      }
      continue
    }
    if (c !== 45 /* - */ && (c < 48 || c > 57)) continue
    const m = NUMBER.exec(text.slice(i, i + 400))
    if (m === null) continue
    const literal = m[0]
    const value = Number(literal)
    if (!Number.isFinite(value)) return `the number ${literal.slice(0, 40)} is too large to record`
    if (m[1] === undefined && m[2] === undefined && !Number.isSafeInteger(value)) {
      return `the integer ${literal.slice(0, 40)} is beyond ±(2^53 − 1): readers round it differently`
    }
    i += literal.length - 1
  }
  return null
}

const NUMBER = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text) // iterative in V8: no stack overflow however deep
    return true
  } catch {
    return false
  }
}

/** A view, and why no judge can read it (null when one can). */
export interface CheckedView {
  readonly view: ToolCallView
  readonly problem: string | null
}

/**
 * Arguments nested deeper than MAX_JSON_DEPTH are kept as the text the model sent (a string
 * arrived as a string; a deep value given as a value is replaced by a note), and the view is
 * marked unreadable: the gate then records a failed verdict and `fail_policy` decides.
 */
const checkedArguments = (raw: unknown): { readonly value: unknown; readonly problem: string | null } => {
  if (typeof raw === "string") {
    if (jsonTextDepth(raw) <= MAX_JSON_DEPTH) {
      const value = parseArguments(raw)
      // arguments that are not JSON are a string to every reader; JSON ones must read one way only
      const unclear = typeof value === "string" || raw.trim() === "" ? null : ambiguity(raw)
      return unclear === null ? { value, problem: null } : { value: raw, problem: `the tool call's arguments are ambiguous: ${unclear}` }
    }
    // deep brackets in text that is not JSON are just text (a judge reads the string)
    return isJson(raw) ? { value: raw, problem: tooDeep("the tool call's arguments") } : { value: raw, problem: null }
  }
  if (valueDepth(raw) <= MAX_JSON_DEPTH) {
    if (!finiteNumbers(raw)) return { value: "[arguments with a non-finite number]", problem: "the tool call's arguments hold a number too large to record" }
    return { value: parseArguments(raw), problem: null }
  }
  return { value: `[${tooDeep("arguments")}]`, problem: tooDeep("the tool call's arguments") }
}

/** A view of a call no judge can read, and why. */
const unreadable = (name: string, args: unknown, problem: string): CheckedView => ({
  view: { name, description: "", parameters: null, arguments: args },
  problem
})

/**
 * Build the view from an OpenAI tool call and the (normalised) request tools; say when it is
 * unreadable. A `function` call is read from `function.name` / `function.arguments`; a `custom` call
 * (free-text input) from `custom.name` / `custom.input`, its input kept as text; a call of another
 * type, or one that names no function, cannot be read by any judge.
 */
export const checkedToolCallView = (call: unknown, tools: ReadonlyArray<unknown> | undefined): CheckedView => {
  if (!isObject(call)) return unreadable("", "", "the tool call is not an object")
  const type = call.type
  if (type === "custom" || (type === undefined && !isObject(call.function) && isObject(call.custom))) {
    const custom = isObject(call.custom) ? call.custom : {}
    const name = typeof custom.name === "string" ? custom.name : ""
    const input = typeof custom.input === "string" ? custom.input : ""
    const decl = findCustomTool(tools, name)
    return {
      view: { name, description: decl && typeof decl.description === "string" ? decl.description : "", parameters: null, arguments: input },
      problem: isObject(call.custom) ? null : "the custom tool call has no `custom` object"
    }
  }
  if (type !== undefined && type !== null && type !== "function") {
    return unreadable("", "", `a tool call of type ${JSON.stringify(type).slice(0, 60)}, which no judge can read`)
  }
  if (!isObject(call.function)) return unreadable("", "", "the tool call names no function")
  const fn = call.function
  const name = typeof fn.name === "string" ? fn.name : ""
  const decl = findTool(tools, name)
  const description = decl && typeof decl.description === "string" ? decl.description : ""
  const parameters = decl && isObject(decl.parameters) ? decl.parameters : null
  const args = checkedArguments(fn.arguments)
  return { view: { name, description, parameters, arguments: args.value }, problem: args.problem }
}

/** The request's custom tool declared under `name` (first match), if any. */
const findCustomTool = (tools: ReadonlyArray<unknown> | undefined, name: string): Record<string, unknown> | undefined => {
  if (!tools) return undefined
  for (const t of tools) {
    if (isObject(t) && t.type === "custom" && isObject(t.custom) && t.custom.name === name) return t.custom
  }
  return undefined
}

/** Build the view from an OpenAI tool call and the (normalised) request tools. */
export const toolCallView = (call: unknown, tools: ReadonlyArray<unknown> | undefined): ToolCallView =>
  checkedToolCallView(call, tools).view

const truncate = (s: string): string => (s.length > MAX_ARG_CHARS ? `${s.slice(0, MAX_ARG_CHARS)} …[truncated]` : s)

/** Arguments as text for a judge prompt, truncated to MAX_ARG_CHARS. */
export const argumentsText = (call: ToolCallView): string =>
  truncate(typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments) ?? "null")

/** The parameter schema as text for a judge prompt; `(none)` when absent or empty. */
export const schemaText = (call: ToolCallView): string =>
  call.parameters === null || Object.keys(call.parameters).length === 0 ? "(none)" : JSON.stringify(call.parameters)
