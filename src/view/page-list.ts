/** The first page: every experiment under the runs directory, its runs and its reports. */
import { Effect } from "effect"
import type { ViewExperiment } from "./discover.js"
import { href, html, type Html } from "./html.js"
import { runIndex } from "./run-index.js"

const reportLinks = (e: ViewExperiment): Html => {
  const links = [
    e.reports.html ? html`<a href="${href("/report", { e: e.id, f: "html" })}">report.html</a>` : null,
    e.reports.markdown ? html`<a href="${href("/report", { e: e.id, f: "md" })}">report.md</a>` : null,
    e.reports.json ? html`<a href="${href("/report", { e: e.id, f: "json" })}">summary.json</a>` : null
  ].filter((l): l is Html => l !== null)
  return links.length === 0 ? html`<span class="muted">no report yet (vetobench report)</span>` : html`${links.map((l) => html`${l} `)}`
}

const experimentBlock = (e: ViewExperiment): Effect.Effect<Html> =>
  Effect.gen(function*() {
    const groups = new Map<string, { bench: string; model: string; modelDir: string; cells: Array<Html> }>()
    for (const run of e.runs) {
      const key = `${run.bench}\u0000${run.modelDir}`
      const g = groups.get(key) ?? { bench: run.bench, model: run.model, modelDir: run.modelDir, cells: [] }
      const read = yield* Effect.either(runIndex(e, run))
      if (read._tag === "Left") {
        // one unreadable run (a file replaced by a folder, no permission) does not hide the others
        g.cells.push(html`<tr><td>${run.variant}</td><td colspan="4" class="err">${read.left.message}</td></tr>`)
        groups.set(key, g)
        continue
      }
      const index = read.right
      // ASB's episodes are those its audit log names; the others' the rows of their result file (with or without calls)
      const episodes = run.bench === "asb" ? index.calls.size : index.cases.size
      const calls = [...index.calls.values()].reduce((n, l) => n + l.length, 0)
      const blocked = [...index.calls.values()].reduce((n, l) => n + l.filter((c) => c.blocked).length, 0)
      g.cells.push(
        html`<tr><td>${run.variant}${run.tags.length > 0 ? html` <span class="muted small">(${run.tags.join(", ")})</span>` : ""}</td><td>${episodes}</td><td>${calls}</td><td>${blocked}</td><td>${index.auditFiles.length === 0 ? html`<span class="muted">none found</span>` : index.auditFiles.length}</td></tr>`
      )
      groups.set(key, g)
    }
    const variants = e.variants.map((v) => html`<span class="tag">${v.name}${v.name === e.baseline ? " (paired arm)" : ""}</span>`)
    return html`<section class="experiment" data-experiment="${e.id}">
<h2>${e.name} <span class="muted small">${e.id}</span></h2>
<p class="small">${e.generatedAt === null ? "" : html`report generated ${e.generatedAt} · `}reports: ${reportLinks(e)}<br>variants: ${variants}<br>audit logs: ${e.auditDir ?? "not found"}</p>
${
      [...groups.values()].map((g) =>
        html`<h3>${g.bench} · ${g.model} — <a class="episodes-link" href="${href("/episodes", { e: e.id, bench: g.bench, model: g.modelDir })}">episodes</a>
 · <a href="${href("/episodes", { e: e.id, bench: g.bench, model: g.modelDir, changed: 1 })}">changed by the gate</a></h3>
<table><thead><tr><th>variant</th><th>episodes</th><th>calls (final attempts)</th><th>blocked</th><th>audit files</th></tr></thead><tbody>${g.cells}</tbody></table>`
      )
    }
${e.runs.length === 0 ? html`<p class="muted">no benchmark runs in this folder</p>` : ""}
</section>`
  })

export const listPage = (experiments: ReadonlyArray<ViewExperiment>): Effect.Effect<Html> =>
  Effect.gen(function*() {
    const blocks = yield* Effect.forEach(experiments, experimentBlock)
    return html`<h1>Experiments and runs</h1>
${experiments.length === 0 ? html`<p class="notice">No experiments here: a run directory holds <code>summary.json</code> or <code>asbench/</code>, <code>asb/</code> folders (vetobench run, vetobench demo).</p>` : blocks}`
  })
