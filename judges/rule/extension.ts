/**
 * vetobench's own rules, under the policy's reserved top-level key `vetobench` (the Go gate ignores
 * it): path, command and URL rules for tools given a role, trusted-context requirements, and
 * trajectory rules over an episode (`trajectory.ts`). See docs/policy.md "Rules beyond the Go gate".
 *
 * They run after the Go-compatible policy has allowed a call (inventory, scope, rules), in this
 * order: the tool's roles (paths, commands, URLs, in the order the roles are listed), then
 * `requires`, then `trajectory`. The first deny or hold decides. Unlike the Go part, this section
 * is strict: keys are case-sensitive, an unknown key is an error, and every tool it names must be in
 * `tool_scopes`.
 */
import { allowedBy, type CommandAllow, parseCommand, runsInterpreter } from "./command.js"
import { Many, resolveArg, Unresolved, valuesAt } from "./evaluate.js"
import { DEFAULT_PROTECTED, compileProtected, isInside, normalizePath, normalizePosix, PathProblem, protectedProblem, type ProtectedSet } from "./paths.js"
import { compilePath, type CompiledPath, describe, firedDecision, isValidPath, type PolicyIssue, type PolicySpec, type RuleDecision, type ToolPlan } from "./policy.js"
import { compileTrajectory, type CompiledTrajectory, decodeTrajectoryRule, TRAJECTORY_KINDS, type TrajectorySpec } from "./trajectory.js"
import { DEFAULT_SECRET_KEYS, findSecret, type HostAllow, hostAllowed, parseHostEntry, parseUrl, secretKeyName, UrlProblem } from "./url.js"
import { isObject } from "../../src/domain/is-object.js"

// ---------------------------------------------------------------------------------------------
// the section as written

export const PATH_CLASSES = ["read", "write", "delete"] as const
export type PathClass = (typeof PATH_CLASSES)[number]
export const ROLE_CLASSES = [...PATH_CLASSES, "command", "url"] as const
export type RoleClass = (typeof ROLE_CLASSES)[number]

/** An extension rule's effect; `hold` is accepted as another word for `escalate`. */
export type Effect3 = "allow" | "deny" | "escalate"

export const EXTENSION_KEYS = ["tools", "paths", "commands", "urls", "trusted", "requires", "trajectory", "state"] as const

export interface RoleSpec {
  readonly arg: string
  readonly class: RoleClass
  /** url: argument paths that carry a secret when present */
  readonly secrets: ReadonlyArray<string>
}

export interface PathsSpec {
  readonly workspace: string | null
  readonly protected: ReadonlyArray<string>
  readonly protected_effect: Effect3
  readonly effects: Readonly<Record<PathClass, Effect3>>
}

export interface CommandsSpec {
  readonly allow: ReadonlyArray<string>
  readonly allow_exact: ReadonlyArray<string>
  readonly effect: Effect3
}

export interface UrlsSpec {
  readonly allow_hosts: ReadonlyArray<string>
  readonly schemes: ReadonlyArray<string>
  readonly effect: Effect3
  readonly secret_keys: ReadonlyArray<string>
}

export interface RequireSpec {
  readonly id: string
  readonly tool: string
  readonly tag: string
  readonly class: string
  readonly fact: string
  /** null: the fact must be true (`true`, `1`, `yes`) */
  readonly equals: ReadonlyArray<string> | null
  readonly effect: Effect3
  readonly message: string
}

export interface StateSpec {
  readonly max_episodes: number
  readonly ttl_s: number
  readonly without_episode: "deny" | "shared"
}

export interface ExtensionSpec {
  /** tool → its roles, in the order written */
  readonly tools: ReadonlyMap<string, ReadonlyArray<RoleSpec>>
  readonly paths: PathsSpec
  readonly commands: CommandsSpec
  readonly urls: UrlsSpec
  /** fact → the request header that carries it (lower-cased) */
  readonly headerFacts: ReadonlyMap<string, string>
  /** fact → constant */
  readonly constFacts: ReadonlyMap<string, string>
  readonly requires: ReadonlyArray<RequireSpec>
  readonly trajectory: ReadonlyArray<TrajectorySpec>
  readonly state: StateSpec
  /** the sections written (for the lint) */
  readonly sections: ReadonlySet<string>
}

export const DEFAULT_PATH_EFFECTS: Readonly<Record<PathClass, Effect3>> = { read: "allow", write: "allow", delete: "escalate" }
export const DEFAULT_STATE: StateSpec = { max_episodes: 10_000, ttl_s: 3600, without_episode: "deny" }

