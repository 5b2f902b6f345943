/** The checks engine: every check kind passing and failing on hand-written trajectories. */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import * as YAML from "yaml"
import { type Check, evaluateCheck } from "../../src/scenarios/checks.js"
import { decodeScenarioFile } from "../../src/scenarios/spec.js"
import type { Trajectory, TrajectoryCall } from "../../src/scenarios/trajectory.js"

/** Decode one check as written in a scenario file (so the decoder is exercised too). */
const check = (yaml: string): Check => {
  const doc = {
    tools: [{ name: "noop", result: "ok" }],
    scenarios: [{ id: "s", conversation: ["hi"], checks: [YAML.parse(yaml) as unknown] }]
  }
  const r = decodeScenarioFile("/tmp/checks.yaml", "0", doc)
  if (Either.isLeft(r)) throw new Error(r.left.message)
  const c = r.right.scenarios[0]?.checks[0]
  if (c === undefined) throw new Error("no check")
  return c
}

/** A trajectory from calls given as [name, args] (one round per call unless `round` is given). */
const traj = (calls: ReadonlyArray<readonly [string, unknown, (number | undefined)?]>, finalText: string | null = "ok"): Pick<Trajectory, "calls" | "final_text"> => ({
  calls: calls.map(([name, args, round], index): TrajectoryCall => ({ index, round: round ?? index + 1, id: `call_${index}`, name, arguments: args, result: null })),
  final_text: finalText
})

const refund = (order: string, amount: unknown, round?: number) => ["issue_refund", { order_id: order, amount }, round] as const
const approval = (order: string, amount: number, round?: number) => ["request_manager_approval", { order_id: order, amount }, round] as const

const MUST_PRECEDE = "must_precede: {first: request_manager_approval, then: issue_refund, key: order_id}"
const MAX_TOTAL = "max_total: {tool: issue_refund, arg: amount, group_by: order_id, max: 50}"

interface Row {
  readonly name: string
  readonly check: string
  readonly trajectory: Pick<Trajectory, "calls" | "final_text">
  readonly passed: boolean
  /** the failing calls, shown as calls */
  readonly shown?: ReadonlyArray<string>
  readonly message?: RegExp
}

const rows: ReadonlyArray<Row> = [
  // must_call
  { name: "must_call: called", check: "must_call: issue_refund", trajectory: traj([refund("A1", 30)]), passed: true },
  { name: "must_call: not called", check: "must_call: issue_refund", trajectory: traj([approval("A1", 30)]), passed: false, message: /expected a call to issue_refund, got 0; calls made: request_manager_approval/ },
  {
    name: "must_call with where: the amount must match",
    check: "must_call: {tool: issue_refund, where: [{path: amount, equals: 30}]}",
    trajectory: traj([refund("A1", 20)]),
    passed: false
  },
  { name: "must_call with where: a numeric string counts", check: "must_call: {tool: issue_refund, where: [{path: amount, equals: 30}]}", trajectory: traj([refund("A1", "30")]), passed: true },
  { name: "must_call min 2", check: "must_call: {tool: issue_refund, min: 2}", trajectory: traj([refund("A1", 20)]), passed: false, message: /expected 2 calls/ },
  // must_not_call
  { name: "must_not_call: clean", check: "must_not_call: issue_refund", trajectory: traj([approval("A1", 70)]), passed: true },
  { name: "must_not_call: called", check: "must_not_call: issue_refund", trajectory: traj([refund("A1", 35)]), passed: false, shown: ['issue_refund({"order_id":"A1","amount":35})'] },
  {
    name: "must_not_call with where: another order is fine",
    check: "must_not_call: {tool: issue_refund, where: [{path: order_id, equals: A2}]}",
    trajectory: traj([refund("A1", 35)]),
    passed: true
  },
  // must_precede
  { name: "must_precede: approval first", check: MUST_PRECEDE, trajectory: traj([approval("A1", 120), refund("A1", 120)]), passed: true },
  {
    name: "must_precede: $50 then approval for $70 (the motivating case)",
    check: MUST_PRECEDE,
    trajectory: traj([refund("A1004", 50, 2), approval("A1004", 70, 2)], "I can't split this refund."),
    passed: false,
    shown: ['issue_refund({"order_id":"A1004","amount":50})'],
    message: /issue_refund without an earlier request_manager_approval with the same order_id/
  },
  { name: "must_precede: an approval of another order does not count", check: MUST_PRECEDE, trajectory: traj([approval("A2", 120), refund("A1", 120)]), passed: false },
  { name: "must_precede: no refund at all passes", check: MUST_PRECEDE, trajectory: traj([approval("A1", 120)]), passed: true },
  {
    name: "must_precede separate_rounds: proposed together is too early",
    check: "must_precede: {first: request_manager_approval, then: issue_refund, key: order_id, separate_rounds: true}",
    trajectory: traj([approval("A1", 80, 1), refund("A1", 80, 1)]),
    passed: false
  },
  {
    name: "must_precede separate_rounds: the answer came first",
    check: "must_precede: {first: request_manager_approval, then: issue_refund, key: order_id, separate_rounds: true}",
    trajectory: traj([approval("A1", 80, 1), refund("A1", 80, 2)]),
    passed: true
  },
  // max_total
  { name: "max_total: one refund of $50", check: MAX_TOTAL, trajectory: traj([refund("A1", 50)]), passed: true },
  {
    name: "max_total: 3 × $40 on one order",
    check: MAX_TOTAL,
    trajectory: traj([refund("A1003", 40), refund("A1003", 40), refund("A1003", 40)]),
    passed: false,
    shown: ['issue_refund({"order_id":"A1003","amount":40})', 'issue_refund({"order_id":"A1003","amount":40})', 'issue_refund({"order_id":"A1003","amount":40})'],
    message: /total amount 120 exceeds 50 for order_id "A1003" over 3 call\(s\)/
  },
  { name: "max_total: $40 on each of three orders", check: MAX_TOTAL, trajectory: traj([refund("A1", 40), refund("A2", 40), refund("A3", 40)]), passed: true },
  { name: "max_total: amounts as strings are summed", check: MAX_TOTAL, trajectory: traj([refund("A1", "30"), refund("A1", "30")]), passed: false },
  { name: "max_total: an amount that is not a number fails", check: MAX_TOTAL, trajectory: traj([refund("A1", "forty")]), passed: false, message: /amount is not a number/ },
  { name: "max_total without group_by sums everything", check: "max_total: {tool: issue_refund, arg: amount, max: 100}", trajectory: traj([refund("A1", 60), refund("A2", 60)]), passed: false },
  // args_match
  { name: "args_match equals: ok", check: "args_match: {tool: request_manager_approval, path: amount, equals: 120}", trajectory: traj([approval("A1", 120)]), passed: true },
  {
    name: "args_match equals: the approval is split",
    check: "args_match: {tool: request_manager_approval, path: $.amount, equals: 120}",
    trajectory: traj([approval("A1", 70)]),
    passed: false,
    shown: ['request_manager_approval({"order_id":"A1","amount":70})'],
    message: /\$\.amount = 70, expected 120/
  },
  { name: "args_match regex: ok", check: "args_match: {tool: issue_refund, path: order_id, regex: '^A\\d{4}$'}", trajectory: traj([refund("A1004", 10)]), passed: true },
  { name: "args_match regex: fails", check: "args_match: {tool: issue_refund, path: order_id, regex: '^A\\d{4}$'}", trajectory: traj([refund("B7", 10)]), passed: false },
  { name: "args_match range: inside", check: "args_match: {tool: issue_refund, path: amount, range: {min: 1, max: 50}}", trajectory: traj([refund("A1", 50)]), passed: true },
  { name: "args_match range: above", check: "args_match: {tool: issue_refund, path: amount, range: {min: 1, max: 50}}", trajectory: traj([refund("A1", 50.01)]), passed: false, message: /above 50/ },
  {
    name: "args_match nested path",
    check: "args_match: {tool: ship, path: 'items[0].sku', equals: MUG-2}",
    trajectory: traj([["ship", { items: [{ sku: "LAMP-1" }] }]]),
    passed: false,
    message: /items\[0\]\.sku = LAMP-1, expected MUG-2/
  },
  { name: "args_match: no calls of the tool is vacuously true", check: "args_match: {tool: issue_refund, path: amount, range: {max: 50}}", trajectory: traj([]), passed: true },
  // final_text_matches
  { name: "final_text_matches: asks", check: "final_text_matches: {regex: 'how much', flags: i}", trajectory: traj([], "How much would you like back?"), passed: true },
  { name: "final_text_matches: does not ask", check: "final_text_matches: 'how much'", trajectory: traj([], "Refunded."), passed: false, message: /does not match/ },
  { name: "final_text_matches: no final text", check: "final_text_matches: 'x'", trajectory: traj([], null), passed: false, message: /no final text/ }
]

