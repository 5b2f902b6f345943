/**
 * What a trial's trajectory comes to (pass/fail with the failing checks) and, for a baseline vs
 * candidate run, what each failure of the candidate is:
 * - `new_regression`: the check fails for the candidate and never for the baseline;
 * - `historical`: it fails for both (the baseline had it already);
 * - `fixed`: it fails only for the baseline (shown, never counted against the candidate).
 * A failure is one check of one scenario (its `id`); a trial that could not finish counts as the check `error`.
 */
import { evaluateChecks } from "./checks.js"
import type { Failure, TrialLine, Variant } from "./runfile.js"
import type { Scenario } from "./spec.js"
import type { Trajectory } from "./trajectory.js"

export const ERROR_CHECK = "error"

/** Judge one trajectory against a scenario's checks. A trial with an error fails with that error alone. */
export const judgeTrajectory = (scenario: Scenario, t: Trajectory): { readonly passed: boolean; readonly failures: ReadonlyArray<Failure> } => {
  if (t.error !== null) return { passed: false, failures: [{ check: ERROR_CHECK, kind: "error", why: null, message: t.error, calls: [] }] }
  const results = evaluateChecks(scenario.checks, t)
  const failures = results.flatMap((r, i): Array<Failure> =>
    r.passed ? [] : [{ check: r.check, kind: r.kind, why: scenario.checks[i]?.why ?? null, message: r.message, calls: r.calls }]
  )
  return { passed: failures.length === 0, failures }
}

export type FailureClass = "new_regression" | "historical" | "fixed"

export interface ClassifiedFailure {
  readonly file: string
  readonly scenario: string
  readonly check: string
  readonly class: FailureClass
  /** failing trials / trials, per variant */
  readonly candidate: { readonly failed: number; readonly trials: number }
  readonly baseline: { readonly failed: number; readonly trials: number }
}

const key = (file: string, scenario: string) => `${file}\u0000${scenario}`

/** Classify every failing check of a baseline vs candidate run (scenario order as in `trials`). */
export const classifyFailures = (trials: ReadonlyArray<TrialLine>): ReadonlyArray<ClassifiedFailure> => {
  const scenarios: Array<{ readonly file: string; readonly scenario: string }> = []
  const byScenario = new Map<string, Record<Variant, Array<TrialLine>>>()
  for (const t of trials) {
    const k = key(t.file, t.scenario)
    let entry = byScenario.get(k)
    if (entry === undefined) {
      entry = { candidate: [], baseline: [] }
      byScenario.set(k, entry)
      scenarios.push({ file: t.file, scenario: t.scenario })
    }
    entry[t.variant].push(t)
  }
  const out: Array<ClassifiedFailure> = []
  for (const s of scenarios) {
    const entry = byScenario.get(key(s.file, s.scenario))
    if (entry === undefined) continue
    const failedChecks = (ts: ReadonlyArray<TrialLine>) => {
      const counts = new Map<string, number>()
      for (const t of ts) for (const c of new Set(t.failures.map((f) => f.check))) counts.set(c, (counts.get(c) ?? 0) + 1)
      return counts
    }
    const cand = failedChecks(entry.candidate)
    const base = failedChecks(entry.baseline)
    const checks = [...new Set([...cand.keys(), ...base.keys()])]
    for (const check of checks) {
      const c = cand.get(check) ?? 0
      const b = base.get(check) ?? 0
      out.push({
        file: s.file,
        scenario: s.scenario,
        check,
        class: c > 0 ? (b > 0 ? "historical" : "new_regression") : "fixed",
        candidate: { failed: c, trials: entry.candidate.length },
        baseline: { failed: b, trials: entry.baseline.length }
      })
    }
  }
  return out
}
