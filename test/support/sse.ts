/**
 * Test helpers for streamed chat completions: POST with `stream: true`, read the body
 * incrementally (arrival time of every SSE event), parse `data:` and `:` comment lines, and
 * reassemble the deltas of one choice into a message.
 */
import { Effect } from "effect"
import { type HarnessShape, type PostOptions, proxyRequest } from "./harness.js"

export interface ToolCallDelta {
  readonly index?: number
  readonly id?: string | null
  readonly type?: string
  readonly function?: { readonly name?: string; readonly arguments?: string }
}

export interface ChunkChoice {
  readonly index?: number
  readonly delta?: {
    readonly role?: string
    readonly content?: string | null
    readonly tool_calls?: ReadonlyArray<ToolCallDelta>
  }
  readonly finish_reason?: string | null
}

export interface Usage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
}

/** The parts of a `chat.completion.chunk` the tests read. */
export interface Chunk {
  readonly id?: string
  readonly object?: string
  readonly choices: ReadonlyArray<ChunkChoice>
  readonly usage?: Usage | null
  readonly error?: { readonly message: string; readonly code: string | number; readonly type: string }
}

/** One SSE event (a blank-line-terminated block) with the time it was complete at the client. */
export type SseItem =
  | { readonly kind: "data"; readonly data: string; readonly at: number }
  | { readonly kind: "comment"; readonly text: string; readonly at: number }

/** Parse one SSE block: its `data:` lines (joined by `\n`) and its comment lines. */
const parseBlock = (block: string, at: number): Array<SseItem> => {
  const out: Array<SseItem> = []
  const data: Array<string> = []
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) out.push({ kind: "comment", text: line.slice(1).trim(), at })
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
  }
  if (data.length > 0) out.push({ kind: "data", data: data.join("\n"), at })
  return out
}

/** Parse a whole SSE body (CRLF tolerated). */
export const parseSse = (body: string, at = 0): Array<SseItem> =>
  body
    .replace(/\r\n?/g, "\n")
    .split("\n\n")
    .flatMap((b) => parseBlock(b, at))

export interface StreamResult {
  readonly status: number
  readonly headers: Headers
  readonly contentType: string
  readonly text: string
  readonly items: ReadonlyArray<SseItem>
  /** the JSON `data:` payloads, `[DONE]` excluded */
  readonly chunks: ReadonlyArray<Chunk>
  /** the last `data:` payload is `[DONE]` */
  readonly done: boolean
  /** `N` of the `: x-vetobench-blocked=N` comment; null when absent */
  readonly blocked: number | null
  /** performance.now() when the request was sent / the body ended */
  readonly startedAt: number
  readonly endedAt: number
}

export const chunksOf = (items: ReadonlyArray<SseItem>): Array<Chunk> =>
  items.flatMap((i) => (i.kind === "data" && i.data !== "[DONE]" ? [JSON.parse(i.data) as Chunk] : []))

export const blockedOf = (items: ReadonlyArray<SseItem>): number | null => {
  for (const i of items) {
    if (i.kind !== "comment") continue
    const m = /^x-vetobench-blocked=(\d+)$/.exec(i.text)
    if (m) return Number(m[1])
  }
  return null
}

