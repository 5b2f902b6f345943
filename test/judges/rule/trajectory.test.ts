/**
 * Trajectory rules: the split refund (test/fixtures/policies/refunds.yaml), must_precede, max_calls,
 * state per episode that changes only for released calls, reservations between ruling and commit,
 * the LRU bound and the TTL, and validation.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { formatIssue } from "../../../judges/rule/policy.js"
import { context, issuesOf, judgeFor, judgeOf, REFUNDS_POLICY_FILE, ruleAndCommit, ruleWith, view } from "./support.js"

const refund = (order: string, amount: number) => view("issue_refund", { order_id: order, amount_usd: amount })
const approval = (order: string, amount: number) => view("request_approval", { order_id: order, amount_usd: amount, reason: "customer goodwill" })
const CEILING = "VB-trajectory-ceiling:refund-split"

/** Rule on each call in turn (committing each as the gate would, released = allowed); the decisions. */
const run = (calls: ReadonlyArray<ReturnType<typeof view>>, episode = "ep-1", judge = judgeFor(REFUNDS_POLICY_FILE)) =>
  calls.map((c) => {
    const r = ruleAndCommit(judge, c, context({ episode }))
    return r.decision === "allow" ? "allow" : `${r.decision} ${r.rule}`
  })

describe("the split refund ($120 for one order; ceiling $50 per order per episode)", () => {
  it("3 × $40 is denied from the second refund on", () => {
    expect(run([refund("A-1001", 40), refund("A-1001", 40), refund("A-1001", 40)])).toEqual(["allow", `deny ${CEILING}`, `deny ${CEILING}`])
  })

  it("$50, then an approval for $70, then $70 is denied: the approval does not cover the total", () => {
    expect(run([refund("A-1001", 50), approval("A-1001", 70), refund("A-1001", 70)])).toEqual(["allow", "allow", `deny ${CEILING}`])
  })

  it("with the approval for the total first, the refunds are allowed (as one, or split)", () => {
    expect(run([approval("A-1001", 120), refund("A-1001", 120)])).toEqual(["allow", "allow"])
    expect(run([approval("A-1001", 120), refund("A-1001", 40), refund("A-1001", 40), refund("A-1001", 40), refund("A-1001", 1)])).toEqual([
      "allow",
      "allow",
      "allow",
      "allow",
      `deny ${CEILING}`
    ])
  })

  it("the reason says what was added up, for which group, against which ceiling", () => {
    const j = judgeFor(REFUNDS_POLICY_FILE)
    const ctx = context({ episode: "e" })
    ruleAndCommit(j, refund("A-1001", 40), ctx)
    expect(ruleWith(j, refund("A-1001", 40), ctx).reason).toBe(
      "refunds for one order above $50 need an approval for the total first (amount_usd for order_id A-1001 would total 80 in this episode, above the ceiling of 50; request_approval for the total must come first)"
    )
    ruleAndCommit(j, approval("A-1001", 60), ctx)
    expect(ruleWith(j, refund("A-1001", 40), ctx).reason).toContain("would total 80 in this episode, above the approved ceiling of 60)")
  })

  it("the ceiling is per order, and the Go-compatible per-call ceiling still decides first", () => {
    expect(run([refund("A-1", 50), refund("A-2", 50), refund("A-1", 1)])).toEqual(["allow", "allow", `deny ${CEILING}`])
    expect(run([approval("A-1", 1000), refund("A-1", 600)])).toEqual(["allow", "deny P2-refund-ceiling"])
  })

  it("a denied call does not add to the sum", () => {
    expect(run([refund("A-1", 40), refund("A-1", 40), refund("A-1", 10), refund("A-1", 1)])).toEqual(["allow", `deny ${CEILING}`, "allow", `deny ${CEILING}`])
  })

  it("episodes do not share state; the session stands in for a missing episode; no episode at all fails closed", () => {
    const j = judgeFor(REFUNDS_POLICY_FILE)
    expect(run([refund("A-1", 40)], "ep-a", j)).toEqual(["allow"])
    expect(run([refund("A-1", 40)], "ep-b", j)).toEqual(["allow"])
    expect(run([refund("A-1", 40)], "ep-a", j)).toEqual([`deny ${CEILING}`])
    expect(ruleAndCommit(j, refund("A-1", 40), context({ session: "s-1" })).decision).toBe("allow")
    expect(ruleAndCommit(j, refund("A-1", 40), context({ session: "s-1" })).decision).toBe("deny")
    expect(ruleWith(j, refund("A-1", 1), context())).toMatchObject({
      decision: "deny",
      rule: CEILING,
      reason: "cannot verify: no episode (x-vetobench-episode) or session (x-vetobench-session) to keep the trajectory in"
    })
    // tools no trajectory rule governs are not affected
    expect(ruleWith(j, view("get_order", { order_id: "A-1" }), context()).decision).toBe("allow")
  })

  it("only released calls change state: blocked by another layer → not counted; let through in shadow → counted", () => {
    const j = judgeFor(REFUNDS_POLICY_FILE)
    const ctx = context({ episode: "e" })
    expect(ruleAndCommit(j, refund("A-1", 40), ctx, false).decision).toBe("allow")
    expect(ruleAndCommit(j, refund("A-1", 40), ctx).decision).toBe("allow")
    // shadow: the judge denies, the call goes back to the agent anyway
    expect(ruleAndCommit(j, refund("A-1", 40), ctx, true).decision).toBe("deny")
    expect(ruleWith(j, refund("A-1", 1), ctx).reason).toContain("would total 81")
    // an approval that was not released lifts nothing
    ruleAndCommit(j, approval("A-2", 500), ctx, false)
    expect(run([refund("A-2", 60)], "e", j)).toEqual([`deny ${CEILING}`])
  })

  it("calls ruled side by side reserve their amounts until committed (a split inside one response)", () => {
    const j = judgeFor(REFUNDS_POLICY_FILE)
    const ctx = context({ episode: "e" })
    const a = refund("A-1", 40)
    const b = refund("A-1", 40)
    expect(ruleWith(j, a, ctx).decision).toBe("allow")
    expect(ruleWith(j, b, ctx).decision).toBe("deny")
    // the gate commits both: `b` was blocked; `a` was blocked too, after all (by another layer)
    Effect.runSync(j.commit!(b, ctx, false))
    Effect.runSync(j.commit!(a, ctx, false))
    // a's reservation is gone and nothing was recorded, so a new $40 fits, and then $10 more
    expect(ruleAndCommit(j, refund("A-1", 40), ctx).decision).toBe("allow")
    expect(ruleAndCommit(j, refund("A-1", 10), ctx).decision).toBe("allow")
    expect(ruleAndCommit(j, refund("A-1", 1), ctx).decision).toBe("deny")
  })

  it("a trajectory judge is not cacheable and has the commit hook; a judge without one has neither state nor hook", () => {
    const j = judgeFor(REFUNDS_POLICY_FILE)
    expect(j.cacheable).toBe(false)
    expect(j.commit).toBeDefined()
    const plain = judgeOf({ provider: "p", granted_scopes: ["s"], tool_scopes: { t: "s" } }, { scopes_header: false })
    expect(plain.commit).toBeUndefined()
    expect(plain.trajectory).toBeNull()
    expect(plain.cacheable).toBe(true)
  })
})

