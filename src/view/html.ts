/**
 * HTML built from template literals with one rule: every interpolated value is escaped, unless it
 * is itself an `Html` fragment made by `html` (or `raw` for the few constants this folder owns).
 * Strings, numbers and arrays of those are escaped (`&`, `<`, `>`, `"`, `'`, `` ` ``), so a value
 * can go between tags and into a quoted attribute alike; `null`, `undefined` and `false` render as
 * nothing. URLs of the view are built with `href` (components URI-encoded, then escaped as any value).
 */

/** A trusted fragment of HTML: built by `html`, never from a plain string a caller passes. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

export type Interpolated = Html | string | number | boolean | null | undefined | ReadonlyArray<Interpolated>

const ESCAPES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" }

/** Text safe between tags and inside a quoted attribute value. */
export const escapeHtml = (s: string): string => s.replace(/[&<>"'`]/g, (c) => ESCAPES[c] ?? c)

const render = (v: Interpolated): string => {
  if (v instanceof Html) return v.value
  if (v === null || v === undefined || v === false) return ""
  if (Array.isArray(v)) return v.map(render).join("")
  return escapeHtml(String(v))
}

/** `html\`<td>${value}</td>\``: the literal parts as written, every value escaped (see the module doc). */
export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<Interpolated>): Html => {
  let out = strings[0] ?? ""
  values.forEach((v, i) => {
    out += render(v) + (strings[i + 1] ?? "")
  })
  return new Html(out)
}

/** A constant of this folder's own (CSS, the script tag): never call it with data. */
export const raw = (constant: string): Html => new Html(constant)

/** `/path?k=v&…` with each key and value URI-encoded; null and undefined values are left out. */
export const href = (pathname: string, query: Readonly<Record<string, string | number | null | undefined>> = {}): string => {
  const parts = Object.entries(query).flatMap(([k, v]) => (v === null || v === undefined ? [] : [`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`]))
  return parts.length === 0 ? pathname : `${pathname}?${parts.join("&")}`
}

/** A tool call's arguments (or any JSON value) as text: a string as it is, anything else as JSON; nothing for `undefined`. */
export const jsonText = (a: unknown): string => (typeof a === "string" ? a : JSON.stringify(a, null, 1) ?? "")
