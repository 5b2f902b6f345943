/** `kind: plugin`: loading a plain-JS judge module, checking its shape, and wrapping its `rule`. */
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { Settings } from "../../src/config/service.js"
import { defaultSettings, type JudgeSpec } from "../../src/config/settings.js"
import type { ToolCallView } from "../../src/domain/tool-call.js"
import type { JudgeContext } from "../../judges/Judge.js"
import { pluginKindPlugin } from "../../judges/plugin.js"

const FIXTURES = path.resolve("test/fixtures/plugins")
const fixture = (name: string) => path.join(FIXTURES, name)

const build = (spec: Omit<JudgeSpec, "kind">, opts: { readonly root?: string; readonly timeout_s?: number } = {}) =>
  Effect.flatMap(pluginKindPlugin, (k) =>
    k.make("kw", { kind: "plugin", ...spec }, { timeout_s: opts.timeout_s ?? 30, judge: () => undefined })
  ).pipe(Effect.provide(Settings.layerValue(defaultSettings(opts.root ?? FIXTURES))))

/** A throw-away module file with `source` as its text. */
const tmpModule = (source: string, name = "plugin.mjs") => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "vetobench-plugin-")), name)
  writeFileSync(file, source)
  return file
}

const KEYWORDS = { module: fixture("keyword-judge.mjs"), options: { keywords: ["rm -rf", "/etc/shadow"] } }

const call = (name: string, args: unknown): ToolCallView => ({ name, description: "", parameters: null, arguments: args })
const ctx: JudgeContext = {
  requestId: "req-1",
  runId: "run",
  episodeId: null,
  sessionId: null,
  principal: null,
  agentModel: "agent",
  headers: { "x-api-secret": "s3cret" }
}

describe("plugin judge: the keyword fixture", () => {
  it.effect("loads by absolute path; identity from the module and the judge", () =>
    Effect.gen(function* () {
      const j = yield* build(KEYWORDS)
      expect(j).toMatchObject({ judge: "kw", kind: "plugin:keyword", model: null, version: "1.0.0", cacheable: true })
    })
  )

  it.effect("denies an argument string that contains a keyword (nested too), naming it", () =>
    Effect.gen(function* () {
      const j = yield* build(KEYWORDS)
      const v = yield* j.rule(call("execute", { cmd: "sudo RM -RF /home" }), ctx)
      expect(v).toMatchObject({
        judge: "kw",
        kind: "plugin:keyword",
        model: null,
        version: "1.0.0",
        status: "ok",
        decision: "deny",
        category: "keyword",
        reason: "argument contains the keyword 'rm -rf'",
        cached: false
      })
      expect(v.latency_ms).toBeGreaterThanOrEqual(0)
      const nested = yield* j.rule(call("read", { files: [{ path: "/etc/shadow" }] }), ctx)
      expect(nested).toMatchObject({ decision: "deny", reason: "argument contains the keyword '/etc/shadow'" })
      // arguments that were not valid JSON reach the plugin as the raw string
      expect(yield* j.rule(call("execute", "rm -rf / {"), ctx)).toMatchObject({ decision: "deny" })
    })
  )

  it.effect("allows the rest", () =>
    Effect.gen(function* () {
      const j = yield* build(KEYWORDS)
      const v = yield* j.rule(call("list_dir", { path: "/tmp", depth: 2 }), ctx)
      expect(v).toMatchObject({ status: "ok", decision: "allow", category: "none", reason: "no keyword in the arguments of list_dir" })
    })
  )

  it.effect("a relative module path is resolved against the repo root, not the working directory", () =>
    Effect.gen(function* () {
      const j = yield* build({ ...KEYWORDS, module: "./keyword-judge.mjs" }, { root: FIXTURES })
      expect(j.kind).toBe("plugin:keyword")
      const k = yield* build({ ...KEYWORDS, module: "test/fixtures/plugins/keyword-judge.mjs" }, { root: process.cwd() })
      expect(k.version).toBe("1.0.0")
    })
  )
})

