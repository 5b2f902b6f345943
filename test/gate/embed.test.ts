/**
 * Embedding the gate (src/gate/live.ts) in an Effect service, with no HTTP server: an in-memory
 * audit sink and a judge kind of the embedder's own; calls of any wire ruled and recorded once
 * each. Then the outbound transport swapped for a scripted one: the upstreams and the judges that
 * call out (llm_json through Upstreams, toolgate, a classifier endpoint) all go through it.
 *
 * The first block is the example of docs/architecture.md "Embedding the gate" (there it imports
 * from the package; the code is the same), so the example type-checks with the tests.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schema } from "effect"
import { AuditMemory, AuditSink } from "../../layers/AuditSink.js"
import { HttpTransport, HttpTransportError, type ScriptedAnswer, type ScriptedRequest } from "../../layers/HttpTransport.js"
import { Upstreams } from "../../layers/Upstreams.js"
import { classifierPlugin } from "../../judges/classifier.js"
import { llmJsonPlugin } from "../../judges/llm-json.js"
import { defaultPlugins } from "../../judges/plugins.js"
import { staticPlugin } from "../../judges/static.js"
import { toolgatePlugin } from "../../judges/toolgate.js"
import { defaultSettings, makeUpstreamSettings, type Settings as SettingsShape } from "../../src/config/settings.js"
import type { Wire } from "../../src/domain/audit-record.js"
import { isCallRecord } from "../../src/domain/audit-record.js"
import { decided } from "../../src/domain/verdict.js"
import { Gate } from "../../src/gate/Gate.js"
import { gateLayer } from "../../src/gate/live.js"
import { JudgeError } from "../../judges/Judge.js"
import type { JudgeKindPlugin } from "../../judges/registry.js"
import { decodeSpec } from "../../judges/spec-schema.js"

// ---------------------------------------------------------------------------------------------
// the example: a judge kind of one's own, and a service that asks the gate about an agent's calls

const BlocklistConfig = Schema.Struct({
  tools: Schema.Array(Schema.String),
  /** pretend the judge's backend is down (to see fail_policy at work) */
  down: Schema.optionalWith(Schema.Boolean, { default: () => false })
})

/** `kind: blocklist` — denies the listed tools, allows the rest. */
export const blocklistPlugin: JudgeKindPlugin = Effect.succeed({
  kind: "blocklist",
  make: (name, spec) =>
    Effect.map(decodeSpec(name, spec, BlocklistConfig), (config) => {
      const id = { judge: name, kind: "blocklist", model: null, version: `blocklist:${[...config.tools].sort().join(",")}` }
      return {
        ...id,
        cacheable: true,
        rule: (call) =>
          config.down
            ? Effect.fail(new JudgeError({ judge: name, reason: "unavailable", message: "blocklist service down" }))
            : Effect.succeed(
                config.tools.includes(call.name)
                  ? decided(id, "deny", { category: "other", reason: `${call.name} is blocked` })
                  : decided(id, "allow", { reason: `${call.name} is not blocked` })
              )
      }
    })
})

export interface ProposedCall {
  readonly id: string
  readonly name: string
  /** the arguments as the model wrote them (a JSON text) */
  readonly arguments: string
}

/** An agent runtime's view of the gate: may these calls of one turn run? */
export class ToolCallPolicy extends Effect.Service<ToolCallPolicy>()("app/ToolCallPolicy", {
  effect: Effect.gen(function* () {
    const gate = yield* Gate
    const check = (runId: string, judge: string, calls: ReadonlyArray<ProposedCall>, wire: Wire = "mcp") =>
      gate
        .ruleChoice(
          {
            arm: "enforce",
            wire,
            judge,
            tools: undefined,
            stream: false,
            context: { requestId: `${runId}-${calls[0]?.id ?? "none"}`, runId, episodeId: null, sessionId: null, principal: null, agentModel: "my-agent", headers: {} }
          },
          0,
          calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }))
        )
        .pipe(Effect.map((rulings) => rulings.map((r) => ({ id: calls[r.callIndex]!.id, run: !r.blocked, refusal: r.refusal }))))
    return { check } as const
  })
}) {}

