/**
 * `kind: rule` — the native aex-toolgate value gate (layer 2 of a layered gate; architecture
 * decision 9). Deterministic: the decision is a function of the policy file, the call, the caller's
 * scopes and trusted request headers — plus, with trajectory rules, the episode's earlier calls.
 *
 * ```yaml
 * judges:
 *   ap-policy:
 *     kind: rule
 *     policy: configs/policies/accounts-payable.json   # JSON or YAML; relative to the repo root
 *     mode: full                                       # full (default) | scope
 *     scopes: [invoices:read]                          # optional: the caller's X-Scopes narrowing
 *     scopes_header: true                              # default: a request's `x-scopes` header wins over `scopes`
 *     facts: { authorized: false }                     # optional: trusted facts (a trusted header wins)
 * ```
 *
 * Verdict: decision allow / deny / hold (the gate's `escalate`), category = the deciding rule id
 * (`P1-scope` on allow), reason = the gate's message, raw = the gate's decision as JSON
 * (`{decision, rule, scope, message, approval}`), model = `policy:<provider>`, version =
 * `sha256:` + 16 hex of the policy file. Arguments that are not a JSON object → deny `P0-arguments`.
 *
 * After the Go-compatible decision allows a call, vetobench's own rules under the policy's
 * `vetobench` key decide (paths, commands, URLs, trusted facts, then trajectory rules over the
 * episode; `extension.ts`, `trajectory.ts`). A judge with trajectory rules keeps per-episode state
 * and learns each call's fate through `commit` (called by the gate after the ruling).
 *
 * In `mode: scope` the judge also answers `grants` (judges/Judge.ts): which tools it allows at all
 * under the caller's scopes; the MCP gate's enforce arm hides the others from `tools/list`.
 */
import { Effect, Schema } from "effect"
import { Settings } from "../../src/config/service.js"
import type { ToolCallView } from "../../src/domain/tool-call.js"
import type { JudgeIdentity, Verdict } from "../../src/domain/verdict.js"
import { type Judge, JudgeConfigError, type JudgeContext } from "../Judge.js"
import type { JudgeKind, JudgeKindPlugin } from "../registry.js"
import { BooleanLike, decodeSpec, NonEmptyString } from "../spec-schema.js"
import { decide, parseScopesHeader, type RuleDecision } from "./evaluate.js"
import { decideExtension, ENVIRONMENTS_HEADER, resolveToolName } from "./extension.js"
import { formatWarning, lintPolicy } from "./lint.js"
import { type LoadedPolicy, loadPolicyFile, RAW_JSON } from "./policy.js"
import { TrajectoryState } from "./trajectory.js"

const RuleConfig = Schema.Struct({
  policy: NonEmptyString,
  mode: Schema.optionalWith(Schema.Literal("full", "scope").annotations({ message: () => ({ message: "must be full or scope", override: true }) }), {
    default: () => "full" as const
  }),
  scopes: Schema.optionalWith(
    Schema.NullOr(Schema.Array(Schema.String)).annotations({ message: () => ({ message: "must be a list of scopes", override: true }) }),
    { default: () => null }
  ),
  scopes_header: Schema.optionalWith(BooleanLike, { default: () => true }),
  facts: Schema.optionalWith(
    Schema.Record({ key: Schema.String, value: Schema.Union(Schema.String, Schema.Number, Schema.Boolean) }).annotations({
      message: () => ({ message: "must be a mapping of fact names to strings, numbers or booleans", override: true })
    }),
    { default: () => ({}) }
  )
})
export type RuleConfig = typeof RuleConfig.Type

/** Text that `JSON.stringify` would copy as is (no `"`, `\\`, control characters or surrogates). */
const JSON_SAFE = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/
const quote = (s: string): string => (JSON_SAFE.test(s) ? `"${s}"` : JSON.stringify(s))