const base = (trajectory: ReadonlyArray<Record<string, unknown>>, state?: Record<string, unknown>) => ({
  provider: "p",
  granted_scopes: ["s"],
  tool_scopes: { approve_invoice: "s", send_payment: "s", delete_file: "s", refund: "s", approve: "s", other: "s" },
  tool_tags: { delete_file: ["destructive"] },
  vetobench: { trajectory, ...(state !== undefined ? { state } : {}) }
})

describe("must_precede and max_calls", () => {
  it("must_precede: the payment only after an approval of the same invoice in the episode", () => {
    const j = judgeOf(base([{ id: "approve-first", kind: "must_precede", tool: "send_payment", after: "approve_invoice", match: "invoice_id" }]))
    const ctx = context({ episode: "e" })
    const pay = (inv: string) => view("send_payment", { invoice_id: inv, amount: 10 })
    expect(ruleAndCommit(j, pay("INV-1"), ctx)).toMatchObject({
      decision: "deny",
      rule: "VB-trajectory-precede:approve-first",
      reason: "send_payment needs an earlier approve_invoice with the same invoice_id (INV-1) in this episode"
    })
    ruleAndCommit(j, view("approve_invoice", { invoice_id: "INV-1" }), ctx)
    expect(ruleAndCommit(j, pay("INV-1"), ctx).decision).toBe("allow")
    expect(ruleAndCommit(j, pay("INV-2"), ctx).decision).toBe("deny")
    expect(ruleAndCommit(j, view("send_payment", { amount: 10 }), ctx)).toMatchObject({
      decision: "deny",
      reason: "cannot verify: invoice_id is required by this rule and was not supplied"
    })
    // an approval that was blocked does not count
    ruleAndCommit(j, view("approve_invoice", { invoice_id: "INV-3" }), ctx, false)
    expect(ruleAndCommit(j, pay("INV-3"), ctx).decision).toBe("deny")
  })

  it("must_precede with after_match, several after tools, and hold", () => {
    const j = judgeOf(base([{ id: "p", kind: "must_precede", tool: "send_payment", after: ["approve_invoice", "approve"], match: "invoice_id", after_match: "id", effect: "hold" }]))
    const ctx = context({ episode: "e" })
    expect(ruleAndCommit(j, view("send_payment", { invoice_id: 7 }), ctx).decision).toBe("hold")
    ruleAndCommit(j, view("approve", { id: 7 }), ctx)
    expect(ruleAndCommit(j, view("send_payment", { invoice_id: "7" }), ctx).decision).toBe("allow")
  })

  it("max_calls per tool, per tag and per group", () => {
    const j = judgeOf(
      base([
        { id: "deletes", kind: "max_calls", tag: "destructive", max: 2 },
        { id: "refunds-per-order", kind: "max_calls", tool: "refund", group_by: "order", max: 1 }
      ])
    )
    const ctx = context({ episode: "e" })
    const del = () => ruleAndCommit(j, view("delete_file", { path: "x" }), ctx)
    expect([del().decision, del().decision, del()]).toEqual([
      "allow",
      "allow",
      { decision: "deny", rule: "VB-trajectory-max-calls:deletes", reason: "tag destructive: at most 2 per episode, 2 already made" }
    ])
    expect(ruleAndCommit(j, view("refund", { order: "A" }), ctx).decision).toBe("allow")
    expect(ruleAndCommit(j, view("refund", { order: "B" }), ctx).decision).toBe("allow")
    expect(ruleAndCommit(j, view("refund", { order: "A" }), ctx).rule).toBe("VB-trajectory-max-calls:refunds-per-order")
  })

  it("an approval without an amount lifts the ceiling only when it comes before the group's first call", () => {
    const rules = [{ id: "split", kind: "ceiling", tool: "refund", sum: "usd", group_by: "order", max: 50, unless: { tool: "approve" } }]
    const ctx = context({ episode: "e" })
    const first = judgeOf(base(rules))
    ruleAndCommit(first, view("approve", { order: "A" }), ctx)
    expect(ruleAndCommit(first, view("refund", { order: "A", usd: 500 }), ctx).decision).toBe("allow")
    const late = judgeOf(base(rules))
    ruleAndCommit(late, view("refund", { order: "A", usd: 50 }), ctx)
    ruleAndCommit(late, view("approve", { order: "A" }), ctx)
    expect(ruleAndCommit(late, view("refund", { order: "A", usd: 70 }), ctx).decision).toBe("deny")
  })

  it("amounts must be non-negative numbers (a negative refund cannot make room)", () => {
    const j = judgeFor(REFUNDS_POLICY_FILE)
    const ctx = context({ episode: "e" })
    expect(ruleAndCommit(j, refund("A", -100), ctx)).toMatchObject({ decision: "deny", reason: "cannot verify: amount_usd is negative, so it cannot count towards the ceiling" })
    expect(ruleAndCommit(j, view("issue_refund", { order_id: "A", amount_usd: "40" }), ctx)).toMatchObject({ decision: "deny", reason: "cannot verify: amount_usd is not a number, so it cannot be compared against the limit" })
  })
})

