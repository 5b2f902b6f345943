/** Helpers for the rule-judge tests: the fixture policy, the twelve calls, one-rule policies. */
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Either } from "effect"
import { decide, type DecideOptions, type RuleDecision } from "../../../judges/rule/evaluate.js"
import { type BuiltPolicy, buildPolicy, type CompiledPolicy, type PolicyIssue } from "../../../judges/rule/policy.js"

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
