/**
 * The report's content as data: sections of titled tables and one-line notes, built from a
 * `Summary`. `markdown.ts` and `html.ts` render the same sections, so both files always show the
 * same numbers with the same formatting (`format.ts`).
 *
 * Order (reference §10, then this project's additions): the headline (one box per variant:
 * `headline.ts`); Agent-SafetyBench (safety score with paired Δ vs the baseline variant, per risk
 * category, paired Δ per category, fulfillability, episode status); ASB (ASR with paired ΔASR, task
 * success, refusal; over-blocking on clean tasks; aggressiveness; rows and infra errors; the audit
 * join); AgentDojo (`agentdojo.ts`: utility, utility under attack, targeted ASR with paired Δs, the
 * gate, per suite, runs); judge quality from offline replay with the confusion counts; live judge latency; live
 * coverage; per-layer contribution of layered judges; holds; tokens and cost; provenance; notes.
 * Rows follow the experiment's order of models, attack tags and variants; judges are sorted.
 * The Δ of a variant is always against `experiment.baseline`, whatever the order of `arms`.
 *
 * A section that does not apply (its blocks are only notes: a benchmark not run, no layered judge)
 * has `collapsed: true`: the renderers show it as one line.
 */
import type { Bench, RunBench } from "../run-layout/paths.js"
import type {
  AsbenchVariantSummary,
  AsbVariantSummary,
  JudgeQuality,
  LiveJudgeStats,
  Summary,
  SummaryVariant
} from "../scoring/summary-types.js"
import { MIN_PAIRS } from "../scoring/headline.js"
import { agentdojoSections } from "./agentdojo.js"
import { type BoxView, headlineBanner, headlineBoxes } from "./headline.js"
import { countCell, DASH, deltaCell, estimateCell, intCell, latencyCell, pct, rateCell, tokensCell, usdCell } from "./format.js"

export interface Table {
  readonly head: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
  /** indices of columns holding numbers (right-aligned in HTML) */
  readonly numeric: ReadonlyArray<number>
}

export type Block =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "note"; readonly text: string }
  | { readonly kind: "table"; readonly table: Table }
  | { readonly kind: "list"; readonly items: ReadonlyArray<string> }
  /** a warning over everything (e.g. placeholder labels) */
  | { readonly kind: "banner"; readonly text: string }
  /** the headline's boxes, one per model × variant */
  | { readonly kind: "boxes"; readonly boxes: ReadonlyArray<BoxView> }

export interface Section {
  /** stable anchor (HTML id) */
  readonly id: string
  readonly level: 2 | 3
  readonly title: string
  readonly blocks: ReadonlyArray<Block>
  /** the section does not apply (only notes): shown as one line */
  readonly collapsed?: boolean
}

/** A section whose blocks are only notes does not apply: it collapses to one line. */
const withCollapse = (s: Section): Section => (s.blocks.length > 0 && s.blocks.every((b) => b.kind === "note") ? { ...s, collapsed: true } : s)

/** The one line of a collapsed section: its notes joined. */
export const collapsedLine = (s: Section): string =>
  s.blocks.flatMap((b) => (b.kind === "note" || b.kind === "text" ? [b.text] : [])).join(" ")

export const BENCHES: ReadonlyArray<Bench> = ["asbench", "asb"]
/** the benchmarks with live audit figures (`Summary.live`) */
export const LIVE_BENCHES: ReadonlyArray<RunBench> = ["asbench", "asb", "agentdojo"]
export const BENCH_LABEL: Readonly<Record<RunBench, string>> = { asbench: "Agent-SafetyBench", asb: "ASB", agentdojo: "AgentDojo" }

const table = (head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, numeric: ReadonlyArray<number>): Block => ({
  kind: "table",
  table: { head, rows, numeric }
})
const note = (text: string): Block => ({ kind: "note", text })
const range = (from: number, to: number): Array<number> => Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i)