const EMPTY_SPEC: ExtensionSpec = {
  tools: new Map(),
  paths: { workspace: null, protected: DEFAULT_PROTECTED, protected_effect: "deny", effects: DEFAULT_PATH_EFFECTS },
  commands: { allow: [], allow_exact: [], effect: "deny" },
  urls: { allow_hosts: [], schemes: ["https"], effect: "deny", secret_keys: DEFAULT_SECRET_KEYS },
  headerFacts: new Map(),
  constFacts: new Map(),
  requires: [],
  trajectory: [],
  state: DEFAULT_STATE,
  sections: new Set()
}

// ---------------------------------------------------------------------------------------------
// decoding (strict: exact keys, unknown keys are errors)

const editDistance = (a: string, b: string): number => {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const cur = [i]
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    prev = cur
  }
  return prev[b.length]!
}

/** Collects problems with their key path (`vetobench.paths.workspace`) and rule id. */
export class Reader {
  readonly issues: Array<PolicyIssue> = []
  fail(path: string, message: string, rule?: string): void {
    this.issues.push({ path, ...(rule !== undefined && rule !== "" ? { rule } : {}), message })
  }
  /** a mapping with only `known` keys (absent → null, no issue) */
  record(v: unknown, path: string, known: ReadonlyArray<string>, rule?: string): Record<string, unknown> | null {
    if (v === undefined || v === null) return null
    if (!isObject(v)) {
      this.fail(path, `must be a mapping, not ${describe(v)}`, rule)
      return null
    }
    for (const k of Object.keys(v)) {
      if (!known.includes(k)) {
        const near = known.find((x) => editDistance(x, k.toLowerCase()) <= 2)
        this.fail(`${path}.${k}`, `unknown key${near !== undefined ? `; did you mean "${near}"?` : ` (known: ${known.join(", ")})`}`, rule)
      }
    }
    return v
  }
  string(v: unknown, path: string, rule?: string): string | undefined {
    if (v === undefined || v === null) return undefined
    if (typeof v === "string") return v
    this.fail(path, `must be a string, not ${describe(v)}`, rule)
    return undefined
  }
  /** a list of strings; a lone string is a list of one */
  strings(v: unknown, path: string, rule?: string): ReadonlyArray<string> | undefined {
    if (v === undefined || v === null) return undefined
    if (typeof v === "string") return [v]
    if (Array.isArray(v) && v.every((x) => typeof x === "string")) return v as ReadonlyArray<string>
    this.fail(path, `must be a list of strings, not ${describe(v)}`, rule)
    return undefined
  }
  number(v: unknown, path: string, rule?: string): number | undefined {
    if (v === undefined || v === null) return undefined
    if (typeof v === "number" && Number.isFinite(v)) return v
    this.fail(path, `must be a number, not ${describe(v)}`, rule)
    return undefined
  }
  effect(v: unknown, path: string, allowed: ReadonlyArray<Effect3>, rule?: string): Effect3 | undefined {
    const s = this.string(v, path, rule)
    if (s === undefined) return undefined
    const e = s === "hold" ? "escalate" : s
    if ((allowed as ReadonlyArray<string>).includes(e)) return e as Effect3
    this.fail(path, `unknown effect "${s}" (${allowed.map((a) => (a === "escalate" ? "escalate (or hold)" : a)).join(", ")})`, rule)
    return undefined
  }
  path(v: unknown, path: string, rule?: string): string | undefined {
    const s = this.string(v, path, rule)
    if (s === undefined) return undefined
    if (s === "" || !isValidPath(s)) {
      this.fail(path, `"${s}" is not a valid argument path`, rule)
      return undefined
    }
    return s
  }
}

const ROLE_KEYS = ["arg", "class", "secrets"] as const

