/**
 * Trajectory rules of the `rule` judge's extensions (`vetobench.trajectory`, docs/policy.md): rules
 * over the calls of one episode, not one call.
 *
 * - `ceiling`: the sum of `sum` over the episode's calls of the tool, per value of `group_by`,
 *   stays ≤ `max` — e.g. refunds per order ≤ 50 — unless an `unless` call (an approval) for the same
 *   group came first: with `unless.amount` the approved amount becomes the group's ceiling (for the
 *   whole sum, what was paid before the approval included); without it the approval lifts the
 *   ceiling only when it came before the group's first counted call.
 * - `must_precede`: the tool only after an `after` call with the same `match` value.
 * - `max_calls`: at most `max` calls of the tool (per `group_by` value) per episode.
 *
 * State is kept per episode (the `x-vetobench-episode` header, else the session) in memory, bounded
 * (`state.max_episodes`, least recently used evicted) and forgotten `state.ttl_s` after an episode's
 * last recorded call. It changes **only** for calls that went back to the agent: the gate reports
 * each call's fate through `Judge.commit` after the ruling. Between the ruling and the commit, an
 * allowed call's amounts and counts are *reserved*, so calls ruled side by side (several tool calls
 * in one response) cannot split a sum between them; reservations count against later calls, never
 * for them (a pending approval lifts nothing).
 */
import { resolveArg, Unresolved } from "./evaluate.js"
import { checkTarget, type Effect3, type Reader, type StateSpec } from "./extension.js"
import { compilePath, type CompiledPath, firedDecision, type PolicySpec, type RuleDecision, type ToolPlan } from "./policy.js"
import { goText } from "./text.js"

export const TRAJECTORY_KINDS = ["ceiling", "must_precede", "max_calls"] as const
export type TrajectoryKind = (typeof TRAJECTORY_KINDS)[number]

export interface UnlessSpec {
  readonly tool: string
  /** the approval's argument holding the group key (default: the rule's group_by) */
  readonly match: string
  /** the approval's argument holding the approved amount ("" = none) */
  readonly amount: string
}

export interface TrajectorySpec {
  readonly id: string
  readonly kind: TrajectoryKind
  readonly tool: string
  readonly tag: string
  readonly effect: "deny" | "escalate"
  readonly message: string
  readonly sum: string
  readonly group_by: string
  readonly max: number
  readonly unless: UnlessSpec | null
  readonly after: ReadonlyArray<string>
  readonly match: string
  readonly after_match: string
}

const RULE_KEYS = ["id", "kind", "tool", "tag", "sum", "group_by", "max", "unless", "after", "match", "after_match", "effect", "message"] as const
/** the keys each kind reads besides id, kind, tool, tag, effect, message */
const KIND_KEYS: Readonly<Record<TrajectoryKind, ReadonlyArray<string>>> = {
  ceiling: ["sum", "group_by", "max", "unless"],
  must_precede: ["after", "match", "after_match"],
  max_calls: ["group_by", "max"]
}

export const trajectoryRuleName = (kind: TrajectoryKind, id: string): string =>
  `VB-trajectory-${kind === "ceiling" ? "ceiling" : kind === "must_precede" ? "precede" : "max-calls"}:${id}`

