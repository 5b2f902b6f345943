/**
 * The OpenAI Responses wire format (`POST /v1/responses`), as the gate must read it: which output
 * items are calls a client executes, what shape an answer must have for that reading to be
 * unambiguous, how the request's tools look to a judge, and how rulings change an answer.
 *
 * Ruled (docs/wire-formats.md, "Responses"): `function_call` items (`call_id`, `name`, `arguments`),
 * `custom_tool_call` items (`call_id`, `name`, `input`, kept as text), and the built-in tools the
 * client runs itself — `computer_call`, `local_shell_call`, `shell_call`, `apply_patch_call` — each
 * ruled as a call named by its item type whose arguments are the object of its action fields
 * ({@link ACTION_FIELDS}). Every other item (messages, reasoning, and the server-side tools the
 * upstream ran itself: web_search_call, file_search_call, code_interpreter_call, mcp_call, …) passes
 * through: it is a report, not a request the client carries out.
 *
 * All calls of one answer are one turn (choice index 0). The proxy decides on the value JSON.parse
 * gives and returns that value re-serialized, so every parser reads what the gate read.
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import type { AuditWriteError } from "../../../layers/AuditSink.js"
import { isObject } from "../../domain/is-object.js"
import { applyModelDefaults } from "../../domain/normalise.js"
import { type PartialRefusal, refusalNotes } from "../../domain/refusal.js"
import type { GateRequest, GateShape } from "../../gate/Gate.js"
import { type GatedText, gateOneTurn, InvalidAnswer } from "./json-answer.js"

/** The built-in tools a client executes, and the item fields that make their arguments. */
export const ACTION_FIELDS = {
  computer_call: ["action", "actions"],
  local_shell_call: ["action"],
  shell_call: ["action", "environment"],
  apply_patch_call: ["operation"]
} as const satisfies Record<string, ReadonlyArray<string>>

type BuiltInCall = keyof typeof ACTION_FIELDS

/** The output item types the gate rules: calls the client executes. */
export type CallItemType = "function_call" | "custom_tool_call" | BuiltInCall

export const isCallItemType = (t: unknown): t is CallItemType =>
  t === "function_call" || t === "custom_tool_call" || (typeof t === "string" && Object.hasOwn(ACTION_FIELDS, t))

/** the field of a function / custom call item that holds its streamed text */
export const textField = (type: CallItemType): "arguments" | "input" | null =>
  type === "function_call" ? "arguments" : type === "custom_tool_call" ? "input" : null

/** the action fields a built-in call item carries, as one object (the arguments a judge reads) */
const actionOf = (item: Record<string, unknown>, type: BuiltInCall): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const f of ACTION_FIELDS[type]) if (item[f] !== undefined) out[f] = item[f]
  return out
}

/**
 * Why a call item is not one every client reads the same way, or null: a string `call_id`; for a
 * function call string `name` and `arguments`, for a custom call string `name` and `input`; for a
 * built-in, its action fields (an `action`/`operation` object, `actions` an array, `environment` an
 * object or null) with at least one present.
 */
export const callProblem = (item: Record<string, unknown>, type: CallItemType, path: string): string | null => {
  if (typeof item.call_id !== "string") return `${path}.call_id is not a string`
  const text = textField(type)
  if (text !== null) {
    if (typeof item.name !== "string") return `${path}.name is not a string`
    if (typeof item[text] !== "string") return `${path}.${text} is not a string`
    return null
  }
  const fields = ACTION_FIELDS[type as BuiltInCall]
  if (!fields.some((f) => item[f] !== undefined && item[f] !== null)) return `${path} (${type}) has no ${fields.join(" or ")}`
  for (const f of fields) {
    const v = item[f]
    if (v === undefined || (v === null && f !== "environment")) continue
    const ok = f === "actions" ? Array.isArray(v) : f === "environment" ? v === null || isObject(v) : isObject(v)
    if (!ok) return `${path}.${f} is not ${f === "actions" ? "an array" : "an object"}`
  }
  return null
}

/**
 * A call item in the chat call shape the gate reads (`id` = `call_id`): a function call as
 * `{type: "function", function: {name, arguments}}`, a custom call as `{type: "custom", custom: {name,
 * input}}`, a built-in as a function named by its item type with its action fields as JSON
 * arguments. Reads any item (an unreadable field becomes a call no judge can read); check
 * {@link callProblem} first where the call may be released.
 */
export const gateCallOf = (item: Record<string, unknown>, type: CallItemType): unknown => {
  const id = typeof item.call_id === "string" ? item.call_id : null
  if (type === "function_call") return { id, type: "function", function: { name: item.name, arguments: item.arguments } }
  if (type === "custom_tool_call") return { id, type: "custom", custom: { name: item.name, input: item.input } }
  return { id, type: "function", function: { name: type, arguments: JSON.stringify(actionOf(item, type)) } }
}

/** One call item of an answer's `output`. */
export interface FoundItem {
  /** its position in `output` */
  readonly position: number
  readonly call: unknown
}

/**
 * The call items of a response's `output`, or why the answer's shape is not one the gate can rule
 * on (`output` not an array, an item not an object or without a string `type`, a call item whose
 * fields are not strings). A missing or null `output` has no calls.
 */
