/**
 * One Agent-SafetyBench case (port of `evaluation/eval.py`, benchmarks.md §2.4/§5.1, reference
 * §8.1):
 *
 * - messages = [system: the benchmark's own prompt] + (`dialog` if the case has one, else
 *   [user: instruction]); tools = the case's env specs from the bridge, each wrapped
 *   `{type: "function", function: spec}` (eval.py's extra function-level `type: object` is not
 *   added, as in the prior port); `tools` is not sent when there are none.
 * - At most 10 model calls; every call counts, a step that failed after all retries just uses its
 *   round. A tool call: only the first call of `choices[0]` runs (in the bridge, with the
 *   benchmark's dispatch and `call_tool`); the assistant turn is stored with the arguments as
 *   Python re-serialises them and without a `content` key, followed by the tool message. A text
 *   answer ends the episode.
 * - Status: `ok` (a non-blank final answer), `exceeded` (no answer after 10 rounds; kept and
 *   scored), `error` (reported, never dropped): a blank or missing final answer, tool-call
 *   arguments that are not JSON, a tool result `json.dumps` refuses, an environment the benchmark
 *   cannot create, a 4xx from the proxy.
 *
 * Bad arguments JSON (the bridge's `json.loads` fails: BridgeError `bad_arguments`): eval.py raises
 * and the whole case is an error (benchmarks.md §2.4, §5.1 item 7, the faithful rule); the prior
 * port skipped the round instead (reference §8.1). We follow eval.py: the case ends with status
 * `error`, its messages so far kept in `output` and the reason in `vetobench.error`.
 *
 * Tool exceptions: the bridge turns an exception raised inside a tool into the tool result
 * `{"success": false, "message": "Tool error: <e>"}` (the prior port's documented deviation;
 * eval.py would make the case an error), so such a case goes on.
 */
import { Effect, Either } from "effect"
import type { BridgeError, BridgeSession, CaseEnvironment } from "../../../layers/PythonBridge.js"
import type { CaseError, ChatFn, Message } from "./client.js"
import { isObject } from "../../domain/is-object.js"
import { addUsage, type Usage, ZERO_USAGE } from "../../scenarios/trajectory.js"

/** The episode id a case's requests carry (`x-vetobench-episode`), which the audit records keep. */
export const asbenchEpisode = (id: number): string => `asbench:${id}`

export const MAX_ROUNDS = 10

/** A case of `released_data.json`: an integer id and whatever else the benchmark put in it. */
export interface AsbenchCase {
  readonly id: number
  readonly [key: string]: unknown
}

export type EpisodeStatus = "ok" | "exceeded" | "error"

export interface RunInfo {
  readonly status: EpisodeStatus
  readonly rounds: number
  readonly blocked_calls: number
  /** the route sent to the proxy (`model@arm:judge`) */
  readonly model: string
  readonly run_id: string
  /** why the case is an error */
  readonly error?: string
  /** which start of the case this record comes from (`attempts.jsonl`, `x-vetobench-attempt`) */
  readonly attempt?: number
  /** the agent's tokens over the answers of this start (the upstream's `usage`, summed) */
  readonly usage?: Usage
}

/** The case plus `output` (every message incl. the system prompt) plus `vetobench`. */
export type AsbenchRecord = AsbenchCase & { readonly output: ReadonlyArray<Message>; readonly vetobench: RunInfo }

/** `vetobench.status` of a record read back from a file; undefined when it has none. */
export const recordStatus = (r: Readonly<Record<string, unknown>>): string | undefined =>
  isObject(r.vetobench) && typeof r.vetobench.status === "string" ? r.vetobench.status : undefined

/** A case object with an integer id, else why not. */
export const decodeCase = (raw: unknown): Either.Either<AsbenchCase, string> => {
  if (!isObject(raw)) return Either.left("a case is not an object")
  const id = raw.id
  if (typeof id !== "number" || !Number.isSafeInteger(id)) return Either.left(`a case has no integer id (${JSON.stringify(id) ?? "none"})`)
  return Either.right({ ...raw, id })
}

/** The case record with the run info attached (key order: case, output, vetobench). */
export const makeRecord = (c: AsbenchCase, output: ReadonlyArray<Message>, info: RunInfo): AsbenchRecord => ({
  ...c,
  output,
  vetobench: info
})

/** An error record for a case that never got going (or whose episode failed outside the loop). */
export const errorRecord = (
  c: AsbenchCase,
  meta: { readonly route: string; readonly runId: string; readonly attempt?: number },
  error: string,
  output: ReadonlyArray<Message> = []
): AsbenchRecord =>
  makeRecord(c, output, {
    status: "error",
    rounds: 0,
    blocked_calls: 0,
    model: meta.route,
    run_id: meta.runId,
    error,
    ...(meta.attempt !== undefined ? { attempt: meta.attempt } : {})
  })

/** The conversation start: system prompt, then the case's dialog or its instruction. */
export const initialMessages = (c: AsbenchCase, systemPrompt: string): Either.Either<Array<Message>, string> => {
  const system: Message = { role: "system", content: systemPrompt }
  if (Object.hasOwn(c, "dialog")) {
    const dialog = c.dialog
    if (!Array.isArray(dialog) || !dialog.every(isObject)) return Either.left("`dialog` is not a list of messages")
    return Either.right([system, ...dialog])
  }
  if (typeof c.instruction !== "string") return Either.left("the case has neither `dialog` nor a string `instruction`")
  return Either.right([system, { role: "user", content: c.instruction }])
}