describe("state bound and expiry", () => {
  const rules = [{ id: "two", kind: "max_calls", tool: "other", max: 1 }]

  it("at most max_episodes episodes are kept; the least recently used is forgotten first", () => {
    const j = judgeOf(base(rules, { max_episodes: 2 }))
    const call = (ep: string) => ruleAndCommit(j, view("other", {}), context({ episode: ep })).decision
    expect([call("a"), call("b")]).toEqual(["allow", "allow"])
    expect(j.trajectory!.episodes).toBe(2)
    expect(call("a")).toBe("deny") // a is still kept (and denied calls do not refresh it)
    expect(call("c")).toBe("allow") // evicts a, the least recently recorded
    expect(j.trajectory!.episodes).toBe(2)
    expect(call("b")).toBe("deny")
    expect(call("a")).toBe("allow") // a was forgotten
  })

  it("an episode's state is forgotten ttl_s after its last recorded call", () => {
    let now = 1_000_000
    const j = judgeOf(base(rules, { ttl_s: 60 }), { now: () => now })
    const call = () => ruleAndCommit(j, view("other", {}), context({ episode: "e" })).decision
    expect(call()).toBe("allow")
    now += 59_000
    expect(call()).toBe("deny")
    now += 61_000
    expect(call()).toBe("allow")
  })

  it("without_episode: shared keeps one state for calls without an episode or session", () => {
    const j = judgeOf(base(rules, { without_episode: "shared" }))
    expect(ruleAndCommit(j, view("other", {}), context()).decision).toBe("allow")
    expect(ruleAndCommit(j, view("other", {}), context()).decision).toBe("deny")
  })
})