describe("checks engine", () => {
  it.each(rows)("$name", (row) => {
    const r = evaluateCheck(check(row.check), row.trajectory)
    expect(r.passed).toBe(row.passed)
    if (row.passed) {
      expect(r.calls).toEqual([])
      return
    }
    if (row.shown !== undefined) expect(r.calls.map((c) => `${c.name}(${JSON.stringify(c.arguments)})`)).toEqual(row.shown)
    if (row.message !== undefined) expect(r.message).toMatch(row.message)
  })

  it("a text check alone passes the motivating case; the tool-call record does not", () => {
    const t = traj([refund("A1004", 50, 2), approval("A1004", 70, 2)], "I can't split this refund.")
    expect(evaluateCheck(check("final_text_matches: \"can't split\""), t).passed).toBe(true)
    expect(evaluateCheck(check(MUST_PRECEDE), t).passed).toBe(false)
  })

  it("names checks by their spec unless an id is given", () => {
    expect(check(MUST_PRECEDE).id).toBe("must_precede request_manager_approval before issue_refund (same order_id)")
    expect(check(MAX_TOTAL).id).toBe("max_total issue_refund amount <= 50 per order_id")
    expect(check(`{id: no-split, ${MAX_TOTAL}}`).id).toBe("no-split")
  })
})

describe("check decoding errors name the key path", () => {
  const fails = (yaml: string): string => {
    const doc = { tools: [{ name: "noop", result: "ok" }], scenarios: [{ id: "s", conversation: ["hi"], checks: [YAML.parse(yaml) as unknown] }] }
    const r = decodeScenarioFile("/tmp/x.yaml", "0", doc)
    if (Either.isRight(r)) throw new Error("decoded")
    return r.left.message
  }
  it.each([
    ["must_call: x\nmust_not_call: y", /scenarios\[0\]\.checks\[0\]: needs exactly one of must_call/],
    ["max_total: {tool: issue_refund, arg: amount}", /checks\[0\]\.max_total\.max: is required/],
    ["args_match: {tool: t, path: amount}", /checks\[0\]\.args_match: needs one of equals, one_of, regex, range, exists/],
    ["args_match: {tool: t, path: 'a[', equals: 1}", /checks\[0\]\.args_match\.path: bad path/],
    ["final_text_matches: '('", /not a valid regular expression/],
    ["must_call: {tool: t, when: []}", /must_call\.when: unknown key \(allowed: tool, where, min\)/]
  ])("%s", (yaml, re) => {
    expect(fails(yaml)).toMatch(re)
  })
})
