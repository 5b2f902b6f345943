import { isObject } from "./is-object.js"
/**
 * Request normalisation applied in every arm (reference §2.3, §3.3): tools without a parameter
 * schema get an empty object schema; a leading run of string system messages is merged into one;
 * model defaults fill top-level keys the client did not send.
 */

const EMPTY_SCHEMA = { type: "object", properties: {} } as const

/** Tools whose `function.parameters` is not an object get `{type: object, properties: {}}`. */
export const normaliseTools = (tools: ReadonlyArray<unknown>): ReadonlyArray<unknown> => {
  if (!tools.some((t) => isObject(t) && isObject(t.function) && !isObject(t.function.parameters))) return tools
  return tools.map((t) =>
    isObject(t) && isObject(t.function) && !isObject(t.function.parameters)
      ? { ...t, function: { ...t.function, parameters: { ...EMPTY_SCHEMA, properties: {} } } }
      : t
  )
}

/** Merge the leading run of system messages with string content; fewer than two → same array. */
export const mergeLeadingSystem = (messages: ReadonlyArray<unknown>): ReadonlyArray<unknown> => {
  let n = 0
  while (n < messages.length) {
    const m = messages[n]
    if (!(isObject(m) && m.role === "system" && typeof m.content === "string")) break
    n++
  }
  if (n < 2) return messages
  const content = messages
    .slice(0, n)
    .map((m) => (m as { content: string }).content)
    .join("\n\n")
  return [{ role: "system", content }, ...messages.slice(n)]
}

/** Shallow defaults: a key is set only when the client did not send it. Mutates `body`. */
export const applyModelDefaults = (body: Record<string, unknown>, defaults: Readonly<Record<string, unknown>> | undefined) => {
  if (!defaults) return
  for (const [k, v] of Object.entries(defaults)) {
    if (!(k in body)) body[k] = structuredClone(v)
  }
}

/**
 * Normalise a chat request body in place: model, defaults, tools, leading system messages.
 * Returns the body for chaining.
 */
export const normaliseChatBody = (
  body: Record<string, unknown>,
  target: string,
  defaults: Readonly<Record<string, unknown>> | undefined
): Record<string, unknown> => {
  body.model = target
  applyModelDefaults(body, defaults)
  if (Array.isArray(body.tools) && body.tools.length > 0) body.tools = normaliseTools(body.tools)
  if (Array.isArray(body.messages) && body.messages.length > 0) body.messages = mergeLeadingSystem(body.messages)
  return body
}
