/**
 * Generated upstream Messages answers for the trust-boundary property tests: answers and event
 * streams whose tool_use blocks are spelled every way JSON and SSE allow — `\u` escapes in keys and
 * strings, whitespace, duplicate keys with decoy values (a block's `type`, a tool's `input`, the
 * answer's `content`), several tool_use blocks among text, thinking and server-side blocks, input
 * JSON split at random points over several `input_json_delta` deltas, blocks interleaved, pings,
 * SSE framing variants (CR/LF/CRLF, `data:` with or without a space, with or without `event:`
 * names, comments), streams cut short and random byte boundaries.
 */
import { FastCheck as fc } from "effect"
import { encode, type J, toValue } from "./spellings.js"

/** `arb` in one case out of `n`, else null */
const oneIn = <T>(n: number, arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> =>
  fc.oneof({ weight: 1, arbitrary: arb }, { weight: n - 1, arbitrary: fc.constant(null) })

const obj = (...entries: ReadonlyArray<readonly [string, J] | null>): J => ({ obj: entries.filter((e): e is readonly [string, J] => e !== null) })
const arr = (...items: ReadonlyArray<J>): J => ({ arr: items })

/** A tool input: an object whose entries may repeat a key (readers that keep the first see a decoy). */
const genInput: fc.Arbitrary<J> = fc
  .array(
    fc.tuple(
      fc.constantFrom("path", "cmd", "q", "n", "input", "type"),
      fc.oneof(
        fc.constantFrom<J>("/", "/tmp", "rm -rf /var/backups \u00e9", "tool_use", "line\nbreak", 'quo"te'),
        fc.integer({ min: -1000, max: 1000 }),
        fc.boolean(),
        fc.constant<J>(null),
        fc.constant<J>(arr(1, obj(["b", "\u{1F600}"])))
      )
    ),
    { maxLength: 4 }
  )
  .map((entries): J => ({ obj: entries }))

/** An input no client reads as a tool input object (the gate cannot rule on it). */
const genBadInput: fc.Arbitrary<J> = fc.constantFrom<J>("not an object", arr("path", "/"), null, 7)

export type GenBlock =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "thinking"; readonly text: string }
  | {
      readonly kind: "tool_use" | "server_tool_use"
      readonly id: J
      readonly name: string
      readonly input: J
      /** a duplicate `type` key: `text` before the real one (JSON.parse reads tool_use) or after it (JSON.parse reads text) */
      readonly typeDecoy: "before" | "after" | null
      /** a duplicate `input` key with this decoy value, after the real one (JSON.parse reads the decoy; answers only) */
      readonly inputDecoy: J | null
    }

const genTool = (kind: "tool_use" | "server_tool_use"): fc.Arbitrary<GenBlock> =>
  fc.record({
    kind: fc.constant(kind),
    id: fc.oneof({ weight: 12, arbitrary: fc.constantFrom<J>("toolu_a", "toolu_b", "toolu_\u00e9") }, { weight: 1, arbitrary: fc.constantFrom<J>(7, null) }),
    name: fc.constantFrom("delete_file", "list_dir", "rm", 'ex"ec', "envoyer_ü", "tool_use"),
    input: fc.oneof({ weight: 12, arbitrary: genInput }, { weight: 1, arbitrary: genBadInput }),
    typeDecoy: oneIn(4, fc.constantFrom("before" as const, "after" as const)),
    inputDecoy: oneIn(3, genInput)
  })

const genText = fc.constantFrom("", " ", "Sure.", "Voilà \u{1F600}", 'I will call {"type":"tool_use"} now', "line\nbreak")

export const genBlock: fc.Arbitrary<GenBlock> = fc.oneof(
  { weight: 3, arbitrary: genText.map((text): GenBlock => ({ kind: "text", text })) },
  { weight: 1, arbitrary: genText.map((text): GenBlock => ({ kind: "thinking", text })) },
  { weight: 5, arbitrary: genTool("tool_use") },
  { weight: 1, arbitrary: genTool("server_tool_use") }
)

export interface GenMessage {
  readonly blocks: ReadonlyArray<GenBlock>
  /** a duplicate `content` key with these blocks: before or after the real one */
  readonly contentDecoy: { readonly where: "before" | "after"; readonly blocks: ReadonlyArray<GenBlock> } | null
  readonly stop: "tool_use" | "end_turn" | null
  readonly seed: number
}

export const genMessage: fc.Arbitrary<GenMessage> = fc.record({
  blocks: fc.array(genBlock, { maxLength: 5 }),
  contentDecoy: oneIn(3, fc.record({ where: fc.constantFrom("before" as const, "after" as const), blocks: fc.array(genBlock, { minLength: 1, maxLength: 2 }) })),
  stop: fc.constantFrom("tool_use" as const, "end_turn" as const, null),
  seed: fc.integer()
})

const typeEntries = (b: GenBlock & { readonly typeDecoy: "before" | "after" | null }): ReadonlyArray<readonly [string, J]> => {
  const real: readonly [string, J] = ["type", b.kind]
  if (b.typeDecoy === null) return [real]
  return b.typeDecoy === "before" ? [["type", "text"], real] : [real, ["type", "text"]]
}

