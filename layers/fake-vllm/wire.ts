/**
 * Response bodies of the fake vLLM, shaped like vLLM's OpenAI-compatible server: JSON answers,
 * SSE chunk sequences (including tool-call argument deltas split over several chunks) and errors.
 */
import type { Answer } from "./behaviour.js"

export interface Usage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
}

export const usage = (prompt: number, completion: number): Usage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion
})

/** Fields shared by every chat/completion object and chunk. */
export interface Envelope {
  readonly id: string
  readonly created: number
  readonly model: string
}

/** vLLM-style error body. */
export const errorBody = (message: string, type: string, code: number) => ({ error: { message, type, code } })

export const modelNotFound = (model: string) =>
  errorBody(`The model \`${model}\` does not exist.`, "NotFoundError", 404)

export const modelsList = (models: ReadonlyArray<string>) => ({
  object: "list",
  data: models.map((id) => ({ id, object: "model", owned_by: "fake-vllm" }))
})

const toolCallsOf = (answer: Answer) =>
  answer.calls.map((c, i) => ({ id: `call_${i}`, type: "function", function: { name: c.name, arguments: c.arguments } }))

const finishReason = (answer: Answer): "tool_calls" | "stop" => (answer.calls.length > 0 ? "tool_calls" : "stop")

/** A non-streaming `chat.completion`. */
export const chatCompletion = (env: Envelope, answer: Answer, u: Usage) => ({
  id: env.id,
  object: "chat.completion",
  created: env.created,
  model: env.model,
  choices: [
    {
      index: 0,
      message: {
        role: "assistant",
        content: answer.content,
        ...(answer.calls.length > 0 ? { tool_calls: toolCallsOf(answer) } : {})
      },
      logprobs: null,
      finish_reason: finishReason(answer),
      stop_reason: null
    }
  ],
  usage: u
})

/** A non-streaming `text_completion`. */
export const textCompletion = (env: Envelope, text: string, u: Usage) => ({
  id: env.id,
  object: "text_completion",
  created: env.created,
  model: env.model,
  choices: [{ index: 0, text, logprobs: null, finish_reason: "length", stop_reason: null }],
  usage: u
})

/**
 * Split text into word pieces that concatenate back to exactly the input ("a b c" → "a ", "b ", "c").
 * Empty text gives no pieces.
 */
export const splitWords = (text: string): ReadonlyArray<string> => (text === "" ? [] : text.split(/(?<=\s)(?=\S)/))

/**
 * Split a tool-call argument string into 3–6 pieces (fewer only when the string is shorter), so a
 * client really has to concatenate deltas, as with vLLM's tool parsers.
 */
export const splitArguments = (args: string): ReadonlyArray<string> => {
  if (args.length === 0) return []
  const n = Math.min(args.length, Math.max(3, Math.min(6, Math.ceil(args.length / 8))))
  const size = Math.ceil(args.length / n)
  const out: Array<string> = []
  for (let i = 0; i < args.length; i += size) out.push(args.slice(i, i + size))
  return out
}

/** The `data:` payloads of a streamed chat completion, in order, without the final `[DONE]`. */
export const chatChunks = (env: Envelope, answer: Answer, u: Usage, includeUsage: boolean): ReadonlyArray<unknown> => {
  const chunk = (choices: ReadonlyArray<unknown>) => ({
    id: env.id,
    object: "chat.completion.chunk",
    created: env.created,
    model: env.model,
    choices
  })
  const delta = (d: Record<string, unknown>, finish: string | null = null) =>
    chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish, ...(finish !== null ? { stop_reason: null } : {}) }])
  const out: Array<unknown> = [delta({ role: "assistant", content: "" })]
  for (const piece of splitWords(answer.content ?? "")) out.push(delta({ content: piece }))
  answer.calls.forEach((c, i) => {
    out.push(
      delta({ tool_calls: [{ index: i, id: `call_${i}`, type: "function", function: { name: c.name, arguments: "" } }] })
    )
    for (const piece of splitArguments(c.arguments)) {
      out.push(delta({ tool_calls: [{ index: i, function: { arguments: piece } }] }))
    }
  })
  out.push(delta({}, finishReason(answer)))
  if (includeUsage) out.push({ ...chunk([]), usage: u })
  return out
}

/** The `data:` payloads of a streamed text completion, without the final `[DONE]`. */
export const completionChunks = (env: Envelope, text: string, u: Usage, includeUsage: boolean): ReadonlyArray<unknown> => {
  const chunk = (choices: ReadonlyArray<unknown>) => ({
    id: env.id,
    object: "text_completion",
    created: env.created,
    model: env.model,
    choices
  })
  const out: Array<unknown> = []
  for (const piece of splitWords(text)) {
    out.push(chunk([{ index: 0, text: piece, logprobs: null, finish_reason: null }]))
  }
  out.push(chunk([{ index: 0, text: "", logprobs: null, finish_reason: "length", stop_reason: null }]))
  if (includeUsage) out.push({ ...chunk([]), usage: u })
  return out
}

/** One SSE event as vLLM writes it. */
export const sseData = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`

export const SSE_DONE = "data: [DONE]\n\n"

/**
 * Test helper: the JSON payloads of an SSE body, in order (`[DONE]` and non-data lines skipped).
 * Handles CRLF and multi-line `data:` fields; meant for the fake's own output, not as a general parser.
 */
export const collectSse = (body: string): Array<unknown> => {
  const out: Array<unknown> = []
  for (const block of body.replace(/\r\n?/g, "\n").split("\n\n")) {
    const data = block
      .split("\n")
      .filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(5).replace(/^ /, ""))
    if (data.length === 0) continue
    const text = data.join("\n")
    if (text === "[DONE]") continue
    out.push(JSON.parse(text))
  }
  return out
}