describe("plugin judge: start-up errors name the judge and key", () => {
  const configError = (spec: Omit<JudgeSpec, "kind">, opts: { readonly root?: string } = {}) => Effect.flip(build(spec, opts))

  it.effect("missing file: the resolved path and the root it was resolved against", () =>
    Effect.gen(function* () {
      const e = yield* configError({ module: "./judges-local/nope.mjs" }, { root: FIXTURES })
      expect(e._tag).toBe("JudgeConfigError")
      expect(e).toMatchObject({ judge: "kw", path: "module" })
      expect(e.reason).toBe(`file not found: ${fixture("judges-local/nope.mjs")} (resolved against the repo root ${FIXTURES})`)
      expect(e.message).toMatch(/^judges\.kw\.module: file not found: /)
      const abs = yield* configError({ module: "/nonexistent/judge.mjs" })
      expect(abs.reason).toBe("file not found: /nonexistent/judge.mjs")
    })
  )

  it.effect("a directory, or a file that is not JavaScript", () =>
    Effect.gen(function* () {
      expect((yield* configError({ module: FIXTURES })).reason).toContain("is a directory")
      const text = tmpModule("this is not javascript\n")
      const e = yield* configError({ module: text })
      expect(e).toMatchObject({ path: "module" })
      expect(e.reason).toContain(`${text} is not a loadable JavaScript module: `)
    })
  )

  it.effect("no default export (nor judgeKind)", () =>
    Effect.gen(function* () {
      const e = yield* configError({ module: fixture("no-default.mjs") })
      expect(e).toMatchObject({ judge: "kw", path: "module" })
      expect(e.reason).toContain("no-default.mjs has no default export (nor a named export `judgeKind`)")
    })
  )

  it.effect("an export that is not { kind, create }", () =>
    Effect.gen(function* () {
      expect((yield* configError({ module: tmpModule("export default 42\n") })).reason).toContain("must be an object { kind, version?, create }, got number")
      expect((yield* configError({ module: tmpModule('export default { kind: "x" }\n') })).reason).toContain("is not a judge kind: create: must be a function, got undefined")
      expect((yield* configError({ module: tmpModule("export default { create() {} }\n") })).reason).toContain("is not a judge kind: kind: must be a non-empty string, got undefined")
    })
  )

  it.effect("create() that throws, or returns no judge, or a judge without rule", () =>
    Effect.gen(function* () {
      const threw = yield* configError({ module: fixture("keyword-judge.mjs"), options: { keywords: [] } })
      expect(threw).toMatchObject({ judge: "kw", path: "module" })
      expect(threw.reason).toMatch(/^create\(\) of plugin 'keyword' \(.*keyword-judge\.mjs\) failed: options\.keywords must be a non-empty list of strings$/)
      const none = yield* configError({ module: tmpModule('export default { kind: "x", create() {} }\n') })
      expect(none.reason).toContain("must return a judge object { rule, … }, got undefined")
      const norule = yield* configError({ module: fixture("no-rule.mjs") })
      expect(norule.reason).toMatch(/create\(\) of plugin 'norule' .* returned an invalid judge: rule: must be a function, got undefined$/)
      const badModel = yield* configError({ module: tmpModule('export default { kind: "x", create: () => ({ model: 3, rule() {} }) }\n') })
      expect(badModel.reason).toContain("returned an invalid judge: model: must be a string or null, got 3")
    })
  )

  it.effect("create() that never finishes is bounded by the judge timeout", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        Effect.flip(build({ module: tmpModule('export default { kind: "slow", create: () => new Promise(() => {}) }\n') }, { timeout_s: 5 }))
      )
      // let the module load (real I/O) before moving the test clock past the deadline
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 300)))
      yield* TestClock.adjust("6 seconds")
      const e = yield* Fiber.join(fiber)
      expect(e.reason).toMatch(/^create\(\) of plugin 'slow' .* did not finish within 5s$/)
    })
  )

  it.effect("the config itself is decoded with a Schema: module required, no unknown keys, options a mapping", () =>
    Effect.gen(function* () {
      expect(yield* configError({})).toMatchObject({ path: "module", reason: "is required" })
      const typo = yield* configError({ module: fixture("keyword-judge.mjs"), option: {} })
      expect(typo).toMatchObject({ path: "option" })
      expect(typo.reason).toBe("unknown key for kind 'plugin' (allowed: kind, module, options)")
      expect(yield* configError({ module: fixture("keyword-judge.mjs"), options: ["a"] })).toMatchObject({
        path: "options",
        reason: "must be a mapping"
      })
    })
  )
})