/** A content block as an answer holds it (`input` is the tool's input; in a stream's start it is `{}`). */
const blockJ = (b: GenBlock, input?: J): J => {
  if (b.kind === "text") return obj(["type", "text"], ["text", b.text])
  if (b.kind === "thinking") return obj(["type", "thinking"], ["thinking", b.text], ["signature", "sig"])
  return {
    obj: [
      ...typeEntries(b),
      ["id", b.id],
      ["name", b.name],
      ["input", input ?? b.input],
      ...(b.inputDecoy !== null && input === undefined ? [["input", b.inputDecoy] as const] : [])
    ]
  }
}

/** A non-streamed Messages answer as an upstream would write it. */
export const messageText = (m: GenMessage): string => {
  const real: readonly [string, J] = ["content", arr(...m.blocks.map((b) => blockJ(b)))]
  const content: ReadonlyArray<readonly [string, J]> =
    m.contentDecoy === null
      ? [real]
      : m.contentDecoy.where === "before"
        ? [["content", arr(...m.contentDecoy.blocks.map((b) => blockJ(b)))], real]
        : [real, ["content", arr(...m.contentDecoy.blocks.map((b) => blockJ(b)))]]
  return encode(
    { obj: [["id", "msg_1"], ["type", "message"], ["role", "assistant"], ["model", "agent"], ...content, ["stop_reason", m.stop], ["stop_sequence", null]] },
    m.seed
  )
}

/** The tool_use blocks JSON.parse finds in a non-streamed answer (what the gate must rule: one record each). */
export const toolUsesPerJsonParse = (text: string): number => {
  const v = JSON.parse(text) as { content?: unknown }
  return Array.isArray(v.content) ? v.content.filter((b: unknown) => typeof b === "object" && b !== null && (b as { type?: unknown }).type === "tool_use").length : 0
}

export interface GenMessageStream {
  readonly message: GenMessage
  readonly eol: "\n" | "\r\n" | "\r"
  readonly space: boolean
  readonly comments: boolean
  /** `event:` lines: always (as servers write them) or never */
  readonly names: boolean
  readonly pings: boolean
  /** block indices with gaps (the gate renumbers whatever the upstream uses) */
  readonly gaps: boolean
  /** where each tool's input JSON text is split into deltas (fractions) */
  readonly splits: ReadonlyArray<number>
  readonly interleave: ReadonlyArray<number>
  /** how the stream ends: complete, without message_stop, without message_delta, or cut after n events */
  readonly end: "complete" | "no_stop" | "no_delta" | { readonly cutAfter: number }
  /** one block event sent under another name (`ping`): the gate must not read it otherwise than a client */
  readonly misnamed: number | null
  /** message_start already carries a tool_use block */
  readonly startContent: boolean
  /** byte positions (fractions) where the body is cut into writes */
  readonly cuts: ReadonlyArray<number>
}

export const genMessageStream: fc.Arbitrary<GenMessageStream> = fc.record({
  message: genMessage,
  eol: fc.constantFrom("\n" as const, "\r\n" as const, "\r" as const),
  space: fc.boolean(),
  comments: fc.boolean(),
  names: fc.nat(4).map((n) => n > 0),
  pings: fc.boolean(),
  gaps: fc.boolean(),
  splits: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 }),
  interleave: fc.array(fc.nat(), { maxLength: 20 }),
  end: fc.oneof(
    { weight: 8, arbitrary: fc.constant("complete" as const) },
    { weight: 1, arbitrary: fc.constantFrom("no_stop" as const, "no_delta" as const) },
    { weight: 1, arbitrary: fc.nat(20).map((cutAfter) => ({ cutAfter })) }
  ),
  misnamed: oneIn(10, fc.nat(30)),
  startContent: fc.nat(15).map((n) => n === 0),
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 })
})

/** split a text at the given fractions (pieces concatenate back to it) */
const splitAt = (text: string, fractions: ReadonlyArray<number>): Array<string> => {
  const points = [...new Set(fractions.map((f) => Math.floor(f * text.length)))].sort((a, b) => a - b)
  const out: Array<string> = []
  let prev = 0
  for (const p of [...points, text.length]) {
    if (p > prev) out.push(text.slice(prev, p))
    prev = Math.max(prev, p)
  }
  return out.length > 0 ? out : [""]
}

/** one block's events, each a function of the block's index (given when its start is sent) */
const blockEvents = (b: GenBlock, s: GenMessageStream): Array<(index: number) => J> => {
  const ev = (type: string, ...rest: ReadonlyArray<readonly [string, J]>) => (index: number) => obj(["type", type], ["index", index], ...rest)
  if (b.kind === "text" || b.kind === "thinking") {
    const field = b.kind === "text" ? "text" : "thinking"
    const deltaType = b.kind === "text" ? "text_delta" : "thinking_delta"
    const half = Math.floor(b.text.length / 2)
    return [
      ev("content_block_start", ["content_block", b.kind === "text" ? obj(["type", "text"], ["text", ""]) : obj(["type", "thinking"], ["thinking", ""])]),
      ...[b.text.slice(0, half), b.text.slice(half)].map((t) => ev("content_block_delta", ["delta", obj(["type", deltaType], [field, t])])),
      ev("content_block_stop")
    ]
  }
  // the input as JSON text (its own spelling: escapes, whitespace, duplicate keys), split over deltas
  const pieces = splitAt(encode(b.input, s.message.seed + 7), s.splits)
  return [
    ev("content_block_start", ["content_block", blockJ(b, obj())]),
    ...pieces.map((p) => ev("content_block_delta", ["delta", obj(["type", "input_json_delta"], ["partial_json", p])])),
    ev("content_block_stop")
  ]
}

