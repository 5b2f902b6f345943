/**
 * The agent loop of one trial (like a benchmark client): system prompt + conversation, the
 * scenario file's tools offered; every call the proxy returns is executed against a fresh sandbox
 * and its result sent back; the loop ends with a text answer (an assistant turn without calls) or
 * after `maxRounds` model rounds. A proxy error ends the trial with `stop: "error"` (a value, so
 * other trials go on).
 */
import { isObject } from "../domain/is-object.js"
import { Effect } from "effect"
import type { ChatFn } from "./client.js"
import { cloneJson, executeCall, openAiTools, resultContent } from "./sandbox.js"
import type { Scenario, ScenarioFile } from "./spec.js"
import { addUsage, type Message, type Stop, type Trajectory, type TrajectoryCall, ZERO_USAGE } from "./trajectory.js"

export const DEFAULT_MAX_ROUNDS = 8

export interface TrialInput {
  readonly chat: ChatFn
  readonly runId: string
  /** the model string sent (may carry `@enforce:J`) */
  readonly model: string
  readonly systemPrompt: string
  readonly file: ScenarioFile
  readonly scenario: Scenario
  /** 1-based */
  readonly trial: number
  readonly maxRounds: number
}

export const episodeId = (scenarioId: string, trial: number): string => `scenario:${scenarioId}:${trial}`

const parseArguments = (raw: unknown): unknown => {
  if (typeof raw !== "string") return raw ?? {}
  try {
    return JSON.parse(raw) as unknown
  } catch {
    return raw
  }
}

interface WireCall {
  readonly id: string
  readonly name: string
  readonly rawArguments: string
}

const wireCalls = (message: Readonly<Record<string, unknown>>, round: number): Array<WireCall> => {
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : []
  return calls.filter(isObject).map((c, i) => {
    const fn = isObject(c.function) ? c.function : {}
    return {
      id: typeof c.id === "string" && c.id !== "" ? c.id : `call_r${round}_${i}`,
      name: typeof fn.name === "string" ? fn.name : "",
      rawArguments: typeof fn.arguments === "string" ? fn.arguments : JSON.stringify(fn.arguments ?? {})
    }
  })
}

/** Run one trial; never fails (a proxy error is recorded in the trajectory). */
export const runTrial = (input: TrialInput): Effect.Effect<Trajectory> =>
  Effect.gen(function*() {
    const state = cloneJson(input.scenario.state) as Record<string, unknown>
    const tools = openAiTools(input.file.tools)
    const messages: Array<Message> = [{ role: "system", content: input.systemPrompt }, ...input.scenario.conversation]
    const calls: Array<TrajectoryCall> = []
    let usage = ZERO_USAGE
    let blocked = 0
    let finalText: string | null = null
    let stop: Stop = "max_rounds"
    let error: string | null = null
    let rounds = 0
    while (rounds < input.maxRounds) {
      rounds++
      const reply = yield* Effect.either(
        input.chat({
          runId: input.runId,
          episode: episodeId(input.scenario.id, input.trial),
          body: { ...input.file.request, model: input.model, messages, tools }
        })
      )
      if (reply._tag === "Left") {
        stop = "error"
        error = reply.left.message
        break
      }
      const { message } = reply.right
      usage = addUsage(usage, reply.right.usage)
      blocked += reply.right.blocked
      const proposed = wireCalls(message, rounds)
      const content = typeof message.content === "string" ? message.content : null
      messages.push({
        role: "assistant",
        content,
        ...(proposed.length > 0
          ? { tool_calls: proposed.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.rawArguments } })) }
          : {})
      })
      if (proposed.length === 0) {
        finalText = content ?? ""
        stop = "answer"
        break
      }
      for (const c of proposed) {
        const args = parseArguments(c.rawArguments)
        const index = calls.length
        const result = executeCall(input.file.tools, state, { id: c.id, index, round: rounds, name: c.name, arguments: args })
        calls.push({ index, round: rounds, id: c.id, name: c.name, arguments: args, result })
        messages.push({ role: "tool", tool_call_id: c.id, content: resultContent(result) })
      }
    }
    return { messages, calls, final_text: finalText, rounds, stop, blocked, usage, error }
  })