// ---------------------------------------------------------------------------------------------
// iteration in experiment order

export interface AsbenchRow {
  readonly model: string
  readonly variant: SummaryVariant
  readonly s: AsbenchVariantSummary
}

export interface AsbRowOf {
  readonly model: string
  readonly tag: string
  readonly variant: SummaryVariant
  readonly s: AsbVariantSummary
}

export interface JudgeRow {
  readonly model: string
  readonly bench: Bench
  readonly q: JudgeQuality
}

export interface LiveRow {
  readonly model: string
  readonly bench: RunBench
  readonly variant: SummaryVariant
  readonly s: LiveJudgeStats
}

/** Models of the experiment first (their order), then any other key of `maps` (sorted). */
const modelsOf = (summary: Summary, ...maps: ReadonlyArray<Readonly<Record<string, unknown>>>): Array<string> => {
  const known = summary.experiment.models
  const extra = [...new Set(maps.flatMap((m) => Object.keys(m)))].filter((m) => !known.includes(m)).sort()
  return [...known, ...extra]
}

/** The experiment's variants, then names only found in the data (sorted), so no result is ever dropped. */
const variantsOf = (summary: Summary, names: Iterable<string>): Array<SummaryVariant> => {
  const known = summary.experiment.variants
  const extra = [...new Set(names)].filter((n) => !known.some((v) => v.name === n)).sort()
  return [...known, ...extra.map((name): SummaryVariant => ({ name, arm: "baseline", judge: null }))]
}

export const asbenchRows = (summary: Summary): Array<AsbenchRow> =>
  modelsOf(summary, summary.asbench).flatMap((model) => {
    const byVariant = summary.asbench[model] ?? {}
    return variantsOf(summary, Object.keys(byVariant)).flatMap((variant) => {
      const s = byVariant[variant.name]
      return s === undefined ? [] : [{ model, variant, s }]
    })
  })

export const asbRows = (summary: Summary): Array<AsbRowOf> =>
  modelsOf(summary, summary.asb).flatMap((model) => {
    const byTag = summary.asb[model] ?? {}
    const tags = [...summary.experiment.asb_tags, ...Object.keys(byTag).filter((t) => !summary.experiment.asb_tags.includes(t)).sort()]
    return tags.flatMap((tag) => {
      const byVariant = byTag[tag] ?? {}
      return variantsOf(summary, Object.keys(byVariant)).flatMap((variant) => {
        const s = byVariant[variant.name]
        return s === undefined ? [] : [{ model, tag, variant, s }]
      })
    })
  })

export const judgeRows = (summary: Summary): Array<JudgeRow> =>
  modelsOf(summary, summary.judges).flatMap((model) =>
    BENCHES.flatMap((bench) => {
      const byJudge: Readonly<Record<string, JudgeQuality>> = summary.judges[model]?.[bench] ?? {}
      return Object.keys(byJudge)
        .sort()
        .flatMap((judge) => {
          const q = byJudge[judge]
          return q === undefined ? [] : [{ model, bench, q }]
        })
    })
  )

export const liveRows = (summary: Summary): Array<LiveRow> =>
  modelsOf(summary, summary.live).flatMap((model) =>
    LIVE_BENCHES.flatMap((bench) => {
      const byVariant: Readonly<Record<string, LiveJudgeStats>> = summary.live[model]?.[bench] ?? {}
      return variantsOf(summary, Object.keys(byVariant)).flatMap((variant) => {
        const s = byVariant[variant.name]
        return s === undefined ? [] : [{ model, bench, variant, s }]
      })
    })
  )

// ---------------------------------------------------------------------------------------------
// notes

const BENCH_NOTE: Readonly<Record<Bench, RegExp>> = {
  asbench: /agent-safetybench|asbench|shieldagent|gen_res|shield\.jsonl/i,
  asb: /\bASB\b|[/\\]asb[/\\]|\basb\b|shard/
}

const JUDGE_NOTE = /judge quality|replay/i

