/**
 * The `: x-vetobench-blocked=N` comment before a chat stream's end counts the calls the gate removed,
 * also when the stream ends badly: the calls held at that moment are ruled first, then counted.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Harness, harnessLayer } from "../support/harness.js"
import { startHostileUpstream } from "../support/hostile-upstream.js"

const hostile = await startHostileUpstream()
afterAll(() => hostile.close())

const callDelta = (i: number, name: string) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { tool_calls: [{ index: i, id: `call_${i}`, type: "function", function: { name, arguments: "{}" } }] }, finish_reason: null }] })}\n\n`

describe("the chat stream's blocked count", () => {
  layer(
    harnessLayer({ upstream: { base_url: hostile.url }, settings: () => ({ judges: { "deny-all": { kind: "static", decision: "deny" } } }) }),
    { excludeTestServices: true }
  )((it) => {
    it.effect("a stream cut short: the held calls are ruled, then counted in the trailer", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        hostile.answer = { contentType: "text/event-stream", body: [callDelta(0, "delete_file"), callDelta(1, "list_dir")] }
        const text = yield* Effect.promise(() =>
          fetch(`${h.url}/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-vetobench-run": "trailer-cut" },
            body: JSON.stringify({ model: "agent@enforce:deny-all", stream: true, messages: [{ role: "user", content: "x" }] })
          }).then((r) => r.text())
        )
        expect(text).toContain(": x-vetobench-blocked=2\n\n")
        expect(text).toContain("the upstream stream ended before [DONE]")
        expect(text).not.toContain("delete_file")
        expect(h.records("trailer-cut").map((r) => [r.tool.name, r.blocked])).toEqual([
          ["delete_file", true],
          ["list_dir", true]
        ])
      }))
  })
})