const decodeTools = (v: unknown, spec: PolicySpec, rd: Reader): ReadonlyMap<string, ReadonlyArray<RoleSpec>> => {
  const out = new Map<string, ReadonlyArray<RoleSpec>>()
  if (v === undefined || v === null) return out
  if (!isObject(v)) {
    rd.fail("vetobench.tools", `must be a mapping of tools to roles, not ${describe(v)}`)
    return out
  }
  for (const [tool, entry] of Object.entries(v)) {
    const where = `vetobench.tools.${tool}`
    if (!spec.tool_scopes.has(tool)) rd.fail(where, `names "${tool}", which is not in tool_scopes`)
    const list = Array.isArray(entry) ? entry : [entry]
    const roles: Array<RoleSpec> = []
    list.forEach((e, i) => {
      const at = Array.isArray(entry) ? `${where}[${i}]` : where
      const r = rd.record(e, at, ROLE_KEYS)
      if (r === null) {
        if (e === null || e === undefined) rd.fail(at, "needs arg and class")
        return
      }
      const arg = rd.path(r.arg, `${at}.arg`)
      if (r.arg === undefined) rd.fail(`${at}.arg`, "needs an arg (the argument holding the path, command or URL)")
      const cls = rd.string(r.class, `${at}.class`)
      if (cls === undefined && r.class === undefined) rd.fail(`${at}.class`, `needs a class (${ROLE_CLASSES.join(", ")})`)
      else if (cls !== undefined && !(ROLE_CLASSES as ReadonlyArray<string>).includes(cls)) rd.fail(`${at}.class`, `unknown class "${cls}" (${ROLE_CLASSES.join(", ")})`)
      const secrets = (rd.strings(r.secrets, `${at}.secrets`) ?? []).filter((s) => {
        if (isValidPath(s)) return true
        rd.fail(`${at}.secrets`, `"${s}" is not a valid argument path`)
        return false
      })
      if (secrets.length > 0 && cls !== "url") rd.fail(`${at}.secrets`, "only a url role names secret arguments")
      if (arg !== undefined && cls !== undefined && (ROLE_CLASSES as ReadonlyArray<string>).includes(cls)) roles.push({ arg, class: cls as RoleClass, secrets })
    })
    out.set(tool, roles)
  }
  return out
}

const decodePaths = (v: unknown, rd: Reader): PathsSpec => {
  const r = rd.record(v, "vetobench.paths", ["workspace", "protected", "protected_effect", "effects"])
  if (r === null) return EMPTY_SPEC.paths
  let workspace: string | null = null
  const ws = rd.string(r.workspace, "vetobench.paths.workspace")
  if (ws !== undefined) {
    if (!ws.startsWith("/")) rd.fail("vetobench.paths.workspace", `must be an absolute POSIX path, not "${ws}"`)
    else if (ws.includes("\\") || /[\x00-\x1f\x7f]/.test(ws)) rd.fail("vetobench.paths.workspace", "contains a backslash or a control character")
    else workspace = normalizePosix(ws)
  }
  const prot = rd.strings(r.protected, "vetobench.paths.protected") ?? DEFAULT_PROTECTED
  prot.forEach((p, i) => {
    const why = protectedProblem(p)
    if (why !== null) rd.fail(`vetobench.paths.protected[${i}]`, `"${p}" ${why}`)
  })
  const effects: Record<PathClass, Effect3> = { ...DEFAULT_PATH_EFFECTS }
  const e = rd.record(r.effects, "vetobench.paths.effects", PATH_CLASSES)
  if (e !== null) for (const c of PATH_CLASSES) effects[c] = rd.effect(e[c], `vetobench.paths.effects.${c}`, ["allow", "deny", "escalate"]) ?? effects[c]
  return {
    workspace,
    protected: prot,
    protected_effect: rd.effect(r.protected_effect, "vetobench.paths.protected_effect", ["deny", "escalate"]) ?? "deny",
    effects
  }
}

const decodeCommands = (v: unknown, rd: Reader): CommandsSpec => {
  const r = rd.record(v, "vetobench.commands", ["allow", "allow_exact", "effect"])
  if (r === null) return EMPTY_SPEC.commands
  const lines = (key: "allow" | "allow_exact") =>
    (rd.strings(r[key], `vetobench.commands.${key}`) ?? []).filter((line, i) => {
      const p = parseCommand(line)
      if (!p.plain) rd.fail(`vetobench.commands.${key}[${i}]`, `"${line}" is not a plain command line (it contains ${p.construct}), so it can never match`)
      else if (p.words.length === 0) rd.fail(`vetobench.commands.${key}[${i}]`, "is empty (it would allow every command)")
      return p.plain && p.words.length > 0
    })
  return { allow: lines("allow"), allow_exact: lines("allow_exact"), effect: rd.effect(r.effect, "vetobench.commands.effect", ["deny", "escalate"]) ?? "deny" }
}

