/**
 * URL rules of the `rule` judge's extensions (`vetobench.urls`, docs/policy.md): a strict URL
 * reader and host allowlist, and the detection of secrets sent along.
 *
 * The reader accepts what a careful human would read the same way as every HTTP client does, and
 * refuses the rest instead of guessing: no white space, control characters or backslashes (WHATWG
 * reads `\` as `/`); a scheme and `//`; **no user info** (`https://corp.example@evil.example` is
 * a classic disguise); a host of ASCII letters, digits, `-` and `.` only — any non-ASCII character
 * (IDN, a Cyrillic `а` homoglyph), punycode labels (`xn--`), percent-encoding and non-standard
 * numeric forms (`2130706433`, `0x7f.1`, `127.1`) are refused; an IPv6 literal in brackets; a
 * decimal port 1–65535.
 */

export type UrlRule = "VB-url-invalid" | "VB-url-userinfo" | "VB-url-idn"

export class UrlProblem {
  constructor(
    readonly rule: UrlRule,
    readonly why: string
  ) {}
}

export interface ParsedUrl {
  readonly scheme: string
  /** lower-case, one trailing dot removed; an IPv6 literal keeps its brackets */
  readonly host: string
  /** the explicit port, or null */
  readonly port: number | null
  /** `?…` without the `?` ("" when none) */
  readonly query: string
}

export const DEFAULT_PORTS: Readonly<Record<string, number>> = { http: 80, https: 443, ws: 80, wss: 443, ftp: 21 }

/** The port a URL reaches: its explicit port, else its scheme's default (null when unknown). */
export const effectivePort = (u: ParsedUrl): number | null => u.port ?? DEFAULT_PORTS[u.scheme] ?? null

const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/
const DIGITS = /^[0-9]+$/
const NUMERIC_LABEL = /^(?:0x[0-9a-f]*|[0-9]+)$/i

/**
 * The common shape, read in one step: a scheme, `//`, a host of ASCII letters, digits, `-`, `.`
 * (no user info, brackets or `%`), an optional port, then a path, query or fragment without white
 * space, controls or backslashes. Anything else takes the slow path, which says what is wrong.
 */
