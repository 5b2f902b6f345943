/**
 * Generated upstream Responses answers and event streams for the trust-boundary property tests:
 * output items of every kind the gate reads or passes (function, custom and built-in calls, text,
 * reasoning, a server-side tool), spelled every way JSON and SSE allow (see `encode`: `\u` escapes
 * in keys and strings, whitespace), with two-faced values — an item or an event whose `type` is
 * written twice, a call's `arguments` written twice, an `output` written twice, calls smuggled into
 * the `response` objects of `response.created` and `response.completed` — event names that lie
 * about the event's type, split deltas, interleaved items, early ends, and random byte boundaries.
 */
import { FastCheck as fc } from "effect"
import { encode, type J } from "./spellings.js"

const obj = (...entries: ReadonlyArray<readonly [string, J] | null>): J => ({ obj: entries.filter((e): e is readonly [string, J] => e !== null) })
const arr = (...items: ReadonlyArray<J>): J => ({ arr: items })

const NAMES = ["delete_file", "list_dir", 'ex"ec', "envoyer_ü", "function_call"]
const ARGS = ['{"path": "/"}', "{}", "", '{"cmd":"rm -rf /var \\u00e9"}', "not json", '{"a":[1,{"b":"\u{1F600}"}]}']

export type GenItem =
  | { readonly kind: "function_call"; readonly callId: string; readonly name: string; readonly arguments: string; readonly decoyArgs: string | null }
  | { readonly kind: "custom_tool_call"; readonly callId: string; readonly name: string; readonly input: string }
  | { readonly kind: "local_shell_call"; readonly callId: string; readonly command: ReadonlyArray<string> }
  | { readonly kind: "computer_call"; readonly callId: string; readonly x: number }
  | { readonly kind: "message"; readonly text: string }
  | { readonly kind: "reasoning"; readonly text: string }
  | { readonly kind: "web_search_call"; readonly query: string }
  /** a message whose `type` is written a second time as function_call (with a call's fields) */
  | { readonly kind: "two_faced"; readonly callFirst: boolean; readonly name: string; readonly arguments: string }

const callId = fc.constantFrom("call_a", "call_b", "call_\u00e9")

export const genItem: fc.Arbitrary<GenItem> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("function_call" as const), callId, name: fc.constantFrom(...NAMES), arguments: fc.constantFrom(...ARGS), decoyArgs: fc.option(fc.constantFrom(...ARGS), { freq: 4, nil: null }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("custom_tool_call" as const), callId, name: fc.constantFrom(...NAMES), input: fc.constantFrom(...ARGS, "*** Begin Patch") }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("local_shell_call" as const), callId, command: fc.array(fc.constantFrom("rm", "-rf", "/", "ls"), { minLength: 1, maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("computer_call" as const), callId, x: fc.nat(2000) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("message" as const), text: fc.constantFrom("", " ", "Sure.", "Voilà \u{1F600}", 'I will "function_call" now') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("reasoning" as const), text: fc.constantFrom("thinking", "call delete_file?") }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("web_search_call" as const), query: fc.constantFrom("weather", "rm -rf") }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("two_faced" as const), callFirst: fc.boolean(), name: fc.constantFrom(...NAMES), arguments: fc.constantFrom(...ARGS) }) }
)

const textPart = (text: string): J => obj(["type", "output_text"], ["text", text], ["annotations", arr()])

/** An item as it stands once complete. */
export const itemJ = (it: GenItem, i: number): J => {
  const id = (p: string) => ["id", `${p}_${i}`] as const
  switch (it.kind) {
    case "function_call":
      return obj(
        id("fc"),
        ["type", "function_call"],
        ["call_id", it.callId],
        ["name", it.name],
        ...(it.decoyArgs === null ? [["arguments", it.arguments] as const] : [["arguments", it.decoyArgs] as const, ["arguments", it.arguments] as const]),
        ["status", "completed"]
      )
    case "custom_tool_call":
      return obj(id("ctc"), ["type", "custom_tool_call"], ["call_id", it.callId], ["name", it.name], ["input", it.input])
    case "local_shell_call":
      return obj(
        id("lsh"),
        ["type", "local_shell_call"],
        ["call_id", it.callId],
        ["action", obj(["type", "exec"], ["command", arr(...it.command)], ["env", obj()])],
        ["status", "completed"]
      )
    case "computer_call":
      return obj(
        id("cu"),
        ["type", "computer_call"],
        ["call_id", it.callId],
        ["action", obj(["type", "click"], ["button", "left"], ["x", it.x], ["y", 1])],
        ["pending_safety_checks", arr()],
        ["status", "completed"]
      )
    case "message":
      return obj(id("msg"), ["type", "message"], ["role", "assistant"], ["status", "completed"], ["content", arr(textPart(it.text))])
    case "reasoning":
      return obj(id("rs"), ["type", "reasoning"], ["summary", arr()], ["content", arr(obj(["type", "reasoning_text"], ["text", it.text]))])
    case "web_search_call":
      return obj(id("ws"), ["type", "web_search_call"], ["status", "completed"], ["action", obj(["type", "search"], ["query", it.query])])
    case "two_faced": {
      const call = ["type", "function_call"] as const
      const message = ["type", "message"] as const
      return obj(
        id("tf"),
        it.callFirst ? call : message,
        ["role", "assistant"],
        ["content", arr(textPart("hello"))],
        ["call_id", "call_tf"],
        ["name", it.name],
        ["arguments", it.arguments],
        it.callFirst ? message : call
      )
    }
  }
}

