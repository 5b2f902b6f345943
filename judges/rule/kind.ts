/**
 * `kind: rule` — the native aex-toolgate value gate (layer 2 of a layered gate; architecture
 * decision 9). Deterministic: the decision is a pure function of the policy file, the call and the
 * caller's scopes.
 *
 * ```yaml
 * judges:
 *   ap-policy:
 *     kind: rule
 *     policy: configs/policies/accounts-payable.json   # JSON or YAML; relative to the repo root
 *     mode: full                                       # full (default) | scope
 *     scopes: [invoices:read]                          # optional: the caller's X-Scopes narrowing
 *     scopes_header: true                              # default: a request's `x-scopes` header wins over `scopes`
 * ```
 *
 * Verdict: decision allow / deny / hold (the gate's `escalate`), category = the deciding rule id
 * (`P1-scope` on allow), reason = the gate's message, raw = the gate's decision as JSON
 * (`{decision, rule, scope, message, approval}`), model = `policy:<provider>`, version =
 * `sha256:` + 16 hex of the policy file. Arguments that are not a JSON object → deny `P0-arguments`.
 */
import { Effect, Schema } from "effect"
import { Settings } from "../../src/config/service.js"
import type { ToolCallView } from "../../src/domain/tool-call.js"
import { decided, type JudgeIdentity, type Verdict } from "../../src/domain/verdict.js"
import { type Judge, JudgeConfigError, type JudgeContext } from "../Judge.js"
import type { JudgeKind, JudgeKindPlugin } from "../registry.js"
import { BooleanLike, decodeSpec, NonEmptyString } from "../spec-schema.js"
import { decide, parseScopesHeader, type RuleDecision } from "./evaluate.js"
import { formatWarning, lintPolicy, type PolicyWarning } from "./lint.js"
import { type LoadedPolicy, loadPolicyFile } from "./policy.js"

const RuleConfig = Schema.Struct({
  policy: NonEmptyString,
  mode: Schema.optionalWith(Schema.Literal("full", "scope").annotations({ message: () => ({ message: "must be full or scope", override: true }) }), {
    default: () => "full" as const
  }),
  scopes: Schema.optionalWith(
    Schema.NullOr(Schema.Array(Schema.String)).annotations({ message: () => ({ message: "must be a list of scopes", override: true }) }),
    { default: () => null }
  ),
  scopes_header: Schema.optionalWith(BooleanLike, { default: () => true })
})
export type RuleConfig = typeof RuleConfig.Type

/** The request header that narrows the grant per request (lower-cased, as in JudgeContext.headers). */
export const SCOPES_HEADER = "x-scopes"

export interface RuleJudgeOptions {
  readonly mode: "full" | "scope"
  readonly scopes: ReadonlyArray<string> | null
  readonly scopes_header: boolean
}

/**
 * A rule judge over a loaded policy. Not cacheable while it reads the `x-scopes` header: the
 * verdict cache is keyed by judge, version and call only, so a cached verdict would ignore a later
 * request's narrowing. With `scopes_header: false` the verdict depends on the call alone and is cached.
 */
export const makeRuleJudge = (name: string, loaded: LoadedPolicy, opts: RuleJudgeOptions): Judge => {
  const compiled = loaded.compiled
  const id: JudgeIdentity = { judge: name, kind: "rule", model: `policy:${compiled.provider}`, version: loaded.version }
  const mode = opts.mode
  const toVerdict = (d: RuleDecision): Verdict =>
    decided(id, d.decision === "escalate" ? "hold" : d.decision, { category: d.rule, reason: d.message, raw: JSON.stringify(d) })
  // the prebuilt (frozen) decisions — allow, scope denial, a rule's own message — map to one verdict each
  const verdicts = new WeakMap<RuleDecision, Verdict>()
  const verdictOf = (d: RuleDecision): Verdict => {
    if (!Object.isFrozen(d)) return toVerdict(d)
    let v = verdicts.get(d)
    if (v === undefined) verdicts.set(d, (v = toVerdict(d)))
    return v
  }
  const rule = (call: ToolCallView, ctx: JudgeContext): Effect.Effect<Verdict> =>
    Effect.sync(() => {
      const started = performance.now()
      const header = opts.scopes_header ? ctx.headers[SCOPES_HEADER] : undefined
      const callerScopes = header !== undefined ? parseScopesHeader(header) : opts.scopes
      const v = verdictOf(decide(compiled, call.name, call.arguments, { mode, callerScopes }))
      return { ...v, usage: {}, latency_ms: performance.now() - started }
    })
  return { ...id, cacheable: !opts.scopes_header, rule }
}

/** The `rule` kind; relative policy paths resolve against `root`. Lint warnings are logged at start-up. */
export const makeRuleKind = (root: string, onWarnings?: (judge: string, warnings: ReadonlyArray<PolicyWarning>) => void): JudgeKind => ({
  kind: "rule",
  make: (name, spec) =>
    Effect.gen(function* () {
      const config = yield* decodeSpec(name, spec, RuleConfig)
      const loaded = yield* loadPolicyFile(config.policy, root).pipe(
        Effect.mapError((e) => new JudgeConfigError({ judge: name, path: "policy", reason: e.message }))
      )
      const warnings = lintPolicy(loaded)
      if (onWarnings !== undefined) onWarnings(name, warnings)
      yield* Effect.forEach(warnings, (w) =>
        Effect.logWarning(`judges.${name}: policy ${loaded.file}: ${formatWarning(w)}`).pipe(
          Effect.annotateLogs({ judge: name, ...(w.rule !== undefined ? { rule: w.rule } : {}), ...(w.key !== undefined ? { key: w.key } : {}) })
        )
      )
      return makeRuleJudge(name, loaded, { mode: config.mode, scopes: config.scopes, scopes_header: config.scopes_header })
    })
})

/** Register with `JudgeKinds.layer([...defaultPlugins, rulePlugin])`; needs Settings for the repo root. */
export const rulePlugin: JudgeKindPlugin<Settings> = Effect.map(Settings, (s) => makeRuleKind(s.root))