/** POST a streaming chat request (the harness's common request unless overridden); read the body as it arrives. */
export const postStream = (h: HarnessShape, body: Record<string, unknown>, o: PostOptions = {}) =>
  Effect.promise(async (): Promise<StreamResult> => {
    const startedAt = performance.now()
    const res = await fetch(...proxyRequest(h, { stream: true, ...body }, o))
    const items: Array<SseItem> = []
    let text = ""
    let pending = ""
    const decoder = new TextDecoder()
    if (res.body !== null) {
      const reader = res.body.getReader()
      for (;;) {
        const { done, value } = await reader.read()
        const at = performance.now()
        const piece = done ? decoder.decode() : decoder.decode(value, { stream: true })
        text += piece
        pending = (pending + piece).replace(/\r\n?/g, "\n")
        let cut: number
        while ((cut = pending.indexOf("\n\n")) !== -1) {
          items.push(...parseBlock(pending.slice(0, cut), at))
          pending = pending.slice(cut + 2)
        }
        if (done) break
      }
    }
    const endedAt = performance.now()
    if (pending.trim() !== "") items.push(...parseBlock(pending, endedAt))
    const contentType = res.headers.get("content-type") ?? ""
    const isSse = contentType.startsWith("text/event-stream")
    const data = items.filter((i) => i.kind === "data")
    return {
      status: res.status,
      headers: res.headers,
      contentType,
      text,
      items: isSse ? items : [],
      chunks: isSse ? chunksOf(items) : [],
      done: isSse && data.length > 0 && data[data.length - 1]!.data === "[DONE]",
      blocked: isSse ? blockedOf(items) : null,
      startedAt,
      endedAt
    }
  })

export interface AssembledCall {
  readonly index: number
  readonly id: string | null
  readonly type: string | null
  readonly name: string
  readonly arguments: string
}

export interface Assembled {
  readonly role: string | null
  /** concatenated content deltas ("" when none) */
  readonly content: string
  /** tool calls assembled by their `index` (id and type from the first delta that has them) */
  readonly tool_calls: ReadonlyArray<AssembledCall>
  readonly finish_reason: string | null
  /** how many chunks carried tool-call deltas for this choice */
  readonly toolCallChunks: number
  /** the usage of the last chunk that carried one */
  readonly usage: Usage | null
}

/** Reassemble the deltas of one choice the way an OpenAI client does. */
export const assemble = (chunks: ReadonlyArray<Chunk>, choice = 0): Assembled => {
  let role: string | null = null
  let content = ""
  let finish: string | null = null
  let toolCallChunks = 0
  let usage: Usage | null = null
  const calls = new Map<number, { index: number; id: string | null; type: string | null; name: string; arguments: string }>()
  for (const chunk of chunks) {
    if (chunk.usage) usage = chunk.usage
    for (const c of chunk.choices) {
      if ((c.index ?? 0) !== choice) continue
      const d = c.delta
      if (d?.role !== undefined) role = d.role
      if (typeof d?.content === "string") content += d.content
      if (d?.tool_calls !== undefined && d.tool_calls.length > 0) {
        toolCallChunks++
        for (const tc of d.tool_calls) {
          const i = tc.index ?? calls.size
          const acc = calls.get(i) ?? { index: i, id: null, type: null, name: "", arguments: "" }
          calls.set(i, acc)
          if (typeof tc.id === "string") acc.id = tc.id
          if (typeof tc.type === "string") acc.type = tc.type
          if (typeof tc.function?.name === "string") acc.name += tc.function.name
          if (typeof tc.function?.arguments === "string") acc.arguments += tc.function.arguments
        }
      }
      if (typeof c.finish_reason === "string") finish = c.finish_reason
    }
  }
  return {
    role,
    content,
    tool_calls: [...calls.values()].sort((a, b) => a.index - b.index),
    finish_reason: finish,
    toolCallChunks,
    usage
  }
}

/** A non-streaming answer's first choice in the shape `assemble` returns (for equality checks). */
export const messageView = (choice: {
  readonly finish_reason: string
  readonly message: {
    readonly content: string | null
    readonly tool_calls: ReadonlyArray<{ readonly id: string; readonly function: { readonly name: string; readonly arguments: string } }> | null
  }
}) => ({
  content: choice.message.content ?? "",
  tool_calls: (choice.message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
  finish_reason: choice.finish_reason
})

/** The same view of an assembled stream. */
export const streamView = (a: Assembled) => ({
  content: a.content,
  tool_calls: a.tool_calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
  finish_reason: a.finish_reason
})
