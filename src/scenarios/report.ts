/**
 * The text a person reads: per-scenario pass counts, and each failing check with the calls that
 * broke it, shown as the calls themselves (`issue_refund({"order_id":"A1004","amount":50})`).
 * Identical failures of several trials are shown once, with the trial numbers.
 */
import * as path from "node:path"
import { classifyFailures, type FailureClass } from "./outcome.js"
import { resolveFrom, type RunHeader, type SummaryLine, type TrialLine, type Variant, type VariantSummary } from "./runfile.js"
import { showCall } from "./trajectory.js"
import { redactUrl } from "../domain/redact-url.js"

/** A path as a person at the terminal reads it: relative to the working directory when under it, else absolute. */
export const displayPath = (abs: string): string => {
  const rel = path.relative(process.cwd(), abs)
  return rel === "" || rel.startsWith("..") || path.isAbsolute(rel) ? abs : rel
}

const pad = (s: string, n: number) => (s.length >= n ? `${s} ` : s + " ".repeat(n - s.length))

const trialList = (ns: ReadonlyArray<number>): string => `trial${ns.length > 1 ? "s" : ""} ${ns.join(", ")}`

/** The failures of some trials of one scenario and variant, grouped by check and by what the trials did. */
export const failureLines = (trials: ReadonlyArray<TrialLine>, indent = "      "): Array<string> => {
  const groups = new Map<string, { head: string; calls: Array<string>; why: string | null; trials: Array<number> }>()
  for (const t of trials) {
    for (const f of t.failures) {
      const calls = f.calls.map((c) => `${showCall(c)}   (round ${c.round})`)
      const k = JSON.stringify([f.check, f.message, calls])
      const g = groups.get(k)
      if (g === undefined) groups.set(k, { head: `${f.check}: ${f.message}`, calls, why: f.why, trials: [t.trial] })
      else g.trials.push(t.trial)
    }
  }
  const out: Array<string> = []
  for (const g of groups.values()) {
    out.push(`${indent}✗ ${g.head} — ${trialList(g.trials)}`)
    for (const c of g.calls) out.push(`${indent}    ${c}`)
    if (g.why !== null) out.push(`${indent}    why: ${g.why}`)
  }
  return out
}

const count = (ts: ReadonlyArray<TrialLine>) => `${ts.filter((t) => t.passed).length}/${ts.length}`

const CLASS_LABEL: Record<FailureClass, string> = { new_regression: "NEW REGRESSION", historical: "historical", fixed: "fixed" }

/** The lines of one scenario: its pass counts and its failures (classified in a baseline vs candidate run). */
export const scenarioLines = (scenario: string, trials: ReadonlyArray<TrialLine>, compare: boolean): Array<string> => {
  const of = (v: Variant) => trials.filter((t) => t.variant === v)
  const cand = of("candidate")
  const ok = cand.every((t) => t.passed)
  if (!compare) return [`  ${ok ? "PASS" : "FAIL"}  ${pad(scenario, 36)}${count(cand)}`, ...failureLines(cand.filter((t) => !t.passed))]
  const base = of("baseline")
  const out = [`  ${ok ? "PASS" : "FAIL"}  ${pad(scenario, 36)}${pad(`baseline ${count(base)}`, 16)}candidate ${count(cand)}`]
  for (const c of classifyFailures(trials)) {
    out.push(`      ${CLASS_LABEL[c.class]}: ${c.check} (candidate ${c.candidate.failed}/${c.candidate.trials}, baseline ${c.baseline.failed}/${c.baseline.trials})`)
    const variant: Variant = c.class === "fixed" ? "baseline" : "candidate"
    const failing = of(variant).filter((t) => t.failures.some((f) => f.check === c.check))
    out.push(...failureLines(failing.map((t) => ({ ...t, failures: t.failures.filter((f) => f.check === c.check) })), `        ${variant === "baseline" ? "(baseline) " : ""}`))
  }
  return out
}

export const headerLines = (h: RunHeader, runFile: string): Array<string> => {
  const dir = path.dirname(runFile)
  const prompt = (p: RunHeader["prompt"]) => `${displayPath(resolveFrom(dir, p.path))}${p.version === null ? "" : ` (${p.version})`} sha256 ${p.sha256.slice(0, 12)}…`
  return [
    `${h.live ? "scenario run" : "scenario REPLAY (offline re-check; cannot be approved)"} ${h.run_id} — model ${h.model}${h.proxy_url === null ? "" : ` via ${redactUrl(h.proxy_url)}`}`,
    `  ${h.baseline === null ? "prompt   " : "candidate"} ${prompt(h.prompt)}`,
    ...(h.baseline === null ? [] : [`  baseline  ${prompt(h.baseline)}`]),
    `  run file  ${displayPath(runFile)}`
  ]
}

const variantLine = (name: string, v: VariantSummary, scenarios: { passed: number; total: number }): string => {
  const cost = v.cost_usd === null ? "no price for the model (--prices)" : `est. cost $${v.cost_usd.toFixed(4)}`
  return `${name}: ${v.passed}/${v.trials} trials passed, ${scenarios.passed}/${scenarios.total} scenarios; tokens ${v.usage.prompt_tokens} in / ${v.usage.completion_tokens} out; ${cost}`
}

/** Scenarios whose every trial of `variant` passed, and all scenarios. */
export const scenarioCounts = (trials: ReadonlyArray<TrialLine>, variant: Variant) => {
  const by = new Map<string, boolean>()
  for (const t of trials.filter((t) => t.variant === variant)) {
    const k = `${t.file}\u0000${t.scenario}`
    by.set(k, (by.get(k) ?? true) && t.passed)
  }
  return { passed: [...by.values()].filter(Boolean).length, total: by.size }
}

export const summaryLines = (s: SummaryLine, trials: ReadonlyArray<TrialLine>): Array<string> => {
  const out = [variantLine(s.baseline === null ? "total" : "candidate", s.candidate, scenarioCounts(trials, "candidate"))]
  if (s.baseline !== null) {
    out.push(variantLine("baseline ", s.baseline, scenarioCounts(trials, "baseline")))
    const classes = classifyFailures(trials)
    const n = (c: FailureClass) => classes.filter((x) => x.class === c).length
    out.push(`candidate failures: ${n("new_regression")} new regression(s), ${n("historical")} historical; ${n("fixed")} fixed vs the baseline`)
  }
  return out
}
