/**
 * The aex-toolgate policy file (`../spec/toolgate.md` §1): load (JSON, or YAML by extension),
 * decode the way Go's `encoding/json` does (case-insensitive keys, unknown keys ignored but noted
 * for the lint, `null` leaves a scalar unchanged), validate exactly per §1.2, and compile once into
 * the structure `evaluate.ts` walks: per tool, the applicable rules in policy order with their
 * decisions prebuilt, paths pre-parsed, patterns compiled, sets and lookup tables built.
 */
import { createHash } from "node:crypto"
import { readFile } from "node:fs/promises"
import * as path from "node:path"
import { Data, Effect, Either } from "effect"
import { parseYaml } from "../../src/config/yaml-file.js"
import { compileExtension, type CompiledExtension, decodeExtension } from "./extension.js"
import { compileRe2 } from "./re2.js"
import { normalizeField } from "./text.js"
import { isObject } from "../../src/domain/is-object.js"

// ---------------------------------------------------------------------------------------------
// the policy as written

export const RULE_KINDS = [
  "ceiling",
  "floor",
  "allowlist",
  "denylist",
  "suffix",
  "prefix",
  "pattern",
  "domain",
  "sensitive_field",
  "lookup",
  "max_items",
  "compare",
  "tool"
] as const
export type RuleKind = (typeof RULE_KINDS)[number]

/** The keys each kind reads besides id, tool, tag, kind, effect, message. */
export const KIND_KEYS: Readonly<Record<string, ReadonlyArray<RuleKey>>> = {
  ceiling: ["arg", "max", "each"],
  floor: ["arg", "min", "each"],
  allowlist: ["arg", "allowed", "each"],
  denylist: ["arg", "denied", "each"],
  suffix: ["arg", "allowed", "each"],
  prefix: ["arg", "allowed", "each"],
  pattern: ["arg", "pattern", "each"],
  domain: ["arg", "allowed", "each"],
  sensitive_field: ["arg", "field", "each"],
  lookup: ["arg", "match_arg"],
  max_items: ["arg", "max"],
  compare: ["arg", "match_arg", "op"],
  tool: []
}

/** Kinds that may set `each: true` (they check one value at a time). */
export const EACH_KINDS: ReadonlySet<string> = new Set(Object.keys(KIND_KEYS).filter((k) => KIND_KEYS[k]!.includes("each")))

export const COMPARE_OPS = ["lt", "le", "gt", "ge", "eq", "ne"] as const
export type CompareOp = (typeof COMPARE_OPS)[number]

export const TOP_LEVEL_KEYS = ["provider", "granted_scopes", "tool_scopes", "rules", "lookups", "tool_tags"] as const
export const RULE_KEYS = [
  "id",
  "tool",
  "tag",
  "kind",
  "arg",
  "max",
  "min",
  "allowed",
  "denied",
  "field",
  "match_arg",
  "pattern",
  "op",
  "each",
  "effect",
  "message"
] as const
export type RuleKey = (typeof RULE_KEYS)[number]

/** The top-level key reserved for vetobench's own extensions (never reported as unknown). */
export const EXTENSION_KEY = "vetobench"

/** One rule as decoded; absent keys have Go's zero values (`min` is a pointer in Go: null when absent). */
export interface RuleSpec {
  readonly id: string
  readonly tool: string
  readonly tag: string
  readonly kind: string
  readonly arg: string
  readonly max: number
  readonly min: number | null
  readonly allowed: ReadonlyArray<string>
  readonly denied: ReadonlyArray<string>
  readonly field: string
  readonly match_arg: string
  readonly pattern: string
  readonly op: string
  readonly each: boolean
  readonly effect: string
  readonly message: string
  /** the canonical keys the rule spelled out (for the lint) */
  readonly keys: ReadonlySet<RuleKey>
}

export interface PolicySpec {
  readonly provider: string
  readonly granted_scopes: ReadonlyArray<string>
  /** tool → required scope, in file order */
  readonly tool_scopes: ReadonlyMap<string, string>
  readonly rules: ReadonlyArray<RuleSpec>
  /** rule id → (key text → expected text) */
  readonly lookups: ReadonlyMap<string, ReadonlyMap<string, string>>
  readonly tool_tags: ReadonlyMap<string, ReadonlyArray<string>>
}