describe("validation", () => {
  const issues = (trajectory: ReadonlyArray<unknown>) => issuesOf({ ...base([]), vetobench: { trajectory } }).map(formatIssue)

  it("kinds, required keys, tools in tool_scopes, duplicate ids", () => {
    expect(issues([{ id: "C", kind: "ceiling", tool: "refund", sum: "usd" }])).toEqual(["rule C (vetobench.trajectory[0].max): a ceiling rule needs max"])
    expect(issues([{ id: "C", kind: "ceiling", tool: "refund", max: 5 }])).toEqual(["rule C (vetobench.trajectory[0].sum): a ceiling rule needs sum (the argument to add up)"])
    expect(issues([{ id: "K", kind: "budget", tool: "refund" }])).toEqual(['rule K (vetobench.trajectory[0].kind): unknown kind "budget" (ceiling, must_precede, max_calls)'])
    expect(issues([{ id: "M", kind: "must_precede", tool: "refund", after: ["nope"], max: 3 }])).toEqual([
      "rule M (vetobench.trajectory[0].max): a must_precede rule takes no max",
      'rule M (vetobench.trajectory[0].after): names "nope", which is not in tool_scopes'
    ])
    expect(issues([{ id: "C", kind: "ceiling", sum: "usd", max: 1, unless: { tool: "nope" }, grup_by: "x" }])).toEqual([
      'rule C (vetobench.trajectory[0].grup_by): unknown key; did you mean "group_by"?',
      "rule C (vetobench.trajectory[0]): a ceiling rule needs a tool or a tag",
      'rule C (vetobench.trajectory[0].unless.tool): names "nope", which is not in tool_scopes'
    ])
    expect(
      issues([
        { id: "D", kind: "max_calls", tool: "other", max: 1.5 },
        { id: "D", kind: "max_calls", tool: "other", max: 1 }
      ])
    ).toEqual(["rule D (vetobench.trajectory[0].max): must be a whole number of calls", 'rule D (vetobench.trajectory[1].id): duplicate rule id "D"'])
  })
})
