/**
 * One episode: for its variant and the paired arm side by side, the trajectory (messages, proposed
 * calls with the ruling of each, tool results) and every call record of the final attempt
 * (judge, verdict, reason, latency, each layer's verdict, the hold's decision) — blocked calls
 * never reach the trajectory, so the rulings table lists them all.
 */
import type { Verdict } from "../domain/verdict.js"
import type { EpisodeView, Message, Ruling } from "./episode.js"
import { href, html, type Html, jsonText as args } from "./html.js"

export interface EpisodeTarget {
  readonly expId: string
  readonly expName: string
  readonly bench: string
  readonly modelDir: string
  readonly model: string
  readonly episode: string
  readonly session: string | null
  readonly variants: ReadonlyArray<string>
}

const ms = (n: number): string => (n >= 1 ? `${n.toFixed(1)} ms` : `${Math.round(n * 1000)} µs`)

const verdictLine = (v: Verdict): Html =>
  html`<span class="tag ${v.decision ?? "error"}">${v.judge}: ${v.status === "ok" ? v.decision : v.status}</span> ${v.category === "none" ? "" : html`<span class="tag">${v.category}</span>`} ${v.reason}
<span class="muted">(${v.kind}${v.model === null ? "" : html`, ${v.model}`}; ${ms(v.latency_ms)}${v.cached ? ", cached" : ""})</span>`

const rulingOf = (r: Ruling): Html => {
  const rec = r.record
  const layers = rec.layers.length > 1 ? html`<div>layers: ${rec.layers.map((l) => html`<div>${verdictLine(l)}</div>`)}</div>` : ""
  const approval = r.approval === null
    ? ""
    : html`<div>hold: <span class="tag ${r.approval.approval === "approved" ? "allow" : "deny"}">${r.approval.approval}</span> by ${r.approval.approver ?? "—"}${
      r.approval.note === null ? "" : html` — ${r.approval.note}`
    }</div>`
  return html`<div class="ruling">${rec.verdict === null ? html`<span class="muted">not judged (${rec.arm})</span>` : verdictLine(rec.verdict)}
· effective <span class="tag ${rec.effective_decision ?? ""}">${rec.effective_decision ?? "—"}</span>${rec.blocked ? html` <span class="tag blocked">blocked</span>` : ""}
· gate ${ms(rec.gate_ms)}${layers}${approval}</div>`
}


/**
 * The ruling of each call the agent got, taken in log order: the first not yet shown with the
 * call's id and tool name. Ids repeat across rounds (a backend that numbers each response's calls
 * from `call_0`), so one id can name several calls; a blocked call never reached the agent, so it
 * is never the ruling of a call in the trajectory.
 */
class RulingQueue {
  private readonly left: Array<Ruling>
  constructor(rulings: ReadonlyArray<Ruling>) {
    this.left = rulings.filter((r) => !r.record.blocked && r.record.tool_call_id !== null)
  }
  take(id: string, name: string): Ruling | undefined {
    const i = this.left.findIndex((r) => r.record.tool_call_id === id && r.record.tool.name === name)
    return i === -1 ? undefined : this.left.splice(i, 1)[0]
  }
}

const messageBlock = (m: Message, queue: RulingQueue): Html =>
  html`<div class="msg ${m.role}"><div class="role">${m.role}${m.name === null ? "" : html` · ${m.name}`}${m.toolCallId === null ? "" : html` <span class="muted small">(${m.toolCallId})</span>`}</div>
${m.content === "" ? "" : html`<pre>${m.content}</pre>`}
${
    m.calls.map((c) => {
      const r = c.id === null ? undefined : queue.take(c.id, c.name)
      const ruling = r !== undefined ? rulingOf(r) : c.id === null ? "" : html`<div class="ruling muted">no ruling recorded for this call</div>`
      return html`<div class="call"><strong>${c.name}</strong> <span class="muted small">${c.id ?? ""}</span><pre>${c.arguments}</pre>${ruling}</div>`
    })
  }</div>`

const rulingsTable = (rulings: ReadonlyArray<Ruling>): Html =>
  html`<table class="rulings"><thead><tr><th>#</th><th>call</th><th>ruling</th></tr></thead><tbody>${
    rulings.map((r) =>
      html`<tr class="${r.record.blocked ? "changed" : ""}"><td>${r.record.seq}</td><td><strong>${r.record.tool.name}</strong><pre>${args(r.record.tool.arguments)}</pre></td><td>${rulingOf(r)}</td></tr>`
    )
  }</tbody></table>`

const armColumn = (v: EpisodeView, title: string): Html => {
  const queue = new RulingQueue(v.rulings)
  return html`<section class="arm" data-variant="${v.variant}">
<h2>${title}: ${v.variant} ${v.outcome === null ? "" : html`<span class="tag ${v.outcome}">${v.outcome}</span>`}</h2>
${!v.found ? html`<p class="notice">this episode is not in this variant's files</p>` : ""}
<h3>trajectory</h3>
${v.messages === null ? html`<p class="muted small">the run files hold no trajectory for this bench; the calls below are from the audit log</p>` : v.messages.map((m) => messageBlock(m, queue))}
<h3>rulings (${v.rulings.length} call${v.rulings.length === 1 ? "" : "s"}, final attempt)</h3>
${v.rulings.length === 0 ? html`<p class="muted small">no call records</p>` : rulingsTable(v.rulings)}
</section>`
}

export const episodePage = (t: EpisodeTarget, mine: EpisodeView, paired: EpisodeView | null): Html => {
  const base = { e: t.expId, bench: t.bench, model: t.modelDir, id: t.episode, session: t.session }
  const switcher = t.variants.map((v) =>
    v === mine.variant ? html`<span class="tag">${v}</span>` : html`<a class="tag" href="${href("/episode", { ...base, variant: v, pair: v === paired?.variant ? mine.variant : paired?.variant })}">${v}</a>`
  )
  const pairs = t.variants.filter((v) => v !== mine.variant).map((v) =>
    v === paired?.variant ? html`<span class="tag">${v}</span>` : html`<a class="tag" href="${href("/episode", { ...base, variant: mine.variant, pair: v })}">${v}</a>`
  )
  return html`<h1>${t.episode}${t.session === null ? "" : html` <span class="muted small">session ${t.session}</span>`}</h1>
<p class="small"><a href="${href("/episodes", { e: t.expId, bench: t.bench, model: t.modelDir })}">${t.expName}: ${t.bench} · ${t.model}</a>
· categories: ${mine.categories.map((c) => html`<span class="tag">${c}</span>`)}<br>variant: ${switcher}<br>side by side with: ${pairs}</p>
<div class="pair">${armColumn(mine, "this arm")}${paired === null ? html`<section class="arm"><p class="muted">no paired arm</p></section>` : armColumn(paired, "paired arm")}</div>`
}
