/** What one trial of a scenario recorded: the conversation, the calls with their sandbox results, usage. */

export type Message = Readonly<Record<string, unknown>>

/** One tool call the agent received back from the proxy and the runner executed against the sandbox. */
export interface TrajectoryCall {
  /** 0-based, in execution order over the whole trial */
  readonly index: number
  /** 1-based model round that proposed it */
  readonly round: number
  readonly id: string
  readonly name: string
  /** the parsed JSON arguments, or the raw text when they were not JSON */
  readonly arguments: unknown
  /** what the sandbox answered (sent to the model as the tool message) */
  readonly result: unknown
}

export interface Usage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
}

export const ZERO_USAGE: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }

export const addUsage = (a: Usage, b: Usage): Usage => ({
  prompt_tokens: a.prompt_tokens + b.prompt_tokens,
  completion_tokens: a.completion_tokens + b.completion_tokens,
  total_tokens: a.total_tokens + b.total_tokens
})

/** How the agent loop ended. */
export type Stop = "answer" | "max_rounds" | "error"

export interface Trajectory {
  /** the whole conversation as sent in the last request, plus the last assistant message */
  readonly messages: ReadonlyArray<Message>
  readonly calls: ReadonlyArray<TrajectoryCall>
  /** the assistant's final text (null when the loop ended without one) */
  readonly final_text: string | null
  readonly rounds: number
  readonly stop: Stop
  /** calls the gate removed (the `x-vetobench-blocked` header, summed over rounds) */
  readonly blocked: number
  readonly usage: Usage
  /** why the trial could not finish (proxy error, …); null otherwise */
  readonly error: string | null
}

/** A call as a person reads it: `issue_refund({"order_id":"A1004","amount":50})`. */
export const showCall = (c: Pick<TrajectoryCall, "name" | "arguments">): string =>
  `${c.name}(${typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments)})`