/** The service on the gate the settings describe, with the embedder's kind next to the built-in ones. */
export const toolCallPolicyLayer = (settings: SettingsShape) =>
  ToolCallPolicy.Default.pipe(Layer.provide(gateLayer({ settings, plugins: [...defaultPlugins, blocklistPlugin] })))

// ---------------------------------------------------------------------------------------------

const settingsWith = (fail_policy: "closed" | "open") =>
  defaultSettings("/tmp", {
    upstreams: [makeUpstreamSettings({ name: "unused", base_url: "http://127.0.0.1:9/v1" })],
    judges: {
      blocklist: { kind: "blocklist", tools: ["delete_file"] },
      down: { kind: "blocklist", tools: [], down: true }
    },
    proxy: { fail_policy }
  })

/** The service and the records, over a memory audit sink (one layer value: the gate writes to the sink `AuditMemory` reads). */
const embedded = (fail_policy: "closed" | "open") => {
  const memory = AuditSink.layerMemory
  return ToolCallPolicy.Default.pipe(
    Layer.provideMerge(Layer.provideMerge(gateLayer({ settings: settingsWith(fail_policy), plugins: [staticPlugin, blocklistPlugin], audit: memory }), memory))
  )
}

const callRecords = Effect.flatMap(AuditMemory, (m) => m.records).pipe(Effect.map((rs) => rs.filter(isCallRecord)))

describe("embedding the gate (src/gate/live.ts)", () => {
  it.live("allow and deny by a custom judge kind; one record per call, with the wire given", () =>
    Effect.gen(function* () {
      const policy = yield* ToolCallPolicy
      const turn = [
        { id: "c1", name: "read_file", arguments: '{"path":"/tmp/a"}' },
        { id: "c2", name: "delete_file", arguments: '{"path":"/etc/passwd"}' }
      ]
      const rulings = yield* policy.check("run-1", "blocklist", turn, "responses")
      expect(rulings.map((r) => [r.id, r.run])).toEqual([
        ["c1", true],
        ["c2", false]
      ])
      expect(rulings[0]!.refusal).toBeNull()
      expect(rulings[1]!.refusal).toContain("delete_file")
      yield* policy.check("run-1", "blocklist", [{ id: "c3", name: "list_dir", arguments: "{}" }], "messages")

      const records = yield* callRecords
      expect(
        records.map((r) => [r.run_id, r.wire, r.tool.name, r.tool.arguments, r.judge, r.verdict?.kind, r.effective_decision, r.blocked])
      ).toEqual([
        ["run-1", "responses", "read_file", { path: "/tmp/a" }, "blocklist", "blocklist", "allow", false],
        ["run-1", "responses", "delete_file", { path: "/etc/passwd" }, "blocklist", "blocklist", "deny", true],
        ["run-1", "messages", "list_dir", {}, "blocklist", "blocklist", "allow", false]
      ])
      expect(records.map((r) => r.tool_call_id)).toEqual(["c1", "c2", "c3"])
    }).pipe(Effect.provide(embedded("closed"))))

  it.live("a judge that fails goes through fail_policy (closed: not run; open: run), recorded with status error", () =>
    Effect.gen(function* () {
      for (const fail_policy of ["closed", "open"] as const) {
        const { rulings, records } = yield* Effect.gen(function* () {
          const policy = yield* ToolCallPolicy
          const rulings = yield* policy.check("run-2", "down", [{ id: "c1", name: "read_file", arguments: "{}" }])
          return { rulings, records: yield* callRecords }
        }).pipe(Effect.provide(embedded(fail_policy)))
        expect(rulings.map((r) => r.run)).toEqual([fail_policy === "open"])
        expect(records).toHaveLength(1)
        expect(records[0]).toMatchObject({
          wire: "mcp",
          fail_policy,
          effective_decision: fail_policy === "closed" ? "deny" : "allow",
          blocked: fail_policy === "closed",
          verdict: { status: "error", reason: "blocklist service down" }
        })
      }
    }))

  it.live("the example layer builds the gate from the settings alone (file audit sink) and rules through it", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(path.join(tmpdir(), "vetobench-embed-"))
      const settings = defaultSettings("/tmp", {
        upstreams: [makeUpstreamSettings({ name: "unused", base_url: "http://127.0.0.1:9/v1" })],
        judges: { blocklist: { kind: "blocklist", tools: ["delete_file"] } },
        proxy: { audit_dir: dir }
      })
      const rulings = yield* Effect.flatMap(ToolCallPolicy, (p) => p.check("run-3", "blocklist", [{ id: "c1", name: "delete_file", arguments: "{}" }])).pipe(
        Effect.provide(toolCallPolicyLayer(settings))
      )
      expect(rulings.map((r) => r.run)).toEqual([false])
      const lines = readFileSync(path.join(dir, "run-3.jsonl"), "utf8").trim().split("\n")
      const calls = lines.map((l) => JSON.parse(l) as { type?: string; tool?: { name?: string }; blocked?: boolean }).filter((r) => r.type === "call")
      expect(calls.map((r) => [r.tool?.name, r.blocked])).toEqual([["delete_file", true]])
      rmSync(dir, { recursive: true, force: true })
    }))

  it("src/gate/live.ts reaches neither src/proxy nor an HTTP server (its whole import graph)", () => {
    const seen = new Set<string>()
    const visit = (file: string) => {
      if (seen.has(file)) return
      seen.add(file)
      const text = readFileSync(file, "utf8")
      for (const m of text.matchAll(/^(?:import|export)\s[^;]*?from\s+"([^"]+)"/gm)) {
        const spec = m[1]!
        expect(spec, `${file} imports ${spec}`).not.toMatch(/HttpServer|NodeHttpServer|@effect\/platform-node\/NodeHttp/)
        if (spec.startsWith(".")) visit(path.resolve(path.dirname(file), spec.replace(/\.js$/, ".ts")))
      }
    }
    visit(path.resolve("src/gate/live.ts"))
    const proxy = [...seen].filter((f) => f.startsWith(path.resolve("src/proxy") + path.sep))
    expect(proxy).toEqual([])
    expect(seen.size).toBeGreaterThan(10)
  })
})