const decodeUrls = (v: unknown, rd: Reader): UrlsSpec => {
  const r = rd.record(v, "vetobench.urls", ["allow_hosts", "schemes", "effect", "secret_keys"])
  if (r === null) return EMPTY_SPEC.urls
  const hosts = (rd.strings(r.allow_hosts, "vetobench.urls.allow_hosts") ?? []).filter((h, i) => {
    const p = parseHostEntry(h)
    if (typeof p === "string") rd.fail(`vetobench.urls.allow_hosts[${i}]`, `"${h}" ${p}`)
    return typeof p !== "string"
  })
  const schemes = (rd.strings(r.schemes, "vetobench.urls.schemes") ?? ["https"]).filter((s, i) => {
    const ok = /^[a-z][a-z0-9+.-]*$/.test(s)
    if (!ok) rd.fail(`vetobench.urls.schemes[${i}]`, `"${s}" is not a lower-case scheme name (https, http, …)`)
    return ok
  })
  return {
    allow_hosts: hosts,
    schemes,
    effect: rd.effect(r.effect, "vetobench.urls.effect", ["allow", "deny", "escalate"]) ?? "deny",
    secret_keys: rd.strings(r.secret_keys, "vetobench.urls.secret_keys") ?? DEFAULT_SECRET_KEYS
  }
}

const decodeTrusted = (v: unknown, rd: Reader): { headerFacts: Map<string, string>; constFacts: Map<string, string> } => {
  const headerFacts = new Map<string, string>()
  const constFacts = new Map<string, string>()
  const r = rd.record(v, "vetobench.trusted", ["headers", "facts"])
  if (r === null) return { headerFacts, constFacts }
  const h = rd.record(r.headers, "vetobench.trusted.headers", Object.keys(isObject(r.headers) ? r.headers : {}))
  if (h !== null)
    for (const [fact, header] of Object.entries(h)) {
      const name = rd.string(header, `vetobench.trusted.headers.${fact}`)
      if (name === undefined) continue
      if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) rd.fail(`vetobench.trusted.headers.${fact}`, `"${name}" is not a header name`)
      else if (name.toLowerCase() === "authorization") rd.fail(`vetobench.trusted.headers.${fact}`, "the proxy never passes the authorization header to judges")
      else headerFacts.set(fact, name.toLowerCase())
    }
  const f = rd.record(r.facts, "vetobench.trusted.facts", Object.keys(isObject(r.facts) ? r.facts : {}))
  if (f !== null)
    for (const [fact, value] of Object.entries(f)) {
      if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") constFacts.set(fact, String(value))
      else rd.fail(`vetobench.trusted.facts.${fact}`, `must be a string, number or boolean, not ${describe(value)}`)
    }
  return { headerFacts, constFacts }
}

const REQUIRE_KEYS = ["id", "tool", "tag", "class", "fact", "equals", "effect", "message"] as const

const decodeRequires = (v: unknown, spec: PolicySpec, rd: Reader): ReadonlyArray<RequireSpec> => {
  if (v === undefined || v === null) return []
  if (!Array.isArray(v)) {
    rd.fail("vetobench.requires", `must be a list of rules, not ${describe(v)}`)
    return []
  }
  const out: Array<RequireSpec> = []
  v.forEach((raw, i) => {
    const at = `vetobench.requires[${i}]`
    const id = isObject(raw) && typeof raw.id === "string" ? raw.id : undefined
    const r = rd.record(raw, at, REQUIRE_KEYS, id)
    if (r === null) {
      if (raw === null) rd.fail(at, "must be a mapping, not null")
      return
    }
    const req: RequireSpec = {
      id: rd.string(r.id, `${at}.id`, id) ?? "",
      tool: rd.string(r.tool, `${at}.tool`, id) ?? "",
      tag: rd.string(r.tag, `${at}.tag`, id) ?? "",
      class: rd.string(r.class, `${at}.class`, id) ?? "",
      fact: rd.string(r.fact, `${at}.fact`, id) ?? "",
      equals: rd.strings(r.equals, `${at}.equals`, id) ?? null,
      effect: rd.effect(r.effect, `${at}.effect`, ["deny", "escalate"], id) ?? "deny",
      message: rd.string(r.message, `${at}.message`, id) ?? ""
    }
    if (req.id === "") rd.fail(`${at}.id`, "rule needs an id")
    if (req.fact === "") rd.fail(`${at}.fact`, "needs a fact (a name from vetobench.trusted)", id)
    checkTarget(req, at, spec, rd)
    if (req.class !== "" && !(ROLE_CLASSES as ReadonlyArray<string>).includes(req.class)) rd.fail(`${at}.class`, `unknown class "${req.class}" (${ROLE_CLASSES.join(", ")})`, id)
    if ([req.tool, req.tag, req.class].filter((x) => x !== "").length > 1) rd.fail(at, "sets more than one of tool, tag and class; use one", id)
    out.push(req)
  })
  return out
}

