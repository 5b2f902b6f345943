/**
 * Every call record names the wire format its call came in: `chat` on the chat route, streamed or
 * not (the other formats' tests check theirs), so one audit chain can hold every format.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, Harness, harnessLayer, post } from "../support/harness.js"

describe("records carry the wire format", () => {
  layer(harnessLayer(), { excludeTestServices: true })((it) => {
    it.effect("chat, buffered and streamed", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        for (const stream of [false, true]) {
          h.fake.reset()
          h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp/wire" })]
          const run = `wire-chat-${stream}`
          const res = yield* post(h, { model: "agent@shadow:slm", stream }, { run })
          expect(res.status).toBe(200)
          expect(h.records(run).map((r) => [r.tool.name, r.wire, r.stream])).toEqual([["list_dir", "chat", stream]])
        }
      }))
  })
})