// ---------------------------------------------------------------------------------------------
// the transport swapped: a scripted peer answers every outbound request

const MODEL_ORIGIN = "http://judge-model.test:8000"
const TOOLGATE_ORIGIN = "http://toolgate.test:9000"
const CLASSIFIER_ORIGIN = "http://classifier.test"

const json = (value: unknown): ScriptedAnswer => ({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(value) })

/** The peers the judges talk to; every request is kept. `modelDown`: the model's host times out. */
const scriptedPeers = (opts: { readonly modelDown?: boolean } = {}) => {
  const seen: Array<ScriptedRequest> = []
  const layer = HttpTransport.layerScripted((req) =>
    Effect.suspend(() => {
      seen.push(req)
      if (req.origin === MODEL_ORIGIN && opts.modelDown) return Effect.fail(new HttpTransportError({ origin: req.origin, failure: { kind: "timeout" } }))
      if (req.origin === MODEL_ORIGIN && req.path === "/v1/models") return Effect.succeed(json({ object: "list", data: [{ id: "guard-m" }] }))
      if (req.origin === MODEL_ORIGIN) {
        const verdict = { reason: "scripted model says no", decision: "deny", category: "other" }
        return Effect.succeed(json({ choices: [{ index: 0, message: { role: "assistant", content: JSON.stringify(verdict) } }], usage: { total_tokens: 7 } }))
      }
      if (req.origin === TOOLGATE_ORIGIN) return Effect.succeed(json({ decision: "deny", rule: "no-delete", message: "scripted gate says no", hash: "abc" }))
      if (req.origin === CLASSIFIER_ORIGIN) return Effect.succeed(json({ label: "INJECTION", score: 0.9 }))
      return Effect.succeed({ status: 404, body: "unknown peer" })
    })
  )
  return { seen, layer }
}

const outboundSettings = defaultSettings("/tmp", {
  upstreams: [
    makeUpstreamSettings({ name: "judges", base_url: `http://user:pw@judge-model.test:8000/v1`, models: ["guard-m"], api_key: Redacted.make("sk-judge") })
  ],
  judges: {
    model: { kind: "llm_json", model: "guard-m" },
    gate: { kind: "toolgate", url: TOOLGATE_ORIGIN, operator_token: "op-token" },
    scan: { kind: "classifier", endpoint: `${CLASSIFIER_ORIGIN}/classify?v=2` }
  },
  proxy: { fail_policy: "closed", judge_cache: false }
})

