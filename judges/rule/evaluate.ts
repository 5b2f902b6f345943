/**
 * One call → one decision, exactly as the aex-toolgate gate decides (`../spec/toolgate.md` §1.3–1.6):
 * inventory, scope (narrowed by the caller's scopes), mode, then the rules that apply to the tool in
 * policy order; the first rule that fires decides (escalate → `escalate` / `pending-human`, else
 * `deny`); a rule that could not be checked fires with `cannot verify: <reason>`; no rule fired →
 * `allow` with rule `P1-scope`.
 *
 * vetobench addition: arguments that are not a JSON object (invalid JSON from the model, a list, a
 * number) are denied first with rule `P0-arguments` — the Go service answers 400 to such a body and
 * never decides. `null` arguments are no arguments, as on the Go gate.
 *
 * The hot path allocates only what the answer needs: decisions for a rule's own message, allow and
 * scope denials are prebuilt (frozen) per tool; a `cannot verify` decision, a number's text and the
 * values of a `[*]` path are built when reached.
 */
import { type CompiledPath, type CompiledPolicy, type CompiledRule, firedDecision, type RuleDecision, type ToolPlan } from "./policy.js"
import { finiteNumber, goEqualFold, goText, hostOf, isHostProblem, normalizeField, plainText } from "./text.js"
import { isObject } from "../../src/domain/is-object.js"

export type { RuleDecision } from "./policy.js"

export interface DecideOptions {
  /** `scope`: stop after the scope check (values never examined) */
  readonly mode: "full" | "scope"
  /** the caller's scopes (X-Scopes): null/undefined = no narrowing; `[]` narrows to nothing */
  readonly callerScopes?: ReadonlyArray<string> | null
}

const EMPTY: Readonly<Record<string, unknown>> = Object.freeze({})

type Args = Readonly<Record<string, unknown>>

/** Decide one call. `args` is the parsed arguments (an object; anything else is `P0-arguments`). */
export const decide = (compiled: CompiledPolicy, toolName: string, args: unknown, opts: DecideOptions): RuleDecision => {
  let a: Args
  if (args === null || args === undefined) a = EMPTY
  else if (isObject(args)) a = args
  else return compiled.notAnObject
  const plan = compiled.tools.get(toolName)
  if (plan === undefined) return compiled.notInInventory
  if (!plan.granted) return plan.scopeDenied
  const caller = opts.callerScopes
  if (caller !== null && caller !== undefined && !caller.includes("*") && !caller.includes(plan.scope)) return plan.scopeDenied
  if (opts.mode === "scope") return plan.allow
  const rules = plan.rules
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i]!
    const outcome = evaluateRule(r, a)
    if (outcome === PASS) continue
    if (outcome === FIRE) return plan.fired[i]!
    return cannotVerify(plan, r, outcome)
  }
  return plan.allow
}

/** `X-Scopes` as the Go gate reads it: comma-separated, items trimmed, empties dropped (present but empty → []). */
export const parseScopesHeader = (header: string | undefined): ReadonlyArray<string> | null =>
  header === undefined
    ? null
    : header
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "")

const cannotVerify = (plan: ToolPlan, r: CompiledRule, why: string): RuleDecision => firedDecision(plan.scope, r.id, r.escalate, `cannot verify: ${why}`)

// ---------------------------------------------------------------------------------------------
// one rule: PASS, FIRE, or the reason it could not be checked

const PASS = 0
const FIRE = 1
type Outcome = typeof PASS | typeof FIRE | string

/** A path that did not lead to a value (allocated only on that path). */
export class Unresolved {
  constructor(readonly why: string) {}
}

/** The values a `[*]` path found. */
export class Many {
  constructor(readonly values: ReadonlyArray<unknown>) {}
}

const required = (p: CompiledPath) => new Unresolved(`${p.text} is required by this rule and was not supplied`)