describe("plugin judge: rule failures become JudgeError", () => {
  it.effect("a rejected promise → unavailable, with the plugin's message and the latency", () =>
    Effect.gen(function* () {
      const j = yield* build({ module: fixture("rule-throws.mjs") })
      expect(j).toMatchObject({ kind: "plugin:throws", version: "0.0.1", cacheable: false })
      const e = yield* Effect.flip(j.rule(call("delete_file", { path: "/" }), ctx))
      expect(e._tag).toBe("JudgeError")
      expect(e).toMatchObject({ judge: "kw", reason: "unavailable" })
      expect(e.message).toMatch(/^plugin 'throws' \(.*rule-throws\.mjs\) failed: backend down while judging delete_file$/)
      expect(e.latency_ms).toBeGreaterThanOrEqual(0)
    })
  )

  it.effect("a synchronous throw → unavailable", () =>
    Effect.gen(function* () {
      const j = yield* build({ module: fixture("rule-throws.mjs"), options: { sync: true } })
      const e = yield* Effect.flip(j.rule(call("delete_file", {}), ctx))
      expect(e).toMatchObject({ reason: "unavailable" })
      expect(e.message).toContain("failed: sync failure judging delete_file")
    })
  )

  it.effect("decision `maybe` → output-invalid, with the raw result", () =>
    Effect.gen(function* () {
      const j = yield* build({ module: fixture("bad-decision.mjs") })
      const e = yield* Effect.flip(j.rule(call("delete_file", {}), ctx))
      expect(e).toMatchObject({ judge: "kw", reason: "output-invalid" })
      expect(e.message).toMatch(/^plugin 'maybe' .* returned an invalid result: decision: must be allow, deny or hold, got "maybe"$/)
      expect(JSON.parse(e.raw!)).toEqual({ decision: "maybe", reason: "cannot make up my mind" })
    })
  )

  it.effect("a result that is not an object, or a probability out of range → output-invalid", () =>
    Effect.gen(function* () {
      const nothing = yield* build({ module: tmpModule('export default { kind: "x", create: () => ({ rule: async () => {} }) }\n') })
      expect((yield* Effect.flip(nothing.rule(call("a", {}), ctx))).message).toContain("expected an object { decision, … }, got undefined")
      const prob = yield* build({ module: tmpModule('export default { kind: "x", create: () => ({ rule: () => ({ decision: "deny", probability: 7 }) }) }\n') })
      expect((yield* Effect.flip(prob.rule(call("a", {}), ctx))).message).toContain("probability: must be a number between 0 and 1, got 7")
    })
  )
})

describe("plugin judge: the rest of the contract", () => {
  it.effect("named export judgeKind, a class-based judge (prototype rule, `this`), hold + probability; no secrets in ctx", () =>
    Effect.gen(function* () {
      const file = fixture("named-class.mjs")
      const j = yield* build({ module: file, options: { prefix: "delete_" } }, { timeout_s: 12 })
      const hash = createHash("sha256").update(readFileSync(file)).digest("hex").slice(0, 16)
      // no version from the module or the judge: a hash of the module file
      expect(j).toMatchObject({ kind: "plugin:prefix", model: "kw@12s", version: `sha256:${hash}`, cacheable: false })
      const v = yield* j.rule(call("delete_file", {}), ctx)
      expect(v).toMatchObject({ decision: "hold", probability: 0.9, category: "other", reason: "delete_file for agent (request req-1; headers: false)" })
      expect(JSON.parse(v.raw)).toEqual({ keys: ["agentModel", "episodeId", "principal", "requestId", "runId", "sessionId", "signal"] })
      expect(yield* j.rule(call("list_dir", {}), ctx)).toMatchObject({ decision: "allow", category: "none", probability: 0.1 })
    })
  )

  it.effect("the plugin gets copies: it cannot rewrite the call (audited) or the configured options", () =>
    Effect.gen(function* () {
      const options = { keep: "me" }
      const j = yield* build({ module: fixture("mutates.mjs"), options })
      expect(options).toEqual({ keep: "me" })
      const c = call("delete_file", { path: "/" })
      expect(yield* j.rule(c, ctx)).toMatchObject({ decision: "allow" })
      expect(c).toEqual(call("delete_file", { path: "/" }))
      expect(ctx.requestId).toBe("req-1")
    })
  )

  it("docs/judges.md shows the keyword fixture verbatim (so the documented example is the tested one)", () => {
    const doc = readFileSync("docs/judges.md", "utf8")
    const blocks = [...doc.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1])
    expect(blocks).toContain(readFileSync(fixture("keyword-judge.mjs"), "utf8"))
  })
})
