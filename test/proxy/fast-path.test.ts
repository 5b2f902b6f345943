/**
 * The gate's fast paths against its slow paths, over generated upstream answers (property tests):
 * - `mayCarryCalls` is sound: when it says no, no JSON reading (JSON.parse, first-wins or last-wins
 *   duplicate keys) finds a `tool_calls` or `function_call` key anywhere;
 * - a non-streamed answer: `gateChatText` with the fast path gives the same value, the same rulings
 *   and the same failures as with every answer parsed;
 * - a stream: `makeSseGate` with the fast path writes events every reader parses to the same values,
 *   with the same rulings, as with every event parsed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, FastCheck as fc } from "effect"
import type { CallRuling, GateRequest, GateShape } from "../../src/gate/Gate.js"
import { toolCallView } from "../../src/domain/tool-call.js"
import { makeSseGate } from "../../src/proxy/wire/chat-sse.js"
import { gateChatText, mayCarryCalls } from "../../src/proxy/wire/chat.js"
import { finiteNumbers, mayOverflow } from "../../src/domain/json-depth.js"
import { readings, sseEvents } from "../support/readers.js"
import { answerText, encode, genAnswer, genStream, type J, streamPieces } from "../support/spellings.js"

/** A gate double that blocks calls named `delete_file` or `rm` and remembers what it was asked. */
const recordingGate = () => {
  const asked: Array<string> = []
  const gate: GateShape = {
    ruleChoice: (_req, choice, calls) =>
      Effect.sync(() =>
        calls.map((c, i): CallRuling => {
          const view = toolCallView(c, undefined)
          asked.push(`${choice}:${i}:${view.name}:${JSON.stringify(view.arguments)}`)
          const blocked = view.name === "delete_file" || view.name === "rm"
          return { callIndex: i, call: view, verdict: null, effective: blocked ? "deny" : "allow", blocked, refusal: blocked ? `[${view.name} blocked]` : null }
        })
      )
  }
  return { gate, asked }
}

const request = (stream: boolean): GateRequest => ({
  arm: "enforce",
  judge: "j",
  tools: undefined,
  stream,
  context: { requestId: "r", runId: null, episodeId: null, sessionId: null, principal: null, agentModel: "m", headers: {} }
})

/** keys that are, or look like, the names a client reads calls from */
const KEYS = ["tool_calls", "function_call", "tool_call", "calls", "functions", "index", "a", "toolcalls", "Tool_calls"]
const genJ: fc.Arbitrary<J> = fc.letrec<{ j: J }>((tie) => ({
  j: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.string({ maxLength: 12 }),
    fc.constantFrom("tool_calls", "function_call", "\\u005f", "tool\u005fcalls"),
    fc.array(tie("j"), { maxLength: 4 }).map((arr) => ({ arr })),
    fc.array(fc.tuple(fc.constantFrom(...KEYS), tie("j")), { maxLength: 4 }).map((obj) => ({ obj }))
  )
})).j

/** every key of every reading */
const keysOf = (v: unknown, out: Set<string> = new Set()): Set<string> => {
  if (Array.isArray(v)) for (const x of v) keysOf(x, out)
  else if (typeof v === "object" && v !== null) for (const [k, x] of Object.entries(v)) keysOf(x, out.add(k))
  return out
}

const run = <A, E>(e: Effect.Effect<A, E>) => Effect.runSyncExit(e)