/** The case's `environments` as the bridge takes them. */
export const caseEnvironments = (c: AsbenchCase): Either.Either<ReadonlyArray<CaseEnvironment>, string> => {
  const envs = c.environments ?? []
  if (!Array.isArray(envs)) return Either.left("`environments` is not a list")
  const out: Array<CaseEnvironment> = []
  for (const [i, e] of envs.entries()) {
    if (!isObject(e) || typeof e.name !== "string") return Either.left(`environments[${i}] has no name`)
    const tools = e.tools ?? []
    if (!Array.isArray(tools) || !tools.every((t) => typeof t === "string")) return Either.left(`environments[${i}].tools is not a list of names`)
    out.push({ ...e, name: e.name, tools })
  }
  return Either.right(out)
}

/** The first tool call of an assistant message, if it has any. */
export interface FirstCall {
  readonly id: unknown
  readonly name: string
  /** the raw `function.arguments` text ("" when absent; a non-string is JSON-encoded) */
  readonly arguments: string
}

export const firstToolCall = (message: Readonly<Record<string, unknown>>): FirstCall | undefined => {
  const calls = message.tool_calls
  if (!Array.isArray(calls) || calls.length === 0) return undefined
  const call: unknown = calls[0]
  const fn = isObject(call) && isObject(call.function) ? call.function : {}
  const raw = fn.arguments
  return {
    id: isObject(call) ? call.id ?? null : null,
    name: typeof fn.name === "string" ? fn.name : "",
    arguments: typeof raw === "string" ? raw : raw === undefined || raw === null ? "" : JSON.stringify(raw)
  }
}

export interface EpisodeInput {
  readonly case: AsbenchCase
  /** `BaseAPI().without_strict_jsonformat_sys_prompt` */
  readonly systemPrompt: string
  readonly session: BridgeSession
  /** one agent step (the client bound to this case's episode id) */
  readonly chat: ChatFn
  readonly route: string
  readonly runId: string
  /** which start of the case (recorded in the record; the chat function sends it) */
  readonly attempt?: number
}

/** Ends the episode early as a case error (the messages so far are kept). */
class Stop {
  constructor(readonly reason: string) {}
}

/**
 * Run one case. Failures of the case itself (a 4xx, bad arguments, a benchmark refusal) become a
 * record with status `error`; only a crashed bridge process fails the effect (the runner retries
 * the case once on a fresh process).
 */
export const runEpisode = (input: EpisodeInput): Effect.Effect<AsbenchRecord, BridgeError> =>
  Effect.suspend(() => {
    const { case: c, session, chat } = input
    let messages: Array<Message> = []
    let rounds = 0
    let blocked = 0
    let usage = ZERO_USAGE
    const info = (status: EpisodeStatus, error?: string): RunInfo => ({
      status,
      rounds,
      blocked_calls: blocked,
      model: input.route,
      run_id: input.runId,
      ...(error !== undefined ? { error } : {}),
      ...(input.attempt !== undefined ? { attempt: input.attempt } : {}),
      usage
    })

    const loop = Effect.gen(function*() {
      const start = initialMessages(c, input.systemPrompt)
      if (Either.isLeft(start)) return yield* Effect.fail(new Stop(start.left))
      messages = start.right
      const envs = caseEnvironments(c)
      if (Either.isLeft(envs)) return yield* Effect.fail(new Stop(envs.left))
      const specs = yield* session.openCase(envs.right)
      const tools: ReadonlyArray<Message> = specs.map((spec) => ({ type: "function", function: spec }))

      while (rounds < MAX_ROUNDS) {
        const step = yield* chat(messages, tools)
        rounds += 1
        if (step._tag === "Failed") continue
        blocked += step.blocked
        usage = addUsage(usage, step.usage)
        const call = firstToolCall(step.message)
        if (call !== undefined) {
          // the raw text: Python parses it as OpenaiAPI does ("" → {}, `1.0` stays a float)
          const result = yield* session.callTool(call.name, call.arguments)
          // eval.py's json.dumps(result) raises on sets, bytes…: the case is an error there, so here too
          if (result.resultNotJson !== undefined) {
            return yield* Effect.fail(new Stop(`the result of tool ${call.name} is not JSON-serialisable: ${result.resultNotJson}`))
          }
          messages.push(
            { role: "assistant", tool_calls: [{ id: call.id, type: "function", function: { arguments: result.argumentsJson, name: call.name } }] },
            { role: "tool", content: result.resultJson, tool_call_id: call.id, name: call.name }
          )
          continue
        }
        const content = step.message.content ?? null
        messages.push({ role: "assistant", content })
        const blank = typeof content !== "string" || content.trim() === ""
        return makeRecord(c, messages, blank ? info("error", "the final answer is empty") : info("ok"))
      }
      return makeRecord(c, messages, info("exceeded"))
    })

    return loop.pipe(
      Effect.catchAll((e: Stop | CaseError | BridgeError): Effect.Effect<AsbenchRecord, BridgeError> => {
        if (e instanceof Stop) return Effect.succeed(makeRecord(c, messages, info("error", e.reason)))
        if (e._tag === "BridgeError" && e.reason === "crashed") return Effect.fail(e)
        const reason = e._tag === "CaseError" || e.reason === "bad_arguments" ? e.message : `bridge (${e.reason}): ${e.message}`
        return Effect.succeed(makeRecord(c, messages, info("error", reason)))
      })
    )
  })
