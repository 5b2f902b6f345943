/**
 * Warnings about a policy that loads (the Go gate would start with it) but probably does not say
 * what its author meant: keys the gate ignores, rules that never apply or can never fire, rules that
 * hit every tool, `ceiling` without `max` — and, for the `vetobench` extensions, sections no tool
 * uses, facts nothing supplies, allowlists that open more than they seem to. Warnings never stop a
 * judge from loading (errors do: `buildPolicy`).
 */
import { parseCommand } from "./command.js"
import { ENVIRONMENTS_HEADER, PATH_CLASSES } from "./extension.js"
import { nestedQuantifier } from "./re2.js"
import {
  type BuiltPolicy,
  EACH_KINDS,
  EXTENSION_KEY,
  isValidPath,
  KIND_KEYS,
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
  return [...out, ...lintExtension(built)]
}

/** programs that run whatever follows them: an allowlist entry naming one allows every command */
const RUNS_ANYTHING = new Set(["sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "busybox", "python", "python3", "perl", "ruby", "node", "php", "lua", "eval", "source", "exec", "env", "xargs", "sudo", "su"])

const PRIVATE_HOST = /^(?:localhost|127\.\d+\.\d+\.\d+|10\.\d+\.\d+\.\d+|192\.168\.\d+\.\d+|172\.(?:1[6-9]|2\d|3[01])\.\d+\.\d+|169\.254\.\d+\.\d+|0\.0\.0\.0|\[[0-9a-f:.]*\])(?::\d+)?$/

/** Warnings about the `vetobench` section (it is already valid: `decodeExtension` refused errors). */
export const lintExtension = (built: BuiltPolicy): ReadonlyArray<PolicyWarning> => {
  const { decoded, compiled, extension } = built
  const spec = decoded.spec
  const ext = extension.spec
  const out: Array<PolicyWarning> = []
  const w = (key: string, message: string, rule?: string) => out.push({ ...(rule !== undefined && rule !== "" ? { rule } : {}), key, message })
  const roles = [...ext.tools.values()].flat()
  const has = (cls: ReadonlyArray<string>) => roles.some((r) => cls.includes(r.class))
  const granted = (tool: string) => compiled.tools.get(tool)?.granted === true

  for (const [tool] of ext.tools) {
    if (spec.tool_scopes.has(tool) && !granted(tool)) w(`vetobench.tools.${tool}`, `${tool} needs scope "${spec.tool_scopes.get(tool)}", which granted_scopes does not grant: its roles are never evaluated`)
  }
  if (ext.sections.has("paths") && !has(PATH_CLASSES)) w("vetobench.paths", "no tool has a path class (read, write, delete), so the path rules are never used")
  if (ext.sections.has("commands") && !has(["command"])) w("vetobench.commands", "no tool has class command, so the command rules are never used")
  if (ext.sections.has("urls") && !has(["url"])) w("vetobench.urls", "no tool has class url, so the URL rules are never used")
  if (ext.sections.has("state") && ext.trajectory.length === 0) w("vetobench.state", "there are no trajectory rules, so no state is kept")

  if (has(PATH_CLASSES) && ext.paths.protected.length === 0) w("vetobench.paths.protected", "is empty: .env files, .ssh keys and .git internals inside the workspace are not protected")
  for (const line of [...ext.commands.allow, ...ext.commands.allow_exact]) {
    const p = parseCommand(line)
    const program = p.plain ? (p.words[0] ?? "") : ""
    if (RUNS_ANYTHING.has(program.replace(/^.*\//, ""))) {
      w("vetobench.commands.allow", `${JSON.stringify(line)} allows ${program}, which runs whatever follows it (${program} -c …): the allowlist then allows everything`)
    }
  }
  for (const s of ext.urls.schemes) {
    if (s === "http") w("vetobench.urls.schemes", "allows plain http: what is sent (secrets included) travels unencrypted")
    else if (s !== "https" && s !== "wss") w("vetobench.urls.schemes", `allows ${s}, which is not a web scheme; is that meant?`)
  }
  for (const h of ext.urls.allow_hosts) {
    if (PRIVATE_HOST.test(h)) w("vetobench.urls.allow_hosts", `${JSON.stringify(h)} is a loopback or private address: calls to it reach the machine or network the tools run on`)
  }

  const supplied = new Set([...ext.headerFacts.keys(), ...ext.constFacts.keys()])
  ext.requires.forEach((q, i) => {
    const at = `vetobench.requires[${i}]`
    if (!supplied.has(q.fact)) {
      w(`${at}.fact`, `fact ${JSON.stringify(q.fact)} comes from no trusted header and no policy fact: unless the judge's config sets it, the rule always fires`, q.id)
    }
    if (q.tool === "" && q.tag === "" && q.class === "") w(at, "has neither tool, tag nor class, so it applies to every tool", q.id)
  })
  ext.trajectory.forEach((t, i) => {
    const at = `vetobench.trajectory[${i}]`
    if (t.tool === "" && t.tag === "") w(at, "has neither tool nor tag, so it counts every call of every tool", t.id)
    if (t.tool !== "" && spec.tool_scopes.has(t.tool) && !granted(t.tool)) w(`${at}.tool`, `${t.tool} needs scope "${spec.tool_scopes.get(t.tool)}", which granted_scopes does not grant: the rule is never evaluated`, t.id)
    if (t.kind === "max_calls" && t.max === 0) w(`${at}.max`, "max 0 allows no call at all (a rule of kind tool says so more plainly)", t.id)
    if (t.unless !== null && spec.tool_scopes.has(t.unless.tool) && !granted(t.unless.tool)) {
      w(`${at}.unless.tool`, `${t.unless.tool} is never allowed (its scope is not granted), so the ceiling is never lifted`, t.id)
    }
    if (t.unless !== null && t.unless.amount === "") {
      w(`${at}.unless`, "has no amount: an approval lifts the ceiling without limit, and only when it comes before the group's first call", t.id)
    }
    for (const a of t.after) if (spec.tool_scopes.has(a) && !granted(a)) w(`${at}.after`, `${a} is never allowed (its scope is not granted), so the rule always fires`, t.id)
  })
  if (ext.trajectory.length > 0 && ext.state.without_episode === "shared") {
    w("vetobench.state.without_episode", "shared: calls without an episode or session header share one trajectory state")
  }

  for (const [bare, envs] of extension.qualified) {
    if (!spec.tool_scopes.has(bare)) {
      w(
        "tool_scopes",
        `${[...envs.values()].join(", ")}: reachable only when the ${ENVIRONMENTS_HEADER} header names ${[...envs.keys()].join(" or ")}; a call of ${bare} without it is not in the inventory`
      )
    }
  }
  return out
}
