/**
 * The report's AgentDojo section (issue 19 §2): its tables as `Section`s (rendered by `markdown.ts`
 * and `html.ts` like every other section) and its two charts for `report.html`.
 *
 * - main table per model × variant: episodes, utility, utility under attack, targeted ASR, each with
 *   its paired Δ against the baseline (cluster bootstrap by user task: `clusteredCell`), errors;
 *   a banner when any row came from the oracle agent; one line when there are no results;
 * - what the gate did (judged variants with audit records): calls stopped, per episode, the share
 *   of attacked episodes whose first harmful call was stopped;
 * - per suite; the runs (benchmark versions, attacks, defense, oracle, rows, errors, tokens);
 * - charts: the utility/ASR plane per model (`plane.ts`) and the forest plot of Δ utility,
 *   Δ utility under attack and Δ targeted ASR per variant (`svg.ts` `forestPlot`).
 */
import type { AgentdojoCell, AgentdojoVariantSummary, ClusteredDiff, Proportion, Summary } from "../scoring/summary-types.js"
import { clusteredCell, DASH, finiteOrNull, intCell, rateCell, tokensCell } from "./format.js"
import { type PlaneOptions, type PlanePoint, planePlot } from "./plane.js"
import type { Block, Section } from "./sections.js"
import { variantSeries } from "./series.js"
import { type ForestGroup, type ForestOptions, forestPlot } from "./svg.js"

export const ORACLE_BANNER =
  "Oracle agent: scripted ground-truth calls, not a model. The AgentDojo figures below come from the scripted agent (it proposes the user task's and, in attacked episodes, the injection task's ground-truth calls): they show what the gate does to known calls, not how a model behaves."

export interface AgentdojoRowOf {
  readonly model: string
  readonly s: AgentdojoVariantSummary
}

/** Models in experiment order, then others (sorted); variants in experiment order, then the rest as the summary lists them. */
export const agentdojoRows = (summary: Pick<Summary, "experiment" | "agentdojo">): Array<AgentdojoRowOf> => {
  const known = summary.experiment.models
  const models = [...known, ...Object.keys(summary.agentdojo).filter((m) => !known.includes(m)).sort()]
  return models.flatMap((model) => {
    const byVariant = summary.agentdojo[model] ?? {}
    const names = summary.experiment.variants.map((v) => v.name).filter((n) => Object.hasOwn(byVariant, n))
    const rest = Object.keys(byVariant).filter((n) => !names.includes(n))
    return [...names, ...rest].map((n) => ({ model, s: byVariant[n]! }))
  })
}

/** The variant names of the AgentDojo results, for colours (defense variants are not in the experiment's list). */
const extraNames = (summary: Pick<Summary, "experiment" | "agentdojo">): Array<string> => agentdojoRows(summary).map((r) => r.s.variant)

const seriesOf = (summary: Pick<Summary, "experiment" | "agentdojo">, variant: string): number => variantSeries(summary, variant, extraNames(summary))

/** `p [lo, hi] (k/n)`: every rate with the episodes it is over; `– (n=0)` when there are none. */
const countedRate = (r: Proportion): string => (r.n === 0 ? `${DASH} (n=0)` : `${rateCell(r)} (${r.k}/${r.n})`)

const table = (head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, numeric: ReadonlyArray<number>): Block => ({ kind: "table", table: { head, rows, numeric } })
const note = (text: string): Block => ({ kind: "note", text })

/** The summary's notes about AgentDojo (the readers write them starting with "AgentDojo"). */
export const agentdojoNotes = (summary: Pick<Summary, "notes">): Array<string> => summary.notes.filter((n) => n.startsWith("AgentDojo"))

const deltaOf = (c: AgentdojoCell, pick: (d: NonNullable<AgentdojoCell["delta"]>) => ClusteredDiff): string => (c.delta === null ? DASH : clusteredCell(pick(c.delta)))

const who = (s: AgentdojoVariantSummary): string =>
  s.defense !== null ? `AgentDojo defense ${s.defense}` : s.judge !== null ? `${s.arm}, judge ${s.judge}` : s.arm

const gateCells = (c: AgentdojoCell): Array<string> => {
  const g = c.gate
  if (g === null) return [DASH, DASH, DASH, DASH, DASH]
  return [
    `${g.calls_blocked} of ${g.calls}`,
    g.blocked_per_episode === null ? DASH : g.blocked_per_episode.toFixed(2),
    `${g.episodes_with_block} of ${g.episodes}`,
    countedRate(g.first_harmful_blocked),
    `${g.first_harmful_proposed} of ${g.first_harmful_blocked.n}`
  ]
}

