/**
 * A client that leaves while the upstream is silent: the proxy must notice at once (not when the
 * upstream next sends or times out), record the call it holds and release nothing, and hang up on
 * the upstream. Before the fix, an interrupted upstream body waited for its pending read, so the
 * record waited for the upstream's timeout (here 300 s, beyond the test's hang guard).
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Harness, harnessLayer } from "../support/harness.js"

const CALL_DELTA = {
  id: "c1",
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: "call_0", type: "function", function: { name: "delete_file", arguments: '{"path":"/x"}' } }] }, finish_reason: null }]
}
const TEXT_DELTA = { id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "working on it" }, finish_reason: null }] }

/** sends a call delta and a text delta, then nothing at all, until the proxy hangs up */
let upstreamClosed = 0
const silent = http.createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    res.writeHead(200, { "content-type": "text/event-stream" })
    res.write(`data: ${JSON.stringify(CALL_DELTA)}\n\ndata: ${JSON.stringify(TEXT_DELTA)}\n\n`)
    res.on("close", () => upstreamClosed++)
  })
})
await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
afterAll(async () => {
  silent.closeAllConnections()
  await new Promise<void>((resolve) => silent.close(() => resolve()))
})

describe("a client that leaves while the upstream is silent", () => {
  layer(
    harnessLayer({
      upstream: { base_url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`, timeout_s: 300 },
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
          const res = await fetch(`${h.url}/chat/completions`, {
            method: "POST",
            signal: ctrl.signal,
            headers: { "content-type": "application/json", "x-vetobench-run": "silent-left" },
            body: JSON.stringify({ model: "agent@enforce:allow-all", messages: [{ role: "user", content: "x" }], stream: true })
          })
          const reader = res.body!.getReader()
          let text = ""
          // the text comes after the call: once the client has it, the call is held
          while (!text.includes("working on it")) {
            const { value, done } = await reader.read()
            if (done) break
            text += new TextDecoder().decode(value)
          }
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
        yield* Effect.sync(() => upstreamClosed).pipe(Effect.filterOrFail((n) => n > 0, () => "not yet"), Effect.retry(guard))
      }))
  })
})