/** A key Go would ignore (unknown) or accept in another spelling (case variant). */
export interface KeyNote {
  /** where: `` (top level) or `rules[2]` */
  readonly path: string
  readonly key: string
  readonly rule?: string
  /** for a case variant: the canonical spelling */
  readonly canonical?: string
}

export interface DecodedPolicy {
  readonly spec: PolicySpec
  readonly unknownKeys: ReadonlyArray<KeyNote>
  readonly caseVariants: ReadonlyArray<KeyNote>
  /** the raw value of the reserved `vetobench` top-level key (undefined when absent) */
  readonly extension: unknown
}

/** A load or validation problem, naming the rule (id) and key when there is one. */
export interface PolicyIssue {
  readonly path: string
  readonly rule?: string
  readonly message: string
}

export const formatIssue = (i: PolicyIssue): string =>
  i.rule !== undefined && i.rule !== "" ? `rule ${i.rule} (${i.path}): ${i.message}` : `${i.path || "policy"}: ${i.message}`

export class PolicyLoadError extends Data.TaggedError("PolicyLoadError")<{
  readonly file: string
  readonly issues: ReadonlyArray<PolicyIssue>
}> {
  override get message() {
    return `${this.file}: ${this.issues.map(formatIssue).join("; ")}`
  }
}

// ---------------------------------------------------------------------------------------------
// decoding (Go encoding/json semantics)

/** Go matches JSON keys to struct fields ignoring case (with Unicode folding: `ſ` is `s`, `K` is `k`). */
const foldKey = (k: string): string => k.toLowerCase().replace(/\u017f/g, "s")

export const describe = (u: unknown): string => (u === null ? "null" : Array.isArray(u) ? "a list" : typeof u === "object" ? "a mapping" : typeof u)

interface Sink {
  readonly issues: Array<PolicyIssue>
  readonly unknown: Array<KeyNote>
  readonly variants: Array<KeyNote>
}

/** The entries of `obj` matched to `fields`, in document order (a later spelling wins, as in Go). */
const fieldsOf = <K extends string>(
  obj: Record<string, unknown>,
  fields: ReadonlyArray<K>,
  where: string,
  rule: string | undefined,
  sink: Sink,
  reserved?: string
): Array<readonly [K, unknown]> => {
  const byFold = new Map(fields.map((f) => [foldKey(f), f] as const))
  const out: Array<readonly [K, unknown]> = []
  for (const [key, value] of Object.entries(obj)) {
    const field = byFold.get(foldKey(key))
    if (field === undefined) {
      if (key !== reserved) sink.unknown.push({ path: where, key, ...(rule ? { rule } : {}) })
      continue
    }
    if (key !== field) sink.variants.push({ path: where, key, canonical: field, ...(rule ? { rule } : {}) })
    out.push([field, value])
  }
  return out
}

const at = (where: string, key: string) => (where === "" ? key : `${where}.${key}`)

type Decoded<A> = { readonly set: true; readonly value: A } | { readonly set: false }
const NO_CHANGE: Decoded<never> = { set: false }
const set = <A>(value: A): Decoded<A> => ({ set: true, value })

const str = (v: unknown, p: string, sink: Sink, rule?: string): Decoded<string> => {
  if (v === null) return NO_CHANGE
  if (typeof v === "string") return set(v)
  sink.issues.push({ path: p, ...(rule ? { rule } : {}), message: `must be a string, not ${describe(v)}` })
  return NO_CHANGE
}

const num = (v: unknown, p: string, sink: Sink, rule?: string): Decoded<number> => {
  if (v === null) return NO_CHANGE
  if (typeof v === "number" && Number.isFinite(v)) return set(v)
  sink.issues.push({ path: p, ...(rule ? { rule } : {}), message: `must be a number, not ${describe(v)}` })
  return NO_CHANGE
}

const bool = (v: unknown, p: string, sink: Sink, rule?: string): Decoded<boolean> => {
  if (v === null) return NO_CHANGE
  if (typeof v === "boolean") return set(v)
  sink.issues.push({ path: p, ...(rule ? { rule } : {}), message: `must be true or false, not ${describe(v)}` })
  return NO_CHANGE
}

