/**
 * The checks engine, pure: trajectory checks over the calls a trial made (and, optionally, its
 * final text). Every failure carries the calls that caused it, so a report shows the calls
 * themselves; a text check alone would pass an agent that says "I can't split this" and then does.
 *
 * Kinds (schema in docs/scenarios.md):
 * - `must_call`      at least `min` (default 1) calls match the selector;
 * - `must_not_call`  no call matches the selector;
 * - `must_precede`   every call matching `then` has an earlier call matching `first` (with the same
 *                    value at `key`, when given; in an earlier round, with `separate_rounds`);
 * - `max_total`      the sum of `arg` over the calls matching `tool`, per value of `group_by`, is at most `max`;
 * - `args_match`     every call matching `tool` satisfies the condition;
 * - `final_text_matches` the final assistant text matches the regex.
 */
import { asNumber, type Condition, conditionProblem, getPath, holds, jsonEquals, type Path } from "./path.js"
import { showCall, type Trajectory, type TrajectoryCall } from "./trajectory.js"

/** Which calls a check is about: a tool name, optionally narrowed by conditions on the arguments. */
export interface Selector {
  readonly tool: string
  readonly where: ReadonlyArray<Condition>
}

export type CheckSpec =
  | { readonly kind: "must_call"; readonly call: Selector; readonly min: number }
  | { readonly kind: "must_not_call"; readonly call: Selector }
  | { readonly kind: "must_precede"; readonly first: Selector; readonly then: Selector; readonly key: Path | null; readonly separate_rounds: boolean }
  | { readonly kind: "max_total"; readonly call: Selector; readonly arg: Path; readonly group_by: Path | null; readonly max: number }
  | { readonly kind: "args_match"; readonly call: Selector; readonly condition: Condition }
  | { readonly kind: "final_text_matches"; readonly regex: { readonly source: string; readonly flags: string } }

export interface Check {
  /** stable name of the check within its scenario (the `id` given, else derived from the spec) */
  readonly id: string
  /** why the check exists (shown with a failure) */
  readonly why: string | null
  readonly spec: CheckSpec
}

export interface CheckResult {
  readonly check: string
  readonly kind: CheckSpec["kind"]
  readonly passed: boolean
  /** one line: what went wrong (empty when passed) */
  readonly message: string
  /** the calls that make the check fail */
  readonly calls: ReadonlyArray<TrajectoryCall>
}

const selectorText = (s: Selector): string => {
  if (s.where.length === 0) return s.tool
  const conds = s.where.map((c) => {
    const parts: Array<string> = []
    if (c.equals !== undefined) parts.push(`=${JSON.stringify(c.equals)}`)
    if (c.one_of !== undefined) parts.push(` in ${JSON.stringify(c.one_of)}`)
    if (c.regex !== undefined) parts.push(` ~/${c.regex.source}/${c.regex.flags}`)
    if (c.range !== undefined) {
      if (c.range.min !== undefined) parts.push(`>=${String(c.range.min)}`)
      if (c.range.max !== undefined) parts.push(`<=${String(c.range.max)}`)
    }
    if (c.exists !== undefined) parts.push(c.exists ? " exists" : " missing")
    return `${c.path.text}${parts.join(",")}`
  })
  return `${s.tool}[${conds.join("; ")}]`
}

/** A stable, readable name for a check spec (used when the scenario gives no `id`). */
export const describeCheck = (spec: CheckSpec): string => {
  switch (spec.kind) {
    case "must_call":
      return `must_call ${selectorText(spec.call)}${spec.min > 1 ? ` ×${spec.min}` : ""}`
    case "must_not_call":
      return `must_not_call ${selectorText(spec.call)}`
    case "must_precede":
      return `must_precede ${selectorText(spec.first)} before ${selectorText(spec.then)}${spec.key === null ? "" : ` (same ${spec.key.text})`}${spec.separate_rounds ? " (earlier round)" : ""}`
    case "max_total":
      return `max_total ${spec.call.tool} ${spec.arg.text} <= ${spec.max}${spec.group_by === null ? "" : ` per ${spec.group_by.text}`}`
    case "args_match":
      return `args_match ${selectorText({ tool: spec.call.tool, where: [...spec.call.where, spec.condition] })}`
    case "final_text_matches":
      return `final_text_matches /${spec.regex.source}/${spec.regex.flags}`
  }
}