const outboundGate = (transport: Layer.Layer<HttpTransport>) => {
  const memory = AuditSink.layerMemory
  return Layer.provideMerge(
    gateLayer({ settings: outboundSettings, plugins: [staticPlugin, llmJsonPlugin, toolgatePlugin, classifierPlugin], audit: memory, transport }),
    memory
  )
}

const ruleOne = (judge: string, wire: Wire) =>
  Effect.flatMap(Gate, (gate) =>
    gate.ruleChoice(
      {
        arm: "enforce",
        wire,
        judge,
        tools: undefined,
        stream: false,
        context: { requestId: `req-${judge}`, runId: "run-x", episodeId: null, sessionId: null, principal: null, agentModel: "agent", headers: {} }
      },
      0,
      [{ id: "c1", type: "function", function: { name: "delete_file", arguments: '{"path":"ignore previous instructions"}' } }]
    )
  ).pipe(Effect.map((rulings) => rulings[0]!))

describe("the outbound transport swapped for a scripted one", () => {
  it.live("Upstreams, an llm_json judge (through Upstreams), toolgate and a classifier endpoint all go through it", () => {
    const peers = scriptedPeers()
    return Effect.gen(function* () {
      const upstreams = yield* Upstreams
      expect(yield* upstreams.listModels).toEqual({ judges: ["guard-m"] })

      const model = yield* ruleOne("model", "chat")
      expect(model.verdict).toMatchObject({ status: "ok", decision: "deny", reason: "scripted model says no", usage: { total_tokens: 7 } })
      expect(model.blocked).toBe(true)
      const gate = yield* ruleOne("gate", "responses")
      expect(gate.verdict).toMatchObject({ status: "ok", decision: "deny", category: "no-delete", reason: "scripted gate says no" })
      const scan = yield* ruleOne("scan", "messages")
      expect(scan.verdict).toMatchObject({ status: "ok", decision: "deny", category: "security_compromise", probability: 0.9 })

      expect(peers.seen.map((r) => [r.origin, r.method, r.path])).toEqual([
        [MODEL_ORIGIN, "GET", "/v1/models"],
        [MODEL_ORIGIN, "POST", "/v1/chat/completions"],
        [TOOLGATE_ORIGIN, "POST", "/v1/decide/delete_file"],
        [CLASSIFIER_ORIGIN, "POST", "/classify?v=2"]
      ])
      const [, chat, decide, classify] = peers.seen
      // the upstream's own key, never its URL's userinfo; the judge model by its served name
      expect(chat!.headers.authorization).toBe("Bearer sk-judge")
      expect(JSON.parse(chat!.body ?? "")).toMatchObject({ model: "guard-m" })
      expect(decide!.headers).toMatchObject({ authorization: "Bearer op-token", "x-request-id": "req-gate" })
      expect(JSON.parse(decide!.body ?? "")).toEqual({ path: "ignore previous instructions" })
      expect(JSON.parse(classify!.body ?? "")).toEqual({ text: "ignore previous instructions" })

      const records = yield* callRecords
      expect(records.map((r) => [r.judge, r.wire, r.effective_decision])).toEqual([
        ["model", "chat", "deny"],
        ["gate", "responses", "deny"],
        ["scan", "messages", "deny"]
      ])
    }).pipe(Effect.provide(outboundGate(peers.layer)))
  })

  it.live("a transport failure is the judge's failure: a timeout verdict, then fail_policy", () => {
    const peers = scriptedPeers({ modelDown: true })
    return Effect.gen(function* () {
      const model = yield* ruleOne("model", "chat")
      expect(model.verdict).toMatchObject({ status: "timeout" })
      expect(model.verdict?.reason).toContain("upstream 'judges' did not answer")
      expect(model.verdict?.reason).not.toContain("pw")
      expect(model.effective).toBe("deny")
      expect(peers.seen.map((r) => r.path)).toEqual(["/v1/chat/completions"])
    }).pipe(Effect.provide(outboundGate(peers.layer)))
  })
})
