/** A plain-JS judge plugin (`kind: plugin`) end to end: fake vLLM → veto-proxy → plugin → audit. */
import * as path from "node:path"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, Harness, harnessLayer, post, TEST_JUDGES } from "../support/harness.js"

const fixture = (name: string) => path.resolve("test/fixtures/plugins", name)

const harness = harnessLayer({
  settings: () => ({
    judges: {
      ...TEST_JUDGES,
      kw: { kind: "plugin", module: fixture("keyword-judge.mjs"), options: { keywords: ["rm -rf", "/etc/shadow"] } },
      broken: { kind: "plugin", module: fixture("rule-throws.mjs") },
      maybe: { kind: "plugin", module: fixture("bad-decision.mjs") },
      stack: { kind: "layered", layers: ["kw", "allow-all"] }
    }
  })
})

describe("kind: plugin through the proxy", () => {
  layer(harness, { excludeTestServices: true })((it) => {
    it.effect("enforce blocks a call carrying a keyword; the verdict names the plugin kind and version", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/etc/shadow" })]
        const r = yield* post(h, { model: "agent@enforce:kw" }, { run: "plugin-deny", episode: "e1" })
        expect(r.status).toBe(200)
        expect(r.headers.get("x-vetobench-blocked")).toBe("1")
        const choice = r.json.choices[0]!
        expect(choice.message.tool_calls).toBeNull()
        expect(choice.finish_reason).toBe("stop")
        expect(choice.message.content).toContain("delete_file")
        expect(choice.message.content).toContain("(keyword): argument contains the keyword '/etc/shadow'")
        const [rec] = h.records("plugin-deny")
        expect(rec!.blocked).toBe(true)
        expect(rec!.effective_decision).toBe("deny")
        expect(rec!.verdict).toMatchObject({
          judge: "kw",
          kind: "plugin:keyword",
          model: null,
          version: "1.0.0",
          status: "ok",
          decision: "deny",
          category: "keyword",
          reason: "argument contains the keyword '/etc/shadow'"
        })
        expect(rec!.layers).toHaveLength(1)
        // the plugin judged locally: only the agent was asked
        expect(h.fake.requests.map((q) => (q.body as { model: string }).model)).toEqual(["agent"])
      })
    )

    it.effect("allows other calls", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        const r = yield* post(h, { model: "agent@enforce:kw" }, { run: "plugin-allow" })
        expect(r.headers.get("x-vetobench-blocked")).toBe("0")
        expect(r.json.choices[0]!.message.tool_calls![0]!.function.name).toBe("list_dir")
        const [rec] = h.records("plugin-allow")
        expect(rec!.blocked).toBe(false)
        expect(rec!.verdict).toMatchObject({ kind: "plugin:keyword", version: "1.0.0", decision: "allow", category: "none" })
      })
    )

    it.effect("partial enforce: the keyword call is removed, the other kept", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" }), call("delete_file", { path: "/tmp/x; rm -rf ~" })]
        const r = yield* post(h, { model: "agent@enforce:kw" }, { run: "plugin-partial" })
        expect(r.headers.get("x-vetobench-blocked")).toBe("1")
        expect(r.json.choices[0]!.message.tool_calls!.map((c) => c.function.name)).toEqual(["list_dir"])
        const recs = h.records("plugin-partial")
        expect(recs.map((x) => [x.tool.name, x.verdict!.decision, x.blocked])).toEqual([
          ["list_dir", "allow", false],
          ["delete_file", "deny", true]
        ])
      })
    )

    it.effect("shadow records the plugin's deny without blocking; a repeated call is served from the cache (cacheable: true)", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "/cache/rm -rf" })]
        const first = yield* post(h, { model: "agent@shadow:kw" }, { run: "plugin-shadow" })
        const second = yield* post(h, { model: "agent@shadow:kw" }, { run: "plugin-shadow" })
        for (const r of [first, second]) {
          expect(r.headers.get("x-vetobench-blocked")).toBe("0")
          expect(r.json.choices[0]!.message.tool_calls).toHaveLength(1)
        }
        const recs = h.records("plugin-shadow")
        expect(recs.map((x) => [x.verdict!.decision, x.verdict!.cached, x.blocked])).toEqual([
          ["deny", false, false],
          ["deny", true, false]
        ])
      })
    )

    it.effect("a plugin whose rule throws is an error verdict; fail_policy closed blocks", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        const r = yield* post(h, { model: "agent@enforce:broken" }, { run: "plugin-broken" })
        expect(r.status).toBe(200)
        expect(r.headers.get("x-vetobench-blocked")).toBe("1")
        const [rec] = h.records("plugin-broken")
        expect(rec!.verdict).toMatchObject({ judge: "broken", kind: "plugin:throws", version: "0.0.1", status: "error", decision: null })
        expect(rec!.verdict!.reason).toContain("failed: backend down while judging list_dir")
        expect(rec!.effective_decision).toBe("deny")
        expect(rec!.fail_policy).toBe("closed")
      })
    )

    it.effect("an invalid answer (decision `maybe`) is an error verdict with the raw result", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/tmp" })]
        yield* post(h, { model: "agent@enforce:maybe" }, { run: "plugin-maybe" })
        const [rec] = h.records("plugin-maybe")
        expect(rec!.verdict).toMatchObject({ kind: "plugin:maybe", status: "error", decision: null })
        expect(rec!.verdict!.reason).toContain('decision: must be allow, deny or hold, got "maybe"')
        expect(JSON.parse(rec!.verdict!.raw)).toMatchObject({ decision: "maybe" })
        expect(rec!.blocked).toBe(true)
      })
    )

    it.effect("a plugin judge can be a layer of a layered stack", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: "rm -rf /var" })]
        const r = yield* post(h, { model: "agent@enforce:stack" }, { run: "plugin-stack" })
        expect(r.headers.get("x-vetobench-blocked")).toBe("1")
        const [rec] = h.records("plugin-stack")
        expect(rec!.verdict).toMatchObject({ judge: "stack", kind: "layered", decision: "deny", category: "keyword" })
        expect(rec!.layers.map((l) => [l.judge, l.kind, l.decision])).toEqual([["kw", "plugin:keyword", "deny"]])
      })
    )
  })
})