/** Rule ids and scopes come from the policy: each is quoted once (bounded by the policy's size). */
const quotedNames = new Map<string, string>()
const quoteName = (s: string): string => {
  let q = quotedNames.get(s)
  if (q === undefined) {
    q = quote(s)
    if (quotedNames.size < 100_000) quotedNames.set(s, q)
  }
  return q
}

/**
 * `JSON.stringify(d)`, written out for the decisions built per call (about 4× faster): the decision
 * and approval are fixed words, rule and scope are quoted once, the message per call.
 */
const rawJson = (d: RuleDecision): string =>
  `{"decision":"${d.decision}","rule":${quoteName(d.rule)},"scope":${quoteName(d.scope)},"message":${quote(d.message)},"approval":"${d.approval}"}`

/** The request header that narrows the grant per request (lower-cased, as in JudgeContext.headers). */
export const SCOPES_HEADER = "x-scopes"

export interface RuleJudgeOptions {
  readonly mode: "full" | "scope"
  readonly scopes: ReadonlyArray<string> | null
  readonly scopes_header: boolean
  /** trusted facts from the judge's config (a trusted header wins; these win over the policy's `trusted.facts`) */
  readonly facts?: Readonly<Record<string, string | number | boolean>>
  /** the clock of the trajectory state (ms, monotonic; default `performance.now`); tests pass their own */
  readonly now?: () => number
}

/** A rule judge also exposes its trajectory state (null without trajectory rules), for tests and diagnostics. */
export interface RuleJudge extends Judge {
  readonly trajectory: TrajectoryState | null
}

/**
 * A rule judge over a loaded policy. Not cacheable while its verdict depends on more than the call:
 * the `x-scopes` header (`scopes_header`), trusted-fact or environment headers, or trajectory state
 * — the verdict cache is keyed by judge, version and call only. Otherwise the verdict is cached.
 */