const COMMON = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([A-Za-z0-9.-]+)(?::([0-9]{1,5}))?(?:[/?#][^\x00-\x20\x7f\\]*)?$/
const HOST_NAME = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/
const PUNYCODE = /(?:^|\.)xn--/
const NUMERIC_LAST = /(?:^|\.)(?:0x[0-9a-f]*|[0-9]+)$/
const DOTTED_QUAD = /^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$/

/** Read `value` as a URL, or say why not (which rule fires). `arg` names the argument in reasons. */
export const parseUrl = (value: unknown, arg: string): ParsedUrl | UrlProblem => {
  if (typeof value === "string") {
    const m = COMMON.exec(value)
    if (m !== null) {
      let host = m[2]!.toLowerCase()
      if (host.endsWith(".")) host = host.slice(0, -1)
      const port = m[3] === undefined ? null : Number(m[3])
      if (HOST_NAME.test(host) && !PUNYCODE.test(host) && (!NUMERIC_LAST.test(host) || DOTTED_QUAD.test(host)) && (port === null || (port >= 1 && port <= 65535))) {
        const q = value.indexOf("?")
        const h = value.indexOf("#")
        const query = q < 0 || (h >= 0 && h < q) ? "" : value.slice(q + 1, h > q ? h : undefined)
        return { scheme: m[1]!.toLowerCase(), host, port, query }
      }
    }
  }
  return parseUrlSlowly(value, arg)
}

const parseUrlSlowly = (value: unknown, arg: string): ParsedUrl | UrlProblem => {
  const bad = (why: string) => new UrlProblem("VB-url-invalid", `${arg} ${why}`)
  if (typeof value !== "string") return bad("is not a URL string")
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (c <= 0x20 || c === 0x7f) return bad("contains white space or a control character")
    if (c === 0x5c) return bad("contains a backslash")
  }
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(value)
  if (m === null) return bad("has no scheme")
  const scheme = m[1]!.toLowerCase()
  const rest = value.slice(m[0].length)
  if (!rest.startsWith("//")) return bad("has no host (no // after the scheme)")
  const end = rest.slice(2).search(/[/?#]/)
  const authority = end < 0 ? rest.slice(2) : rest.slice(2, 2 + end)
  const tail = end < 0 ? "" : rest.slice(2 + end)
  const q = tail.indexOf("?")
  const query = q < 0 ? "" : tail.slice(q + 1).split("#")[0]!
  if (authority.includes("@")) return new UrlProblem("VB-url-userinfo", `${arg} carries user info before an @, which hides the real host`)
  let hostText: string
  let portText: string | null = null
  if (authority.startsWith("[")) {
    const close = authority.indexOf("]")
    if (close < 0) return bad("has an unclosed [ in its host")
    hostText = authority.slice(0, close + 1)
    const after = authority.slice(close + 1)
    if (after !== "") {
      if (!after.startsWith(":")) return bad("has text after its IPv6 host")
      portText = after.slice(1)
    }
    if (!/^\[[0-9a-fA-F:.]+\]$/.test(hostText) || !hostText.includes(":")) return bad("has a malformed IPv6 host")
  } else {
    const colon = authority.lastIndexOf(":")
    hostText = colon < 0 ? authority : authority.slice(0, colon)
    if (colon >= 0) portText = authority.slice(colon + 1)
  }
  let port: number | null = null
  if (portText !== null) {
    if (!DIGITS.test(portText) || portText.length > 5) return bad("has a port that is not a decimal number")
    port = Number(portText)
    if (port < 1 || port > 65535) return bad("has a port outside 1–65535")
  }
  if (hostText === "") return bad("has an empty host")
  for (let i = 0; i < hostText.length; i++) {
    if (hostText.charCodeAt(i) > 0x7e) return new UrlProblem("VB-url-idn", `${arg} has a non-ASCII host (an IDN or a look-alike character)`)
  }
  if (hostText.includes("%")) return bad("has a percent-encoded host")
  if (hostText.startsWith("[")) return { scheme, host: hostText.toLowerCase(), port, query }
  let host = hostText.toLowerCase()
  if (host.endsWith(".")) host = host.slice(0, -1)
  const labels = host.split(".")
  if (labels.some((l) => l.startsWith("xn--"))) return new UrlProblem("VB-url-idn", `${arg} has a punycode (xn--) host, which can spell a look-alike name`)
  if (labels.some((l) => !HOST_LABEL.test(l))) return bad("has a host that is not a plain host name")
  if (NUMERIC_LABEL.test(labels[labels.length - 1]!)) {
    const quad = labels.length === 4 && labels.every((l) => DIGITS.test(l) && (l === "0" || !l.startsWith("0")) && Number(l) <= 255)
    if (!quad) return bad("has a numeric host that is not a plain dotted IPv4 address")
  }
  return { scheme, host, port, query }
}

// ---------------------------------------------------------------------------------------------
// the allowlist

export interface HostAllow {
  readonly entry: string
  /** exact host, or the parent domain of a `*.` entry */
  readonly host: string
  /** `*.corp.example`: any subdomain (not corp.example itself) */
  readonly subdomains: boolean
  /** null: the scheme's default port only */
  readonly port: number | null
}

/** Parse an `allow_hosts` entry (`host`, `host:port`, `*.host`, `[::1]:8080`), or say why it is malformed. */
export const parseHostEntry = (entry: string): HostAllow | string => {
  if (/[/?#]/.test(entry)) return "is not a host name (a host, host:port or *.domain; no path)"
  const subdomains = entry.startsWith("*.")
  const probe = parseUrl(`https://${subdomains ? entry.slice(2) : entry}/`, "entry")
  if (probe instanceof UrlProblem) return probe.why.replace(/^entry /, "")
  if (entry !== entry.toLowerCase()) return "must be lower case"
  if (entry.endsWith(".") || entry.includes(".:")) return "must not end with a dot"
  return { entry, host: probe.host, subdomains, port: probe.port }
}

/** The entry that allows the URL's host and port, or null. */
export const hostAllowed = (u: ParsedUrl, allow: ReadonlyArray<HostAllow>): HostAllow | null => {
  const port = effectivePort(u)
  for (const a of allow) {
    const hostOk = a.subdomains ? u.host.length > a.host.length + 1 && u.host.endsWith(`.${a.host}`) : u.host === a.host
    if (!hostOk) continue
    if (a.port === null ? u.port === null || u.port === DEFAULT_PORTS[u.scheme] : port === a.port) return a
  }
  return null
}

// ---------------------------------------------------------------------------------------------
// secrets

/** Argument and query names that carry a secret (compared lower-cased, `-` read as `_`). */
export const DEFAULT_SECRET_KEYS: ReadonlyArray<string> = [
  "authorization",
  "proxy_authorization",
  "api_key",
  "apikey",
  "x_api_key",
  "api_token",
  "access_token",
  "auth_token",
  "refresh_token",
  "id_token",
  "session_token",
  "token",
  "bearer",
  "secret",
  "client_secret",
  "password",
  "passwd",
  "private_key",
  "cookie"
]

export const secretKeyName = (k: string): string => k.toLowerCase().replaceAll("-", "_")

const HEADER_LINE = /^\s*(authorization|proxy-authorization|x-api-key|api-key|cookie)\s*:/i
/** a whole value that is a credential: `Bearer eyJ…`, `Basic dXNlcjpwYXNz` */
const CREDENTIAL_VALUE = /^\s*(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}\s*$/i

const present = (v: unknown): boolean => v !== null && v !== undefined && v !== "" && v !== false

/**
 * Where a call's arguments (and the URL's query) carry a secret: a key in `keys` with a value
 * (at any depth, in objects and lists), a header line `Authorization: …` given as text, or a value
 * `Bearer …`/`Basic …`. Returns a short description (never the secret itself), or null.
 */
export const findSecret = (args: unknown, query: string, keys: ReadonlySet<string>): string | null => {
  if (query !== "") {
    for (const pair of query.split("&")) {
      const name = pair.split("=")[0] ?? ""
      let decoded = name
      try {
        decoded = decodeURIComponent(name)
      } catch {
        // keep the raw name
      }
      if (keys.has(secretKeyName(decoded)) && pair.length > name.length + 1) return `the URL's query parameter ${decoded}`
    }
  }
  return walk(args, keys, 0)
}

const walk = (v: unknown, keys: ReadonlySet<string>, depth: number): string | null => {
  if (depth > 8) return null
  if (typeof v === "string") {
    const h = HEADER_LINE.exec(v)
    if (h !== null) return `an ${h[1]} header`
    if (CREDENTIAL_VALUE.test(v)) return "a credential value (Bearer/Basic)"
    return null
  }
  if (Array.isArray(v)) {
    for (const e of v) {
      const f = walk(e, keys, depth + 1)
      if (f !== null) return f
    }
    return null
  }
  if (typeof v === "object" && v !== null) {
    for (const [k, e] of Object.entries(v)) {
      if (keys.has(secretKeyName(k)) && present(e)) return `the argument ${k}`
      const f = walk(e, keys, depth + 1)
      if (f !== null) return f
    }
  }
  return null
}
