/**
 * The gate is total: whatever a judge does — fail, throw before it returns an effect, die inside
 * `Effect.sync`, overflow the stack, interrupt itself, hang, answer something that is not a verdict —
 * every call gets a ruling through `fail_policy` and exactly one record. Also a built-in kind (the
 * `rule` judge, synchronous code) that dies on a hostile value, a commit hook that dies, and
 * arguments nested too deep for any judge to read.
 */
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AuditMemory, AuditSink } from "../../layers/AuditSink.js"
import { defaultSettings, Gate, gateLayer, type GateRequest, type SettingsShape } from "../../src/index.js"
import { expectFailedRulings, misbehaving, MODES } from "../support/misbehaving-judge.js"
import { makeUpstreamSettings } from "../../src/config/settings.js"
import { staticPlugin } from "../../judges/static.js"
import { rulePlugin } from "../../judges/rule/kind.js"
import { type CallRecord, isCallRecord } from "../../src/domain/audit-record.js"
import { MAX_JSON_DEPTH } from "../../src/domain/json-depth.js"

/** a policy whose RE2 pattern makes the JS engine's backtracking stack overflow on a long value */
const policyDir = mkdtempSync(path.join(tmpdir(), "vetobench-gate-total-"))
const policyFile = path.join(policyDir, "policy.json")
writeFileSync(
  policyFile,
  JSON.stringify({
    provider: "test",
    granted_scopes: ["shell:run"],
    tool_scopes: { run: "shell:run" },
    rules: [{ id: "R1", tool: "run", kind: "pattern", arg: "cmd", pattern: "(?:a|b)*", message: "only a and b" }]
  })
)

const settingsWith = (proxy: Partial<SettingsShape["proxy"]>) =>
  defaultSettings("/tmp", {
    upstreams: [makeUpstreamSettings({ name: "u", base_url: "http://127.0.0.1:9/v1" })],
    judges: {
      ...Object.fromEntries(MODES.map((m) => [m, { kind: "misbehaving", how: m }])),
      "commit-dies": { kind: "misbehaving", how: "commit-dies" },
      "huge-raw": { kind: "misbehaving", how: "huge-raw" },
      rules: { kind: "rule", policy: policyFile },
      allow: { kind: "static", decision: "allow" }
    },
    proxy: { judge_timeout_s: 0.3, ...proxy }
  })

const request = (judge: string): GateRequest => ({
  arm: "enforce",
  judge,
  tools: undefined,
  stream: false,
  context: { requestId: "r", runId: "run", episodeId: null, sessionId: null, principal: null, agentModel: "m", headers: {} }
})

const call = (name: string, args: string, id = "c0") => ({ id, type: "function", function: { name, arguments: args } })

const ruleWith = (proxy: Partial<SettingsShape["proxy"]>, judge: string, calls: ReadonlyArray<unknown>) =>
  Effect.gen(function* () {
    const gate = yield* Gate
    const memory = yield* AuditMemory
    const rulings = yield* gate.ruleChoice(request(judge), 0, calls)
    const records = (yield* memory.records).filter(isCallRecord)
    return { rulings, records }
  }).pipe(
    Effect.provide(
      Layer.provideMerge(gateLayer({ settings: settingsWith(proxy), plugins: [staticPlugin, misbehaving, rulePlugin], audit: AuditSink.layerMemory }), AuditSink.layerMemory)
    )
  )

const expectFailedRuling = (records: ReadonlyArray<CallRecord>, policy: "open" | "closed", n: number) => {
  expect(records).toHaveLength(n)
  expectFailedRulings(records, policy)
}

describe("the gate is total", () => {
  for (const mode of MODES) {
    for (const policy of ["closed", "open"] as const) {
      it.live(`a judge that ${mode}: every call ruled through fail_policy ${policy}, one record each`, () =>
        Effect.gen(function* () {
          const { rulings, records } = yield* ruleWith({ fail_policy: policy }, mode, [call("a", "{}", "c0"), call("b", "{}", "c1")])
          expect(rulings.map((r) => r.blocked)).toEqual(policy === "closed" ? [true, true] : [false, false])
          expectFailedRuling(records, policy, 2)
          expect(records.map((r) => r.tool_call_id)).toEqual(["c0", "c1"])
          if (mode === "hangs") expect(records[0]!.verdict?.status).toBe("timeout")
          if (mode === "throws") expect(records[0]!.verdict?.reason).toContain("plugin bug on a")
          if (mode === "dies-in-sync") expect(records[0]!.verdict?.reason).toContain("TypeError: cannot read properties of undefined")
          if (mode === "overflows") expect(records[0]!.verdict?.reason).toContain("Maximum call stack size exceeded")
          if (mode === "not-a-verdict") expect(records[0]!.verdict?.reason).toContain("invalid verdict")
        }))
    }
  }

  for (const policy of ["closed", "open"] as const) {
    it.live(`a built-in kind (rule) that dies on a hostile value: ruled through fail_policy ${policy}, one record`, () =>
      Effect.gen(function* () {
        const { records } = yield* ruleWith({ fail_policy: policy }, "rules", [call("run", JSON.stringify({ cmd: "a".repeat(10_000_000) }))])
        expectFailedRuling(records, policy, 1)
        expect(records[0]!.verdict?.reason).toContain("Maximum call stack size exceeded")
      }))

    it.live(`arguments nested deeper than ${MAX_JSON_DEPTH}: ruled as a judge failure (fail_policy ${policy}), recorded with the text`, () =>
      Effect.gen(function* () {
        const deep = `${"[".repeat(5000)}${"]".repeat(5000)}`
        const ok = `${"[".repeat(MAX_JSON_DEPTH - 1)}${"]".repeat(MAX_JSON_DEPTH - 1)}`
        const { records } = yield* ruleWith({ fail_policy: policy }, "allow", [call("a", deep, "c0"), call("b", ok, "c1"), call("c", "[[[ not json", "c2")])
        expect(records).toHaveLength(3)
        expectFailedRuling(records.slice(0, 1), policy, 1)
        expect(records[0]!.verdict?.reason).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`)
        expect(records[0]!.tool.arguments).toBe(deep)
        // within the limit, and text that is not JSON, reach the judge as before
        expect(records[1]!.verdict?.status).toBe("ok")
        expect(records[2]!.verdict?.status).toBe("ok")
        expect(records[2]!.tool.arguments).toBe("[[[ not json")
      }))
  }

  it.live("a verdict too large to record is cut with a note; its decision stands; one record", () =>
    Effect.gen(function* () {
      const { rulings, records } = yield* ruleWith({}, "huge-raw", [call("a", "{}")])
      expect(rulings.map((r) => r.blocked)).toEqual([false])
      expect(records).toHaveLength(1)
      expect(records[0]!.verdict?.status).toBe("ok")
      expect(records[0]!.verdict?.raw.length).toBeLessThan(300 * 1024)
      expect(records[0]!.verdict?.raw).toMatch(/…\[truncated 19737856 characters\]$/)
      expect(records[0]!.verdict?.category).toMatch(/…\[truncated 5904 characters\]$/)
    }))

  it.live("a commit hook that dies is logged; the rulings and records stand", () =>
    Effect.gen(function* () {
      const { rulings, records } = yield* ruleWith({}, "commit-dies", [call("a", "{}")])
      expect(rulings.map((r) => r.blocked)).toEqual([false])
      expect(records.map((r) => r.verdict?.status)).toEqual(["ok"])
    }))
})
