/**
 * Credentials in URLs never reach output. A configured URL (an upstream's `base_url`, a judge's
 * endpoint) may carry userinfo (`https://user:pass@host/v1`) or a credential query parameter
 * (`?api_key=…`); wherever such a URL is shown (error messages, logs, `smoke`, reports, audit
 * records) it goes through {@link redactUrl}, and text that may quote one (an undici / Node error
 * message, a config error) through {@link redactUrlsIn}.
 *
 * - the userinfo becomes `***` (`https://***@host/v1`); scheme, host, port, path stay, so the
 *   message still says where;
 * - the value of a query or fragment parameter whose name looks like a credential (`key`,
 *   `api_key`, `apikey`, `token`, `access_token`, `password`, `secret`, `sig`, … case-insensitive,
 *   also as the last `_`/`-` part of a longer name) becomes `***`;
 * - a URL with nothing to redact comes back exactly as given (never normalised).
 *
 * Userinfo is found as WHATWG URL parsing finds it (the authority ends at the first `/`, `?`, `#`,
 * for http(s) also `\`; the userinfo ends at the authority's last `@`, so an unencoded `@` in a
 * password is covered). Text that is not a valid URL is redacted more eagerly: everything before
 * its last `@` is taken as userinfo.
 *
 * This module imports nothing, so layers/, judges/ and src/ may all use it.
 */

export const REDACTED = "***"

/** schemes whose `//` WHATWG URL parsing does not require (and where `\` means `/`) */
const SPECIAL_SCHEMES: ReadonlySet<string> = new Set(["http", "https", "ws", "wss", "ftp", "file"])

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/

const CREDENTIAL_NAME =
  /^(?:.*[_.-])?(?:key|apikey|token|accesstoken|password|passwd|pwd|pass|secret|sig|signature|credential|credentials|auth)$/i

const decodeLoose = (s: string): string => {
  try {
    return decodeURIComponent(s.replace(/\+/g, " "))
  } catch {
    return s
  }
}

/** Whether a query / fragment parameter name (possibly percent-encoded) looks like it carries a credential. */
export const isCredentialParam = (name: string): boolean => CREDENTIAL_NAME.test(decodeLoose(name).trim())

/**
 * `a=1&api_key=x` → `a=1&api_key=***` (separators `&` and `;` kept as they are). Closing
 * punctuation ending a value stays (in text, `(…?key=x)` keeps its `)`).
 */
const redactParams = (params: string): string =>
  params
    .split(/([&;])/)
    .map((part) => {
      const eq = part.indexOf("=")
      if (eq <= 0 || eq === part.length - 1 || !isCredentialParam(part.slice(0, eq))) return part
      const value = part.slice(eq + 1)
      const core = value.replace(/[)\]},.:!]+$/, "")
      return `${part.slice(0, eq + 1)}${REDACTED}${core === "" ? "" : value.slice(core.length)}`
    })
    .join("")

/** Redact the credential parameters of the query and fragment in `rest` (what follows the authority). */
const redactQuery = (rest: string): string => {
  const hash = rest.indexOf("#")
  const beforeHash = hash < 0 ? rest : rest.slice(0, hash)
  const fragment = hash < 0 ? "" : `#${redactParams(rest.slice(hash + 1))}`
  const q = beforeHash.indexOf("?")
  return (q < 0 ? beforeHash : `${beforeHash.slice(0, q + 1)}${redactParams(beforeHash.slice(q + 1))}`) + fragment
}

interface Authority {
  /** index where the authority starts (after `scheme://`) */
  readonly start: number
  readonly special: boolean
}

/** Where `s`'s authority starts, as WHATWG URL parsing sees it; null when `s` has none (no scheme, or `mailto:`-like). */
const authorityOf = (s: string): Authority | null => {
  const m = SCHEME.exec(s)
  if (m === null) return null
  const after = m[0].length
  const special = SPECIAL_SCHEMES.has((m[1] ?? "").toLowerCase())
  if (special) {
    let i = after
    while (s[i] === "/" || s[i] === "\\") i++
    return { start: i, special }
  }
  return s.startsWith("//", after) ? { start: after + 2, special } : null
}

/**
 * Redact one URL, the whole of `s`, whose authority starts at `a.start`. `lenient` when `s` is
 * not a valid URL: then everything up to its last `@` is userinfo, and without any `@` an
 * authority `user:pa` (a password cut short, e.g. at a quote) loses what follows its colon
 * unless that is a port number.
 */