/** The experiment's notes about judge quality (offline replay). */
export const judgeNotesOf = (summary: Summary): Array<string> => summary.notes.filter((n) => JUDGE_NOTE.test(n))

/** The experiment's notes that mention a benchmark's results (judge-quality notes go to the judges section). */
export const notesFor = (summary: Summary, bench: Bench): Array<string> =>
  summary.notes.filter(
    (n) =>
      !JUDGE_NOTE.test(n) && !n.startsWith("AgentDojo") && BENCH_NOTE[bench].test(n) && !(bench === "asb" && BENCH_NOTE.asbench.test(n) && !/\bASB\b/.test(n))
  )

/** One line per note about a benchmark, or `fallback` when it has none. */
const benchNotes = (summary: Summary, bench: Bench, fallback: string): Array<Block> => {
  const ns = notesFor(summary, bench)
  return ns.length === 0 ? [note(fallback)] : ns.map(note)
}

// ---------------------------------------------------------------------------------------------
// Agent-SafetyBench

const asbenchSections = (summary: Summary): Array<Section> => {
  const rows = asbenchRows(summary)
  const main: Section = {
    id: "asbench",
    level: 2,
    title: "Agent-SafetyBench (ShieldAgent safety score, % safe, 95% CI)",
    blocks:
      rows.length === 0
        ? benchNotes(summary, "asbench", `Agent-SafetyBench: no results (not run: no gen_res.json under ${summary.experiment.run_dir}/asbench).`)
        : [
            table(
              ["model", "variant", "n", "safe %", "Δ vs baseline (paired)", "episodes w/ block"],
              rows.map(({ model, s, variant }) => [
                model,
                variant.name,
                String(s.n_scored),
                rateCell(s.overall),
                deltaCell(s.delta?.overall),
                String(s.episodes_with_block)
              ]),
              [2, 3, 4, 5]
            ),
            ...(summary.experiment.baseline === null
              ? [note("No baseline or passthrough variant in this experiment: no paired differences.")]
              : []),
            ...notesFor(summary, "asbench").map(note)
          ]
  }
  if (rows.length === 0) return [main]
  const cats = summary.categories
  const withDelta = rows.filter((r) => r.s.delta !== null)
  const unknownFulfillable = rows.some((r) => r.s.by_fulfillable.unknown.n > 0)
  const fulfillKeys = unknownFulfillable ? (["fulfillable", "unfulfillable", "unknown"] as const) : (["fulfillable", "unfulfillable"] as const)
  return [
    main,
    {
      id: "asbench-categories",
      level: 3,
      title: "Per risk category (safe %)",
      blocks: [
        table(
          ["model", "variant", ...cats],
          rows.map(({ model, s, variant }) => [model, variant.name, ...cats.map((c) => pct(s.by_category[c]?.p))]),
          range(2, 2 + cats.length)
        )
      ]
    },
    {
      id: "asbench-category-deltas",
      level: 3,
      title: "Paired Δ per risk category (percentage points vs baseline)",
      blocks:
        withDelta.length === 0
          ? [note("No paired differences (no baseline variant with labels).")]
          : [
              table(
                ["model", "variant", "category", "Δ safe (paired)"],
                withDelta.flatMap(({ model, s, variant }) => cats.map((c) => [model, variant.name, c, deltaCell(s.delta?.by_category[c])])),
                [3]
              )
            ]
    },
    {
      id: "asbench-fulfillable",
      level: 3,
      title: "By fulfillability (safe %, paired Δ vs baseline)",
      blocks: [
        table(
          ["model", "variant", ...fulfillKeys.flatMap((k) => [k, `Δ ${k}`])],
          rows.map(({ model, s, variant }) => [
            model,
            variant.name,
            ...fulfillKeys.flatMap((k) => [rateCell(s.by_fulfillable[k]), deltaCell(s.delta?.by_fulfillable[k])])
          ]),
          range(2, 2 + 2 * fulfillKeys.length)
        )
      ]
    },
    {
      id: "asbench-status",
      level: 3,
      title: "Episode status and infrastructure errors (never counted as safe or unsafe)",
      blocks: [
        table(
          ["model", "variant", "cases", "ok", "exceeded", "error", "scored", "unscored", "invalid labels"],
          rows.map(({ model, s, variant }) => [
            model,
            variant.name,
            String(s.n_cases),
            String(s.status.ok),
            String(s.status.exceeded),
            String(s.status.error),
            String(s.n_scored),
            String(s.infra_errors.unscored),
            String(s.infra_errors.invalid_labels)
          ]),
          range(2, 9)
        )
      ]
    }
  ]
}

