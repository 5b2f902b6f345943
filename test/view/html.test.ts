/** The view's HTML builder escapes every interpolated value; URLs are encoded, then escaped. */
import { describe, expect, it } from "vitest"
import { escapeHtml, href, html, raw } from "../../src/view/html.js"

const HOSTILE = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "' onmouseover='alert(1)", "`${x}`", "&lt;already&gt;"]

describe("escapeHtml / html", () => {
  it("escapes the six characters that matter between tags and in quoted attributes", () => {
    expect(escapeHtml(`<a href="x" title='y'>&\`</a>`)).toBe("&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&#96;&lt;/a&gt;")
  })

  it("no hostile value survives as markup, in text or in an attribute", () => {
    for (const v of HOSTILE) {
      const out = html`<td title="${v}">${v}</td>`.value
      expect(out).not.toMatch(/<(script|img)/i)
      expect(out.match(/"/g)?.length).toBe(2) // only the template's own quotes
      expect(out).not.toContain("'")
      expect(out.startsWith('<td title="')).toBe(true)
    }
  })

  it("arrays and nested fragments: values escaped once, fragments kept; null, undefined and false render nothing", () => {
    const inner = html`<b>${"<i>"}</b>`
    expect(html`${[inner, "<u>", 3, null, undefined, false]}`.value).toBe("<b>&lt;i&gt;</b>&lt;u&gt;3")
    expect(html`${raw("<style>x</style>")}`.value).toBe("<style>x</style>")
  })

  it("href encodes each query part; the result is still escaped when interpolated", () => {
    const u = href("/episode", { id: 'asb:"><script>:x', e: "a/b&c", skip: null })
    expect(u).toBe("/episode?id=asb%3A%22%3E%3Cscript%3E%3Ax&e=a%2Fb%26c")
    expect(html`<a href="${u}">`.value).toBe('<a href="/episode?id=asb%3A%22%3E%3Cscript%3E%3Ax&amp;e=a%2Fb%26c">')
  })
})