/** A list of strings; `null` empties it (Go sets a nil slice); a null element is `""`. */
const strList = (v: unknown, p: string, sink: Sink, rule?: string): Decoded<ReadonlyArray<string>> => {
  if (v === null) return set([])
  if (!Array.isArray(v)) {
    sink.issues.push({ path: p, ...(rule ? { rule } : {}), message: `must be a list of strings, not ${describe(v)}` })
    return NO_CHANGE
  }
  const out: Array<string> = []
  for (const [i, e] of v.entries()) {
    if (e === null) out.push("")
    else if (typeof e === "string") out.push(e)
    else sink.issues.push({ path: `${p}[${i}]`, ...(rule ? { rule } : {}), message: `must be a string, not ${describe(e)}` })
  }
  return set(out)
}

/** An object of strings, merged into `into` (Go decodes into the existing map). */
const strMap = (v: unknown, p: string, sink: Sink, into: Map<string, string>): Map<string, string> => {
  if (v === null) return new Map()
  if (!isObject(v)) {
    sink.issues.push({ path: p, message: `must be a mapping of names to strings, not ${describe(v)}` })
    return into
  }
  for (const [k, e] of Object.entries(v)) {
    if (e === null) into.set(k, "")
    else if (typeof e === "string") into.set(k, e)
    else sink.issues.push({ path: `${p}.${k}`, message: `must be a string, not ${describe(e)}` })
  }
  return into
}

const emptyRule = (): { -readonly [K in keyof RuleSpec]: RuleSpec[K] } => ({
  id: "",
  tool: "",
  tag: "",
  kind: "",
  arg: "",
  max: 0,
  min: null,
  allowed: [],
  denied: [],
  field: "",
  match_arg: "",
  pattern: "",
  op: "",
  each: false,
  effect: "",
  message: "",
  keys: new Set()
})

const decodeRule = (v: unknown, where: string, sink: Sink): RuleSpec => {
  const r = emptyRule()
  if (v === null) return r
  if (!isObject(v)) {
    sink.issues.push({ path: where, message: `must be a mapping, not ${describe(v)}` })
    return r
  }
  // the id first, so every later issue can name the rule
  const idEntry = Object.entries(v).filter(([k]) => foldKey(k) === "id").pop()
  const rid = typeof idEntry?.[1] === "string" && idEntry[1] !== "" ? idEntry[1] : undefined
  const keys = new Set<RuleKey>()
  for (const [key, value] of fieldsOf(v, RULE_KEYS, where, rid, sink)) {
    keys.add(key)
    const p = at(where, key)
    switch (key) {
      case "max": {
        const d = num(value, p, sink, rid)
        if (d.set) r.max = d.value
        break
      }
      case "min":
        if (value === null) r.min = null
        else {
          const d = num(value, p, sink, rid)
          if (d.set) r.min = d.value
        }
        break
      case "allowed":
      case "denied": {
        const d = strList(value, p, sink, rid)
        if (d.set) r[key] = d.value
        break
      }
      case "each": {
        const d = bool(value, p, sink, rid)
        if (d.set) r.each = d.value
        break
      }
      default: {
        const d = str(value, p, sink, rid)
        if (d.set) r[key] = d.value
      }
    }
  }
  r.keys = keys
  return r
}

