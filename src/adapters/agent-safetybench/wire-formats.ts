/**
 * The wire formats the Agent-SafetyBench agent can speak to veto-proxy (experiment key
 * `agent_safetybench.wire`, docs/wire-formats.md): chat completions (the benchmark's own, in
 * client.ts), the OpenAI Responses API (wire-responses.ts) and the Anthropic Messages API
 * (wire-messages.ts). The episode keeps its chat conversation whatever the format: a format maps
 * one step's messages and tools to its request, and its answer back to the chat assistant message
 * (`content`, `tool_calls`) the episode reads. The arm stays in `model`, the headers are the same.
 */
import type { Either } from "effect"
import type { AgentWire } from "../../config/experiment.js"
import type { Usage } from "../../scenarios/trajectory.js"
import { type AssistantMessage, chatWire, type Message } from "./client.js"
import { messagesWire } from "./wire-messages.js"
import { responsesWire } from "./wire-responses.js"

/** What an answer body came to: the assistant message, or why it has none (retried at once). */
export type AnswerRead =
  | { readonly _tag: "message"; readonly message: AssistantMessage; readonly usage: Usage }
  | { readonly _tag: "unreadable"; readonly reason: string }

export interface AgentWireFormat {
  readonly wire: AgentWire
  /** the route below the proxy's `/v1` (`chat/completions`, `responses`, `messages`) */
  readonly path: string
  /** one step's request body, or why this conversation cannot be written in the format (the case's error) */
  readonly request: (
    route: string,
    maxTokens: number,
    messages: ReadonlyArray<Message>,
    tools: ReadonlyArray<Message>
  ) => Either.Either<Record<string, unknown>, string>
  /** the answer's text as a value (throws on text that is not JSON) */
  readonly parse: (text: string) => unknown
  /** the chat assistant message of a parsed answer */
  readonly read: (body: unknown) => AnswerRead
}

const FORMATS: Readonly<Record<AgentWire, AgentWireFormat>> = {
  chat: chatWire,
  responses: responsesWire,
  messages: messagesWire
}

/** The format an experiment names. */
export const agentWireFormat = (wire: AgentWire): AgentWireFormat => FORMATS[wire]