/** `tool` must be in tool_scopes; `tag` must be carried by some tool. */
export const checkTarget = (r: { readonly id: string; readonly tool: string; readonly tag: string }, at: string, spec: PolicySpec, rd: Reader): void => {
  if (r.tool !== "" && !spec.tool_scopes.has(r.tool)) rd.fail(`${at}.tool`, `names "${r.tool}", which is not in tool_scopes`, r.id)
  if (r.tag !== "" && ![...spec.tool_tags.values()].some((tags) => tags.includes(r.tag))) rd.fail(`${at}.tag`, `uses tag "${r.tag}", which no tool carries`, r.id)
}

const decodeState = (v: unknown, rd: Reader): StateSpec => {
  const r = rd.record(v, "vetobench.state", ["max_episodes", "ttl_s", "without_episode"])
  if (r === null) return DEFAULT_STATE
  const max = rd.number(r.max_episodes, "vetobench.state.max_episodes")
  if (max !== undefined && (!Number.isInteger(max) || max < 1)) rd.fail("vetobench.state.max_episodes", "must be a positive integer")
  const ttl = rd.number(r.ttl_s, "vetobench.state.ttl_s")
  if (ttl !== undefined && ttl <= 0) rd.fail("vetobench.state.ttl_s", "must be a positive number of seconds")
  const without = rd.string(r.without_episode, "vetobench.state.without_episode")
  if (without !== undefined && without !== "deny" && without !== "shared") rd.fail("vetobench.state.without_episode", `must be deny or shared, not "${without}"`)
  return {
    max_episodes: max !== undefined && Number.isInteger(max) && max >= 1 ? max : DEFAULT_STATE.max_episodes,
    ttl_s: ttl !== undefined && ttl > 0 ? ttl : DEFAULT_STATE.ttl_s,
    without_episode: without === "shared" ? "shared" : "deny"
  }
}

/** Decode and validate the `vetobench` section against the (valid) Go-compatible part. */
export const decodeExtension = (raw: unknown, spec: PolicySpec): { readonly spec: ExtensionSpec; readonly issues: ReadonlyArray<PolicyIssue> } => {
  const rd = new Reader()
  if (raw === undefined || raw === null) return { spec: EMPTY_SPEC, issues: [] }
  const r = rd.record(raw, "vetobench", EXTENSION_KEYS)
  if (r === null) return { spec: EMPTY_SPEC, issues: rd.issues }
  const tools = decodeTools(r.tools, spec, rd)
  const paths = decodePaths(r.paths, rd)
  const trusted = decodeTrusted(r.trusted, rd)
  const ext: ExtensionSpec = {
    tools,
    paths,
    commands: decodeCommands(r.commands, rd),
    urls: decodeUrls(r.urls, rd),
    headerFacts: trusted.headerFacts,
    constFacts: trusted.constFacts,
    requires: decodeRequires(r.requires, spec, rd),
    trajectory: decodeTrajectoryList(r.trajectory, spec, rd),
    state: decodeState(r.state, rd),
    sections: new Set(Object.keys(r))
  }
  const pathTools = [...tools].filter(([, roles]) => roles.some((x) => (PATH_CLASSES as ReadonlyArray<string>).includes(x.class))).map(([t]) => t)
  if (pathTools.length > 0 && paths.workspace === null) {
    rd.fail("vetobench.paths.workspace", `needs a workspace root: ${pathTools.join(", ")} ${pathTools.length === 1 ? "has" : "have"} a path class`)
  }
  // one id space for requires and trajectory rules (their rule names differ, their ids should not)
  const ids = new Set<string>()
  const written = [...ext.requires.map((q, i) => [`requires[${i}]`, q.id] as const), ...ext.trajectory.map((t, i) => [`trajectory[${i}]`, t.id] as const)]
  for (const [where, id] of written) {
    if (id !== "" && ids.has(id)) rd.fail(`vetobench.${where}.id`, `duplicate rule id "${id}"`, id)
    ids.add(id)
  }
  return { spec: ext, issues: rd.issues }
}