/** Go's `resolveArg`: the exact top-level key first, then the path walk. */
const resolve = (args: Args, p: CompiledPath): unknown => {
  if (Object.hasOwn(args, p.text)) return args[p.text]
  const segments = p.segments
  if (segments === null) return required(p)
  if (!p.wild) {
    let cur: unknown = args
    for (let i = 0; i < segments.length; i++) {
      if (!isObject(cur)) return new Unresolved(`${p.text} does not lead to a value in this call`)
      const name = segments[i]!.name
      if (!Object.hasOwn(cur, name)) return required(p)
      cur = cur[name]
    }
    return cur
  }
  let cur: Array<unknown> = [args]
  for (const seg of segments) {
    const next: Array<unknown> = []
    for (const c of cur) {
      if (!isObject(c)) return new Unresolved(`${p.text} does not lead to a value in this call`)
      if (!Object.hasOwn(c, seg.name)) return required(p)
      const v = c[seg.name]
      if (!seg.wild) next.push(v)
      else if (Array.isArray(v)) for (const e of v) next.push(e)
      else return new Unresolved(`${p.text} expects a list at ${seg.name}`)
    }
    cur = next
  }
  return new Many(cur)
}

/**
 * The values an argument path leads to, for vetobench's extensions (the same lookup as the rules:
 * exact top-level key first, then the path): a `[*]` path gives every element's value, a list
 * value gives its elements when `spread`, anything else one value. A string is the reason there is
 * none (`… is required by this rule and was not supplied`, …).
 */
export const valuesAt = (args: unknown, p: CompiledPath, spread: boolean): ReadonlyArray<unknown> | string => {
  const v = resolveArg(args, p)
  if (v instanceof Unresolved) return v.why
  if (v instanceof Many) return v.values
  if (spread && Array.isArray(v)) return v
  return [v]
}

/** What `p` leads to in `args` (not an object: no arguments): a value, `Many` for a `[*]` path, or `Unresolved`. */
export const resolveArg = (args: unknown, p: CompiledPath): unknown => resolve(isObject(args) ? args : EMPTY, p)

const NOT_SINGLE: unique symbol = Symbol("not a single value")

/** Go's `singleArg`: exactly one value (no `[*]`), or NOT_SINGLE. */
const single = (args: Args, p: CompiledPath): unknown => {
  const v = resolve(args, p)
  return v instanceof Unresolved || v instanceof Many ? NOT_SINGLE : v
}

const evaluateRule = (r: CompiledRule, args: Args): Outcome => {
  switch (r.kind) {
    case "tool":
      return FIRE
    case "compare":
      return compare(r, args)
    case "lookup":
      return lookup(r, args)
  }
  const v = resolve(args, r.arg)
  if (v instanceof Unresolved) return v.why
  if (r.kind === "max_items") {
    let n: number
    if (v instanceof Many) n = v.values.length
    else if (v === null) return `${r.arg.text} is null, so its items cannot be counted`
    else n = Array.isArray(v) ? v.length : 1
    return n > r.max ? FIRE : PASS
  }
  if (v instanceof Many || (r.each && Array.isArray(v))) {
    const values: ReadonlyArray<unknown> = v instanceof Many ? v.values : (v as ReadonlyArray<unknown>)
    for (let i = 0; i < values.length; i++) {
      const o = checkValue(r, values[i])
      if (o !== PASS) return o
    }
    return PASS
  }
  return checkValue(r, v)
}

const notPlain = (r: CompiledRule) => `${r.arg.text} is not a single plain value`