export const makeRuleJudge = (name: string, loaded: LoadedPolicy, opts: RuleJudgeOptions): RuleJudge => {
  const compiled = loaded.compiled
  const ext = loaded.extension
  const id: JudgeIdentity = { judge: name, kind: "rule", model: `policy:${compiled.provider}`, version: loaded.version }
  const mode = opts.mode
  // the verdict's raw field (the gate's decision as JSON): prebuilt decisions — allow, scope denial,
  // a rule's own message — carry theirs; the others are written out per call
  const rawOf = (d: RuleDecision): string => (d as { readonly [RAW_JSON]?: string })[RAW_JSON] ?? rawJson(d)
  const constFacts = new Map(ext.spec.constFacts)
  for (const [k, v] of Object.entries(opts.facts ?? {})) constFacts.set(k, String(v))
  const qualified = ext.qualified
  const hasExtension = ext.tools.size > 0
  const clock = opts.now
  const trajectory = ext.trajectory.rules.length > 0 ? new TrajectoryState(ext.trajectory, clock ?? (() => performance.now())) : null

  /** the policy entry a tool is decided under (`<Env>.<tool>` when the environments header names one) */
  const toolNamed = (name: string, ctx: JudgeContext): string =>
    qualified.size === 0 ? name : resolveToolName(qualified, name, ctx.headers[ENVIRONMENTS_HEADER])
  const toolOf = (call: ToolCallView, ctx: JudgeContext): string => toolNamed(call.name, ctx)

  /** the caller's scopes: the `x-scopes` header when read and sent, else the configured `scopes` */
  const callerScopesOf = (ctx: JudgeContext): ReadonlyArray<string> | null => {
    const header = opts.scopes_header ? ctx.headers[SCOPES_HEADER] : undefined
    return header !== undefined ? parseScopesHeader(header) : opts.scopes
  }

  /** the decision; `started` (performance.now) doubles as the trajectory clock unless the options give one */
  const ruleOn = (call: ToolCallView, ctx: JudgeContext, started: number): RuleDecision => {
    const callerScopes = callerScopesOf(ctx)
    const tool = toolOf(call, ctx)
    const d = decide(compiled, tool, call.arguments, { mode, callerScopes })
    if (d.decision !== "allow" || mode === "scope") return d
    const plan = compiled.tools.get(tool)!
    if (hasExtension) {
      const e = decideExtension(ext, plan, call.arguments, ctx.headers, constFacts)
      if (e !== null) return e
    }
    if (trajectory !== null && trajectory.governs(tool)) {
      const t = trajectory.decide(plan, call.arguments, trajectory.keyOf(ctx.episodeId, ctx.sessionId), call, clock === undefined ? started : clock())
      if (t !== null) return t
    }
    return d
  }

  // one object literal (the fields and order of `decided`): cheaper than spreading a cached verdict
  const rule = (call: ToolCallView, ctx: JudgeContext): Effect.Effect<Verdict> =>
    Effect.sync((): Verdict => {
      const started = performance.now()
      const d = ruleOn(call, ctx, started)
      const raw = rawOf(d)
      return {
        judge: id.judge,
        kind: id.kind,
        model: id.model,
        version: id.version,
        category: d.rule,
        reason: d.message,
        raw,
        probability: null,
        temperature: null,
        latency_ms: performance.now() - started,
        cached: false,
        usage: {},
        status: "ok",
        decision: d.decision === "escalate" ? "hold" : d.decision
      }
    })

  const commit =
    trajectory === null
      ? undefined
      : (call: ToolCallView, ctx: JudgeContext, released: boolean): Effect.Effect<void> => {
          const tool = toolOf(call, ctx)
          // a tool no trajectory rule governs or counts changes nothing
          if (!trajectory.involves(tool)) return Effect.void
          return Effect.sync(() => trajectory.commit(tool, call.arguments, trajectory.keyOf(ctx.episodeId, ctx.sessionId), call, released))
        }

  // scope mode decides on the tool alone (inventory, grant, caller's scopes): what it denies with no
  // arguments it denies with any, so a tool it does not grant can be hidden (full mode: values decide)
  const grants =
    mode === "scope"
      ? (toolName: string, ctx: JudgeContext): boolean => decide(compiled, toolNamed(toolName, ctx), null, { mode, callerScopes: callerScopesOf(ctx) }).decision === "allow"
      : undefined

  const cacheable = !opts.scopes_header && !ext.readsHeaders && trajectory === null
  return { ...id, cacheable, inProcess: true, rule, ...(commit !== undefined ? { commit } : {}), ...(grants !== undefined ? { grants } : {}), trajectory }
}

/** The `rule` kind; relative policy paths resolve against `root`. Lint warnings are logged at start-up. */
export const makeRuleKind = (root: string): JudgeKind => ({
  kind: "rule",
  make: (name, spec) =>
    Effect.gen(function* () {
      const config = yield* decodeSpec(name, spec, RuleConfig)
      const loaded = yield* loadPolicyFile(config.policy, root).pipe(
        Effect.mapError((e) => new JudgeConfigError({ judge: name, path: "policy", reason: e.message }))
      )
      yield* Effect.forEach(lintPolicy(loaded), (w) =>
        Effect.logWarning(`judges.${name}: policy ${loaded.file}: ${formatWarning(w)}`).pipe(
          Effect.annotateLogs({ judge: name, ...(w.rule !== undefined ? { rule: w.rule } : {}), ...(w.key !== undefined ? { key: w.key } : {}) })
        )
      )
      return makeRuleJudge(name, loaded, { mode: config.mode, scopes: config.scopes, scopes_header: config.scopes_header, facts: config.facts })
    })
})

/** Register with `JudgeKinds.layer([...defaultPlugins, rulePlugin])`; needs Settings for the repo root. */
export const rulePlugin: JudgeKindPlugin<Settings> = Effect.map(Settings, (s) => makeRuleKind(s.root))