/** The list of trajectory rules (each rule is decoded in trajectory.ts, next to its semantics). */
const decodeTrajectoryList = (v: unknown, spec: PolicySpec, rd: Reader): ReadonlyArray<TrajectorySpec> => {
  if (v === undefined || v === null) return []
  if (!Array.isArray(v)) {
    rd.fail("vetobench.trajectory", `must be a list of rules (kinds ${TRAJECTORY_KINDS.join(", ")}), not ${describe(v)}`)
    return []
  }
  return v.flatMap((raw, i) => decodeTrajectoryRule(raw, `vetobench.trajectory[${i}]`, spec, rd))
}

// ---------------------------------------------------------------------------------------------
// Agent-SafetyBench style tool names: `<Env>.<tool>`

/** The request header that names the environments of an episode (comma-separated), for `<Env>.<tool>` policy entries. */
export const ENVIRONMENTS_HEADER = "x-vetobench-environments"

/** bare tool name → (environment → the `<Env>.<tool>` key in tool_scopes) */
export const qualifiedNames = (spec: PolicySpec): ReadonlyMap<string, ReadonlyMap<string, string>> => {
  const out = new Map<string, Map<string, string>>()
  for (const key of spec.tool_scopes.keys()) {
    const dot = key.indexOf(".")
    if (dot <= 0 || dot === key.length - 1) continue
    const env = key.slice(0, dot)
    const tool = key.slice(dot + 1)
    let m = out.get(tool)
    if (m === undefined) out.set(tool, (m = new Map()))
    m.set(env, key)
  }
  return out
}

/**
 * The policy entry a call is decided under: `<Env>.<tool>` for the first environment in the
 * `x-vetobench-environments` header that has an entry for the call's name, else the name itself.
 */
export const resolveToolName = (qualified: ReadonlyMap<string, ReadonlyMap<string, string>>, name: string, header: string | undefined): string => {
  if (header === undefined) return name
  const byEnv = qualified.get(name)
  if (byEnv === undefined) return name
  for (const env of header.split(",")) {
    const key = byEnv.get(env.trim())
    if (key !== undefined) return key
  }
  return name
}

// ---------------------------------------------------------------------------------------------
// the compiled form

interface CompiledRole {
  readonly arg: CompiledPath
  readonly class: RoleClass
  readonly secrets: ReadonlyArray<CompiledPath>
}

interface CompiledRequire {
  readonly rule: string
  readonly spec: RequireSpec
  readonly escalate: boolean
}

interface ToolExtension {
  readonly roles: ReadonlyArray<CompiledRole>
  readonly requires: ReadonlyArray<CompiledRequire>
}

export interface CompiledExtension {
  readonly spec: ExtensionSpec
  /** tools with a stateless check (a role or a `requires` rule) */
  readonly tools: ReadonlyMap<string, ToolExtension>
  readonly workspace: string
  readonly protected: ProtectedSet
  readonly commandAllow: ReadonlyArray<CommandAllow>
  readonly hostAllow: ReadonlyArray<HostAllow>
  readonly schemes: ReadonlySet<string>
  readonly secretKeys: ReadonlySet<string>
  readonly trajectory: CompiledTrajectory
  readonly qualified: ReadonlyMap<string, ReadonlyMap<string, string>>
  /** the verdict depends on request headers (trusted facts, environments), so it cannot be cached */
  readonly readsHeaders: boolean
}

export const compileExtension = (ext: ExtensionSpec, spec: PolicySpec): CompiledExtension => {
  const tools = new Map<string, ToolExtension>()
  for (const tool of spec.tool_scopes.keys()) {
    const roles = (ext.tools.get(tool) ?? []).map((r) => ({ arg: compilePath(r.arg), class: r.class, secrets: r.secrets.map(compilePath) }))
    const tags = spec.tool_tags.get(tool) ?? []
    const requires = ext.requires
      .filter((q) =>
        q.tool !== "" ? q.tool === tool : q.tag !== "" ? tags.includes(q.tag) : q.class !== "" ? roles.some((r) => r.class === q.class) : true
      )
      .map((q) => ({ rule: `VB-trusted:${q.id}`, spec: q, escalate: q.effect === "escalate" }))
    if (roles.length > 0 || requires.length > 0) tools.set(tool, { roles, requires })
  }
  const qualified = qualifiedNames(spec)
  return {
    spec: ext,
    tools,
    workspace: ext.paths.workspace ?? "/",
    protected: compileProtected(ext.paths.protected),
    commandAllow: [...ext.commands.allow.map((l) => ({ l, exact: false })), ...ext.commands.allow_exact.map((l) => ({ l, exact: true }))].map(({ l, exact }) => {
      const p = parseCommand(l)
      return { words: p.plain ? p.words : [], exact }
    }),
    hostAllow: ext.urls.allow_hosts.map(parseHostEntry).filter((h): h is HostAllow => typeof h !== "string"),
    schemes: new Set(ext.urls.schemes),
    secretKeys: new Set(ext.urls.secret_keys.map(secretKeyName)),
    trajectory: compileTrajectory(ext.trajectory, ext.state, spec),
    qualified,
    readsHeaders: ext.headerFacts.size > 0 || qualified.size > 0
  }
}

