/**
 * A client that leaves while the upstream is silent: the proxy must notice at once (not when the
 * upstream next sends or times out), record the call it holds and release nothing, and hang up on
 * the upstream. Before the fix, an interrupted upstream body waited for its pending read, so the
 * record waited for the upstream's timeout (here 300 s, beyond the test's hang guard).
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { Harness, harnessLayer } from "../support/harness.js"
import { readUntilHeld, startSilentUpstream } from "./silent-upstream.js"

const silent = await startSilentUpstream()
afterAll(() => silent.close())

describe("a client that leaves while the upstream is silent", () => {
  layer(
    harnessLayer({
      upstream: { base_url: silent.url, timeout_s: 300 },
      // a judge that asks no model (the silent upstream would not answer it)
      settings: () => ({ judges: { "allow-all": { kind: "static", decision: "allow" } } })
    }),
    { excludeTestServices: true }
  )((it) => {
    it.effect("the held call is recorded at once and the upstream is hung up on", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        yield* Effect.promise(async () => {
          const ctrl = new AbortController()
          // the text comes after the call: once the client has it, the call is held
          const { text } = await readUntilHeld(`${h.url}/chat/completions`, { "x-vetobench-run": "silent-left" }, ctrl.signal)
          ctrl.abort()
          expect(text).not.toContain("delete_file")
        })
        // hang guards, not timing assertions (the upstream would hold the stream for 300 s)
        const guard = Schedule.spaced("50 millis").pipe(Schedule.upTo("100 seconds"))
        const records = yield* Effect.sync(() => h.records("silent-left")).pipe(
          Effect.filterOrFail((r) => r.length > 0, () => "not yet"),
          Effect.retry(guard)
        )
        expect(records.map((x) => [x.tool.name, x.stream, x.wire])).toEqual([["delete_file", true, "chat"]])
        yield* Effect.sync(() => silent.closed()).pipe(Effect.filterOrFail((n) => n > 0, () => "not yet"), Effect.retry(guard))
      }))
  })
})