/** Every AgentDojo section, in order; the first collapses to one line when there are no results. */
export const agentdojoSections = (summary: Summary): Array<Section> => {
  const rows = agentdojoRows(summary)
  const notes = agentdojoNotes(summary)
  if (rows.length === 0) {
    return [{
      id: "agentdojo",
      level: 2,
      title: "AgentDojo (utility, utility under attack, targeted ASR; %, 95% CI)",
      blocks: notes.length > 0 ? notes.map(note) : [note(`AgentDojo: no results (not run: no results under ${summary.experiment.run_dir}/agentdojo).`)]
    }]
  }
  const oracle = rows.some((r) => r.s.oracle_episodes > 0)
  const gated = rows.filter((r) => r.s.overall.gate !== null)
  const main: Section = {
    id: "agentdojo",
    level: 2,
    title: "AgentDojo (utility, utility under attack, targeted ASR; %, 95% CI)",
    blocks: [
      ...(oracle ? [{ kind: "banner" as const, text: ORACLE_BANNER }] : []),
      {
        kind: "text",
        text:
          "Utility: user tasks solved in episodes without injection; under attack: in attacked episodes; targeted ASR: attacked episodes whose injection task succeeded (AgentDojo's security check). " +
          "Δ = variant − baseline in percentage points, paired by episode, 95% cluster-bootstrap interval resampling user tasks. Infrastructure errors are counted apart, never as success or failure."
      },
      table(
        ["model", "variant", "what", "episodes", "utility", "Δ utility (paired)", "utility under attack", "Δ under attack", "targeted ASR", "ΔASR (paired)", "errors"],
        rows.map(({ model, s }) => [
          model,
          s.variant,
          who(s),
          String(s.overall.episodes),
          countedRate(s.overall.utility),
          deltaOf(s.overall, (d) => d.utility),
          countedRate(s.overall.utility_under_attack),
          deltaOf(s.overall, (d) => d.utility_under_attack),
          countedRate(s.overall.asr),
          deltaOf(s.overall, (d) => d.asr),
          String(s.overall.errors)
        ]),
        [3, 4, 5, 6, 7, 8, 9, 10]
      ),
      ...(summary.experiment.baseline === null ? [note("No baseline variant in this experiment: no paired differences.")] : []),
      ...notes.map(note)
    ]
  }
  const gate: Section = {
    id: "agentdojo-gate",
    level: 3,
    title: "What the gate did (live audit, final attempts)",
    blocks:
      gated.length === 0
        ? [note("No audit records of judged AgentDojo variants (shadow / enforce) were found.")]
        : [
            {
              kind: "text",
              text:
                "Stopped = withheld (enforce) or ruled deny / hold (shadow: what enforce would withhold). First harmful call: in an attacked episode, the injection task's first ground-truth call, matched among the episode's call records by function and by every argument the ground truth sets (a user task's own call of the same function does not count); the share is over attacked episodes, of which 'proposed' had that call at all."
            },
            table(
              ["model", "variant", "calls stopped", "stopped per episode", "episodes w/ stop", "first harmful call stopped", "proposed", "unmatched audit episodes", "earlier-attempt calls left out"],
              gated.map(({ model, s }) => [
                model,
                s.variant,
                ...gateCells(s.overall),
                String(s.audit?.unmatched_episodes ?? 0) + (s.audit !== null && s.audit.unmatched_examples.length > 0 ? ` (${s.audit.unmatched_examples.join(", ")})` : ""),
                String(s.audit?.stale_calls ?? 0)
              ]),
              [2, 3, 4, 5, 6, 7, 8]
            )
          ]
  }
  const suites: Section = {
    id: "agentdojo-suites",
    level: 3,
    title: "Per suite (%, paired Δ vs baseline)",
    blocks: [
      table(
        ["model", "variant", "suite", "utility", "Δ utility", "under attack", "Δ under attack", "targeted ASR", "ΔASR", "first harmful call stopped", "errors"],
        rows.flatMap(({ model, s }) =>
          s.suites.flatMap((suite) => {
            const c = s.by_suite[suite]
            return c === undefined
              ? []
              : [[
                  model,
                  s.variant,
                  suite,
                  countedRate(c.utility),
                  deltaOf(c, (d) => d.utility),
                  countedRate(c.utility_under_attack),
                  deltaOf(c, (d) => d.utility_under_attack),
                  countedRate(c.asr),
                  deltaOf(c, (d) => d.asr),
                  c.gate === null ? DASH : countedRate(c.gate.first_harmful_blocked),
                  String(c.errors)
                ]]
          })
        ),
        [3, 4, 5, 6, 7, 8, 9, 10]
      )
    ]
  }
  const runs: Section = {
    id: "agentdojo-runs",
    level: 3,
    title: "Runs: benchmark versions, agent, rows and errors",
    blocks: [
      table(
        ["model", "variant", "benchmark", "attacks", "agent", "rows", "episodes", "earlier attempts left out", "errors", "first errors", "agent tokens"],
        rows.map(({ model, s }) => [
          model,
          s.variant,
          s.benchmark_versions.join(", ") || DASH,
          s.attacks.join(", ") || DASH,
          s.oracle ? "oracle (scripted)" : s.oracle_episodes > 0 ? `mixed: ${s.oracle_episodes} oracle episodes` : "model",
          intCell(s.rows),
          intCell(s.overall.episodes),
          String(s.stale_rows),
          `${s.overall.errors} of ${s.overall.episodes}`,
          s.error_examples.join("; ") || DASH,
          tokensCell(s.agent_tokens)
        ]),
        [5, 6, 7, 8]
      )
    ]
  }
  return [main, gate, suites, runs]
}

