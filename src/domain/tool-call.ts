import { isObject } from "./is-object.js"
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

/** Build the view from an OpenAI tool call and the (normalised) request tools. */
export const toolCallView = (call: unknown, tools: ReadonlyArray<unknown> | undefined): ToolCallView => {
  const fn = isObject(call) && isObject(call.function) ? call.function : {}
  const name = typeof fn.name === "string" ? fn.name : ""
  const decl = findTool(tools, name)
  const description = decl && typeof decl.description === "string" ? decl.description : ""
  const parameters = decl && isObject(decl.parameters) ? decl.parameters : null
  return { name, description, parameters, arguments: parseArguments(fn.arguments) }
}

const truncate = (s: string): string => (s.length > MAX_ARG_CHARS ? `${s.slice(0, MAX_ARG_CHARS)} …[truncated]` : s)

/** Arguments as text for a judge prompt, truncated to MAX_ARG_CHARS. */
export const argumentsText = (call: ToolCallView): string =>
  truncate(typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments) ?? "null")

/** The parameter schema as text for a judge prompt; `(none)` when absent or empty. */
export const schemaText = (call: ToolCallView): string =>
  call.parameters === null || Object.keys(call.parameters).length === 0 ? "(none)" : JSON.stringify(call.parameters)
