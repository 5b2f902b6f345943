/**
 * Warnings about a policy that loads (the Go gate would start with it) but probably does not say
 * what its author meant: keys the gate ignores, rules that never apply or can never fire, rules that
 * hit every tool, `ceiling` without `max`. Warnings never stop a judge from loading.
 */
import { nestedQuantifier } from "./re2.js"
import {
  type BuiltPolicy,
  EACH_KINDS,
  EXTENSION_KEY,
  isValidPath,
  type RuleKey,
  RULE_KEYS,
  type RuleSpec,
  TOP_LEVEL_KEYS
} from "./policy.js"
import { normalizeField, plainText } from "./text.js"

export interface PolicyWarning {
  readonly rule?: string
  readonly key?: string
  readonly message: string
}

export const formatWarning = (w: PolicyWarning): string =>
  `${w.rule !== undefined ? `rule ${w.rule}: ` : ""}${w.key !== undefined && w.rule === undefined ? `${w.key}: ` : ""}${w.message}`

/** The keys each kind reads besides id, tool, tag, kind, effect, message. */
const KIND_KEYS: Readonly<Record<string, ReadonlyArray<RuleKey>>> = {
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
const COMMON_KEYS: ReadonlyArray<RuleKey> = ["id", "tool", "tag", "kind", "effect", "message"]

const distance = (a: string, b: string): number => {
  const d: Array<Array<number>> = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) d[0]![j] = j
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++)
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
  return d[a.length]![b.length]!
}

const suggest = (key: string, known: ReadonlyArray<string>): string => {
  const k = key.toLowerCase()
  const best = known.map((c) => [c, distance(k, c)] as const).sort((x, y) => x[1] - y[1])[0]
  return best !== undefined && best[1] <= 2 ? `; did you mean "${best[0]}"?` : ""
}

const quoted = (s: string) => JSON.stringify(s)