// ---------------------------------------------------------------------------------------------
// ASB

const asbSections = (summary: Summary): Array<Section> => {
  const rows = asbRows(summary)
  const main: Section = {
    id: "asb",
    level: 2,
    title: "ASB (attack success rate, original-task success, refusal rate; %, 95% CI)",
    blocks:
      rows.length === 0
        ? benchNotes(summary, "asb", `ASB: no results (not run: no shard CSVs under ${summary.experiment.run_dir}/asb).`)
        : [
            table(
              ["model", "attack", "variant", "n", "ASR", "ΔASR vs baseline (paired)", "task success", "refusal"],
              rows.map(({ model, s, tag, variant }) => [
                model,
                tag,
                variant.name,
                String(s.n),
                rateCell(s.asr),
                deltaCell(s.delta?.asr),
                rateCell(s.original_task_success),
                rateCell(s.refusal_rate)
              ]),
              [3, 4, 5, 6, 7]
            ),
            ...notesFor(summary, "asb").map(note)
          ]
  }
  if (rows.length === 0) return [main]
  const clean = rows.filter((r) => r.tag === "clean")
  return [
    main,
    {
      id: "asb-overblocking",
      level: 3,
      title: "Over-blocking: original-task success on clean tasks (%, paired Δ vs baseline)",
      blocks:
        clean.length === 0
          ? [note("No clean (attack-free) ASB runs: over-blocking is not measured.")]
          : [
              table(
                ["model", "variant", "n", "task success", "Δ task success (paired)"],
                clean.map(({ model, s, variant }) => [
                  model,
                  variant.name,
                  String(s.n),
                  rateCell(s.original_task_success),
                  deltaCell(s.delta?.original_task_success)
                ]),
                [2, 3, 4]
              )
            ]
    },
    {
      id: "asb-aggressive",
      level: 3,
      title: "ASR by attacker-tool aggressiveness (%, paired Δ vs baseline)",
      blocks: [
        table(
          ["model", "attack", "variant", "ASR aggressive", "Δ aggressive", "ASR non-aggressive", "Δ non-aggressive"],
          rows
            .filter((r) => r.tag !== "clean")
            .map(({ model, s, tag, variant }) => [
              model,
              tag,
              variant.name,
              rateCell(s.asr_aggressive),
              deltaCell(s.delta?.asr_aggressive),
              rateCell(s.asr_non_aggressive),
              deltaCell(s.delta?.asr_non_aggressive)
            ]),
          [3, 4, 5, 6]
        )
      ]
    },
    {
      id: "asb-rows",
      level: 3,
      title: "Rows, infrastructure errors and blocked episodes",
      blocks: [
        table(
          ["model", "attack", "variant", "shards", "rows", "counted", "infra errors", "episodes w/ block", "malformed tool replies"],
          rows.map(({ model, s, tag, variant }) => [
            model,
            tag,
            variant.name,
            String(s.shards),
            String(s.n_rows),
            String(s.n),
            String(s.infra_errors),
            String(s.episodes_with_block),
            s.malformed_tool_replies === null ? DASH : String(s.malformed_tool_replies)
          ]),
          range(3, 9)
        ),
        note(
          summary.experiment.asb_malformed_arguments === "asb"
            ? "Malformed tool replies: agent answers whose tool-call arguments were not JSON; as in ASB's own backend, such an answer carries no tool call."
            : "Malformed tool replies: agent answers whose tool-call arguments were not JSON; this run kept their calls with empty arguments (asb.malformed_arguments: empty), which ASB's own backend does not."
        )
      ]
    },
    asbAuditSection(rows)
  ]
}

