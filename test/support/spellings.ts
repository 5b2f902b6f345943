/**
 * Generated upstream answers for the trust-boundary property tests: chat completions and streams
 * that carry tool calls (and the legacy function_call) spelled every way JSON and SSE allow — keys
 * and strings with `\u` escapes, whitespace and pretty-printing, duplicate keys with decoy values,
 * several choices, a BOM, SSE framing variants (CR/LF/CRLF, `data:` with or without a space,
 * multi-line data, comments, event names, missing `[DONE]`) and random byte boundaries.
 */
import { FastCheck as fc } from "effect"

/** A JSON value whose objects keep their entries in order, duplicates allowed. */
export type J = null | boolean | number | string | { readonly arr: ReadonlyArray<J> } | { readonly obj: ReadonlyArray<readonly [string, J]> }

const obj = (...entries: ReadonlyArray<readonly [string, J] | null>): J => ({ obj: entries.filter((e): e is readonly [string, J] => e !== null) })
const arr = (...items: ReadonlyArray<J>): J => ({ arr: items })

/** mulberry32: the encoder's choices come from one seed, so a failing case replays */
const rng = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WS = [" ", "\n", "\t", "  ", "\r\n", "\n    "]

/** Encode with random spellings: `\u` escapes (either case), whitespace between tokens. */
export const encode = (v: J, seed: number, opts: { readonly escapes?: number; readonly spaces?: number } = {}): string => {
  const r = rng(seed)
  const pEsc = opts.escapes ?? 0.15
  const pWs = opts.spaces ?? 0.25
  const ws = () => (r() < pWs ? WS[Math.floor(r() * WS.length)]! : "")
  const str = (s: string) => {
    let out = '"'
    for (const ch of s) {
      const code = ch.charCodeAt(0)
      if (ch.length === 1 && r() < pEsc) {
        const hex = code.toString(16).padStart(4, "0")
        out += `\\u${r() < 0.5 ? hex : hex.toUpperCase()}`
      } else out += JSON.stringify(ch).slice(1, -1)
    }
    return `${out}"`
  }
  const go = (x: J): string => {
    if (x === null || typeof x === "boolean" || typeof x === "number") return JSON.stringify(x)
    if (typeof x === "string") return str(x)
    if ("arr" in x) return `[${ws()}${x.arr.map((i) => `${go(i)}${ws()}`).join(`,${ws()}`)}]`
    return `{${ws()}${x.obj.map(([k, val]) => `${str(k)}${ws()}:${ws()}${go(val)}${ws()}`).join(`,${ws()}`)}}`
  }
  return go(v)
}

/** Plain JSON of a J value (last duplicate wins, as JSON.parse reads it). */
export const toValue = (v: J): unknown => {
  if (v === null || typeof v !== "object") return v
  if ("arr" in v) return v.arr.map(toValue)
  const o: Record<string, unknown> = {}
  for (const [k, val] of v.obj) o[k] = toValue(val)
  return o
}

export interface GenCall {
  readonly id: string
  readonly name: string
  readonly arguments: string
}

const NAMES = ["delete_file", "list_dir", "rm", 'ex"ec', "envoyer_ü", "tool_calls"]
const genCall: fc.Arbitrary<GenCall> = fc.record({
  id: fc.constantFrom("call_a", "call_b", "call_c", "call_\u00e9"),
  name: fc.constantFrom(...NAMES),
  arguments: fc.oneof(
    fc.constantFrom('{"path": "/"}', "{}", "", '{"cmd":"rm -rf /var/backups \\u00e9"}', "not json", '{"a":[1,{"b":"\u{1F600}"}]}'),
    fc.dictionary(fc.constantFrom("path", "n", "q"), fc.oneof(fc.string({ maxLength: 8 }), fc.integer())).map((d) => JSON.stringify(d))
  )
})

