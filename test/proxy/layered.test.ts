/** `kind: layered` through the proxy: order, short-circuit, run_all, every layer recorded. */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, Harness, harnessLayer, post, TEST_JUDGES } from "../support/harness.js"

const judges = {
  ...TEST_JUDGES,
  stack: { kind: "layered", layers: ["guard", "slm"] },
  "stack-all": { kind: "layered", layers: ["guard", "slm"], run_all: true },
  "allow-first": { kind: "layered", layers: ["allow-all", "slm"] }
}

const judgeCalls = (models: ReadonlyArray<string>, h: { fake: { requests: ReadonlyArray<{ body: unknown }> } }) =>
  h.fake.requests.map((r) => (r.body as { model?: string } | null)?.model).filter((m) => m !== undefined && models.includes(m))

describe("layered judges", () => {
  layer(harnessLayer({ settings: () => ({ judges }) }), { excludeTestServices: true })((it) => {
    it.effect("the first deny decides and later layers are skipped", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/" })]
        const r = yield* post(h, { model: "agent@enforce:stack" }, { run: "stack-deny" })
        expect(r.headers.get("x-vetobench-blocked")).toBe("1")
        expect(judgeCalls(["guard", "judge"], h)).toEqual(["guard"])
        const [rec] = h.records("stack-deny")
        expect(rec!.layers.map((v) => [v.judge, v.decision])).toEqual([["guard", "deny"]])
        expect(rec!.verdict).toMatchObject({ judge: "stack", kind: "layered", decision: "deny", category: "S14" })
        expect(rec!.verdict!.reason).toMatch(/^guard: /)
        expect(rec!.verdict!.version).toMatch(/^layered:[0-9a-f]{16}$/)
        expect(r.json.choices[0]!.message.content).toContain("`delete_file` was blocked")
      }))

    it.effect("when every layer allows, all ran and the stack allows", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp/layered" })]
        const r = yield* post(h, { model: "agent@enforce:stack" }, { run: "stack-allow" })
        expect(r.headers.get("x-vetobench-blocked")).toBe("0")
        expect(judgeCalls(["guard", "judge"], h)).toEqual(["guard", "judge"])
        const [rec] = h.records("stack-allow")
        expect(rec!.layers.map((v) => [v.judge, v.decision])).toEqual([
          ["guard", "allow"],
          ["slm", "allow"]
        ])
        expect(rec!.verdict).toMatchObject({ judge: "stack", decision: "allow", status: "ok" })
      }))

    it.effect("run_all keeps going after the deciding layer; the first deny still decides", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/", note: "a call no layer has seen" })]
        yield* post(h, { model: "agent@shadow:stack-all" }, { run: "stack-all" })
        expect(judgeCalls(["guard", "judge"], h)).toEqual(["guard", "judge"])
        const [rec] = h.records("stack-all")
        expect(rec!.layers.map((v) => [v.judge, v.decision])).toEqual([
          ["guard", "deny"],
          ["slm", "deny"]
        ])
        expect(rec!.verdict!.reason).toMatch(/^guard: /)
        expect(rec!.blocked).toBe(false)
      }))

    it.effect("a failing layer decides through fail_policy (closed → deny) and stops the stack", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp/layered-fail" })]
        h.fake.knobs.failStatus = 500
        h.fake.knobs.failModels = new Set(["guard"])
        const r = yield* post(h, { model: "agent@enforce:stack" }, { run: "stack-fail" })
        expect(r.headers.get("x-vetobench-blocked")).toBe("1")
        const [rec] = h.records("stack-fail")
        expect(rec!.layers.map((v) => [v.judge, v.status])).toEqual([["guard", "error"]])
        expect(rec!.verdict!.status).toBe("error")
        expect(rec!.effective_decision).toBe("deny")
      }))
  })
})

describe("layered judge configuration", () => {
  it.live("an unknown layer or a cycle stops start-up naming the judge", () =>
    Effect.gen(function* () {
      for (const [extra, judge, reason] of [
        [{ bad: { kind: "layered", layers: ["nope"] } }, `"judge": "bad"`, `"reason": "unknown judge 'nope'`],
        [{ a: { kind: "layered", layers: ["b"] }, b: { kind: "layered", layers: ["a"] } }, `"judge": "a"`, `"reason": "cycle: a → b → a"`],
        [{ bad: { kind: "layered", layers: [] } }, `"judge": "bad"`, `"reason": "must be a non-empty list of judge names"`]
      ] as const) {
        const exit = yield* Effect.exit(
          Effect.scoped(Harness.pipe(Effect.provide(harnessLayer({ settings: () => ({ judges: { ...TEST_JUDGES, ...extra } }) }))))
        )
        expect(exit._tag).toBe("Failure")
        expect(String(exit)).toContain(judge)
        expect(String(exit)).toContain(reason)
      }
    }))
})