/** Rows joined with the audit records per attack and variant (final attempts). */
const asbAuditSection = (rows: ReadonlyArray<AsbRowOf>): Section => {
  const joined = rows.filter((r) => r.s.audit !== null)
  const any = joined.some((r) => r.s.audit!.calls > 0 || r.s.audit!.stale_calls > 0)
  return {
    id: "asb-audit",
    level: 3,
    title: "Audit join: the proxy's call records per episode (final attempts)",
    blocks:
      joined.length === 0
        ? [note("No ASB audit records joined (no audit file, or ASB's tasks file could not be read: see Notes).")]
        : !any
        ? [note("No call records of these attacks' sessions in the audit files.")]
        : [
            table(
              ["model", "attack", "variant", "calls", "joined", "episodes with calls", "unmatched episodes", "earlier-attempt calls left out"],
              joined.map(({ model, s, tag, variant }) => {
                const a = s.audit!
                const examples = a.unmatched_examples.length === 0 ? "" : ` (${a.unmatched_examples.join(", ")}${a.unmatched_episodes > a.unmatched_examples.length ? ", …" : ""})`
                return [model, tag, variant.name, String(a.calls), `${a.calls_joined}/${a.calls}`, `${a.rows_with_calls} of ${s.n_rows}`, `${a.unmatched_episodes}${examples}`, String(a.stale_calls)]
              }),
              [3, 4, 5, 7]
            )
          ]
  }
}

// ---------------------------------------------------------------------------------------------
// judges (offline replay)

export const judgeNotes = (q: JudgeQuality): string => {
  const parts: Array<string> = []
  if (q.bench === "asb") {
    parts.push("per call", `${q.unknown_tool_calls} unknown-tool calls skipped`)
    if (q.unjudged_calls > 0) parts.push(`${q.unjudged_calls} unjudged calls skipped`)
  } else {
    parts.push("per episode", `${q.unsafe_without_tool_calls}/${q.episodes_without_tool_calls} no-call episodes unsafe (unreachable)`)
    if (q.unjudged_episodes > 0) parts.push(`${q.unjudged_episodes} unjudged episodes skipped`)
  }
  if (q.replayed_calls < q.source_calls) parts.push(`replay incomplete: ${q.replayed_calls}/${q.source_calls} calls`)
  return parts.join("; ")
}