/** Decode and validate one trajectory rule (`at` = `vetobench.trajectory[i]`); [] when it cannot be used. */
export const decodeTrajectoryRule = (raw: unknown, at: string, spec: PolicySpec, rd: Reader): ReadonlyArray<TrajectorySpec> => {
  const id0 = typeof raw === "object" && raw !== null && !Array.isArray(raw) && "id" in raw && typeof raw.id === "string" ? raw.id : undefined
  const r = rd.record(raw, at, RULE_KEYS, id0)
  if (r === null) {
    if (raw === null) rd.fail(at, "must be a mapping, not null")
    return []
  }
  const id = rd.string(r.id, `${at}.id`, id0) ?? ""
  if (id === "") rd.fail(`${at}.id`, "rule needs an id")
  const kindText = rd.string(r.kind, `${at}.kind`, id) ?? ""
  if (!(TRAJECTORY_KINDS as ReadonlyArray<string>).includes(kindText)) {
    rd.fail(`${at}.kind`, kindText === "" ? `needs a kind (${TRAJECTORY_KINDS.join(", ")})` : `unknown kind "${kindText}" (${TRAJECTORY_KINDS.join(", ")})`, id)
    return []
  }
  const kind = kindText as TrajectoryKind
  for (const k of Object.keys(r)) {
    if (["id", "kind", "tool", "tag", "effect", "message"].includes(k) || KIND_KEYS[kind].includes(k)) continue
    if ((RULE_KEYS as ReadonlyArray<string>).includes(k)) rd.fail(`${at}.${k}`, `a ${kind} rule takes no ${k}`, id)
  }
  const tool = rd.string(r.tool, `${at}.tool`, id) ?? ""
  const tag = rd.string(r.tag, `${at}.tag`, id) ?? ""
  if (tool !== "" && tag !== "") rd.fail(at, "sets both tool and tag; use one", id)
  if (kind !== "max_calls" && tool === "" && tag === "") rd.fail(at, `a ${kind} rule needs a tool or a tag`, id)
  checkTarget({ id, tool, tag }, at, spec, rd)
  const effect = (rd.effect(r.effect, `${at}.effect`, ["deny", "escalate"], id) ?? "deny") as Exclude<Effect3, "allow">
  const message = rd.string(r.message, `${at}.message`, id) ?? ""
  const path = (key: string) => (KIND_KEYS[kind].includes(key) ? (rd.path(r[key], `${at}.${key}`, id) ?? "") : "")
  const sum = path("sum")
  const group_by = path("group_by")
  const match = path("match")
  const after_match = path("after_match")
  let max = 0
  if (KIND_KEYS[kind].includes("max")) {
    const m = rd.number(r.max, `${at}.max`, id)
    if (m === undefined) rd.fail(`${at}.max`, `a ${kind} rule needs max`, id)
    else if (m < 0) rd.fail(`${at}.max`, "must be 0 or more", id)
    else if (kind === "max_calls" && !Number.isInteger(m)) rd.fail(`${at}.max`, "must be a whole number of calls", id)
    else max = m
  }
  if (kind === "ceiling" && sum === "" && r.sum === undefined) rd.fail(`${at}.sum`, "a ceiling rule needs sum (the argument to add up)", id)
  let unless: UnlessSpec | null = null
  if (kind === "ceiling" && r.unless !== undefined && r.unless !== null) {
    const u = rd.record(r.unless, `${at}.unless`, ["tool", "match", "amount"], id)
    if (u !== null) {
      const utool = rd.string(u.tool, `${at}.unless.tool`, id) ?? ""
      if (utool === "") rd.fail(`${at}.unless.tool`, "needs the approval tool", id)
      else if (!spec.tool_scopes.has(utool)) rd.fail(`${at}.unless.tool`, `names "${utool}", which is not in tool_scopes`, id)
      const umatch = rd.path(u.match, `${at}.unless.match`, id) ?? group_by
      const amount = rd.path(u.amount, `${at}.unless.amount`, id) ?? ""
      if (umatch === "" && group_by !== "") rd.fail(`${at}.unless.match`, "needs the approval's argument that names the group", id)
      unless = { tool: utool, match: umatch, amount }
    }
  }
  let after: ReadonlyArray<string> = []
  if (kind === "must_precede") {
    after = rd.strings(r.after, `${at}.after`, id) ?? []
    if (after.length === 0) rd.fail(`${at}.after`, "a must_precede rule needs after (the tool that must come first)", id)
    for (const a of after) if (!spec.tool_scopes.has(a)) rd.fail(`${at}.after`, `names "${a}", which is not in tool_scopes`, id)
    if (after_match !== "" && match === "") rd.fail(`${at}.after_match`, "needs match too (the argument of this rule's tool)", id)
  }
  return [{ id, kind, tool, tag, effect, message, sum, group_by, max, unless, after, match, after_match: after_match !== "" ? after_match : match }]
}

// ---------------------------------------------------------------------------------------------
// compiled

interface TRule {
  readonly index: number
  readonly spec: TrajectorySpec
  readonly name: string
  readonly escalate: boolean
  /** the governed call's group key (ceiling, max_calls: group_by; must_precede: match) */
  readonly key: CompiledPath | null
  readonly sum: CompiledPath | null
}

const ADD = 0
const APPROVE = 1
const SEEN = 2

/** How a released call of some tool changes one rule's state. */
interface Producer {
  readonly rule: TRule
  readonly kind: typeof ADD | typeof APPROVE | typeof SEEN
  readonly key: CompiledPath | null
  /** ADD: the amount (null: count 1); APPROVE: the approved amount (null: none) */
  readonly amount: CompiledPath | null
}