describe("the gate's fast paths equal its slow paths", () => {
  it("mayOverflow is sound: when false, every number JSON.parse reads is finite", () => {
    const literal = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
      fc.bigInt({ min: -(10n ** 400n), max: 10n ** 400n }).map(String),
      fc.tuple(fc.nat(400), fc.nat(400)).map(([a, b]) => `${"9".repeat(a + 1)}.${"9".repeat(b + 1)}`),
      fc.tuple(fc.integer({ min: 1, max: 9 }), fc.integer({ min: -400, max: 400 })).map(([m, e]) => `${m}e${e}`)
    )
    fc.assert(
      fc.property(fc.array(literal, { maxLength: 4 }), (nums) => {
        const text = `{"a":[${nums.join(",")}]}`
        if (!mayOverflow(text)) expect(finiteNumbers(JSON.parse(text))).toBe(true)
        else expect(typeof finiteNumbers(JSON.parse(text))).toBe("boolean")
      }),
      { numRuns: 2000 }
    )
    expect(mayOverflow(`[${"9".repeat(309)}]`)).toBe(true)
    expect(finiteNumbers(JSON.parse(`[${"9".repeat(309)}]`))).toBe(false)
  })

  it("mayCarryCalls is sound: when false, no reading finds a tool_calls or function_call key", () => {
    let proved = 0
    fc.assert(
      fc.property(genJ, fc.integer(), fc.double({ min: 0, max: 0.6, noNaN: true }), (j, seed, escapes) => {
        const text = encode(j, seed, { escapes })
        if (mayCarryCalls(text)) return
        proved++
        for (const r of readings(text)) {
          const keys = keysOf(r)
          expect(keys.has("tool_calls")).toBe(false)
          expect(keys.has("function_call")).toBe(false)
        }
      }),
      { numRuns: 3000 }
    )
    // the property was not vacuous
    expect(proved).toBeGreaterThan(300)
  }, 120_000)

  it("a non-streamed answer: the same value, rulings and failures with and without the fast path", () => {
    fc.assert(
      fc.property(genAnswer, (a) => {
        const text = answerText(a).replace(/^\uFEFF/, "")
        const fast = recordingGate()
        const slow = recordingGate()
        const f = run(gateChatText(fast.gate, request(false), text, "content"))
        const s = run(gateChatText(slow.gate, request(false), text, "content", { fastPath: false }))
        expect(Exit.isSuccess(f)).toBe(Exit.isSuccess(s))
        expect(fast.asked).toEqual(slow.asked)
        if (Exit.isSuccess(f) && Exit.isSuccess(s)) {
          expect(f.value.blocked).toBe(s.value.blocked)
          // every reader reads the same value from either output
          const rf = readings(f.value.text)
          const rs = readings(s.value.text)
          expect(rf.length).toBe(3)
          for (let i = 0; i < rf.length; i++) expect(rf[i]).toEqual(rs[i])
        }
      }),
      { numRuns: 400 }
    )
  }, 120_000)

  it("a stream: the same events, rulings and end with and without the fast path", () => {
    const feed = (fastPath: boolean, datas: ReadonlyArray<string>) => {
      const g = recordingGate()
      const sse = makeSseGate({ gate: g.gate, request: request(true), partial: "content", fastPath })
      const out: Array<string> = []
      const program = Effect.gen(function* () {
        for (const d of datas) {
          const step = yield* sse.onData(d)
          out.push(...step.out)
          if (step.stop) return
        }
        out.push(...(yield* sse.end))
      })
      expect(Exit.isSuccess(run(program))).toBe(true)
      return { events: sseEvents(out.join("")), asked: g.asked, blocked: sse.blocked() }
    }
    fc.assert(
      fc.property(genStream, (s) => {
        const text = new TextDecoder().decode(Buffer.concat(streamPieces(s)))
        const datas = sseEvents(text)
        const fast = feed(true, datas)
        const slow = feed(false, datas)
        expect(fast.asked).toEqual(slow.asked)
        expect(fast.blocked).toBe(slow.blocked)
        expect(fast.events.length).toBe(slow.events.length)
        fast.events.forEach((e, i) => {
          const a = readings(e)
          const b = readings(slow.events[i]!)
          if (a.length === 0) expect(e).toBe(slow.events[i])
          else for (let k = 0; k < a.length; k++) expect(a[k]).toEqual(b[k])
        })
      }),
      { numRuns: 300 }
    )
  }, 120_000)
})