const judgeSections = (summary: Summary): Array<Section> => {
  const rows = judgeRows(summary)
  const replayNotes = judgeNotesOf(summary)
  const quality: Section = {
    id: "judges",
    level: 2,
    title: "Judge quality on baseline tool calls (offline replay)",
    blocks:
      rows.length === 0
        ? replayNotes.length > 0
          ? replayNotes.map(note)
          : [note(`No replay results (vetobench replay writes ${summary.experiment.run_dir}/replay/<bench>.<model>.jsonl).`)]
        : [
            {
              kind: "text",
              text: "Positive = unsafe episode (Agent-SafetyBench, ShieldAgent label of the baseline) or attacker tool (ASB), predicted by deny or hold; 95% cluster-bootstrap intervals by episode."
            },
            table(
              ["model", "bench", "judge", "precision", "recall", "F1", "FPR", "p50", "p95", "errors", "notes"],
              rows.map(({ bench, model, q }) => [
                model,
                BENCH_LABEL[bench],
                q.judge,
                estimateCell(q.precision, q.confusion.tp + q.confusion.fp === 0 ? "nothing flagged" : undefined),
                estimateCell(q.recall, q.confusion.tp + q.confusion.fn === 0 ? "no positives" : undefined),
                estimateCell(q.f1, q.confusion.tp === 0 ? "no true positive" : undefined),
                estimateCell(q.fpr, q.confusion.fp + q.confusion.tn === 0 ? "no negatives" : undefined),
                latencyCell(q.latency.p50_ms),
                latencyCell(q.latency.p95_ms),
                String(q.latency.errors),
                judgeNotes(q)
              ]),
              [3, 4, 5, 6, 7, 8, 9]
            ),
            ...replayNotes.map(note)
          ]
  }
  if (rows.length === 0) return [quality]
  return [
    quality,
    {
      id: "judges-confusion",
      level: 3,
      title: "Confusion tables (offline replay)",
      blocks: [
        table(
          ["model", "bench", "judge", "unit", "TP", "FP", "FN", "TN", "clusters", "replayed calls"],
          rows.map(({ bench, model, q }) => [
            model,
            BENCH_LABEL[bench],
            q.judge,
            q.unit,
            String(q.confusion.tp),
            String(q.confusion.fp),
            String(q.confusion.fn),
            String(q.confusion.tn),
            String(q.clusters),
            `${q.replayed_calls}/${q.source_calls}`
          ]),
          range(4, 10)
        )
      ]
    }
  ]
}

const layerSection = (summary: Summary): Section => {
  const offline = judgeRows(summary).flatMap(({ bench, model, q }) => (q.layers ?? []).map((l) => ({ model, bench, judge: q.judge, unit: q.unit, l })))
  const live = liveRows(summary).flatMap(({ bench, model, s, variant }) => (s.layers ?? []).map((l) => ({ model, bench, variant: variant.name, l })))
  const blocks: Array<Block> = []
  if (offline.length === 0 && live.length === 0) blocks.push(note("No layered judges in this experiment's results."))
  if (offline.length > 0) {
    blocks.push(
      {
        kind: "text",
        text: "Offline replay, per evaluation unit: ruled = units the layer ruled on; flagged = it said deny or hold; decided = it was the first to stop the unit; TP / FP = decided units labelled unsafe / safe."
      },
      table(
        ["model", "bench", "judge", "layer", "kind", "ruled", "flagged", "decided", "TP", "FP", "p50", "p95"],
        offline.map(({ bench, judge, l, model }) => [
          model,
          BENCH_LABEL[bench],
          judge,
          l.judge,
          l.kind,
          String(l.ruled),
          String(l.flagged),
          String(l.decided),
          String(l.tp),
          String(l.fp),
          latencyCell(l.latency.p50_ms),
          latencyCell(l.latency.p95_ms)
        ]),
        range(5, 12)
      )
    )
  }
  if (live.length > 0) {
    blocks.push(
      { kind: "text", text: "Live (proxy audit), latency per layer over uncached calls:" },
      table(
        ["model", "bench", "variant", "layer", "calls", "uncached", "p50", "p95", "errors"],
        live.map(({ bench, l, model, variant }) => [
          model,
          BENCH_LABEL[bench],
          variant,
          l.judge,
          String(l.latency.n_calls),
          String(l.latency.n_uncached),
          latencyCell(l.latency.p50_ms),
          latencyCell(l.latency.p95_ms),
          String(l.latency.errors)
        ]),
        range(4, 9)
      )
    )
  }
  return { id: "layers", level: 2, title: "Per-layer contribution (layered judges)", blocks }
}

// ---------------------------------------------------------------------------------------------
// live audit

/** One note when calls of earlier attempts were left out of the live figures. */
const staleNote = (rows: ReadonlyArray<LiveRow>): Array<Block> => {
  const stale = rows.reduce((n, r) => n + r.s.stale_calls, 0)
  const shards = rows.filter((r) => r.s.audit_files.length > 1).length
  const out: Array<Block> = []
  if (stale > 0) out.push(note(`${intCell(stale)} call records of earlier attempts (a killed and resumed run, a re-run shard) are left out: each episode counts from its final attempt.`))
  if (shards > 0) out.push(note(`${shards} variant${shards === 1 ? "" : "s"} read from per-shard audit files (a merged sharded run).`))
  return out
}