export interface GenChoice {
  readonly content: string | null
  readonly calls: ReadonlyArray<GenCall>
  /** the legacy function_call, if any */
  readonly fn: GenCall | null
  readonly finish: string | null
  /** a decoy duplicate `tool_calls` key: before or after the real one, with these calls (or null) */
  readonly decoy: { readonly where: "before" | "after"; readonly calls: ReadonlyArray<GenCall> | null } | null
  /** streamed only: a further call (at index 0 again) after the choice's finish, then another finish */
  readonly again: GenCall | null
}

const genChoice: fc.Arbitrary<GenChoice> = fc.record({
  content: fc.oneof(fc.constant(null), fc.constantFrom("", " ", "\n", "Sure.", "Voilà \u{1F600}", "I will call tool_calls now")),
  calls: fc.array(genCall, { maxLength: 3 }),
  fn: fc.option(genCall, { freq: 4, nil: null }),
  finish: fc.constantFrom("tool_calls", "stop", "length", "function_call", null),
  decoy: fc.option(
    fc.record({ where: fc.constantFrom("before" as const, "after" as const), calls: fc.option(fc.array(genCall, { minLength: 1, maxLength: 2 }), { nil: null }) }),
    { freq: 3, nil: null }
  ),
  again: fc.option(genCall, { freq: 6, nil: null })
})

export interface GenAnswer {
  readonly choices: ReadonlyArray<GenChoice>
  readonly seed: number
  readonly bom: boolean
  readonly toolCallsNull: boolean
}

export const genAnswer: fc.Arbitrary<GenAnswer> = fc.record({
  choices: fc.array(genChoice, { minLength: 1, maxLength: 3 }),
  seed: fc.integer(),
  bom: fc.nat(9).map((n) => n < 2),
  toolCallsNull: fc.boolean()
})

const callJ = (c: GenCall, index?: number): J =>
  obj(index === undefined ? null : ["index", index], ["id", c.id], ["type", "function"], ["function", obj(["name", c.name], ["arguments", c.arguments])])

const toolCallsEntries = (calls: ReadonlyArray<GenCall>, decoy: GenChoice["decoy"], none: J): ReadonlyArray<readonly [string, J]> => {
  const real: readonly [string, J] = ["tool_calls", calls.length > 0 ? arr(...calls.map((c) => callJ(c))) : none]
  if (decoy === null) return [real]
  const fake: readonly [string, J] = ["tool_calls", decoy.calls === null ? null : arr(...decoy.calls.map((c) => callJ(c)))]
  return decoy.where === "before" ? [fake, real] : [real, fake]
}

/** A non-streamed chat completion as an upstream would write it. */
export const answerText = (a: GenAnswer): string => {
  const choices = a.choices.map((c, i) =>
    obj(
      ["index", i],
      [
        "message",
        { obj: [["role", "assistant"], ["content", c.content], ...toolCallsEntries(c.calls, c.decoy, a.toolCallsNull ? null : arr()), ...(c.fn ? [["function_call", obj(["name", c.fn.name], ["arguments", c.fn.arguments])] as const] : [])] }
      ],
      ["finish_reason", c.finish]
    )
  )
  const body = encode(obj(["id", "chatcmpl-1"], ["object", "chat.completion"], ["model", "agent"], ["choices", arr(...choices)]), a.seed)
  return a.bom ? `\uFEFF${body}` : body
}

export interface GenStream {
  readonly answer: GenAnswer
  readonly eol: "\n" | "\r\n" | "\r"
  readonly space: boolean
  readonly comments: boolean
  readonly eventNames: boolean
  readonly done: "[DONE]" | "[DONE] " | null
  /** byte positions (fractions) where the body is cut into writes */
  readonly cuts: ReadonlyArray<number>
  readonly interleave: ReadonlyArray<number>
}