/** Every warning for a loaded policy, in file order (top level first, then rule by rule). */
export const lintPolicy = (built: BuiltPolicy): ReadonlyArray<PolicyWarning> => {
  const { decoded, compiled } = built
  const spec = decoded.spec
  const out: Array<PolicyWarning> = []
  const ruleOf = (r: RuleSpec) => (r.id !== "" ? { rule: r.id } : {})

  // keys Go ignores or reads in another spelling
  for (const n of decoded.unknownKeys) {
    if (n.path === "") {
      out.push({
        key: n.key,
        message: `unknown top-level key ${quoted(n.key)} is ignored (the Go gate ignores it too)${suggest(n.key, [...TOP_LEVEL_KEYS, EXTENSION_KEY])}`
      })
    } else {
      out.push({
        ...(n.rule !== undefined ? { rule: n.rule } : {}),
        key: n.key,
        message: `unknown key ${quoted(n.key)} in ${n.path} is ignored (the Go gate ignores it too)${suggest(n.key, RULE_KEYS)}`
      })
    }
  }
  for (const n of decoded.caseVariants) {
    out.push({
      ...(n.rule !== undefined ? { rule: n.rule } : {}),
      key: n.key,
      message: `key ${quoted(n.key)}${n.path === "" ? "" : ` in ${n.path}`} is read as ${quoted(n.canonical ?? "")} (keys match case-insensitively); write it as ${quoted(n.canonical ?? "")}`
    })
  }

  const taggedTools = (tag: string) => [...spec.tool_tags].filter(([, tags]) => tags.includes(tag)).map(([t]) => t)
  const usedTags = new Set(spec.rules.map((r) => r.tag).filter((t) => t !== ""))
  for (const [tool, tags] of spec.tool_tags) {
    for (const t of tags) if (!usedTags.has(t)) out.push({ key: `tool_tags.${tool}`, message: `tag ${quoted(t)} on ${tool} is used by no rule` })
  }
  const lookupRules = new Set(spec.rules.filter((r) => r.kind === "lookup").map((r) => r.id))
  for (const id of spec.lookups.keys()) {
    if (!lookupRules.has(id)) out.push({ key: `lookups.${id}`, message: `table ${quoted(id)} belongs to no lookup rule and is never read` })
  }

  spec.rules.forEach((r, i) => {
    const w = (message: string, key?: string) => out.push({ ...ruleOf(r), ...(key !== undefined ? { key } : {}), message })
    const used = new Set<RuleKey>([...COMMON_KEYS, ...(KIND_KEYS[r.kind] ?? [])])
    for (const k of r.keys) if (!used.has(k)) w(`kind ${r.kind} ignores ${quoted(k)}`, k)

    // where the rule applies
    if (r.tool !== "" && !spec.tool_scopes.has(r.tool)) {
      w(`never applies: tool ${quoted(r.tool)} is not in tool_scopes (the Go gate ignores such a rule without a word)${suggest(r.tool, [...spec.tool_scopes.keys()])}`, "tool")
    }
    const targets = r.tool !== "" ? (spec.tool_scopes.has(r.tool) ? [r.tool] : []) : r.tag !== "" ? taggedTools(r.tag) : null
    if (targets === null) {
      w(
        `has neither tool nor tag, so it applies to every tool: a tool whose call lacks ${quoted(r.arg)} is denied (fail closed)`
      )
    } else if (targets.length > 0) {
      const reachable = targets.filter((t) => compiled.tools.get(t)?.granted === true)
      if (reachable.length === 0) {
        w(`is never evaluated: ${targets.map((t) => `${t} needs scope ${quoted(spec.tool_scopes.get(t) ?? "")}`).join(", ")}, which granted_scopes does not grant`)
      }
    }
    // shadowed by an earlier `tool` rule on every tool it applies to
    const tools = [...compiled.tools.values()].filter((p) => p.rules.some((cr) => cr.index === i))
    const shadows = tools.map((p) => p.rules.find((cr) => cr.index < i && cr.kind === "tool"))
    if (tools.length > 0 && shadows.every((s) => s !== undefined)) {
      w(`never decides: ${[...new Set(shadows.map((s) => s!.id))].join(", ")} (kind tool) fires first on every tool this rule applies to`)
    }

    // what can never fire / never pass
    const unplain = (xs: ReadonlyArray<string>) => xs.filter((x) => x !== "" && plainText(x) === null)
    switch (r.kind) {
      case "ceiling":
        if (!r.keys.has("max")) w("ceiling without max: max defaults to 0, so every positive amount is denied", "max")
        break
      case "allowlist":
        for (const x of unplain(r.allowed)) w(`allowed entry ${quoted(x)} can never match: a value with spaces, commas, quotes, <, >, ; or \\ is refused before matching`, "allowed")
        break
      case "suffix":
      case "prefix":
        for (const x of unplain(r.allowed)) w(`allowed entry ${quoted(x)} can never match: a value with spaces, commas, quotes, <, >, ; or \\ is refused before matching`, "allowed")
        if (r.allowed.includes("")) w(`allowed entry "" matches every value: the rule only fires on values that are not single plain values`, "allowed")
        if (r.kind === "prefix") for (const x of r.allowed.filter((a) => a.includes(".."))) w(`allowed entry ${quoted(x)} can never pass: any value containing ".." fires`, "allowed")
        break
      case "denylist":
        for (const x of unplain(r.denied)) w(`denied entry ${quoted(x)} can never match: a value with spaces, commas, quotes, <, >, ; or \\ is refused before matching (the rule then fires anyway)`, "denied")
        break
      case "sensitive_field": {
        const f = normalizeField(r.field)
        if (f !== "" && plainText(f) === null) w(`field ${quoted(r.field)} can never match a single plain value, so the rule only fires when it cannot verify`, "field")
        break
      }
      case "pattern":
        if (nestedQuantifier(r.pattern)) {
          w("pattern has a quantified group containing a quantifier: RE2 runs it in linear time, a JavaScript RegExp may backtrack exponentially on a hostile value", "pattern")
        }
        break
      case "lookup":
        if (r.arg.includes("[*]") || r.match_arg.includes("[*]")) w("always fires: a lookup needs exactly one value on each side, and a [*] path never gives one", r.arg.includes("[*]") ? "arg" : "match_arg")
        if (r.match_arg !== "" && !isValidPath(r.match_arg)) w(`match_arg ${quoted(r.match_arg)} is not a valid argument path (the Go gate does not check it for lookup): the rule fires whenever the exact key is absent`, "match_arg")
        if (spec.lookups.get(r.id)?.size === 0) w(`always fires: lookups.${r.id} is empty, so every key is "no entry on file"`)
        break
    }
    if (r.each && r.arg.includes("[*]") && EACH_KINDS.has(r.kind)) w("each has no effect on a [*] path (its values are already checked one by one; a list among them still fails closed)", "each")
    if (r.message === "") w("has no message: a call it denies carries an empty reason", "message")
  })
  return out
}
