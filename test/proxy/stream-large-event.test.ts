/**
 * An event larger than the SSE parser's own default (10 MiB) but within `proxy.max_answer_bytes`
 * (64 MiB by default) reaches the client whole: the parser is bounded by the proxy's limit, not by
 * its default, which used to drop such an event silently and read on from the middle of it.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Harness, harnessLayer } from "../support/harness.js"
import { startHostileUpstream } from "../support/hostile-upstream.js"

const hostile = await startHostileUpstream()
afterAll(() => hostile.close())

const SIZE = 11 * 1024 * 1024
const event = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

describe("a large streamed event within max_answer_bytes", () => {
  layer(harnessLayer({ upstream: { base_url: hostile.url }, settings: () => ({ judges: { "allow-all": { kind: "static", decision: "allow" } } }) }), {
    excludeTestServices: true
  })((it) => {
    it.effect("an 11 MiB content delta arrives whole, then the stream ends normally", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const big = event({ content: "x".repeat(SIZE) })
        // written in pieces, as a network delivers it
        const pieces: Array<string> = []
        for (let i = 0; i < big.length; i += 1 << 20) pieces.push(big.slice(i, i + (1 << 20)))
        hostile.answer = { contentType: "text/event-stream", body: [...pieces, event({}, "stop"), "data: [DONE]\n\n"] }
        const text = yield* Effect.promise(() =>
          fetch(`${h.url}/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ model: "agent@enforce:allow-all", stream: true, messages: [{ role: "user", content: "x" }] })
          }).then((r) => r.text())
        )
        let content = 0
        for (const line of text.split("\n")) {
          if (!line.startsWith("data: {")) continue
          const chunk = JSON.parse(line.slice(6)) as { choices?: Array<{ delta?: { content?: string } }>; error?: unknown }
          expect(chunk.error).toBeUndefined()
          content += chunk.choices?.[0]?.delta?.content?.length ?? 0
        }
        expect(content).toBe(SIZE)
        expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true)
      }))
  })
})
