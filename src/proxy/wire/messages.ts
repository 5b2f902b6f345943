/**
 * The Anthropic Messages wire format (`POST /v1/messages`, as vLLM serves it), as the gate must read
 * it: the callable calls of an answer are its `content[]` blocks of type `tool_use` (`id`, `name`,
 * `input` object), ruled together as one turn (choice index 0); how rulings change a message; the
 * Anthropic error shape.
 *
 * Outside the gate: blocks the server runs itself (`server_tool_use`, `web_search_tool_result`,
 * `mcp_tool_use`, …) are not calls the client executes; they pass through unruled, as text and
 * thinking blocks do.
 *
 * The trust-boundary rule (docs/architecture.md): the proxy decides on the value JSON.parse gives and
 * returns that value re-serialized, always (no fast path), so every reader reads the blocks the gate
 * read: no duplicate keys, no escapes to read differently.
 */
import { Effect } from "effect"
import type { AuditWriteError } from "../../../layers/AuditSink.js"
import { isObject } from "../../domain/is-object.js"
import { type PartialRefusal, refusalNotes } from "../../domain/refusal.js"
import type { GateRequest, GateShape } from "../../gate/Gate.js"
import { clientMessage, type ProxyErrorCode, statusOf } from "../errors.js"
import { type GatedText, gateOneTurn, InvalidAnswer } from "./json-answer.js"

/** A `tool_use` block as the gate reads it: where it is in `content`, and the call in the chat call shape. */
export interface ToolUse {
  /** its position in `content` */
  readonly position: number
  readonly call: { readonly id: string; readonly type: "function"; readonly function: { readonly name: string; readonly arguments: string } }
}

/** The call the gate rules for a tool_use block: its input serialized once, as the client will read it. */
export const toolUseCall = (id: string, name: string, input: unknown): ToolUse["call"] => ({
  id,
  type: "function",
  function: { name, arguments: JSON.stringify(input) }
})

/**
 * Why a `tool_use` block cannot be read unambiguously (its `id` or `name` not a string, its `input`
 * not an object), or null.
 */
export const toolUseProblem = (block: Record<string, unknown>, path: string): string | null => {
  if (typeof block.id !== "string") return `${path}.id is not a string`
  if (typeof block.name !== "string") return `${path}.name is not a string`
  if (!isObject(block.input)) return `${path}.input is not an object`
  return null
}

/**
 * The tool_use blocks of a message's `content`, in order, or why its shape is not one the gate can
 * rule on (`content` not an array, a block not an object, a tool_use block it cannot read).
 */
export const toolUsesIn = (content: unknown): ReadonlyArray<ToolUse> | string => {
  if (!Array.isArray(content)) return "content is not an array"
  const out: Array<ToolUse> = []
  for (let i = 0; i < content.length; i++) {
    const block: unknown = content[i]
    if (!isObject(block)) return `content[${i}] is not an object`
    if (block.type !== "tool_use") continue
    const problem = toolUseProblem(block, `content[${i}]`)
    if (problem !== null) return problem
    out.push({ position: i, call: toolUseCall(block.id as string, block.name as string, block.input) })
  }
  return out
}

/** The refusal note as a text block. */
const noteBlock = (notes: string) => ({ type: "text", text: notes })

/**
 * Remove the tool_use blocks whose call index is in `removed` from a message, in place: the refusal
 * note becomes a text block where the first removed block was (always when no tool_use survives,
 * else per `partial`), and `stop_reason` becomes `end_turn` when none survives.
 */
export const stripToolUses = (
  message: Record<string, unknown>,
  uses: ReadonlyArray<ToolUse>,
  removed: ReadonlyMap<number, string>,
  partial: PartialRefusal
): void => {
  const content = message.content as ReadonlyArray<unknown>
  const removedAt = new Set(uses.filter((_, i) => removed.has(i)).map((u) => u.position))
  const survivors = uses.length - removed.size
  const note = survivors === 0 || partial === "content" ? noteBlock(refusalNotes(removed)) : null
  const kept: Array<unknown> = []
  let noted = false
  for (let position = 0; position < content.length; position++) {
    if (!removedAt.has(position)) kept.push(content[position])
    else if (note !== null && !noted) {
      noted = true
      kept.push(note)
    }
  }
  message.content = kept
  if (survivors === 0) {
    message.stop_reason = "end_turn"
    message.stop_sequence = null
  }
}

/**
 * A logged arm's non-streamed Messages answer: parse it, check its shape, rule and record its
 * tool_use blocks as one turn, strip the blocked ones. The text returned is the value the gate read,
 * serialized once.
 */
export const gateMessagesText = (gate: GateShape, req: GateRequest, text: string, partial: PartialRefusal): Effect.Effect<GatedText, AuditWriteError | InvalidAnswer> =>
  gateOneTurn(gate, req, text, (answer) => toolUsesIn(answer.content), (answer, uses, removed) => stripToolUses(answer, uses, removed, partial))

/** The Anthropic error `type` for a status (the SDKs pick their error class by status). */
export const anthropicErrorType = (status: number): string => {
  switch (status) {
    case 400:
    case 405:
      return "invalid_request_error"
    case 401:
      return "authentication_error"
    case 403:
      return "permission_error"
    case 404:
      return "not_found_error"
    case 413:
      return "request_too_large"
    case 429:
      return "rate_limit_error"
    case 504:
      return "timeout_error"
    case 529:
      return "overloaded_error"
    default:
      return status >= 500 ? "api_error" : "invalid_request_error"
  }
}

/**
 * A proxy error in the Anthropic shape, `{"type": "error", "error": {"type", "message", "code"},
 * "request_id"}`: the type follows the status of the code (as on the chat route), `code` keeps ours.
 * URLs in the message are redacted, as in the chat route's errorBody.
 */
export const messagesErrorBody = (code: ProxyErrorCode, message: string, requestId: string | null): string =>
  JSON.stringify({
    type: "error",
    error: {
      type: anthropicErrorType(statusOf(code)),
      message: clientMessage(message),
      code
    },
    ...(requestId !== null ? { request_id: requestId } : {})
  })

/** One SSE event of the Messages stream: its `event:` name is its data's `type`. */
export const messagesEvent = (value: Record<string, unknown> & { readonly type: string }): string =>
  `event: ${value.type}\ndata: ${JSON.stringify(value)}\n\n`

/** The same error as the `error` event that ends a stream. */
export const messagesErrorEvent = (code: ProxyErrorCode, message: string, requestId: string | null): string =>
  `event: error\ndata: ${messagesErrorBody(code, message, requestId)}\n\n`

/** A non-JSON upstream error answer, in the Anthropic error shape. */
export const messagesUpstreamError = (status: number, text: string): string =>
  JSON.stringify({ type: "error", error: { type: anthropicErrorType(status), message: text } })
