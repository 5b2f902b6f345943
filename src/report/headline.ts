/**
 * The headline's boxes as text (the same for `report.md` and `report.html`): per model × variant,
 * the overall verdict, then one line per measure — Δ safety or ΔASR with its interval and verdict,
 * scored / total, over-blocking, the allow-all controls' agreement with the baseline (a red flag
 * when one differs). The verdicts themselves are the summary's (`src/scoring/headline.ts`).
 */
import type { ClusteredDiff, Headline, HeadlineBox, HeadlineControl, HeadlineSafety, PairedDiff, Summary } from "../scoring/summary-types.js"
import { clusteredCell, deltaCell, pct } from "./format.js"

/** good: safer / agrees; bad: less safe / over-blocks / differs; neutral: no change; unknown: cannot be estimated */
export type Tone = "good" | "bad" | "neutral" | "unknown"

export interface BoxLine {
  readonly label: string
  readonly value: string
  readonly verdict: string
  readonly tone: Tone
}

export interface BoxView {
  /** stable anchor */
  readonly id: string
  readonly title: string
  readonly subtitle: string
  readonly verdict: string
  readonly tone: Tone
  readonly lines: ReadonlyArray<BoxLine>
}

const toneOf = (verdict: string): Tone =>
  verdict === "safer" || verdict === "no detectable over-blocking" || verdict === "agrees"
    ? "good"
    : verdict === "less safe" || verdict === "over-blocks" || verdict === "DIFFERS" || verdict === "mixed"
    ? "bad"
    : verdict === "no detectable change"
    ? "neutral"
    : "unknown"

const slugOf = (s: string) => s.replace(/[^A-Za-z0-9_-]+/g, "-")

/** The verdict, with why when the value does not already say it (a Δ cell says `(n=…: …)`). */
const verdictText = (verdict: string, why: string | null, value: string): string =>
  why === null || value.includes("(n=") ? verdict : `${verdict} (${why})`

/** A Δ cell: clustered by user task (AgentDojo) or paired by task. */
const diffCell = (d: PairedDiff | ClusteredDiff | null): string => (d !== null && "clusters" in d ? clusteredCell(d) : deltaCell(d))

const safetyLabel = (s: HeadlineSafety): string =>
  s.bench === "asbench"
    ? "Δ safe, Agent-SafetyBench (pp)"
    : s.bench === "agentdojo"
    ? `Δ targeted ASR, AgentDojo${s.tag === null ? "" : ` ${s.tag}`} (pp)`
    : `ΔASR, ASB ${s.tag ?? ""} (pp)`

const safetyLine = (s: HeadlineSafety): BoxLine => {
  const value = `${diffCell(s.delta)}; ${s.bench === "agentdojo" ? "attacked episodes counted" : "scored"} ${s.scored} / ${s.total}`
  return {
    label: safetyLabel(s),
    value,
    verdict: verdictText(s.verdict, s.why, value),
    tone: toneOf(s.verdict)
  }
}

const controlLine = (c: HeadlineControl): BoxLine => ({
  label: `control ${c.variant}${c.bench === "asb" ? `, ASB ${c.tag ?? ""}` : c.bench === "agentdojo" ? ", AgentDojo" : ", Agent-SafetyBench"}`,
  value: `same outcome on ${c.agreement.k} / ${c.agreement.n} (${pct(c.agreement.p)}%), Δ ${diffCell(c.delta)}`,
  verdict: c.differs ? "DIFFERS" : "agrees",
  tone: c.differs ? "bad" : "good"
})

/** The box's overall verdict from its safety lines (or, for a control, its own agreement). */
const overall = (b: HeadlineBox): string => {
  if (b.control) {
    const mine = b.controls.filter((c) => c.variant === b.variant)
    return mine.length === 0 ? "cannot be estimated" : mine.some((c) => c.differs) ? "control DIFFERS from baseline" : "control agrees with baseline"
  }
  const vs = b.safety.map((s) => s.verdict)
  if (vs.includes("safer") && vs.includes("less safe")) return "mixed"
  for (const v of ["less safe", "safer", "no detectable change"] as const) if (vs.includes(v)) return v
  return "cannot be estimated"
}

export const boxView = (b: HeadlineBox, anyControls: boolean): BoxView => {
  const lines: Array<BoxLine> = b.safety.map(safetyLine)
  if (lines.length === 0) lines.push({ label: "Δ vs baseline", value: "no paired results", verdict: "cannot be estimated", tone: "unknown" })
  for (const o of b.overblocking) {
    const r = o.rate
    const value = o.measure === "blocked_safe_cases" ? (r === null || r.n === 0 ? "–" : `${r.k} / ${r.n} (${pct(r.p)}%)`) : diffCell(o.delta)
    lines.push({
      label: o.measure === "clean_task_success"
        ? "over-blocking: Δ task success, ASB clean (pp)"
        : o.measure === "utility"
        ? "over-blocking: Δ utility without attack, AgentDojo (pp)"
        : "over-blocking: baseline-safe cases blocked, Agent-SafetyBench",
      value,
      verdict: verdictText(o.verdict, o.why, value),
      tone: toneOf(o.verdict)
    })
  }
  for (const c of b.controls) lines.push(controlLine(c))
  if (!anyControls) {
    lines.push({ label: "control", value: "none in this experiment (judge allow-all in arm enforce)", verdict: "cannot be estimated", tone: "unknown" })
  }
  const verdict = overall(b)
  const tone: Tone = verdict.startsWith("control") ? (verdict.includes("DIFFERS") ? "bad" : "good") : toneOf(verdict)
  const what = b.judge === null ? b.arm : `${b.arm}, judge ${b.judge}`
  return {
    id: `headline-${slugOf(b.model)}-${slugOf(b.variant)}`,
    title: b.variant,
    subtitle: `${b.model} · ${what}${b.control ? " · allow-all control: must match the baseline" : ""}`,
    verdict,
    tone,
    lines
  }
}

export const headlineBoxes = (summary: Pick<Summary, "headline" | "experiment">): Array<BoxView> =>
  summary.headline.boxes.map((b) => boxView(b, summary.experiment.controls.length > 0))

/** The banner over the headline, or null. */
export const headlineBanner = (h: Headline): string | null => {
  const parts = [
    ...(h.placeholder_labels
      ? ["Placeholder labels: the ShieldAgent labels come from the fake model (a hash of the prompt, not a judgement). The Agent-SafetyBench figures below show that the pipeline runs; they say nothing about safety."]
      : []),
    ...(h.oracle_agent
      ? ["Oracle agent: the AgentDojo figures come from scripted ground-truth calls, not a model; they show what the gate does to known calls, not how a model behaves."]
      : [])
  ]
  return parts.length === 0 ? null : parts.join(" ")
}