export const callItemsOf = (answer: Record<string, unknown>): ReadonlyArray<FoundItem> | string => {
  const output = answer.output
  if (output === undefined || output === null) return []
  if (!Array.isArray(output)) return "output is not an array"
  const out: Array<FoundItem> = []
  for (let i = 0; i < output.length; i++) {
    const item: unknown = output[i]
    if (!isObject(item)) return `output[${i}] is not an object`
    if (typeof item.type !== "string") return `output[${i}].type is not a string`
    if (!isCallItemType(item.type)) continue
    const problem = callProblem(item, item.type, `output[${i}]`)
    if (problem !== null) return problem
    out.push({ position: i, call: gateCallOf(item, item.type) })
  }
  return out
}

/** Output text other than whitespace in these items (a refusal note then starts on a new paragraph). */
export const hasOutputText = (items: ReadonlyArray<unknown>): boolean =>
  items.some(
    (it) =>
      isObject(it) &&
      it.type === "message" &&
      Array.isArray(it.content) &&
      it.content.some((p) => isObject(p) && p.type === "output_text" && typeof p.text === "string" && p.text.trim() !== "")
  )

/**
 * The text of the refusal note: the notes, after a blank line when the answer already has text
 * (the SDKs' `output_text` joins the message items' texts with nothing between them).
 */
export const noteText = (notes: string, afterText: boolean): string => (afterText ? `\n\n${notes}` : notes)

/** A fresh id for the refusal-note message item. */
export const noteId = (): string => `msg_vetobench_${randomUUID().replace(/-/g, "")}`

/** The refusal note as a completed assistant message item (what `response.output_text` shows). */
export const noteItem = (id: string, text: string): Record<string, unknown> => ({
  id,
  type: "message",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text, annotations: [] }]
})

/** `output_text` as the SDKs compute it: every message item's output_text parts, joined. */
const outputTextOf = (items: ReadonlyArray<unknown>): string =>
  items
    .flatMap((it) =>
      isObject(it) && it.type === "message" && Array.isArray(it.content)
        ? it.content.flatMap((p) => (isObject(p) && p.type === "output_text" && typeof p.text === "string" ? [p.text] : []))
        : []
    )
    .join("")

/**
 * In place: remove the blocked call items of a parsed response (by their position in `found`) and
 * add the refusal note (always when no call survives, else per `partial`).
 */
export const stripCallItems = (
  answer: Record<string, unknown>,
  found: ReadonlyArray<FoundItem>,
  removed: ReadonlyMap<number, string>,
  partial: PartialRefusal
): void => {
  const gone = new Set(found.filter((_, k) => removed.has(k)).map((f) => f.position))
  const output = (answer.output as ReadonlyArray<unknown>).filter((_, i) => !gone.has(i))
  if (removed.size === found.length || partial === "content") {
    output.push(noteItem(noteId(), noteText(refusalNotes(removed), hasOutputText(output))))
  }
  answer.output = output
  // a server that adds the SDKs' convenience field keeps it true to the output
  if (typeof answer.output_text === "string") answer.output_text = outputTextOf(output)
}

/**
 * A logged arm's non-streamed answer: parse it, check its shape, rule and record its calls as one
 * turn, strip the blocked ones. The text returned is always the value the gate read, serialized once.
 */
export const gateResponsesText = (gate: GateShape, req: GateRequest, text: string, partial: PartialRefusal): Effect.Effect<GatedText, AuditWriteError | InvalidAnswer> =>
  gateOneTurn(gate, req, text, callItemsOf, (answer, found, removed) => stripCallItems(answer, found, removed, partial))

const EMPTY_SCHEMA = { type: "object", properties: {} } as const

/**
 * Normalise a Responses request in place: the upstream's model name, its `model_defaults` (keys
 * the client did not send), and function tools whose `parameters` is not an object get
 * `{type: object, properties: {}}` (as on the chat route). Everything else — `input`,
 * `instructions`, `previous_response_id`, `store`, … — goes to the upstream as the client sent it.
 */
export const normaliseResponsesBody = (
  body: Record<string, unknown>,
  model: string,
  defaults: Readonly<Record<string, unknown>> | undefined
): void => {
  body.model = model
  applyModelDefaults(body, defaults)
  const tools = body.tools
  if (!Array.isArray(tools) || !tools.some((t) => isObject(t) && t.type === "function" && !isObject(t.parameters))) return
  body.tools = tools.map((t) =>
    isObject(t) && t.type === "function" && !isObject(t.parameters) ? { ...t, parameters: { ...EMPTY_SCHEMA, properties: {} } } : t
  )
}

/**
 * The request's tools as the judges read them (the chat shapes): a function tool `{type:
 * "function", name, description, parameters}` as `{type: "function", function: {…}}`, a custom tool
 * as `{type: "custom", custom: {name, description, format}}`. Built-in tools have no name and no
 * schema to show; they are left out.
 */
export const judgeTools = (body: Record<string, unknown>): ReadonlyArray<unknown> | undefined => {
  if (!Array.isArray(body.tools)) return undefined
  const out: Array<unknown> = []
  for (const t of body.tools) {
    if (!isObject(t) || typeof t.name !== "string") continue
    const decl: Record<string, unknown> = { name: t.name }
    if (t.description !== undefined) decl.description = t.description
    if (t.type === "function") {
      if (t.parameters !== undefined) decl.parameters = t.parameters
      out.push({ type: "function", function: decl })
    } else if (t.type === "custom") {
      if (t.format !== undefined) decl.format = t.format
      out.push({ type: "custom", custom: decl })
    }
  }
  return out
}