// ---------------------------------------------------------------------------------------------
// charts (report.html)

const pp = (x: number | null | undefined): number | null => {
  const v = finiteOrNull(x)
  return v === null ? null : v * 100
}

/** One point per variant of a model: targeted ASR and utility under attack over all its attacked episodes. */
export const planePoints = (summary: Summary, model: string): Array<PlanePoint> =>
  agentdojoRows(summary)
    .filter((r) => r.model === model)
    .map(({ s }) => ({ label: s.variant, x: { ...s.overall.asr }, y: { ...s.overall.utility_under_attack }, series: seriesOf(summary, s.variant) }))

/** Some variant of the model has a point to draw. */
export const hasPlane = (summary: Summary, model: string): boolean =>
  planePoints(summary, model).some((p) => finiteOrNull(p.x.p) !== null && finiteOrNull(p.y.p) !== null)

/** The utility/ASR plane of one model, or null when no variant has a point. */
export const agentdojoPlane = (summary: Summary, model: string, opts: Omit<PlaneOptions, "title" | "xLabel" | "yLabel">): string | null => {
  if (!hasPlane(summary, model)) return null
  return planePlot(planePoints(summary, model), {
    ...opts,
    title: `AgentDojo: utility under attack vs targeted ASR · ${model}`,
    xLabel: "targeted ASR, % (lower is safer)",
    yLabel: "utility under attack, %"
  })
}

/** The models with AgentDojo results, in row order. */
export const agentdojoModels = (summary: Summary): Array<string> => [...new Set(agentdojoRows(summary).map((r) => r.model))]

/** Forest plot groups: per model, Δ utility, Δ utility under attack and Δ ASR, one row per variant. */
export const agentdojoForestGroups = (summary: Summary): Array<ForestGroup> => {
  const rows = agentdojoRows(summary).filter((r) => r.s.overall.delta !== null)
  const measures = [
    ["Δ utility (no attack)", (d: NonNullable<AgentdojoCell["delta"]>) => d.utility],
    ["Δ utility under attack", (d: NonNullable<AgentdojoCell["delta"]>) => d.utility_under_attack],
    ["Δ targeted ASR", (d: NonNullable<AgentdojoCell["delta"]>) => d.asr]
  ] as const
  return agentdojoModels(summary).flatMap((model) =>
    measures.flatMap(([title, pick]) => {
      const mine = rows.filter((r) => r.model === model).map(({ s }) => {
        const d = pick(s.overall.delta!)
        return { label: s.variant, sublabel: `${d.clusters} user tasks`, d: pp(d.d), lo: pp(d.lo), hi: pp(d.hi), n: d.n, series: seriesOf(summary, s.variant) }
      })
      return mine.length === 0 ? [] : [{ title: `${model} · ${title}`, rows: mine }]
    })
  )
}

export const agentdojoForest = (summary: Summary, opts: Pick<ForestOptions, "id"> & { readonly width?: number }): string | null => {
  const groups = agentdojoForestGroups(summary)
  if (groups.length === 0) return null
  return forestPlot(groups, {
    ...opts,
    title: `AgentDojo: paired Δ vs ${summary.experiment.baseline ?? "baseline"}`,
    xLabel: "Δ percentage points (variant − baseline)",
    leftNote: "← lower than baseline",
    rightNote: "higher than baseline →"
  })
}
