import { isObject } from "./is-object.js"
import { jsonTextDepth, MAX_JSON_DEPTH, tooDeep, valueDepth } from "./json-depth.js"
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
    if (jsonTextDepth(raw) <= MAX_JSON_DEPTH) return { value: parseArguments(raw), problem: null }
    // deep brackets in text that is not JSON are just text (a judge reads the string)
    return isJson(raw) ? { value: raw, problem: tooDeep("the tool call's arguments") } : { value: raw, problem: null }
  }
  if (valueDepth(raw) <= MAX_JSON_DEPTH) return { value: parseArguments(raw), problem: null }
  return { value: `[${tooDeep("arguments")}]`, problem: tooDeep("the tool call's arguments") }
}

/** Build the view from an OpenAI tool call and the (normalised) request tools; say when it is unreadable. */
export const checkedToolCallView = (call: unknown, tools: ReadonlyArray<unknown> | undefined): CheckedView => {
  const fn = isObject(call) && isObject(call.function) ? call.function : {}
  const name = typeof fn.name === "string" ? fn.name : ""
  const decl = findTool(tools, name)
  const description = decl && typeof decl.description === "string" ? decl.description : ""
  const parameters = decl && isObject(decl.parameters) ? decl.parameters : null
  const args = checkedArguments(fn.arguments)
  return { view: { name, description, parameters, arguments: args.value }, problem: args.problem }
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