export const genStream: fc.Arbitrary<GenStream> = fc.record({
  answer: genAnswer,
  eol: fc.constantFrom("\n" as const, "\r\n" as const, "\r" as const),
  space: fc.boolean(),
  comments: fc.boolean(),
  eventNames: fc.boolean(),
  done: fc.constantFrom("[DONE]" as const, "[DONE]" as const, "[DONE] " as const, null),
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 }),
  interleave: fc.array(fc.nat(), { maxLength: 20 })
})

/** The chunk values of one choice, in order. */
const choiceChunks = (c: GenChoice, index: number): Array<J> => {
  const chunk = (delta: J, finish: string | null = null): J =>
    obj(["id", "chatcmpl-1"], ["object", "chat.completion.chunk"], ["choices", arr(obj(["index", index], ["delta", delta], ["finish_reason", finish]))])
  const out: Array<J> = [chunk(obj(["role", "assistant"]))]
  if (c.content !== null && c.content !== "") out.push(chunk(obj(["content", c.content])))
  c.calls.forEach((call, k) => {
    const half = Math.floor(call.arguments.length / 2)
    const first = obj(["index", k], ["id", call.id], ["type", "function"], ["function", obj(["name", call.name], ["arguments", call.arguments.slice(0, half)])])
    const second = obj(["index", k], ["function", obj(["arguments", call.arguments.slice(half)])])
    const entries = (d: J): J => {
      if (c.decoy === null || k > 0) return obj(["tool_calls", arr(d)])
      const fake: readonly [string, J] = ["tool_calls", c.decoy.calls === null ? null : arr(...c.decoy.calls.map((x, j) => callJ(x, j + 5)))]
      return { obj: c.decoy.where === "before" ? [fake, ["tool_calls", arr(d)]] : [["tool_calls", arr(d)], fake] }
    }
    out.push(chunk(entries(first)), chunk(entries(second)))
  })
  if (c.fn !== null) {
    out.push(chunk(obj(["function_call", obj(["name", c.fn.name], ["arguments", ""])])))
    out.push(chunk(obj(["function_call", obj(["arguments", c.fn.arguments])])))
  }
  out.push(chunk(obj(), c.finish))
  if (c.again !== null) {
    out.push(chunk(obj(["tool_calls", arr(callJ(c.again, 0))])))
    out.push(chunk(obj(), "tool_calls"))
  }
  return out
}

/** A streamed answer as an upstream would write it: the body's byte pieces. */
export const streamPieces = (s: GenStream): Array<Uint8Array> => {
  const queues = s.answer.choices.map((c, i) => choiceChunks(c, i))
  const ordered: Array<J> = []
  let k = 0
  while (queues.some((q) => q.length > 0)) {
    const live = queues.filter((q) => q.length > 0)
    const q = live[(s.interleave[k++ % Math.max(1, s.interleave.length)] ?? 0) % live.length]!
    ordered.push(q.shift()!)
  }
  const sp = s.space ? " " : ""
  const event = (data: string) =>
    (s.eventNames ? `event: message${s.eol}` : "") + data.split(/\r\n|\r|\n/).map((l) => `data:${sp}${l}`).join(s.eol) + s.eol + s.eol
  let text = s.answer.bom ? "\uFEFF" : ""
  ordered.forEach((j, n) => {
    if (s.comments && n % 3 === 0) text += `: keep-alive${s.eol}`
    text += event(encode(j, s.answer.seed + n))
  })
  if (s.done !== null) text += event(s.done)
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

/** The calls JSON.parse finds in a non-streamed answer (what the gate must rule: one record each). */
export const callsPerJsonParse = (text: string): number => {
  const v = JSON.parse(text.replace(/^\uFEFF/, "")) as { choices?: Array<{ message?: { tool_calls?: unknown; function_call?: unknown } }> }
  let n = 0
  for (const c of v.choices ?? []) {
    const tc = c.message?.tool_calls
    if (Array.isArray(tc)) n += tc.length
    if (c.message?.function_call != null) n++
  }
  return n
}
