/**
 * Held calls waiting for a person (hold_policy wait). A hold is parked until someone approves or
 * rejects it through the hold API, or until it expires; the gate then records the outcome.
 */
import { Context, Deferred, Duration, Effect, Layer, Option } from "effect"
import type { RequestOrigin } from "../domain/audit-record.js"
import type { ToolCallView } from "../domain/tool-call.js"
import type { Verdict } from "../domain/verdict.js"

export interface PendingHold extends RequestOrigin {
  /** the call record's hash: the approval handle */
  readonly id: string
  readonly seq: number
  readonly created: string
  readonly expires: string
  readonly tool_call_id: string | null
  readonly tool: ToolCallView
  readonly verdict: Verdict | null
}

export interface HoldDecision {
  readonly outcome: "approved" | "rejected" | "expired"
  readonly approver: string | null
  readonly note: string | null
}

export interface HoldsShape {
  /** park a hold until decided or `timeout_s` passes */
  readonly wait: (hold: Omit<PendingHold, "created" | "expires">, timeout_s: number) => Effect.Effect<HoldDecision>
  readonly pending: Effect.Effect<ReadonlyArray<PendingHold>>
  /** false when no hold with this id is pending (unknown, decided or expired) */
  readonly decide: (id: string, approved: boolean, approver: string, note: string | null) => Effect.Effect<boolean>
}

export class Holds extends Context.Tag("vetobench/Holds")<Holds, HoldsShape>() {
  static layer: Layer.Layer<Holds> = Layer.sync(Holds, () => {
    const parked = new Map<string, { readonly hold: PendingHold; readonly done: Deferred.Deferred<HoldDecision> }>()
    return {
      wait: (h, timeout_s) =>
        Effect.gen(function* () {
          const now = Date.now()
          const hold: PendingHold = {
            ...h,
            created: new Date(now).toISOString(),
            expires: new Date(now + timeout_s * 1000).toISOString()
          }
          const done = yield* Deferred.make<HoldDecision>()
          parked.set(hold.id, { hold, done })
          const decided = yield* Deferred.await(done).pipe(Effect.timeout(Duration.seconds(timeout_s)), Effect.option)
          parked.delete(hold.id)
          return Option.getOrElse(decided, (): HoldDecision => ({ outcome: "expired", approver: null, note: null }))
        }),
      pending: Effect.sync(() => [...parked.values()].map((p) => p.hold)),
      decide: (id, approved, approver, note) =>
        Effect.suspend(() => {
          const p = parked.get(id)
          if (p === undefined) return Effect.succeed(false)
          parked.delete(id)
          return Deferred.succeed(p.done, { outcome: approved ? "approved" : "rejected", approver, note })
        })
    }
  })
}
