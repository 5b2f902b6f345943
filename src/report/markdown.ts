/**
 * `report.md`: `# vetobench report: <name>`, a blank line, a short header (experiment file, date,
 * models, variants, the baseline of every paired Δ, statistics, vetobench version), then the
 * sections of `sections.ts`: the headline's boxes as a bold line and a list each, tables as
 * GitHub-flavoured Markdown tables (numbers right-aligned), and a section that does not apply as
 * one bold line (`**<title>:** <why>`) instead of a heading.
 */
import type { Summary } from "../scoring/summary-types.js"
import type { BoxView } from "./headline.js"
import { type Block, collapsedLine, reportSections, type Section, type Table, variantList } from "./sections.js"

/** A table cell: no line breaks, `|` escaped. */
const cell = (s: string): string => s.replace(/\r?\n/g, " ").replace(/\|/g, "\\|")

export const markdownTable = (t: Table): Array<string> => [
  `| ${t.head.map(cell).join(" | ")} |`,
  `|${t.head.map((_, i) => (t.numeric.includes(i) ? "---:" : "---")).join("|")}|`,
  ...t.rows.map((row) => `| ${row.map(cell).join(" | ")} |`)
]

const oneLine = (s: string) => s.replace(/\r?\n/g, " ")

/** A headline box: `**<variant>** — <model · arm> — **<verdict>**`, then one item per measure. */
export const markdownBox = (b: BoxView): Array<string> => [
  `**${b.title}** — ${b.subtitle} — **${b.verdict}**`,
  "",
  ...b.lines.map((l) => `- ${oneLine(l.label)}: ${oneLine(l.value)} — **${oneLine(l.verdict)}**`)
]

const block = (b: Block): Array<string> => {
  switch (b.kind) {
    case "text":
    case "note":
      return [b.text]
    case "banner":
      return [`> **Warning.** ${oneLine(b.text)}`]
    case "list":
      return b.items.map((i) => `- ${oneLine(i)}`)
    case "table":
      return markdownTable(b.table)
    case "boxes":
      return b.boxes.flatMap((box, i) => [...(i === 0 ? [] : [""]), ...markdownBox(box)])
  }
}

const section = (s: Section): Array<string> =>
  s.collapsed === true
    ? [`**${s.title}:** ${oneLine(collapsedLine(s))}`, ""]
    : [`${"#".repeat(s.level)} ${s.title}`, "", ...s.blocks.flatMap((b) => [...block(b), ""])]

/** The header lines under the title. */
export const headerLines = (summary: Summary): Array<string> => {
  const e = summary.experiment
  const st = summary.stats
  return [
    `- experiment: ${e.name} (\`${e.file}\`), run dir \`${e.run_dir}\``,
    `- generated: ${summary.generated_at}`,
    `- models: ${e.models.join(", ") || "–"}`,
    `- variants: ${variantList(summary)}; paired Δ against: ${e.baseline ?? "– (no baseline variant)"}`,
    `- statistics: Wilson ${Math.round(st.confidence * 100)}% intervals for rates; Δ = variant − baseline in percentage points, ` +
      `paired bootstrap by task (${st.bootstrap_iterations} resamples, seed ${st.seed}); judge metrics: cluster bootstrap by episode`,
    `- vetobench ${summary.provenance.vetobench_version}${summary.provenance.git_commit === null ? "" : ` (commit ${summary.provenance.git_commit.slice(0, 12)})`}; hashes under Provenance`
  ]
}

export const renderMarkdown = (summary: Summary): string => {
  const lines = [`# vetobench report: ${summary.experiment.name}`, "", ...headerLines(summary), "", ...reportSections(summary).flatMap(section)]
  while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop()
  return `${lines.join("\n")}\n`
}