// ---------------------------------------------------------------------------------------------
// evaluation (stateless part)

const made = (plan: ToolPlan, rule: string, effect: "deny" | "escalate", message: string): RuleDecision =>
  firedDecision(plan.scope, rule, effect === "escalate", message)

const TRUE_WORDS = new Set(["true", "1", "yes"])

const CLASS_VERB: Readonly<Record<PathClass, string>> = { read: "reading", write: "writing", delete: "deleting" }
const CLASS_RULE: Readonly<Record<PathClass, string>> = { read: "VB-path-read", write: "VB-path-write", delete: "VB-path-delete" }

/**
 * The extensions' decision for a call the Go-compatible policy allowed (`plan` is the tool's plan,
 * `args` its arguments): the first deny or hold of the tool's roles and `requires` rules, else
 * null. Facts come from the request's trusted `headers` (as configured), else `constFacts` — never
 * from the arguments. Trajectory rules are the judge's (they need the episode's state).
 */
export const decideExtension = (
  ext: CompiledExtension,
  plan: ToolPlan,
  args: unknown,
  headers: Readonly<Record<string, string>>,
  constFacts: ReadonlyMap<string, string>
): RuleDecision | null => {
  const t = ext.tools.get(plan.tool)
  if (t === undefined) return null
  for (const role of t.roles) {
    const d = role.class === "command" ? checkCommand(ext, plan, role, args) : role.class === "url" ? checkUrl(ext, plan, role, args) : checkPath(ext, plan, role, args)
    if (d !== null) return d
  }
  for (const q of t.requires) {
    const h = ext.spec.headerFacts.get(q.spec.fact)
    const value = (h !== undefined ? headers[h] : undefined) ?? constFacts.get(q.spec.fact)
    const ok =
      value !== undefined &&
      (q.spec.equals === null ? TRUE_WORDS.has(value) || TRUE_WORDS.has(value.trim().toLowerCase()) : q.spec.equals.includes(value) || q.spec.equals.includes(value.trim()))
    if (!ok) {
      const effect = q.escalate ? "escalate" : "deny"
      const want = q.spec.equals === null ? "true" : q.spec.equals.join(" or ")
      return made(
        plan,
        q.rule,
        effect,
        q.spec.message !== ""
          ? q.spec.message
          : `needs the trusted fact ${q.spec.fact} = ${want}${h !== undefined ? ` (request header ${h})` : ""}; this request ${value === undefined ? "does not carry it" : `has ${q.spec.fact} = ${value}`}`
      )
    }
  }
  return null
}

/** What a role's argument holds: one value, `Many` (a `[*]` path, or a list when `spread`), or `Unresolved`. */
const roleValues = (args: unknown, p: CompiledPath, spread: boolean): unknown => {
  const v = resolveArg(args, p)
  return spread && Array.isArray(v) ? new Many(v) : v
}

const checkPath = (ext: CompiledExtension, plan: ToolPlan, role: CompiledRole, args: unknown): RuleDecision | null => {
  const v = resolveArg(args, role.arg)
  if (v instanceof Unresolved) return made(plan, "VB-path-invalid", "deny", `cannot verify: ${v.why}`)
  if (v instanceof Many || Array.isArray(v)) {
    for (const x of v instanceof Many ? v.values : (v as ReadonlyArray<unknown>)) {
      const d = checkOnePath(ext, plan, role, x)
      if (d !== null) return d
    }
    return null
  }
  return checkOnePath(ext, plan, role, v)
}

