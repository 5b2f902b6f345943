/**
 * The page shell of the view: one inline stylesheet (allowed by its hash in the Content-Security-
 * Policy), one same-origin script (`/view.js`: live holds, decisions without a reload, filters that
 * apply on change), no fonts, images or anything from another origin.
 */
import { createHash } from "node:crypto"
import { html, type Html, raw } from "./html.js"

const CSS = `
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2327;background:#f6f7f9}
header{display:flex;gap:16px;align-items:center;padding:10px 20px;background:#1d2327;color:#fff}
header a{color:#fff;text-decoration:none;font-weight:600}
header .where{color:#b8c0c8;font-size:12px;margin-left:auto;overflow-wrap:anywhere}
main{padding:16px 20px;max-width:1600px}
h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:18px 0 8px}h3{font-size:14px;margin:12px 0 6px}
a{color:#0b5cad}
table{border-collapse:collapse;background:#fff;margin:6px 0 14px;width:100%}
th,td{border:1px solid #dde1e6;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f4;font-weight:600}
.muted{color:#66717c}.small{font-size:12px}
.tag{display:inline-block;padding:0 6px;border-radius:8px;background:#e6eaef;font-size:12px;margin:1px 2px 1px 0}
.safe{background:#d9f2e0}.unsafe{background:#f8d7d7}.error{background:#fde8c8}.unscored,.none{background:#e6eaef}
.allow{background:#d9f2e0}.deny{background:#f8d7d7}.hold{background:#fde8c8}.blocked{background:#f8d7d7;font-weight:600}
.changed{background:#fff4cc}
form.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:end;background:#fff;padding:8px;border:1px solid #dde1e6}
form.filters label{display:flex;flex-direction:column;font-size:12px}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:16px}
@media (max-width:900px){.pair{grid-template-columns:1fr}}
.arm{background:#fff;border:1px solid #dde1e6;padding:8px 12px;min-width:0}
.msg{border-left:4px solid #c9d1d9;padding:4px 8px;margin:6px 0;background:#fafbfc}
.msg.user{border-color:#0b5cad}.msg.assistant{border-color:#6b4fbb}.msg.tool{border-color:#2e7d32}.msg.system{border-color:#9aa4ae}
.role{font-size:12px;font-weight:600;color:#4d5761;text-transform:uppercase}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.call{border:1px dashed #6b4fbb;padding:4px 6px;margin:4px 0;background:#fff}
.ruling{font-size:12px;margin-top:3px}
.hold-card{background:#fff;border:1px solid #dde1e6;padding:10px 12px;margin:10px 0}
.hold-card textarea,.hold-card input[type=text]{width:100%;max-width:520px}
.buttons{display:flex;gap:8px;margin-top:6px}
button{padding:4px 12px;cursor:pointer}
button.approve{background:#2e7d32;color:#fff;border:0}button.reject{background:#b3261e;color:#fff;border:0}
.notice{padding:6px 10px;background:#fff4cc;border:1px solid #e9d48a;margin:8px 0}
.err{padding:6px 10px;background:#f8d7d7;border:1px solid #e0a3a3;margin:8px 0}
nav.pages{margin:6px 0}nav.pages a,nav.pages span{margin-right:8px}
`

/** The Content-Security-Policy of every page of the view (the stylesheet above by its hash). */
export const CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash("sha256").update(CSS).digest("base64")}'`,
  "script-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'"
].join("; ")

/**
 * The policy of a served report.html (its own inline styles and SVG; no scripts), sandboxed: the
 * report runs in an origin of its own, so even markup that slipped into it could not read the
 * view's pages (the holds page's form token) or post to it.
 */
export const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; sandbox"

/** `/view.js`: enhancement only; every page works without it. */
export const SCRIPT = `"use strict";
(() => {
  const $ = (s, el) => (el || document).querySelector(s);
  const $$ = (s, el) => [...(el || document).querySelectorAll(s)];
  // filters apply on change
  for (const f of $$("form.filters")) for (const el of $$("select, input[type=checkbox]", f)) el.addEventListener("change", () => f.submit());
  // time left of each pending hold
  const tick = () => {
    for (const el of $$("[data-expires]")) {
      const left = Math.round((Date.parse(el.dataset.expires) - Date.now()) / 1000);
      el.textContent = Number.isNaN(left) ? "?" : left > 0 ? left + " s left" : "expiring";
    }
  };
  const live = $("#holds-live");
  if (live === null) return;
  const approver = () => localStorage.getItem("vetobench.approver") || "";
  const fill = () => { for (const i of $$("input[name=approver]", live)) if (i.value === "") i.value = approver(); };
  const busy = () => $$("textarea, input[type=text]", live).some((i) => i === document.activeElement || (i.name === "note" && i.value !== ""));
  const refresh = async (force) => {
    if (!force && busy()) return;
    try {
      const res = await fetch("/holds/live", { headers: { accept: "text/html" }, cache: "no-store" });
      if (res.ok) { live.innerHTML = await res.text(); fill(); tick(); }
    } catch (e) { /* the next poll tries again */ }
  };
  live.addEventListener("submit", async (ev) => {
    const form = ev.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains("decide")) return;
    ev.preventDefault();
    const data = new URLSearchParams(new FormData(form));
    data.set("decision", ev.submitter && ev.submitter.value === "approve" ? "approve" : "reject");
    if (data.get("approver")) localStorage.setItem("vetobench.approver", data.get("approver"));
    const status = $(".status", form);
    for (const b of $$("button", form)) b.disabled = true;
    try {
      const res = await fetch("/holds/decide", { method: "POST", headers: { accept: "application/json", "content-type": "application/x-www-form-urlencoded" }, body: data });
      const body = await res.json();
      if (status) status.textContent = res.ok ? body.outcome : body.error.message;
      if (res.ok) await refresh(true);
      else for (const b of $$("button", form)) b.disabled = false;
    } catch (e) {
      if (status) status.textContent = "the view server did not answer";
      for (const b of $$("button", form)) b.disabled = false;
    }
  });
  fill();
  tick();
  setInterval(tick, 1000);
  setInterval(() => void refresh(false), Number(live.dataset.poll || "3000"));
})();
`

/** A whole page. */
export const page = (title: string, where: string, body: Html): Html =>
  html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} — vetobench view</title><link rel="icon" href="data:,"><style>${raw(CSS)}</style></head>
<body><header><a href="/">vetobench view</a><a href="/holds">holds</a><span class="where">${where}</span></header>
<main>${body}</main><script src="/view.js"></script></body></html>
`