/** Live latency (only when there are rows), coverage, then `layers`, then holds. */
const liveSections = (summary: Summary, layers: Section): Array<Section> => {
  const rows = liveRows(summary)
  const out: Array<Section> = []
  if (rows.length > 0) {
    out.push({
      id: "latency",
      level: 2,
      title: "Live judge latency (uncached calls)",
      blocks: [
        table(
          ["model", "bench", "variant", "calls", "p50", "p95", "errors"],
          rows.map(({ bench, model, s, variant }) => [
            model,
            BENCH_LABEL[bench],
            variant.name,
            String(s.latency.n_calls),
            latencyCell(s.latency.p50_ms),
            latencyCell(s.latency.p95_ms),
            String(s.latency.errors)
          ]),
          [3, 4, 5, 6]
        )
      ]
    })
  }
  const none = note("No audit files of judged variants (shadow / enforce) were found.")
  out.push(
    {
      id: "coverage",
      level: 2,
      title: "Coverage (share of proposed calls ruled with status ok, live audit)",
      blocks:
        rows.length === 0
          ? [none]
          : [
              table(
                ["model", "bench", "variant", "judge", "calls", "ruled ok", "coverage % [95% CI]", "blocked"],
                rows.flatMap(({ bench, model, s, variant }) => {
                  const judges = [s.judge, ...Object.keys(s.coverage.by_judge).filter((j) => j !== s.judge)]
                  return judges.flatMap((j) => {
                    const c = s.coverage.by_judge[j]
                    return c === undefined
                      ? []
                      : [[model, BENCH_LABEL[bench], variant.name, j, String(s.coverage.calls), countCell(c), rateCell(c), j === s.judge ? String(s.blocked) : ""]]
                  })
                }),
                [4, 5, 6, 7]
              ),
              ...staleNote(rows)
            ]
    },
    layers,
    {
      id: "holds",
      level: 2,
      title: "Holds (calls whose effective decision was hold, live audit)",
      blocks:
        rows.length === 0
          ? [none]
          : [
              table(
                ["model", "bench", "variant", "calls", "held", "hold rate % [95% CI]"],
                rows.map(({ bench, model, s, variant }) => [model, BENCH_LABEL[bench], variant.name, String(s.calls), String(s.hold_rate.k), rateCell(s.hold_rate)]),
                [3, 4, 5]
              )
            ]
    }
  )
  // the result screen (src/screening/): shown only when it flagged something
  const screened = rows.filter(({ s }) => (s.flagged_results?.flagged ?? 0) > 0)
  if (screened.length > 0) {
    out.push({
      id: "flagged-results",
      level: 2,
      title: "Flagged tool results (result screen, live audit; not calls)",
      blocks: [
        table(
          ["model", "bench", "variant", "results screened", "flagged", "replaced", "episodes w/ flagged"],
          screened.map(({ bench, model, s, variant }) => {
            const f = s.flagged_results!
            return [model, BENCH_LABEL[bench], variant.name, String(f.screened), String(f.flagged), String(f.replaced), String(f.episodes_with_flagged)]
          }),
          [3, 4, 5, 6]
        )
      ]
    })
  }
  return out
}

// ---------------------------------------------------------------------------------------------

export const variantList = (summary: Summary): string =>
  summary.experiment.variants.map((v) => v.name).join(", ") || DASH

// ---------------------------------------------------------------------------------------------
// headline, cost, provenance

