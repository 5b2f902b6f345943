/**
 * The holds page (`--proxy`): the proxy's pending holds, each with the call, its arguments, the
 * judge or rule that asked, the episode's calls so far and the time left, and a form to approve or
 * reject it with a note and the approver's name (posted to this server, which holds the token);
 * then the decided holds. `#holds-live` is re-fetched by `/view.js` every few seconds.
 */
import type { PendingHold } from "../gate/Holds.js"
import type { CallRecord } from "../domain/audit-record.js"
import type { DecidedHold } from "./holds.js"
import { html, type Html, jsonText as args } from "./html.js"

export interface PendingView {
  readonly hold: PendingHold
  /** the episode's calls in the local audit log (this one included), or null when the log is not local */
  readonly calls: ReadonlyArray<CallRecord> | null
  readonly auditFile: string | null
}

export interface DecidedView {
  readonly decided: DecidedHold
  /** what the local audit log's approval record says, or null when not found */
  readonly recorded: { readonly approval: string; readonly approver: string | null } | null
}


const secondsLeft = (expires: string, now: Date): string => {
  const left = Math.round((Date.parse(expires) - now.getTime()) / 1000)
  return Number.isNaN(left) ? "?" : left > 0 ? `${left} s left` : "expiring"
}

const callsSoFar = (p: PendingView): Html =>
  p.calls === null
    ? html`<p class="muted small">the episode's audit log is not under the runs directory: the proxy gives only this call</p>`
    : html`<table class="small"><thead><tr><th>#</th><th>call</th><th>verdict</th><th>effective</th><th>approval</th></tr></thead><tbody>${
      p.calls.map((c) =>
        html`<tr class="${c.hash === p.hold.id ? "changed" : ""}"><td>${c.seq}</td><td>${c.tool.name} <span class="muted">${args(c.tool.arguments).slice(0, 200)}</span></td><td>${
          c.verdict === null ? "—" : `${c.verdict.judge}: ${c.verdict.decision ?? c.verdict.status}`
        }</td><td>${c.effective_decision ?? "—"}</td><td>${c.approval}</td></tr>`
      )
    }</tbody></table><p class="muted small">from ${p.auditFile ?? ""}</p>`

const pendingCard = (p: PendingView, csrf: string, now: Date): Html => {
  const h = p.hold
  const v = h.verdict
  return html`<div class="hold-card" data-hold="${h.id}">
<h3><strong>${h.tool.name}</strong> <span class="tag hold" data-expires="${h.expires}">${secondsLeft(h.expires, now)}</span></h3>
<pre class="arguments">${args(h.tool.arguments)}</pre>
<p class="small">asked by: ${v === null ? "—" : html`<strong>${v.judge}</strong> (${v.kind}${v.model === null ? "" : html`, ${v.model}`}): ${v.decision ?? v.status}${v.category === "none" ? "" : html` · ${v.category}`} — ${v.reason}`}<br>
agent ${h.agent_model} · run ${h.run_id ?? "—"} · episode ${h.episode_id ?? "—"}${h.session_id === null ? "" : html` · session ${h.session_id}`}${h.principal === null ? "" : html` · principal ${h.principal}`} · held since ${h.created}</p>
<details><summary class="small">the episode's calls so far</summary>${callsSoFar(p)}</details>
<form class="decide" method="post" action="/holds/decide">
<input type="hidden" name="id" value="${h.id}"><input type="hidden" name="csrf" value="${csrf}">
<label class="small">approver<br><input type="text" name="approver" required maxlength="200" autocomplete="name"></label><br>
<label class="small">note<br><textarea name="note" rows="2" maxlength="2000"></textarea></label>
<div class="buttons"><button class="approve" type="submit" name="decision" value="approve">approve</button><button class="reject" type="submit" name="decision" value="reject">reject</button><span class="status small"></span></div>
</form></div>`
}

/** The part of the page `/view.js` refreshes. */
export const holdsLive = (pending: ReadonlyArray<PendingView>, decided: ReadonlyArray<DecidedView>, csrf: string, error: string | null, now: Date): Html =>
  html`${error === null ? "" : html`<p class="err">${error}</p>`}
<h2>pending (${pending.length})</h2>
${pending.length === 0 ? html`<p class="muted" id="no-pending">no call is waiting for a decision</p>` : pending.map((p) => pendingCard(p, csrf, now))}
<h2>decided</h2>
${
    decided.length === 0 ? html`<p class="muted">none yet (since this view started)</p>` : html`<table id="decided"><thead><tr><th>call</th><th>episode</th><th>outcome</th><th>approver</th><th>note</th><th>when</th><th>audit log</th></tr></thead><tbody>${
      decided.map(({ decided: d, recorded }) =>
        html`<tr data-hold="${d.hold.id}"><td><strong>${d.hold.tool.name}</strong> <span class="muted small">${args(d.hold.tool.arguments).slice(0, 160)}</span></td><td>${d.hold.episode_id ?? "—"}</td>
<td><span class="tag ${d.outcome === "approved" ? "allow" : d.outcome === "rejected" ? "deny" : ""}">${d.outcome}</span></td><td>${d.approver ?? "—"}</td><td>${d.note ?? ""}</td><td class="small">${d.at}</td>
<td class="small">${recorded === null ? html`<span class="muted">not local</span>` : `${recorded.approval}${recorded.approver === null ? "" : ` by ${recorded.approver}`}`}</td></tr>`
      )
    }</tbody></table>`
  }`

export const holdsPage = (proxy: string | null, live: Html | null): Html =>
  proxy === null
    ? html`<h1>Holds</h1><p class="notice">Start the view with <code>--proxy URL</code> (and the operator token in <code>$VETOBENCH_OPERATOR_TOKEN</code>) to see and decide the proxy's pending holds.</p>`
    : html`<h1>Holds at ${proxy}</h1><p class="small muted">refreshed every 3 s; decisions go through this server to the proxy's hold API</p><div id="holds-live" data-poll="3000">${live}</div>`