/** Decode a parsed policy document like Go's `json.Unmarshal` into the Policy struct. */
export const decodePolicy = (raw: unknown): Either.Either<DecodedPolicy, ReadonlyArray<PolicyIssue>> => {
  const sink: Sink = { issues: [], unknown: [], variants: [] }
  let provider = ""
  let granted: ReadonlyArray<string> = []
  let toolScopes = new Map<string, string>()
  let rules: ReadonlyArray<RuleSpec> = []
  let lookups = new Map<string, ReadonlyMap<string, string>>()
  let tags = new Map<string, ReadonlyArray<string>>()
  let extension: unknown = undefined
  if (raw !== null && !isObject(raw)) {
    return Either.left([{ path: "", message: `a policy must be a mapping (JSON object), not ${describe(raw)}` }])
  }
  const doc = raw ?? {}
  if (Object.hasOwn(doc, EXTENSION_KEY)) extension = doc[EXTENSION_KEY]
  for (const [key, value] of fieldsOf(doc, TOP_LEVEL_KEYS, "", undefined, sink, EXTENSION_KEY)) {
    switch (key) {
      case "provider": {
        const d = str(value, key, sink)
        if (d.set) provider = d.value
        break
      }
      case "granted_scopes": {
        const d = strList(value, key, sink)
        if (d.set) granted = d.value
        break
      }
      case "tool_scopes":
        toolScopes = strMap(value, key, sink, toolScopes)
        break
      case "rules":
        if (value === null) rules = []
        else if (!Array.isArray(value)) sink.issues.push({ path: key, message: `must be a list of rules, not ${describe(value)}` })
        else rules = value.map((r, i) => decodeRule(r, `rules[${i}]`, sink))
        break
      case "lookups":
        if (value === null) lookups = new Map()
        else if (!isObject(value)) sink.issues.push({ path: key, message: `must be a mapping of rule ids to tables, not ${describe(value)}` })
        else
          for (const [id, table] of Object.entries(value)) {
            lookups.set(id, table === null ? new Map() : strMap(table, `lookups.${id}`, sink, new Map()))
          }
        break
      case "tool_tags":
        if (value === null) tags = new Map()
        else if (!isObject(value)) sink.issues.push({ path: key, message: `must be a mapping of tools to lists of tags, not ${describe(value)}` })
        else
          for (const [tool, list] of Object.entries(value)) {
            const d = strList(list, `tool_tags.${tool}`, sink)
            if (d.set) tags.set(tool, d.value)
          }
        break
    }
  }
  if (sink.issues.length > 0) return Either.left(sink.issues)
  return Either.right({
    spec: { provider, granted_scopes: granted, tool_scopes: toolScopes, rules, lookups, tool_tags: tags },
    unknownKeys: sink.unknown,
    caseVariants: sink.variants,
    extension
  })
}

// ---------------------------------------------------------------------------------------------
// validation (§1.2)

/** Valid path: non-empty segments split on `.`, `[`, `]`, `*` only as a trailing `[*]`. */
export const isValidPath = (p: string): boolean =>
  p.split(".").every((seg) => {
    const name = seg.endsWith("[*]") ? seg.slice(0, -3) : seg
    return name !== "" && !/[[\]*]/.test(name)
  })

const isBareDomain = (d: string): boolean =>
  d !== "" && d === d.toLowerCase() && !/[@/:* ]/.test(d) && !d.startsWith(".") && !d.endsWith(".") && /^[\x21-\x7e]+$/.test(d)

