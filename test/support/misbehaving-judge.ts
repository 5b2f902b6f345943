/**
 * A judge kind that misbehaves as its spec's `how` says: throws before returning an effect, dies
 * inside `Effect.sync`, overflows the stack, interrupts itself, hangs, answers no verdict, answers a
 * verdict whose usage cannot be recorded, or has a commit hook that dies.
 */
import { Effect } from "effect"
import { expect } from "vitest"
import type { CallRecord } from "../../src/domain/audit-record.js"
import { decided, type JudgeKindPlugin } from "../../src/index.js"
import type { Verdict } from "../../src/domain/verdict.js"

const overflow = (n: number): number => overflow(n + 1) + 1

/** A judge kind that misbehaves as its spec says. */
export const misbehaving: JudgeKindPlugin = Effect.succeed({
  kind: "misbehaving",
  make: (name, spec) => {
    const id = { judge: name, kind: "misbehaving", model: null, version: "v1" }
    const how = String(spec.how)
    return Effect.succeed({
      ...id,
      cacheable: false,
      rule: (call) => {
        switch (how) {
          case "throws":
            throw new Error(`plugin bug on ${call.name}`)
          case "dies-in-sync":
            return Effect.sync((): Verdict => {
              throw new TypeError("cannot read properties of undefined")
            })
          case "overflows":
            return Effect.sync(() => decided(id, overflow(0) > 0 ? "allow" : "deny"))
          case "interrupts":
            return Effect.interrupt
          case "hangs":
            return Effect.never
          case "not-a-verdict":
            return Effect.succeed({ decision: "maybe" } as unknown as Verdict)
          case "bigint-usage":
            return Effect.succeed({ ...decided(id, "allow"), usage: { tokens: 10n } } as unknown as Verdict)
          case "huge-raw":
            return Effect.succeed(decided(id, "allow", { raw: "\u0001".repeat(20_000_000), category: "c".repeat(10_000) }))
          case "commit-dies":
            return Effect.succeed(decided(id, "allow"))
          default:
            return Effect.die(`unknown mode ${how}`)
        }
      },
      ...(how === "commit-dies" ? { commit: () => Effect.die(new Error("commit hook bug")) } : {})
    })
  }
})

export const MODES = ["throws", "dies-in-sync", "overflows", "interrupts", "hangs", "not-a-verdict", "bigint-usage"] as const


/** Every record is a failed ruling (no decision, a reason) decided by `fail_policy`: deny and blocked when closed, allow when open. */
export const expectFailedRulings = (records: ReadonlyArray<CallRecord>, policy: "open" | "closed", status?: "error" | "timeout"): void => {
  for (const r of records) {
    if (status === undefined) expect(r.verdict?.status).not.toBe("ok")
    else expect(r.verdict?.status).toBe(status)
    expect(r.verdict?.decision).toBeNull()
    expect(r.verdict?.reason).not.toBe("")
    expect(r.effective_decision).toBe(policy === "closed" ? "deny" : "allow")
    expect(r.blocked).toBe(policy === "closed")
  }
}
