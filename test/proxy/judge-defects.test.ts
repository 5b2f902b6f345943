/**
 * A defect is a verdict, through the HTTP proxy: a judge kind that throws, dies inside
 * `Effect.sync`, overflows the stack, interrupts itself or answers no verdict still gives the agent a
 * normal answer, ruled through `fail_policy` (closed blocks, open lets through), streamed or not, with
 * exactly one record per call and the proxy healthy after.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { defaultPlugins } from "../../judges/plugins.js"
import { call, Harness, harnessLayer, post } from "../support/harness.js"
import { misbehaving } from "../support/misbehaving-judge.js"
import { assemble, chunksOf, postStream } from "../support/sse.js"

const MODES = ["throws", "dies-in-sync", "overflows", "interrupts", "not-a-verdict"] as const

for (const policy of ["closed", "open"] as const) {
  describe(`judge defects through the proxy, fail_policy ${policy}`, () => {
    layer(
      harnessLayer({
        plugins: [...defaultPlugins, misbehaving],
        settings: () => ({ judges: Object.fromEntries(MODES.map((m) => [m, { kind: "misbehaving", how: m }])), proxy: { fail_policy: policy } })
      }),
      { excludeTestServices: true }
    )((it) => {
      for (const mode of MODES) {
        it.effect(`a judge that ${mode}: ruled through fail_policy ${policy}, one record per call, streamed and not`, () =>
          Effect.gen(function* () {
            const h = yield* Harness
            h.fake.reset()
            h.fake.knobs.nextCalls = [call("delete_file", { path: "/" }), call("list_dir", { path: "." })]
            const run = `defect-${mode}-${policy}`
            const r = yield* post(h, { model: `agent@enforce:${mode}` }, { run })
            expect(r.status, r.text).toBe(200)
            expect(r.headers.get("x-vetobench-blocked")).toBe(policy === "closed" ? "2" : "0")
            const streamed = assemble(chunksOf((yield* postStream(h, { model: `agent@enforce:${mode}` }, { run })).items))
            expect(streamed.tool_calls.length).toBe(policy === "closed" ? 0 : 2)
            const records = h.records(run)
            expect(records).toHaveLength(4)
            for (const rec of records) {
              expect(rec.verdict?.status).toBe("error")
              expect(rec.effective_decision).toBe(policy === "closed" ? "deny" : "allow")
              expect(rec.blocked).toBe(policy === "closed")
            }
            const health = yield* Effect.promise(() => fetch(`${h.url.replace(/\/v1$/, "")}/healthz`).then((x) => x.status))
            expect(health).toBe(200)
          }))
      }
    })
  })
}

describe("a judge that hangs, through the proxy", () => {
  layer(
    harnessLayer({
      plugins: [...defaultPlugins, misbehaving],
      settings: () => ({ judges: { hangs: { kind: "misbehaving", how: "hangs" } }, proxy: { fail_policy: "closed", judge_timeout_s: 1 } })
    }),
    { excludeTestServices: true }
  )((it) => {
    for (const path of ["chat/completions", "messages", "responses"] as const) {
      it.effect(`${path}: the judge deadline rules it through fail_policy, one record per call, streamed and not`, () =>
        Effect.gen(function* () {
          const h = yield* Harness
          h.fake.reset()
          h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
          const run = `hangs-${path.replace("/", "-")}`
          const body =
            path === "chat/completions"
              ? { model: "agent@enforce:hangs" }
              : path === "messages"
                ? { model: "agent@enforce:hangs", max_tokens: 50, tools: [{ name: "delete_file", input_schema: { type: "object" } }] }
                : { model: "agent@enforce:hangs", input: "clean up", tools: [{ type: "function", name: "delete_file", parameters: { type: "object" } }] }
          const r = yield* post(h, body, { run, path })
          expect(r.status, r.text).toBe(200)
          expect(r.headers.get("x-vetobench-blocked")).toBe("1")
          const s = yield* post(h, { ...body, stream: true }, { run, path })
          expect(s.status, s.text).toBe(200)
          // no call item, delta or block reached the client
          expect(s.text).not.toMatch(/"type":"function_call"|"tool_calls"|"type":"tool_use"/)
          const records = h.records(run)
          expect(records).toHaveLength(2)
          for (const rec of records) {
            expect(rec.verdict?.status).toBe("timeout")
            expect(rec.blocked).toBe(true)
          }
        }))
    }
  })
})