export interface CompiledTrajectory {
  readonly rules: ReadonlyArray<TRule>
  /** tool → the rules that govern its calls, in policy order */
  readonly checks: ReadonlyMap<string, ReadonlyArray<TRule>>
  /** tool → how its released calls change state */
  readonly producers: ReadonlyMap<string, ReadonlyArray<Producer>>
  /** tools whose calls also approve or precede (producers other than their own counts) */
  readonly others: ReadonlySet<string>
  readonly state: StateSpec
}

const pathOrNull = (p: string) => (p === "" ? null : compilePath(p))

export const compileTrajectory = (specs: ReadonlyArray<TrajectorySpec>, state: StateSpec, policy: PolicySpec): CompiledTrajectory => {
  const rules: Array<TRule> = specs.map((s, index) => ({
    index,
    spec: s,
    name: trajectoryRuleName(s.kind, s.id),
    escalate: s.effect === "escalate",
    key: pathOrNull(s.kind === "must_precede" ? s.match : s.group_by),
    sum: pathOrNull(s.sum)
  }))
  const checks = new Map<string, Array<TRule>>()
  const producers = new Map<string, Array<Producer>>()
  const push = <A>(m: Map<string, Array<A>>, k: string, a: A) => {
    const l = m.get(k)
    if (l === undefined) m.set(k, [a])
    else l.push(a)
  }
  for (const tool of policy.tool_scopes.keys()) {
    const tags = policy.tool_tags.get(tool) ?? []
    for (const r of rules) {
      const s = r.spec
      const governs = s.tool !== "" ? s.tool === tool : s.tag !== "" ? tags.includes(s.tag) : true
      if (governs) {
        push(checks, tool, r)
        if (s.kind !== "must_precede") push(producers, tool, { rule: r, kind: ADD, key: r.key, amount: s.kind === "ceiling" ? r.sum : null })
      }
      if (s.kind === "ceiling" && s.unless !== null && s.unless.tool === tool) {
        push(producers, tool, { rule: r, kind: APPROVE, key: pathOrNull(s.unless.match), amount: pathOrNull(s.unless.amount) })
      }
      if (s.kind === "must_precede" && s.after.includes(tool)) push(producers, tool, { rule: r, kind: SEEN, key: pathOrNull(s.after_match), amount: null })
    }
  }
  const others = new Set([...producers].filter(([, ps]) => ps.some((p) => p.kind !== ADD)).map(([t]) => t))
  return { rules, checks, producers, others, state }
}

// ---------------------------------------------------------------------------------------------
// state

interface Group {
  sum: number
  count: number
  /** the approved ceiling (-Infinity: none; Infinity: lifted) */
  lifted: number
  seen: boolean
}

interface Delta {
  /** the rule's index */
  readonly rule: number
  /** the group key */
  readonly key: string
  readonly kind: typeof ADD | typeof APPROVE | typeof SEEN
  /** ADD: the amount; APPROVE: the approved amount, NaN for an approval without one */
  readonly amount: number
}

interface Reservation {
  readonly call: object
  readonly deltas: ReadonlyArray<Delta>
}

class Episode {
  touched = 0
  /** per rule index: group key → group */
  readonly groups: Array<Map<string, Group> | undefined> = []
  readonly pending: Array<Reservation> = []
}

/** Episodes by key; Map order is recency (least recently used first). */
class EpisodeStore {
  private readonly map = new Map<string, Episode>()
  constructor(
    private readonly max: number,
    private readonly ttlMs: number
  ) {}

  get size(): number {
    return this.map.size
  }

  /** The episode if it is kept and not expired (its recency unchanged). */
  peek(key: string, now: number): Episode | undefined {
    const e = this.map.get(key)
    if (e !== undefined && now - e.touched > this.ttlMs) {
      this.map.delete(key)
      return undefined
    }
    return e
  }

  /** The episode, created when absent or expired, made most recent; evicts the least recent beyond the bound, and (at most once a second) expired ones. */
  touch(key: string, now: number): Episode {
    let e = this.peek(key, now)
    if (e === undefined) e = new Episode()
    else this.map.delete(key)
    e.touched = now
    this.map.set(key, e)
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value!)
    if (now - this.swept >= 1000) {
      this.swept = now
      let n = 0
      for (const [k, v] of this.map) {
        if (now - v.touched <= this.ttlMs || ++n > 1024) break
        this.map.delete(k)
      }
    }
    return e
  }

  private swept = 0
}

/** Reservations kept per episode while their calls await `commit` (the oldest are dropped beyond it). */
export const MAX_PENDING = 256

