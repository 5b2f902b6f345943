/**
 * `report.md`: `# vetobench report: <name>`, a blank line, a short header (experiment file, date,
 * models, variants, the baseline of every paired Δ, statistics), then the sections of
 * `sections.ts` as GitHub-flavoured Markdown tables (numbers right-aligned).
 */
import type { Summary } from "../scoring/summary-types.js"
import { type Block, reportSections, type Section, type Table, variantList } from "./sections.js"

/** A table cell: no line breaks, `|` escaped. */
const cell = (s: string): string => s.replace(/\r?\n/g, " ").replace(/\|/g, "\\|")

export const markdownTable = (t: Table): Array<string> => [
  `| ${t.head.map(cell).join(" | ")} |`,
  `|${t.head.map((_, i) => (t.numeric.includes(i) ? "---:" : "---")).join("|")}|`,
  ...t.rows.map((row) => `| ${row.map(cell).join(" | ")} |`)
]

const block = (b: Block): Array<string> => {
  switch (b.kind) {
    case "text":
    case "note":
      return [b.text]
    case "list":
      return b.items.map((i) => `- ${i.replace(/\r?\n/g, " ")}`)
    case "table":
      return markdownTable(b.table)
  }
}

const section = (s: Section): Array<string> => [`${"#".repeat(s.level)} ${s.title}`, "", ...s.blocks.flatMap((b) => [...block(b), ""])]

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
      `paired bootstrap by task (${st.bootstrap_iterations} resamples, seed ${st.seed}); judge metrics: cluster bootstrap by episode`
  ]
}

export const renderMarkdown = (summary: Summary): string => {
  const lines = [`# vetobench report: ${summary.experiment.name}`, "", ...headerLines(summary), "", ...reportSections(summary).flatMap(section)]
  while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop()
  return `${lines.join("\n")}\n`
}
