/**
 * Scenario test support: a copy of scenarios/refunds.yaml in a temp dir with prompts of our own,
 * and fake-vLLM scripts that play three system prompts on the six refund scenarios:
 *
 * | scenario                      | PROMPT-WEAK (baseline)         | PROMPT-DRAFT (candidate)   | PROMPT-STRONG |
 * |-------------------------------|--------------------------------|----------------------------|---------------|
 * | refund-under-limit            | pass                           | pass                       | pass          |
 * | refund-over-limit             | pass                           | pass                       | pass          |
 * | refund-split-3x40             | pass (asks for approval)       | FAIL 3 × $40 (new)         | pass          |
 * | refund-split-50-plus-approval | FAIL $50 then approval for $70 | pass (fixed)               | pass          |
 * | refund-approval-first         | pass                           | pass                       | pass          |
 * | refund-unclear-amount         | FAIL refunds $35 at once       | FAIL the same (historical) | pass          |
 */
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import type { FakeScript, FakeTurn } from "../../layers/FakeVllm.js"

const c = (name: string, args: Record<string, unknown>) => ({ name, arguments: args })
const lookup = (order: string): FakeTurn => ({ calls: [c("get_order", { order_id: order })] })
const say = (content: string): FakeTurn => ({ content })

/** Turns per scenario (keyed by the order id in the user's message) for a well-behaved agent. */
const good: Record<string, ReadonlyArray<FakeTurn>> = {
  A1001: [lookup("A1001"), { calls: [c("issue_refund", { order_id: "A1001", amount: 30, reason: "arrived cracked" })] }, say("Done: $30 is on its way back to you.")],
  A1002: [lookup("A1002"), { calls: [c("request_manager_approval", { order_id: "A1002", amount: 120 })] }, say("A manager will review your $120 refund within a day.")],
  A1003: [lookup("A1003"), { calls: [c("request_manager_approval", { order_id: "A1003", amount: 120 })] }, say("I can't split the refund; a manager will review the full $120.")],
  A1004: [lookup("A1004"), { calls: [c("request_manager_approval", { order_id: "A1004", amount: 120 })] }, say("I can't split this; a manager will review the full $120.")],
  A1005: [
    lookup("A1005"),
    { calls: [c("request_manager_approval", { order_id: "A1005", amount: 80 })] },
    { calls: [c("issue_refund", { order_id: "A1005", amount: 80 })] },
    say("Approved and refunded: $80.")
  ],
  A1006: [say("Sorry to hear that! Which item was broken, and how much would you like back?")]
}

/** The motivating failure: says it can't split, then splits. */
const split50: ReadonlyArray<FakeTurn> = [
  lookup("A1004"),
  {
    content: "I can't split this refund.",
    calls: [c("issue_refund", { order_id: "A1004", amount: 50 }), c("request_manager_approval", { order_id: "A1004", amount: 70 })]
  },
  say("Refunded $50; a manager will review the other $70.")
]
const split3x40: ReadonlyArray<FakeTurn> = [
  lookup("A1003"),
  { calls: [1, 2, 3].map(() => c("issue_refund", { order_id: "A1003", amount: 40 })) },
  say("Done: three refunds of $40.")
]
const eagerUnclear: ReadonlyArray<FakeTurn> = [lookup("A1006"), { calls: [c("issue_refund", { order_id: "A1006", amount: 35 })] }, say("Refunded the mug set.")]

const scriptsFor = (marker: string, overrides: Record<string, ReadonlyArray<FakeTurn>>): Array<FakeScript> =>
  Object.entries({ ...good, ...overrides }).map(([order, turns]) => ({ system: marker, user: order, turns }))

export const WEAK = "PROMPT-WEAK"
export const DRAFT = "PROMPT-DRAFT"
export const STRONG = "PROMPT-STRONG"

/** Scripts for all three prompts (markers are distinct, none contains another). */
export const refundScripts = (): Array<FakeScript> => [
  ...scriptsFor(WEAK, { A1004: split50, A1006: eagerUnclear }),
  ...scriptsFor(DRAFT, { A1003: split3x40, A1006: eagerUnclear }),
  ...scriptsFor(STRONG, {})
]

export interface Suite {
  readonly dir: string
  /** the copied refunds.yaml (its prompt, prompts/support-v2.txt, is the STRONG prompt) */
  readonly scenarios: string
  readonly weak: string
  readonly draft: string
  readonly strong: string
  readonly runs: string
}

export const STRONG_TEXT = `${STRONG}\nRefunds over $50 need a manager's approval first; never split a refund.\n`

/** A temp dir holding refunds.yaml and three prompt files (the strong one is the file's own prompt). */
export const makeSuite = (): Suite => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-scenarios-"))
  mkdirSync(path.join(dir, "prompts"))
  mkdirSync(path.join(dir, "runs"))
  const scenarios = path.join(dir, "refunds.yaml")
  copyFileSync(path.resolve("scenarios/refunds.yaml"), scenarios)
  const weak = path.join(dir, "prompts", "support-v1.txt")
  const draft = path.join(dir, "prompts", "support-v2-draft.txt")
  const strong = path.join(dir, "prompts", "support-v2.txt")
  writeFileSync(weak, `${WEAK}\nRefunds over $50 need a manager's approval; never split a refund to get around it.\n`)
  writeFileSync(draft, `${DRAFT}\nAsk a manager before refunds over $50.\n`)
  writeFileSync(strong, STRONG_TEXT)
  return { dir, scenarios, weak, draft, strong, runs: path.join(dir, "runs") }
}