const NO_EPISODE = "cannot verify: no episode (x-vetobench-episode) or session (x-vetobench-session) to keep the trajectory in"

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : String(Math.round(n * 1e6) / 1e6))

/** The text of the single value at `p` ("" when there is no path), or `Unresolved` (why there is none). */
const keyAt = (args: unknown, p: CompiledPath | null): string | Unresolved => {
  if (p === null) return ""
  const v = resolveArg(args, p)
  if (v instanceof Unresolved) return v
  if (!(typeof v === "string" || typeof v === "number" || typeof v === "boolean")) return new Unresolved(`${p.text} is not a single value`)
  return goText(v)
}

/** The single non-negative number at `p`, or why not. */
const amountAt = (args: unknown, p: CompiledPath): number | string => {
  const v = resolveArg(args, p)
  if (v instanceof Unresolved) return v.why
  if (typeof v !== "number" || !Number.isFinite(v)) return `${p.text} is not a number, so it cannot be added up`
  if (v < 0) return `${p.text} is negative, so it cannot count towards the ceiling`
  return v
}

/** The trajectory rules' state for one judge, and their decisions. */
export class TrajectoryState {
  private readonly store: EpisodeStore

  constructor(
    readonly compiled: CompiledTrajectory,
    private readonly now: () => number
  ) {
    this.store = new EpisodeStore(compiled.state.max_episodes, compiled.state.ttl_s * 1000)
  }

  private lastEpisode = ""
  private lastKey = ""

  /** episodes held (for tests and diagnostics) */
  get episodes(): number {
    return this.store.size
  }

  /** The episode key of a request: `e:<episode>`, else `s:<session>`, else `shared` or null per `state.without_episode`. */
  keyOf(episodeId: string | null, sessionId: string | null): string | null {
    if (episodeId !== null && episodeId !== "") {
      // consecutive calls mostly share their episode: keep the last key
      if (episodeId !== this.lastEpisode) {
        this.lastEpisode = episodeId
        this.lastKey = `e:${episodeId}`
      }
      return this.lastKey
    }
    if (sessionId !== null && sessionId !== "") return `s:${sessionId}`
    return this.compiled.state.without_episode === "shared" ? "shared" : null
  }

  /** A trajectory rule governs the tool's calls. */
  governs(tool: string): boolean {
    return this.compiled.checks.has(tool)
  }

  /** The tool's calls change or read state (a trajectory rule governs it or counts it). */
  involves(tool: string): boolean {
    return this.compiled.checks.has(tool) || this.compiled.producers.has(tool)
  }

  /**
   * The first trajectory rule the call breaks (decision), or null; on null the call's amounts and
   * counts are reserved under `call` until `commit`.
   */
  decide(plan: ToolPlan, args: unknown, episode: string | null, call: object, now: number = this.now()): RuleDecision | null {
    const rules = this.compiled.checks.get(plan.tool)
    if (rules === undefined) return null
    if (episode === null) return fire(plan, rules[0]!, NO_EPISODE)
    const ep = this.store.peek(episode, now)
    // what the call adds, should it pass (its reservation)
    let adds: Array<Delta> | null = null
    for (const r of rules) {
      const s = r.spec
      const k = keyAt(args, r.key)
      if (k instanceof Unresolved) return fire(plan, r, `cannot verify: ${k.why}`)
      const g = ep?.groups[r.index]?.get(k)
      if (s.kind === "ceiling") {
        const amount = amountAt(args, r.sum!)
        if (typeof amount === "string") return fire(plan, r, `cannot verify: ${amount}`)
        const total = (g?.sum ?? 0) + (ep !== undefined ? pendingOf(ep, r.index, k).sum : 0) + amount
        const limit = Math.max(s.max, g?.lifted ?? -Infinity)
        ;(adds ??= []).push({ rule: r.index, key: k, kind: ADD, amount })
        if (total > limit) {
          const lifted = g !== undefined && g.lifted > s.max
          return fire(
            plan,
            r,
            said(
              s,
              `${r.sum!.text}${groupOf(r, k)} would total ${fmt(total)} in this episode, above the ${lifted ? "approved " : ""}ceiling of ${fmt(limit)}${
                s.unless !== null && !lifted ? `; ${s.unless.tool}${s.unless.amount !== "" ? " for the total" : ""} must come first` : ""
              }`
            )
          )
        }
      } else if (s.kind === "max_calls") {
        const count = (g?.count ?? 0) + (ep !== undefined ? pendingOf(ep, r.index, k).count : 0)
        ;(adds ??= []).push({ rule: r.index, key: k, kind: ADD, amount: 0 })
        if (count + 1 > s.max) return fire(plan, r, said(s, `${s.tool !== "" ? s.tool : s.tag !== "" ? `tag ${s.tag}` : "calls"}${groupOf(r, k)}: at most ${fmt(s.max)} per episode, ${fmt(count)} already made`))
      } else if (g === undefined || !g.seen) {
        return fire(plan, r, said(s, `${plan.tool} needs an earlier ${s.after.join(" or ")}${r.key !== null ? ` with the same ${r.key.text} (${k})` : ""} in this episode`))
      }
    }
    if (adds !== null) {
      const others = this.compiled.others.has(plan.tool) ? this.deltasOf(plan.tool, args, false) : []
      const pending = this.store.touch(episode, now).pending
      // reservations wait for `commit`; should it never come (a caller without the hook), the oldest go
      if (pending.length >= MAX_PENDING) pending.shift()
      pending.push({ call, deltas: others.length === 0 ? adds : [...adds, ...others] })
    }
    return null
  }