const checkOnePath = (ext: CompiledExtension, plan: ToolPlan, role: CompiledRole, v: unknown): RuleDecision | null => {
  const root = ext.workspace
  const p = normalizePath(v, root, role.arg.text)
  if (p instanceof PathProblem) return made(plan, "VB-path-invalid", "deny", `cannot verify: ${p.why}`)
  if (!isInside(p, root)) return made(plan, "VB-path-outside", "deny", `${p} is outside the workspace ${root}`)
  const hit = ext.protected.match(p, root)
  if (hit !== null) {
    const e = ext.spec.paths.protected_effect === "escalate" ? "escalate" : "deny"
    return made(plan, "VB-path-protected", e, `${p} is protected (${hit})${e === "escalate" ? ": a person must approve" : ""}`)
  }
  const cls = role.class as PathClass
  const effect = ext.spec.paths.effects[cls]
  if (effect === "allow") return null
  return made(plan, CLASS_RULE[cls], effect, effect === "escalate" ? `${CLASS_VERB[cls]} ${p} needs a person (class ${cls} is held)` : `${CLASS_VERB[cls]} ${p} is not allowed (class ${cls} is denied)`)
}

const checkCommand = (ext: CompiledExtension, plan: ToolPlan, role: CompiledRole, args: unknown): RuleDecision | null => {
  const v = roleValues(args, role.arg, false)
  if (v instanceof Unresolved) return made(plan, "VB-cmd", "deny", `cannot verify: ${v.why}`)
  if (v instanceof Many) {
    for (const x of v.values) {
      const d = checkOneCommand(ext, plan, role, x)
      if (d !== null) return d
    }
    return null
  }
  return checkOneCommand(ext, plan, role, v)
}

const checkOneCommand = (ext: CompiledExtension, plan: ToolPlan, role: CompiledRole, v: unknown): RuleDecision | null => {
  if (typeof v !== "string") return made(plan, "VB-cmd", "deny", `cannot verify: ${role.arg.text} is not a command line (a string)`)
  if (v.trim() === "") return made(plan, "VB-cmd", "deny", `cannot verify: ${role.arg.text} is empty`)
  const effect = ext.spec.commands.effect === "escalate" ? "escalate" : "deny"
  const parsed = parseCommand(v)
  if (!parsed.plain) {
    if (runsInterpreter(v)) return made(plan, "VB-cmd", "deny", `${role.arg.text} pipes or substitutes into a shell or interpreter (like curl … | sh): never allowed`)
    return made(plan, "VB-cmd", effect, `${role.arg.text} contains ${parsed.construct}: only a plain allowlisted command line passes`)
  }
  if (allowedBy(parsed.words, ext.commandAllow) !== null) return null
  const program = parsed.words[0] ?? ""
  return made(plan, "VB-cmd", effect, `${role.arg.text} runs ${JSON.stringify(program)}${parsed.words.length > 1 ? " …" : ""}, which is not on the command allowlist`)
}

const checkUrl = (ext: CompiledExtension, plan: ToolPlan, role: CompiledRole, args: unknown): RuleDecision | null => {
  const v = roleValues(args, role.arg, true)
  if (v instanceof Unresolved) return made(plan, "VB-url-invalid", "deny", `cannot verify: ${v.why}`)
  if (v instanceof Many) {
    for (const x of v.values) {
      const d = checkOneUrl(ext, plan, role, x, args)
      if (d !== null) return d
    }
    return null
  }
  return checkOneUrl(ext, plan, role, v, args)
}

const checkOneUrl = (ext: CompiledExtension, plan: ToolPlan, role: CompiledRole, v: unknown, args: unknown): RuleDecision | null => {
  const u = parseUrl(v, role.arg.text)
  if (u instanceof UrlProblem) return made(plan, u.rule, "deny", u.rule === "VB-url-invalid" ? `cannot verify: ${u.why}` : u.why)
  if (!ext.schemes.has(u.scheme)) return made(plan, "VB-url-scheme", "deny", `${role.arg.text} uses the scheme ${u.scheme}, which is not allowed (${[...ext.schemes].join(", ")})`)
  if (hostAllowed(u, ext.hostAllow) !== null) return null
  const where = `${u.host}${u.port !== null ? `:${u.port}` : ""}`
  let secret: string | null = null
  for (const s of role.secrets) {
    const found = valuesAt(args, s, false)
    if (typeof found === "string") continue
    for (const x of found) if (x !== null && x !== "" && x !== false) secret = `the argument ${s.text}`
    if (secret !== null) break
  }
  secret ??= findSecret(args, u.query, ext.secretKeys)
  if (secret !== null) return made(plan, "VB-url-secret", "deny", `${secret} would send a secret to ${where}, which is not an allowed host`)
  const effect = ext.spec.urls.effect
  return effect === "allow" ? null : made(plan, "VB-url-host", effect, `${where} is not an allowed host`)
}