export interface GenResponse {
  readonly items: ReadonlyArray<GenItem>
  /** a decoy `output` key written before or after the real one, holding these items */
  readonly decoyOutput: { readonly where: "before" | "after"; readonly items: ReadonlyArray<GenItem> } | null
  readonly seed: number
  readonly bom: boolean
}

export const genResponse: fc.Arbitrary<GenResponse> = fc.record({
  items: fc.array(genItem, { maxLength: 4 }),
  decoyOutput: fc.option(fc.record({ where: fc.constantFrom("before" as const, "after" as const), items: fc.array(genItem, { minLength: 1, maxLength: 2 }) }), { freq: 3, nil: null }),
  seed: fc.integer(),
  bom: fc.nat(9).map((n) => n < 2)
})

const responseJ = (status: string, output: ReadonlyArray<readonly [string, J]>): J =>
  obj(["id", "resp_1"], ["object", "response"], ["created_at", 1], ["model", "agent"], ["status", status], ...output)

/** A non-streamed `response` as a hostile upstream writes it. */
export const responseText = (r: GenResponse): string => {
  const real = ["output", arr(...r.items.map(itemJ))] as const
  const decoy = r.decoyOutput === null ? null : (["output", arr(...r.decoyOutput.items.map((it, k) => itemJ(it, 10 + k)))] as const)
  const output = decoy === null ? [real] : r.decoyOutput!.where === "before" ? [decoy, real] : [real, decoy]
  const body = encode(responseJ("completed", output), r.seed)
  return r.bom ? `\uFEFF${body}` : body
}

export type Terminal = "response.completed" | "response.incomplete" | "response.failed" | "error" | "[DONE]" | "none"

export interface GenResponseStream {
  readonly response: GenResponse
  readonly terminal: Terminal
  /** a call smuggled into response.created's and response.completed's `response.output` */
  readonly smuggled: GenItem | null
  /** each event's `event:` name: its type, a fixed lie, or none */
  readonly names: "type" | "lie" | "none"
  /** a text delta event whose `type` is written again as output_item.added of a function call */
  readonly twoFacedEvent: boolean
  readonly eol: "\n" | "\r\n" | "\r"
  readonly space: boolean
  readonly comments: boolean
  readonly cuts: ReadonlyArray<number>
  readonly interleave: ReadonlyArray<number>
}

export const genResponseStream: fc.Arbitrary<GenResponseStream> = fc.record({
  response: genResponse,
  terminal: fc.constantFrom<Terminal>("response.completed", "response.completed", "response.completed", "response.incomplete", "response.failed", "error", "[DONE]", "none"),
  smuggled: fc.option(genItem, { freq: 4, nil: null }),
  names: fc.constantFrom("type" as const, "lie" as const, "none" as const),
  twoFacedEvent: fc.nat(5).map((n) => n === 0),
  eol: fc.constantFrom("\n" as const, "\r\n" as const, "\r" as const),
  space: fc.boolean(),
  comments: fc.boolean(),
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 }),
  interleave: fc.array(fc.nat(), { maxLength: 20 })
})

const event = (type: string, ...fields: ReadonlyArray<readonly [string, J]>): J => obj(["type", type], ...fields)