/** Every problem that makes the Go gate refuse to start, in its order (per rule: all of that rule's problems). */
export const validatePolicy = (spec: PolicySpec): ReadonlyArray<PolicyIssue> => {
  const issues: Array<PolicyIssue> = []
  if (spec.provider === "") issues.push({ path: "provider", message: "policy has no provider" })
  if (spec.tool_scopes.size === 0) issues.push({ path: "tool_scopes", message: "policy maps no tools to scopes" })
  const carried = new Set<string>()
  for (const [tool, list] of spec.tool_tags) {
    if (!spec.tool_scopes.has(tool)) issues.push({ path: `tool_tags.${tool}`, message: `tool_tags names "${tool}", which is not in tool_scopes` })
    for (const t of list) carried.add(t)
  }
  const seen = new Set<string>()
  spec.rules.forEach((r, i) => {
    const where = `rules[${i}]`
    const add = (key: string | null, message: string) =>
      issues.push({ path: key === null ? where : `${where}.${key}`, ...(r.id !== "" ? { rule: r.id } : {}), message })
    if (r.id === "") add("id", "rule needs an id")
    else if (seen.has(r.id)) add("id", `duplicate rule id "${r.id}"`)
    seen.add(r.id)
    if (r.tool !== "" && r.tag !== "") add(null, "sets both tool and tag; use one")
    if (r.tag !== "" && !carried.has(r.tag)) add("tag", `uses tag "${r.tag}", which no tool carries`)
    if (r.kind === "tool") {
      if (r.arg !== "") add("arg", "a rule of kind tool takes no arg")
      if (r.tool === "" && r.tag === "") add(null, "a rule of kind tool needs a tool or a tag")
    } else if (r.arg === "") add("arg", "needs an arg")
    else if (!isValidPath(r.arg)) add("arg", `"${r.arg}" is not a valid argument path`)
    if (r.each && !EACH_KINDS.has(r.kind)) add("each", `a rule of kind ${r.kind || '""'} cannot apply to each element`)
    switch (r.kind) {
      case "tool":
      case "ceiling":
        break
      case "floor":
        if (r.min === null) add("min", "needs min")
        break
      case "denylist":
        if (r.denied.length === 0) add("denied", "needs a denied list")
        break
      case "pattern":
        if (r.pattern === "") add("pattern", "needs a pattern")
        else {
          const c = compileRe2(r.pattern)
          if (!c.ok) add("pattern", `has a bad pattern: ${c.error}`)
        }
        break
      case "domain":
        if (r.allowed.length === 0) add("allowed", "needs an allowed list of domains")
        for (const d of r.allowed) if (!isBareDomain(d)) add("allowed", `"${d}" is not a bare lower-case domain`)
        break
      case "max_items":
        if (r.max < 1) add("max", "needs max of at least 1")
        break
      case "compare":
        if (!(COMPARE_OPS as ReadonlyArray<string>).includes(r.op)) add("op", "needs op lt, le, gt, ge, eq or ne")
        if (r.match_arg === "") add("match_arg", "needs match_arg")
        if (r.arg.includes("[*]") || r.match_arg.includes("[*]")) add(null, "compares single values; [*] is not allowed")
        if (r.match_arg !== "" && !isValidPath(r.match_arg)) add("match_arg", `"${r.match_arg}" is not a valid argument path`)
        break
      case "allowlist":
      case "suffix":
      case "prefix":
        if (r.allowed.length === 0) add("allowed", "needs an allowed list")
        break
      case "lookup":
        if (r.match_arg === "") add("match_arg", "needs match_arg")
        if (!spec.lookups.has(r.id)) add(null, `has no lookup table (lookups.${r.id || "<id>"})`)
        break
      case "sensitive_field":
        if (r.field === "") add("field", "needs a field")
        break
      default:
        add("kind", `unknown kind "${r.kind}" (expected one of: ${RULE_KINDS.join(", ")})`)
    }
    if (r.effect !== "" && r.effect !== "deny" && r.effect !== "escalate") add("effect", `unknown effect "${r.effect}" (deny or escalate)`)
  })
  return issues
}

// ---------------------------------------------------------------------------------------------
// the compiled form

/** What the gate decides for one call (§1.3); `rule` is never empty. */
export interface RuleDecision {
  readonly decision: "allow" | "deny" | "escalate"
  readonly rule: string
  readonly scope: string
  readonly message: string
  readonly approval: "automatic" | "pending-human"
}

/** The decision of a rule that fired (or could not be checked): deny, or escalate to a person. */
export const firedDecision = (scope: string, rule: string, escalate: boolean, message: string): RuleDecision => ({
  decision: escalate ? "escalate" : "deny",
  rule,
  scope,
  message,
  approval: escalate ? "pending-human" : "automatic"
})

export const SCOPE_RULE = "P1-scope"
export const ARGUMENTS_RULE = "P0-arguments"

export interface PathSegment {
  readonly name: string
  readonly wild: boolean
}

/** An argument path: the exact key is tried first; `segments` is null for a plain name (no `.` or `[`). */
export interface CompiledPath {
  readonly text: string
  readonly segments: ReadonlyArray<PathSegment> | null
  /** some segment is `[*]` (the path can yield several values) */
  readonly wild: boolean
}

