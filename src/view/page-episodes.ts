/** The episodes of one experiment × bench × model: filters (variant, category, outcome, changed by the gate) and pages. */
import type { ViewExperiment } from "./discover.js"
import type { EpisodeFilter, EpisodePage } from "./episodes.js"
import { href, html, type Html } from "./html.js"

export interface EpisodesTarget {
  readonly exp: ViewExperiment
  readonly bench: string
  readonly modelDir: string
  readonly model: string
  readonly variants: ReadonlyArray<string>
}

const option = (value: string, label: string, selected: boolean): Html => html`<option value="${value}"${selected ? html` selected` : ""}>${label}</option>`

const select = (name: string, label: string, values: ReadonlyArray<string>, current: string | null): Html =>
  html`<label>${label}<select name="${name}">${option("", "any", current === null)}${values.map((v) => option(v, v, v === current))}</select></label>`

export const episodesPage = (t: EpisodesTarget, f: EpisodeFilter, p: EpisodePage): Html => {
  const base = { e: t.exp.id, bench: t.bench, model: t.modelDir }
  const query = { ...base, variant: f.variant, category: f.category, outcome: f.outcome, changed: f.changed ? 1 : null }
  const rows = p.rows.map((r) => {
    const link = href("/episode", { ...base, variant: r.variant, id: r.episode, session: r.session })
    return html`<tr class="${r.changed ? "changed" : ""}" data-episode="${r.episode}" data-variant="${r.variant}">
<td><a href="${link}">${r.episode}</a></td><td>${r.variant}</td><td>${r.categories.map((c) => html`<span class="tag">${c}</span>`)}</td>
<td>${r.outcome === null ? html`<span class="muted">—</span>` : html`<span class="tag ${r.outcome}">${r.outcome}</span>`}</td>
<td>${r.calls}</td><td>${r.blocked > 0 ? html`<span class="tag blocked">${r.blocked}</span>` : "0"}</td><td>${r.flip ?? ""}</td><td>${r.changed ? "yes" : ""}</td></tr>`
  })
  const pages = p.pages <= 1
    ? html``
    : html`<nav class="pages">${p.page > 1 ? html`<a href="${href("/episodes", { ...query, page: p.page - 1 })}">← previous</a>` : ""}<span>page ${p.page} of ${p.pages}</span>${
      p.page < p.pages ? html`<a href="${href("/episodes", { ...query, page: p.page + 1 })}">next →</a>` : ""
    }</nav>`
  return html`<h1>${t.exp.name}: ${t.bench} · ${t.model}</h1>
<p class="small"><a href="/">all experiments</a> · paired arm: ${t.exp.baseline ?? "none"} · changed by the gate = a blocked call in the final attempt, or safe↔unsafe flipped against the paired arm</p>
<form class="filters" method="get" action="/episodes">
<input type="hidden" name="e" value="${t.exp.id}"><input type="hidden" name="bench" value="${t.bench}"><input type="hidden" name="model" value="${t.modelDir}">
${select("variant", "variant", t.variants, f.variant)}${select("category", "category", p.categories, f.category)}${select("outcome", "outcome", p.outcomes, f.outcome)}
<label>changed by the gate<input type="checkbox" name="changed" value="1"${f.changed ? html` checked` : ""}></label>
<button type="submit">filter</button></form>
<p class="small" id="counts">${p.matching} of ${p.total} episode rows match</p>
${pages}
<table id="episodes"><thead><tr><th>episode</th><th>variant</th><th>category</th><th>outcome</th><th>calls</th><th>blocked</th><th>flip vs paired arm</th><th>changed</th></tr></thead>
<tbody>${rows}</tbody></table>
${pages}`
}
