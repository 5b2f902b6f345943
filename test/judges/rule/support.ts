/** Helpers for the rule-judge tests: the fixture policy, the twelve calls, one-rule policies. */
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Either } from "effect"
import type { Judge, JudgeContext } from "../../../judges/Judge.js"
import { decide, type DecideOptions, type RuleDecision } from "../../../judges/rule/evaluate.js"
import { makeRuleJudge, type RuleJudge, type RuleJudgeOptions } from "../../../judges/rule/kind.js"
import { type BuiltPolicy, buildPolicy, type CompiledPolicy, parsePolicyText, type PolicyIssue, policyVersion } from "../../../judges/rule/policy.js"
import type { ToolCallView } from "../../../src/domain/tool-call.js"

const here = path.dirname(fileURLToPath(import.meta.url))
export const FIXTURES = path.resolve(here, "../../fixtures/policies")
export const AP_POLICY_FILE = path.join(FIXTURES, "accounts-payable.json")

export interface FixtureCall {
  readonly id: string
  readonly tool: string
  readonly args: Record<string, unknown>
}

export const apPolicyJson = (): Record<string, unknown> => JSON.parse(readFileSync(AP_POLICY_FILE, "utf8")) as Record<string, unknown>
export const twelveCalls = (): ReadonlyArray<FixtureCall> =>
  JSON.parse(readFileSync(path.join(FIXTURES, "twelve-calls.json"), "utf8")) as ReadonlyArray<FixtureCall>

export const built = (raw: unknown): BuiltPolicy => {
  const b = buildPolicy(raw)
  if (Either.isLeft(b)) throw new Error(`policy rejected: ${JSON.stringify(b.left)}`)
  return b.right
}

export const issuesOf = (raw: unknown): ReadonlyArray<PolicyIssue> => {
  const b = buildPolicy(raw)
  return Either.isLeft(b) ? b.left : []
}

let apCache: CompiledPolicy | undefined
export const ap = (): CompiledPolicy => (apCache ??= built(apPolicyJson()).compiled)

export const FULL: DecideOptions = { mode: "full" }

/** Decide on the accounts-payable policy (full mode unless told). */
export const apDecide = (tool: string, args: unknown, opts: DecideOptions = FULL): RuleDecision => decide(ap(), tool, args, opts)

/** A one-tool policy (tool `t`, scope `s`) around `rules` (each gets tool `t` and id `R` unless given), like Go's decideWith. */
export const onePolicy = (...rules: ReadonlyArray<Record<string, unknown>>) =>
  built({
    provider: "p",
    granted_scopes: ["s"],
    tool_scopes: { t: "s" },
    rules: rules.map((r, i) => ({ id: rules.length === 1 ? "R" : `R${i + 1}`, tool: "t", ...r }))
  }).compiled

/** Go's runCases outcome: allow, deny, escalate, or `unverifiable` (fired with a cannot-verify message). */
export const outcome = (d: RuleDecision): string =>
  d.decision !== "allow" && d.message.startsWith("cannot verify:") ? "unverifiable" : d.decision

export const ruleCase = (rule: Record<string, unknown>, argsJson: string): RuleDecision =>
  decide(onePolicy(rule), "t", JSON.parse(argsJson), FULL)

// ---------------------------------------------------------------------------------------------
// the judge as the gate calls it (extensions, trajectory)

export const WORKSPACE_FIXTURES = path.join(FIXTURES, "workspace")
export const REFUNDS_POLICY_FILE = path.join(FIXTURES, "refunds.yaml")

/** A judge context: request headers (lower-cased names) and the episode. */
export const context = (o: { readonly headers?: Record<string, string>; readonly episode?: string | null; readonly session?: string | null } = {}): JudgeContext => ({
  requestId: "r",
  runId: null,
  episodeId: o.episode ?? null,
  sessionId: o.session ?? null,
  principal: null,
  agentModel: "agent",
  headers: o.headers ?? {}
})

export const view = (name: string, args: unknown): ToolCallView => ({ name, description: "", parameters: null, arguments: args })

/** A rule judge over a policy file (absolute, or relative to the fixtures). */
export const judgeFor = (file: string, opts: Partial<RuleJudgeOptions> = {}): RuleJudge => {
  const abs = path.resolve(FIXTURES, file)
  const bytes = readFileSync(abs)
  const raw = parsePolicyText(bytes.toString("utf8"), abs)
  if (Either.isLeft(raw)) throw new Error(`${abs}: ${JSON.stringify(raw.left)}`)
  const loaded = { ...built(raw.right), file: abs, ...policyVersion(bytes) }
  return makeRuleJudge("rules", loaded, { mode: "full", scopes: null, scopes_header: true, ...opts })
}

/** A rule judge over an in-memory policy document. */
export const judgeOf = (raw: unknown, opts: Partial<RuleJudgeOptions> = {}): RuleJudge =>
  makeRuleJudge("rules", { ...built(raw), file: "<memory>", sha256: "", version: "sha256:test" }, { mode: "full", scopes: null, scopes_header: true, ...opts })

/** The judge's verdict as `[decision, category]` plus the reason. */
export const ruleWith = (judge: Judge, call: ToolCallView, ctx: JudgeContext = context()) => {
  const v = Effect.runSync(judge.rule(call, ctx))
  return { decision: v.decision, rule: v.category, reason: v.reason }
}

/** Rule on a call and report its fate to the judge the way the gate does (`released` = it went back to the agent). */
export const ruleAndCommit = (judge: Judge, call: ToolCallView, ctx: JudgeContext, released?: boolean) => {
  const r = ruleWith(judge, call, ctx)
  if (judge.commit !== undefined) Effect.runSync(judge.commit(call, ctx, released ?? r.decision === "allow"))
  return r
}