/** The event values of a streamed answer, in order. */
export const streamEvents = (s: GenMessageStream): Array<J> => {
  const m = s.message
  const message = obj(
    ["id", "msg_1"],
    ["type", "message"],
    ["role", "assistant"],
    ["model", "agent"],
    ["content", s.startContent ? arr(blockJ({ kind: "tool_use", id: "toolu_s", name: "rm", input: obj(["path", "/"]), typeDecoy: null, inputDecoy: null })) : arr()],
    ["stop_reason", null],
    ["usage", obj(["input_tokens", 3], ["output_tokens", 0])]
  )
  const out: Array<J> = [obj(["type", "message_start"], ["message", message])]
  if (s.pings) out.push(obj(["type", "ping"]))
  const queues = m.blocks.map((b) => blockEvents(b, s))
  const indexOf = new Map<number, number>()
  let started = 0
  let k = 0
  while (queues.some((q) => q.length > 0)) {
    const live = queues.map((q, i) => [q, i] as const).filter(([q]) => q.length > 0)
    const [q, i] = live[(s.interleave[k++ % Math.max(1, s.interleave.length)] ?? 0) % live.length]!
    if (!indexOf.has(i)) indexOf.set(i, s.gaps ? started++ * 3 + 2 : started++)
    out.push(q.shift()!(indexOf.get(i)!))
    if (s.pings && k % 4 === 0) out.push(obj(["type", "ping"]))
  }
  if (s.end !== "no_delta") out.push(obj(["type", "message_delta"], ["delta", obj(["stop_reason", m.stop], ["stop_sequence", null])], ["usage", obj(["output_tokens", 9])]))
  if (s.end === "complete") out.push(obj(["type", "message_stop"]))
  return typeof s.end === "object" ? out.slice(0, s.end.cutAfter) : out
}

/** The event's type as JSON.parse reads it (its name on the wire). */
const typeOf = (j: J): string => {
  const v = toValue(j) as { type?: unknown }
  return typeof v.type === "string" ? v.type : "message"
}

/** A streamed answer as an upstream would write it: the body's byte pieces. */
export const messageStreamPieces = (s: GenMessageStream): Array<Uint8Array> => {
  const sp = s.space ? " " : ""
  const events = streamEvents(s)
  let text = ""
  events.forEach((j, n) => {
    if (s.comments && n % 3 === 0) text += `: keep-alive${s.eol}`
    const name = s.misnamed !== null && n === s.misnamed % Math.max(1, events.length) && n > 0 ? "ping" : typeOf(j)
    const data = encode(j, s.message.seed + n)
    text += (s.names || name !== typeOf(j) ? `event:${sp}${name}${s.eol}` : "") + data.split(/\r\n|\r|\n/).map((l) => `data:${sp}${l}`).join(s.eol) + s.eol + s.eol
  })
  const bytes = new TextEncoder().encode(text)
  const cuts = [...new Set(s.cuts.map((f) => Math.floor(f * bytes.length)))].sort((a, b) => a - b)
  const pieces: Array<Uint8Array> = []
  let prev = 0
  for (const c of [...cuts, bytes.length]) {
    if (c > prev) pieces.push(bytes.subarray(prev, c))
    prev = Math.max(prev, c)
  }
  return pieces
}

/** The blocks of a stream JSON.parse reads as tool_use (the gate holds and rules each). */
export const streamedToolUses = (s: GenMessageStream): number =>
  s.message.blocks.filter((b) => (b.kind === "tool_use" || b.kind === "server_tool_use") && (b.typeDecoy === "after" ? "text" : b.kind) === "tool_use").length

/** Whether the gate can read the stream to its end: complete, named consistently, every tool_use readable. */
export const readableStream = (s: GenMessageStream): boolean => {
  if (s.end !== "complete" || s.startContent) return false
  const events = streamEvents(s)
  if (s.misnamed !== null && s.misnamed % Math.max(1, events.length) > 0 && typeOf(events[s.misnamed % events.length]!) !== "ping") return false
  return s.message.blocks.every((b) => {
    if (b.kind !== "tool_use" && b.kind !== "server_tool_use") return true
    // the type JSON.parse reads decides whether the gate holds the block
    const type = b.typeDecoy === "after" ? "text" : b.kind
    if (type !== "tool_use") return true
    const input = toValue(b.input)
    return typeof toValue(b.id) === "string" && typeof input === "object" && input !== null && !Array.isArray(input)
  })
}