const redactWithAuthority = (s: string, a: Authority, lenient: boolean): string => {
  const found = s.slice(a.start).search(a.special || lenient ? /[/?#\\]/ : /[/?#]/)
  const end = found < 0 ? s.length : a.start + found
  const at = lenient ? s.lastIndexOf("@") : s.lastIndexOf("@", end - 1)
  if (at >= a.start) {
    const userinfo = at > a.start ? `${REDACTED}@` : "@"
    return `${s.slice(0, a.start)}${userinfo}${redactQuery(s.slice(at + 1))}`
  }
  if (lenient) {
    const authority = s.slice(a.start, end)
    const colon = authority.indexOf(":")
    if (!authority.startsWith("[") && colon >= 0 && !/^\d*$/.test(authority.slice(colon + 1))) {
      return `${s.slice(0, a.start + colon + 1)}${REDACTED}${redactQuery(s.slice(end))}`
    }
  }
  return `${s.slice(0, a.start)}${redactQuery(s.slice(a.start))}`
}

/** `scheme:opaque@host` without `//` (e.g. `user:pass@host:8000/v1`, which parses with scheme `user`) */
const SCHEMELESS_USERINFO = /^[^\s/?#@]+:[^\s/?#]*@(?=[^@\s]*$|[^@\s]*[/?#])/

/** Userinfo of a valid URL still visible after redaction (a safety net; should never happen). */
const stillHasCredentials = (redacted: string): boolean => {
  if (!URL.canParse(redacted)) return false
  const u = new URL(redacted)
  return (u.username !== "" && u.username !== REDACTED) || u.password !== ""
}

/** The URL rebuilt from its parsed parts without userinfo (only used by the safety net). */
const rebuilt = (url: string): string => {
  const u = new URL(url)
  const userinfo = u.username !== "" || u.password !== "" ? `${REDACTED}@` : ""
  return `${u.protocol}//${userinfo}${u.host}${redactQuery(`${u.pathname}${u.search}${u.hash}`)}`
}

/**
 * `url` with its userinfo replaced by `***` and the values of credential-like query parameters by
 * `***`: `https://user:pass@host/v1?api_key=k` → `https://***@host/v1?api_key=***`. Anything with
 * nothing to redact comes back unchanged. Meant for one configured URL; text that merely contains
 * URLs goes through {@link redactUrlsIn}.
 */
export const redactUrl = (url: string): string => {
  const a = authorityOf(url)
  if (a === null) {
    // no `scheme://`: a schemeless `user:pass@host/…`, or text that quotes a URL somewhere
    const m = SCHEMELESS_USERINFO.exec(url)
    return m !== null ? `${REDACTED}@${redactQuery(url.slice(m[0].length))}` : redactUrlsIn(url)
  }
  const valid = URL.canParse(url)
  const out = redactWithAuthority(url, a, !valid)
  return valid && stillHasCredentials(out) ? rebuilt(url) : out
}

/** The secrets of a known URL as they may appear in text, longest first (raw and percent-decoded; at least 4 characters). */
const secretsOf = (url: string): ReadonlyArray<string> => {
  const out = new Set<string>()
  const add = (s: string) => {
    for (const v of [s, decodeLoose(s)]) if (v.length >= 4) out.add(v)
  }
  const a = authorityOf(url)
  if (a !== null) {
    const found = url.slice(a.start).search(/[/?#]/)
    const end = found < 0 ? url.length : a.start + found
    const at = url.lastIndexOf("@", end - 1)
    if (at > a.start) add(url.slice(a.start, at))
  }
  if (URL.canParse(url)) {
    const u = new URL(url)
    // a password; a user alone (a token used as the user name)
    if (u.password !== "") add(u.password)
    else if (u.username !== "") add(u.username)
    for (const [k, v] of u.searchParams) if (isCredentialParam(k)) add(v)
  }
  return [...out].sort((x, y) => y.length - x.length)
}

/**
 * Every URL inside `text` redacted as by {@link redactUrl}, e.g. the message of undici's or
 * Node's errors, which may quote the URL it was given. A URL ends at whitespace, a quote, `<`,
 * `>` or a backtick; its userinfo, though, runs to the last `@` before the next whitespace, `/`,
 * `?` or `#`, so a password with a quote in it (`"http://u:pa\"ss@host"`) is still covered.
 * `known`: URLs whose credentials (password, or the user when there is no password, raw and
 * percent-decoded, and credential query values; at least 4 characters) are also replaced
 * wherever they appear in `text`, quoted in any form. Text without a URL comes back unchanged.
 */
export const redactUrlsIn = (text: string, known: ReadonlyArray<string> = []): string => {
  const start = /[A-Za-z][A-Za-z0-9+.-]*:/g
  const stopAt = /[\s"'<>`]/g
  const authorityEnd = /[\s/?#]/g
  const endFrom = (re: RegExp, i: number): number => {
    re.lastIndex = i
    return re.exec(text)?.index ?? text.length
  }
  let out = ""
  let last = 0
  for (let m = start.exec(text); m !== null; m = start.exec(text)) {
    const from = m.index
    let to = endFrom(stopAt, from)
    // punctuation after a URL (`http://h:80: refused`, `(see http://h/x).`) is not part of it when it parses without
    const bare = text.slice(from, to).replace(/[.,:;!?)\]}]+$/, "")
    if (bare.length < to - from && URL.canParse(bare)) to = from + bare.length
    const token = text.slice(from, to)
    const a = authorityOf(token)
    let redacted: string | null = null
    if (a !== null) {
      const userFrom = from + a.start
      const found = text.slice(userFrom, endFrom(authorityEnd, userFrom)).lastIndexOf("@")
      const at = found < 0 ? -1 : userFrom + found
      if (at >= to) {
        // the userinfo goes on past a quote or bracket: everything up to its `@` is userinfo
        to = endFrom(stopAt, at + 1)
        redacted = `${text.slice(from, userFrom)}${REDACTED}@${redactQuery(text.slice(at + 1, to))}`
      } else {
        redacted = redactWithAuthority(token, a, !URL.canParse(token))
      }
    } else if (SCHEMELESS_USERINFO.test(token)) {
      redacted = redactUrl(token)
    }
    if (redacted === null) {
      start.lastIndex = from + m[0].length
      continue
    }
    out += text.slice(last, from) + redacted
    last = to
    start.lastIndex = to
  }
  let result = out + text.slice(last)
  for (const url of known) for (const secret of secretsOf(url)) result = result.split(secret).join(REDACTED)
  return result
}