export const compilePath = (text: string): CompiledPath => {
  if (!/[.[]/.test(text)) return { text, segments: null, wild: false }
  const segments = text.split(".").map((seg) => (seg.endsWith("[*]") ? { name: seg.slice(0, -3), wild: true } : { name: seg, wild: false }))
  return { text, segments, wild: segments.some((s) => s.wild) }
}

/** One rule, compiled. Every rule has every field (one object shape for the evaluator). */
export interface CompiledRule {
  readonly index: number
  readonly id: string
  readonly kind: RuleKind
  readonly escalate: boolean
  readonly message: string
  readonly tool: string
  readonly tag: string
  readonly arg: CompiledPath
  readonly matchArg: CompiledPath
  readonly each: boolean
  readonly max: number
  readonly min: number
  /** allowlist (exact), suffix, prefix */
  readonly allowed: ReadonlyArray<string>
  readonly allowedSet: ReadonlySet<string>
  readonly denied: ReadonlyArray<string>
  /** domain: the allowed domains and the same with a leading dot */
  readonly domains: ReadonlyArray<string>
  readonly dotted: ReadonlyArray<string>
  /** sensitive_field, normalised */
  readonly field: string
  readonly regex: RegExp | null
  readonly op: CompareOp
  /** lookup table (key text → expected text) */
  readonly table: ReadonlyMap<string, string>
}

export interface ToolPlan {
  readonly tool: string
  readonly scope: string
  /** the policy grant covers the scope (`*` or the scope itself) */
  readonly granted: boolean
  /** the rules that apply to this tool, in policy order */
  readonly rules: ReadonlyArray<CompiledRule>
  /** the decision when rules[i] fires on a real violation (its own message) */
  readonly fired: ReadonlyArray<RuleDecision>
  readonly allow: RuleDecision
  readonly scopeDenied: RuleDecision
}

export interface CompiledPolicy {
  readonly provider: string
  readonly tools: ReadonlyMap<string, ToolPlan>
  readonly rules: ReadonlyArray<CompiledRule>
  readonly notInInventory: RuleDecision
  readonly notAnObject: RuleDecision
}

/** The decision as JSON (the verdict's `raw`), kept on each prebuilt decision (non-enumerable: not part of the decision). */
export const RAW_JSON: unique symbol = Symbol("vetobench.rule.raw")

/** A prebuilt decision: frozen, its JSON computed once. */
const decision = (d: RuleDecision): RuleDecision => Object.freeze(Object.defineProperty(d, RAW_JSON, { value: JSON.stringify(d) }))

const compileRule = (r: RuleSpec, index: number, spec: PolicySpec): CompiledRule => {
  const kind = r.kind as RuleKind
  const pattern = kind === "pattern" ? compileRe2(r.pattern) : null
  return {
    index,
    id: r.id,
    kind,
    escalate: r.effect === "escalate",
    message: r.message,
    tool: r.tool,
    tag: r.tag,
    arg: compilePath(r.arg),
    matchArg: compilePath(r.match_arg),
    each: r.each,
    max: r.max,
    min: r.min ?? 0,
    allowed: r.allowed,
    allowedSet: new Set(r.allowed),
    denied: r.denied,
    domains: kind === "domain" ? r.allowed : [],
    dotted: kind === "domain" ? r.allowed.map((d) => `.${d}`) : [],
    field: normalizeField(r.field),
    regex: pattern !== null && pattern.ok ? pattern.regex : null,
    op: (COMPARE_OPS as ReadonlyArray<string>).includes(r.op) ? (r.op as CompareOp) : "eq",
    table: spec.lookups.get(r.id) ?? new Map()
  }
}

/** Compile a validated spec (call `validatePolicy` first; `buildPolicy` does both). */
export const compilePolicy = (spec: PolicySpec): CompiledPolicy => {
  const rules = spec.rules.map((r, i) => compileRule(r, i, spec))
  const grantsAll = spec.granted_scopes.includes("*")
  const granted = new Set(spec.granted_scopes)
  const tools = new Map<string, ToolPlan>()
  for (const [tool, scope] of spec.tool_scopes) {
    const tags = spec.tool_tags.get(tool) ?? []
    const applicable = rules.filter((r) => (r.tool !== "" ? r.tool === tool : r.tag !== "" ? tags.includes(r.tag) : true))
    tools.set(tool, {
      tool,
      scope,
      granted: grantsAll || granted.has(scope),
      rules: applicable,
      fired: applicable.map((r) => decision(firedDecision(scope, r.id, r.escalate, r.message))),
      allow: decision({ decision: "allow", rule: SCOPE_RULE, scope, message: "", approval: "automatic" }),
      scopeDenied: decision({ decision: "deny", rule: SCOPE_RULE, scope, message: "scope not granted", approval: "automatic" })
    })
  }
  return {
    provider: spec.provider,
    tools,
    rules,
    notInInventory: decision({ decision: "deny", rule: SCOPE_RULE, scope: "", message: "tool is not in the provider's inventory", approval: "automatic" }),
    notAnObject: decision({ decision: "deny", rule: ARGUMENTS_RULE, scope: "", message: "arguments are not a JSON object", approval: "automatic" })
  }
}

export interface BuiltPolicy {
  readonly decoded: DecodedPolicy
  readonly compiled: CompiledPolicy
  /** vetobench's own rules (the `vetobench` key), compiled; empty when the key is absent */
  readonly extension: CompiledExtension
}

/** Decode, validate and compile a parsed policy document (the Go-compatible part and the `vetobench` extensions). */
export const buildPolicy = (raw: unknown): Either.Either<BuiltPolicy, ReadonlyArray<PolicyIssue>> =>
  Either.flatMap(decodePolicy(raw), (decoded) => {
    const ext = decodeExtension(decoded.extension, decoded.spec)
    const issues = [...validatePolicy(decoded.spec), ...ext.issues]
    return issues.length > 0
      ? Either.left(issues)
      : Either.right({ decoded, compiled: compilePolicy(decoded.spec), extension: compileExtension(ext.spec, decoded.spec) })
  })

// ---------------------------------------------------------------------------------------------
// files

export interface LoadedPolicy extends BuiltPolicy {
  /** absolute path */
  readonly file: string
  /** sha256 (hex) of the file's bytes */
  readonly sha256: string
  /** `sha256:` + the first 16 hex characters: the policy version recorded in verdicts */
  readonly version: string
}

export const policyVersion = (bytes: Uint8Array): { readonly sha256: string; readonly version: string } => {
  const sha256 = createHash("sha256").update(bytes).digest("hex")
  return { sha256, version: `sha256:${sha256.slice(0, 16)}` }
}

const isYaml = (file: string) => /\.ya?ml$/i.test(file)

/** Parse policy text: YAML for `.yaml`/`.yml`, JSON otherwise (the Go gate reads JSON whatever the name). */
export const parsePolicyText = (text: string, file: string): Either.Either<unknown, ReadonlyArray<PolicyIssue>> => {
  if (isYaml(file)) return Either.mapLeft(parseYaml(text, file), (e) => [{ path: "", message: e.reason }])
  try {
    return Either.right(JSON.parse(text) as unknown)
  } catch (e) {
    return Either.left([{ path: "", message: `not valid JSON: ${e instanceof Error ? e.message : String(e)}` }])
  }
}

const errnoCode = (e: unknown): string | undefined =>
  typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" ? e.code : undefined

/** Read, parse, decode, validate and compile a policy file; `file` is resolved against `root`. */
export const loadPolicyFile = (file: string, root: string): Effect.Effect<LoadedPolicy, PolicyLoadError> =>
  Effect.gen(function* () {
    const abs = path.resolve(root, file)
    const fail = (message: string) => new PolicyLoadError({ file: abs, issues: [{ path: "", message }] })
    const bytes = yield* Effect.tryPromise({
      try: () => readFile(abs),
      catch: (e) => {
        const code = errnoCode(e)
        return fail(
          code === "ENOENT"
            ? `policy file not found${path.isAbsolute(file) ? "" : ` (resolved against the repo root ${root})`}`
            : code === "EISDIR"
              ? "is a directory, not a policy file"
              : `cannot read the policy file: ${e instanceof Error ? e.message : String(e)}`
        )
      }
    })
    const toError = (issues: ReadonlyArray<PolicyIssue>) => new PolicyLoadError({ file: abs, issues })
    const raw = yield* Either.mapLeft(parsePolicyText(bytes.toString("utf8"), abs), toError)
    const built = yield* Either.mapLeft(buildPolicy(raw), toError)
    return { ...built, file: abs, ...policyVersion(bytes) }
  })