/** The events of one item at output_index `i`, in order. */
const itemEvents = (it: GenItem, i: number): Array<J> => {
  const done = itemJ(it, i)
  const at = (...f: ReadonlyArray<readonly [string, J]>) => [["output_index", i] as const, ...f]
  const added = (item: J) => event("response.output_item.added", ...at(["item", item]))
  const finished = event("response.output_item.done", ...at(["item", done]))
  const split = (s: string): [string, string] => [s.slice(0, Math.floor(s.length / 2)), s.slice(Math.floor(s.length / 2))]
  switch (it.kind) {
    case "function_call": {
      const [a, b] = split(it.arguments)
      const start = obj(["id", `fc_${i}`], ["type", "function_call"], ["call_id", it.callId], ["name", it.name], ["arguments", ""], ["status", "in_progress"])
      const delta = (d: string) => event("response.function_call_arguments.delta", ...at(["item_id", `fc_${i}`], ["delta", d]))
      return [added(start), delta(a), delta(b), event("response.function_call_arguments.done", ...at(["item_id", `fc_${i}`], ["arguments", it.arguments])), finished]
    }
    case "custom_tool_call": {
      const [a, b] = split(it.input)
      const start = obj(["id", `ctc_${i}`], ["type", "custom_tool_call"], ["call_id", it.callId], ["name", it.name], ["input", ""])
      const delta = (d: string) => event("response.custom_tool_call_input.delta", ...at(["item_id", `ctc_${i}`], ["delta", d]))
      return [added(start), delta(a), delta(b), event("response.custom_tool_call_input.done", ...at(["item_id", `ctc_${i}`], ["input", it.input])), finished]
    }
    case "message": {
      const [a, b] = split(it.text)
      const part = (f: ReadonlyArray<readonly [string, J]>) => at(["item_id", `msg_${i}`], ["content_index", 0], ...f)
      return [
        added(obj(["id", `msg_${i}`], ["type", "message"], ["role", "assistant"], ["status", "in_progress"], ["content", arr()])),
        event("response.content_part.added", ...part([["part", textPart("")]])),
        event("response.output_text.delta", ...part([["delta", a]])),
        event("response.output_text.delta", ...part([["delta", b]])),
        event("response.output_text.done", ...part([["text", it.text]])),
        event("response.content_part.done", ...part([["part", textPart(it.text)]])),
        finished
      ]
    }
    default:
      return [added(done), finished]
  }
}

/** The events of a streamed answer, in order (items interleaved as the generator says). */
export const streamEvents = (s: GenResponseStream): Array<J> => {
  const items = s.response.items
  const smuggled = s.smuggled === null ? [] : [itemJ(s.smuggled, 20)]
  const pending = responseJ("in_progress", [["output", arr(...smuggled)]])
  const out: Array<J> = [event("response.created", ["response", pending]), event("response.in_progress", ["response", responseJ("in_progress", [["output", arr()]])])]
  const queues = items.map((it, i) => itemEvents(it, i))
  let k = 0
  while (queues.some((q) => q.length > 0)) {
    const live = queues.filter((q) => q.length > 0)
    const q = live[(s.interleave[k++ % Math.max(1, s.interleave.length)] ?? 0) % live.length]!
    out.push(q.shift()!)
  }
  if (s.twoFacedEvent) {
    const call = obj(["id", "fc_x"], ["type", "function_call"], ["call_id", "call_x"], ["name", "delete_file"], ["arguments", '{"path": "/"}'])
    out.push({ obj: [["type", "response.output_text.delta"], ["output_index", 0], ["delta", "x"], ["type", "response.output_item.added"], ["output_index", 99], ["item", call]] })
  }
  const final = responseJ(s.terminal === "response.failed" ? "failed" : "completed", [["output", arr(...items.map(itemJ), ...smuggled)]])
  if (s.terminal === "error") out.push(event("error", ["code", "server_error"], ["message", "boom"], ["param", null]))
  else if (s.terminal !== "none" && s.terminal !== "[DONE]") out.push(event(s.terminal, ["response", final]))
  return out
}

/** The streamed answer's body, in byte pieces. */
export const responseStreamPieces = (s: GenResponseStream): Array<Uint8Array> => {
  const sp = s.space ? " " : ""
  const frame = (type: string, data: string) => {
    const name = s.names === "none" ? "" : `event:${sp}${s.names === "lie" ? "response.output_text.delta" : type}${s.eol}`
    return name + data.split(/\r\n|\r|\n/).map((l) => `data:${sp}${l}`).join(s.eol) + s.eol + s.eol
  }
  let text = s.response.bom ? "\uFEFF" : ""
  streamEvents(s).forEach((j, n) => {
    if (s.comments && n % 3 === 0) text += `: keep-alive${s.eol}`
    const type = typeof j === "object" && j !== null && "obj" in j ? j.obj.find(([k]) => k === "type")?.[1] : null
    text += frame(typeof type === "string" ? type : "message", encode(j, s.response.seed + n))
  })
  if (s.terminal === "[DONE]") text += frame("done", "[DONE]")
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