/** Go's `checkValue`: the kind's test on one value. */
const checkValue = (r: CompiledRule, v: unknown): Outcome => {
  switch (r.kind) {
    case "ceiling": {
      const f = finiteNumber(v)
      if (f === null) return `${r.arg.text} is not a number, so it cannot be compared against the limit`
      return f > r.max ? FIRE : PASS
    }
    case "floor": {
      const f = finiteNumber(v)
      if (f === null) return `${r.arg.text} is not a number, so it cannot be compared against the floor`
      return f < r.min ? FIRE : PASS
    }
    case "allowlist": {
      const s = plainText(v)
      if (s === null) return notPlain(r)
      return r.allowedSet.has(s) ? PASS : FIRE
    }
    case "denylist": {
      const s = plainText(v)
      if (s === null) return notPlain(r)
      for (const d of r.denied) if (goEqualFold(s, d)) return FIRE
      return PASS
    }
    case "suffix": {
      const s = plainText(v)
      if (s === null) return `${r.arg.text} holds more than one value, or padding, so a suffix match is meaningless`
      for (const a of r.allowed) if (s.endsWith(a)) return PASS
      return FIRE
    }
    case "prefix": {
      const s = plainText(v)
      if (s === null) return `${r.arg.text} holds more than one value, or padding, so a prefix match is meaningless`
      if (s.includes("..")) return `${r.arg.text} walks back out of the allowed prefix`
      for (const a of r.allowed) if (s.startsWith(a)) return PASS
      return FIRE
    }
    case "pattern": {
      const s = plainText(v)
      if (s === null) return notPlain(r)
      if (r.regex === null) return "the rule's pattern does not compile"
      return r.regex.test(s) ? PASS : FIRE
    }
    case "domain": {
      const s = plainText(v)
      if (s === null) return notPlain(r)
      const host = hostOf(s)
      if (isHostProblem(host)) return `${r.arg.text} ${host}`
      for (let i = 0; i < r.domains.length; i++) if (host === r.domains[i] || host.endsWith(r.dotted[i]!)) return PASS
      return FIRE
    }
    case "sensitive_field": {
      const s = plainText(v)
      if (s === null) return notPlain(r)
      return normalizeField(s) === r.field ? FIRE : PASS
    }
    default:
      return PASS
  }
}

/** Go's `evaluateLookup`: `arg` must equal the table's entry for `match_arg`, compared as text. */
const lookup = (r: CompiledRule, args: Args): Outcome => {
  const v = single(args, r.arg)
  if (v === NOT_SINGLE) return `${r.arg.text} is required by this rule and was not supplied`
  const k = single(args, r.matchArg)
  if (k === NOT_SINGLE) return `${r.matchArg.text} was not supplied, so ${r.arg.text} cannot be checked against the table`
  const key = goText(k)
  const expected = r.table.get(key)
  if (expected === undefined) return `no entry on file for ${key}`
  return goText(v) !== expected ? FIRE : PASS
}

/** Go's `evaluateCompare`: fires unless `arg op match_arg` holds. */
const compare = (r: CompiledRule, args: Args): Outcome => {
  const a = single(args, r.arg)
  if (a === NOT_SINGLE) return `${r.arg.text} is required by this rule and was not supplied`
  const b = single(args, r.matchArg)
  if (b === NOT_SINGLE) return `${r.matchArg.text} was not supplied, so ${r.arg.text} cannot be compared with it`
  const fa = finiteNumber(a)
  const fb = finiteNumber(b)
  if (fa !== null && fb !== null) {
    let holds: boolean
    switch (r.op) {
      case "lt":
        holds = fa < fb
        break
      case "le":
        holds = fa <= fb
        break
      case "gt":
        holds = fa > fb
        break
      case "ge":
        holds = fa >= fb
        break
      case "eq":
        holds = fa === fb
        break
      case "ne":
        holds = fa !== fb
        break
    }
    return holds ? PASS : FIRE
  }
  if (r.op !== "eq" && r.op !== "ne") return `${r.arg.text} and ${r.matchArg.text} are not both numbers, so they cannot be ordered`
  const sa = plainText(a)
  const sb = plainText(b)
  if (sa === null || sb === null) return `${r.arg.text} or ${r.matchArg.text} is not a single plain value`
  return (sa === sb) !== (r.op === "eq") ? FIRE : PASS
}