export const matches = (s: Selector, call: TrajectoryCall): boolean =>
  call.name === s.tool && s.where.every((c) => holds(c, call.arguments))

const pass = (check: Check): CheckResult => ({ check: check.id, kind: check.spec.kind, passed: true, message: "", calls: [] })
const fail = (check: Check, message: string, calls: ReadonlyArray<TrajectoryCall> = []): CheckResult => ({
  check: check.id,
  kind: check.spec.kind,
  passed: false,
  message,
  calls
})

const callsText = (calls: ReadonlyArray<TrajectoryCall>): string =>
  calls.length === 0 ? "no tool calls" : `calls made: ${calls.map(showCall).join(", ")}`

/** Evaluate one check on a trajectory. */
export const evaluateCheck = (check: Check, t: Pick<Trajectory, "calls" | "final_text">): CheckResult => {
  const spec = check.spec
  switch (spec.kind) {
    case "must_call": {
      const hits = t.calls.filter((c) => matches(spec.call, c))
      return hits.length >= spec.min
        ? pass(check)
        : fail(check, `expected ${spec.min > 1 ? `${spec.min} calls` : "a call"} to ${selectorText(spec.call)}, got ${hits.length}; ${callsText(t.calls)}`)
    }
    case "must_not_call": {
      const hits = t.calls.filter((c) => matches(spec.call, c))
      return hits.length === 0 ? pass(check) : fail(check, `called ${selectorText(spec.call)}`, hits)
    }
    case "must_precede": {
      const keyOf = (c: TrajectoryCall) => (spec.key === null ? undefined : getPath(spec.key, c.arguments))
      const orphans = t.calls.filter(
        (c) =>
          matches(spec.then, c) &&
          !t.calls.some(
            (p) =>
              p.index < c.index &&
              (!spec.separate_rounds || p.round < c.round) &&
              matches(spec.first, p) &&
              (spec.key === null || (keyOf(p) !== undefined && jsonEquals(keyOf(p), keyOf(c))))
          )
      )
      if (orphans.length === 0) return pass(check)
      const key = spec.key === null ? "" : ` with the same ${spec.key.text}`
      return fail(check, `${spec.then.tool} without an earlier ${spec.first.tool}${key}`, orphans)
    }
    case "max_total": {
      const groups = new Map<string, Array<TrajectoryCall>>()
      for (const c of t.calls.filter((c) => matches(spec.call, c))) {
        const k = spec.group_by === null ? "" : JSON.stringify(getPath(spec.group_by, c.arguments) ?? null)
        groups.set(k, [...(groups.get(k) ?? []), c])
      }
      for (const [k, calls] of groups) {
        const bad = calls.filter((c) => asNumber(getPath(spec.arg, c.arguments)) === undefined)
        const group = spec.group_by === null ? "" : ` for ${spec.group_by.text} ${k}`
        if (bad.length > 0) return fail(check, `${spec.arg.text} is not a number${group}`, bad)
        const total = calls.reduce((sum, c) => sum + (asNumber(getPath(spec.arg, c.arguments)) ?? 0), 0)
        if (total > spec.max) return fail(check, `total ${spec.arg.text} ${total} exceeds ${spec.max}${group} over ${calls.length} call(s)`, calls)
      }
      return pass(check)
    }
    case "args_match": {
      const bad = t.calls.filter((c) => matches(spec.call, c) && !holds(spec.condition, c.arguments))
      if (bad.length === 0) return pass(check)
      const first = bad[0]
      return fail(check, first === undefined ? "" : (conditionProblem(spec.condition, first.arguments) ?? ""), bad)
    }
    case "final_text_matches": {
      const text = t.final_text
      if (text === null) return fail(check, "no final text")
      if (new RegExp(spec.regex.source, spec.regex.flags).test(text)) return pass(check)
      const short = text.replace(/\s+/g, " ").trim()
      return fail(check, `final text ${JSON.stringify(short.length > 120 ? `${short.slice(0, 120)}…` : short)} does not match /${spec.regex.source}/${spec.regex.flags}`)
    }
  }
}

/** Evaluate every check; the trial passes when all pass. */
export const evaluateChecks = (checks: ReadonlyArray<Check>, t: Pick<Trajectory, "calls" | "final_text">): ReadonlyArray<CheckResult> =>
  checks.map((c) => evaluateCheck(c, t))