  /** What became of a call: drop its reservation; if it went back to the agent, record it. */
  commit(tool: string, args: unknown, episode: string | null, call: object, released: boolean): void {
    if (episode === null || !this.involves(tool)) return
    const now = this.now()
    const ep = this.store.peek(episode, now)
    let deltas: ReadonlyArray<Delta> | undefined
    if (ep !== undefined) {
      const pending = ep.pending
      for (let i = 0; i < pending.length; i++)
        if (pending[i]!.call === call) {
          deltas = pending[i]!.deltas
          pending.splice(i, 1)
          break
        }
    }
    if (!released) return
    deltas ??= this.deltasOf(tool, args, true)
    if (deltas.length === 0) return
    const target = this.store.touch(episode, now)
    for (const d of deltas) {
      let byKey = target.groups[d.rule]
      if (byKey === undefined) target.groups[d.rule] = byKey = new Map()
      let g = byKey.get(d.key)
      if (g === undefined) byKey.set(d.key, (g = { sum: 0, count: 0, lifted: -Infinity, seen: false }))
      if (d.kind === ADD) {
        g.sum += d.amount
        g.count += 1
      } else if (d.kind === APPROVE) {
        if (Number.isNaN(d.amount)) {
          if (g.count === 0) g.lifted = Infinity
        } else g.lifted = Math.max(g.lifted, d.amount)
      } else g.seen = true
    }
  }

  /** How a released call of `tool` changes state (what can be read from its arguments); `withAdds: false` leaves out its own counts. */
  private deltasOf(tool: string, args: unknown, withAdds: boolean): ReadonlyArray<Delta> {
    const ps = this.compiled.producers.get(tool)
    if (ps === undefined) return []
    const out: Array<Delta> = []
    for (const p of ps) {
      if (!withAdds && p.kind === ADD) continue
      const k = keyAt(args, p.key)
      if (k instanceof Unresolved) continue
      if (p.kind === ADD) {
        const amount = p.amount === null ? 0 : amountAt(args, p.amount)
        if (typeof amount === "number") out.push({ rule: p.rule.index, key: k, kind: ADD, amount })
      } else if (p.kind === APPROVE) {
        const amount = p.amount === null ? Number.NaN : amountAt(args, p.amount)
        if (typeof amount === "number") out.push({ rule: p.rule.index, key: k, kind: APPROVE, amount })
      } else out.push({ rule: p.rule.index, key: k, kind: SEEN, amount: 0 })
    }
    return out
  }
}

const fire = (plan: ToolPlan, r: TRule, message: string): RuleDecision => firedDecision(plan.scope, r.name, r.escalate, message)

/** the rule's message with the detail in brackets, or the detail alone */
const said = (s: TrajectorySpec, detail: string) => (s.message !== "" ? `${s.message} (${detail})` : detail)

const groupOf = (r: TRule, key: string) => (r.key !== null ? ` for ${r.key.text} ${key}` : "")

const pendingOf = (ep: Episode, rule: number, key: string): { readonly sum: number; readonly count: number } => {
  let sum = 0
  let count = 0
  for (const p of ep.pending)
    for (const d of p.deltas)
      if (d.kind === ADD && d.rule === rule && d.key === key) {
        sum += d.amount
        count++
      }
  return { sum, count }
}