const headlineSection = (summary: Summary): Section => {
  const banner = headlineBanner(summary.headline)
  const boxes = headlineBoxes(summary)
  return {
    id: "headline",
    level: 2,
    title: `Headline: each variant against ${summary.experiment.baseline ?? "the baseline"}`,
    blocks: [
      ...(banner === null ? [] : [{ kind: "banner", text: banner } as const]),
      boxes.length === 0
        ? note("No variant has results to compare with the baseline yet.")
        : { kind: "boxes", boxes },
      ...(boxes.length === 0
        ? []
        : [{
            kind: "text" as const,
            text: `Verdicts from the 95% paired-bootstrap interval of each difference: safer or less safe when it lies on one side of 0, no detectable change when it contains 0, cannot be estimated below ${MIN_PAIRS} paired tasks.`
          }])
    ]
  }
}

const costSection = (summary: Summary): Section => {
  const rows = summary.cost.rows
  const priced = summary.cost.prices !== null
  return {
    id: "cost",
    level: 2,
    title: priced ? "Tokens and cost (USD)" : "Tokens",
    blocks:
      rows.length === 0
        ? [note("No token counts recorded (runs from before the runners recorded the agent's usage, and no judge usage in the audit).")]
        : [
            {
              kind: "text",
              text: priced
                ? `Prices from ${summary.cost.prices}. Agent tokens as the runners recorded them (final attempts); judge tokens from the verdicts in the audit log. Per blocked unsafe call: the cost over the calls withheld that were unsafe (ASB: attacker tools; Agent-SafetyBench: in cases the baseline's label calls unsafe; AgentDojo: an injection task's ground-truth functions in attacked episodes).`
                : "Agent tokens as the runners recorded them (final attempts); judge tokens from the verdicts in the audit log. Give vetobench report --prices FILE for cost."
            },
            table(
              ["model", "bench", "variant", "who", "model priced", "tokens", "blocked unsafe calls", ...(priced ? ["USD", "USD per blocked unsafe call"] : [])],
              rows.flatMap((r) =>
                r.lines.map((l) => [
                  r.model,
                  BENCH_LABEL[r.bench],
                  r.variant,
                  l.role === "agent" ? "agent" : `judge ${l.name}`,
                  l.model ?? DASH,
                  tokensCell(l.tokens),
                  r.blocked_unsafe_calls === null ? DASH : String(r.blocked_unsafe_calls),
                  ...(priced ? [usdCell(l.usd), usdCell(l.usd_per_blocked_unsafe_call)] : [])
                ])
              ),
              priced ? [5, 6, 7, 8] : [5, 6]
            )
          ]
  }
}

const short = (h: string | null): string => (h === null ? "unreadable" : h.slice(0, 16))

const provenanceSection = (summary: Summary): Section => {
  const p = summary.provenance
  const items = [
    `vetobench ${p.vetobench_version}${p.git_commit === null ? "" : ` at commit ${p.git_commit}`}`,
    `settings sha256 ${p.settings_sha256} (secrets excluded)`,
    `experiment ${summary.experiment.file} sha256 ${p.experiment_sha256}`,
    ...Object.entries(p.policies).map(([judge, f]) => `policy of judge ${judge}: ${f.file} sha256 ${short(f.sha256)}`),
    ...p.data.map((f) => `${BENCH_LABEL[f.bench]} data ${f.file} sha256 ${short(f.sha256)}`)
  ]
  return { id: "provenance", level: 2, title: "Provenance", blocks: [{ kind: "list", items }] }
}

/** Every section of the report, in order (the title and header are the renderers' own). */
export const reportSections = (summary: Summary): Array<Section> =>
  [
    headlineSection(summary),
    ...asbenchSections(summary),
    ...asbSections(summary),
    ...agentdojoSections(summary),
    ...judgeSections(summary),
    ...liveSections(summary, layerSection(summary)),
    costSection(summary),
    provenanceSection(summary),
    {
      id: "notes",
      level: 2 as const,
      title: "Notes",
      blocks: summary.notes.length === 0 ? [note("Nothing was skipped.")] : [{ kind: "list" as const, items: summary.notes }]
    }
  ].map(withCollapse)
