/**
 * `kind: static` — a control judge that always answers the same decision. `allow-all` and
 * `deny-all` exist even when not configured (`BUILTIN_JUDGES`, src/config/builtin-judges.ts).
 */
import { Effect, Schema } from "effect"
import { decided } from "../src/domain/verdict.js"
import type { Judge } from "./Judge.js"
import type { JudgeKind } from "./registry.js"
import { decodeSpec } from "./spec-schema.js"

const StaticConfig = Schema.Struct({
  decision: Schema.optionalWith(
    Schema.Literal("allow", "deny", "hold").annotations({ message: () => "must be allow, deny or hold" }),
    { default: () => "allow" as const }
  )
})

export const makeStaticJudge = (name: string, decision: "allow" | "deny" | "hold"): Judge => {
  const id = { judge: name, kind: "static", model: null, version: `static:${decision}` }
  const verdict = decided(id, decision, {
    category: decision === "allow" ? "none" : "other",
    reason: "static judge"
  })
  return { ...id, cacheable: false, inProcess: true, rule: () => Effect.succeed(verdict) }
}

export const StaticKind: JudgeKind = {
  kind: "static",
  make: (name, spec) => Effect.map(decodeSpec(name, spec, StaticConfig), (c) => makeStaticJudge(name, c.decision))
}

export const staticPlugin = Effect.succeed(StaticKind)
