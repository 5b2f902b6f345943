/**
 * Text helpers of the `rule` judge that reproduce Go's behaviour (aex-toolgate, `../spec/toolgate.md`
 * §1.4–1.5): the single-plain-value test, the text form of a JSON value (`fmt.Sprint`), Go's
 * `strings.TrimSpace` / `ToLower` / `EqualFold`, and the host a `domain` rule reads (Go's
 * `net/url.Parse` + `Hostname()` for URLs). Nothing here allocates on the common path beyond the
 * strings it returns.
 */

// ---------------------------------------------------------------------------------------------
// white space and case, as Go's unicode package sees them

/** Go's `unicode.IsSpace` (Latin-1 and the Z category spaces); differs from JS `trim()` (U+0085 in, U+FEFF out). */
export const isGoSpace = (c: number): boolean =>
  (c >= 0x09 && c <= 0x0d) ||
  c === 0x20 ||
  c === 0x85 ||
  c === 0xa0 ||
  c === 0x1680 ||
  (c >= 0x2000 && c <= 0x200a) ||
  c === 0x2028 ||
  c === 0x2029 ||
  c === 0x202f ||
  c === 0x205f ||
  c === 0x3000

/** Go's `strings.TrimSpace`. */
export const goTrimSpace = (s: string): string => {
  let a = 0
  let b = s.length
  while (a < b && isGoSpace(s.charCodeAt(a))) a++
  while (b > a && isGoSpace(s.charCodeAt(b - 1))) b--
  return a === 0 && b === s.length ? s : s.slice(a, b)
}

const isAsciiString = (s: string): boolean => {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false
  return true
}

/**
 * Go's `strings.ToLower`: one code point to one code point. JS maps U+0130 (İ) to two code points
 * ("i" + combining dot); Go maps it to "i", which is the first of the two.
 */
export const goToLower = (s: string): string => {
  if (isAsciiString(s)) return s.toLowerCase()
  let out = ""
  for (const ch of s) {
    const lower = ch.toLowerCase()
    const first = lower.codePointAt(0)
    out += first === undefined || lower.length === ch.length ? lower : String.fromCodePoint(first)
  }
  return out
}

const foldRune = (ch: string): string => {
  const lower = ch.toLowerCase()
  return [...lower].length === 1 ? lower : ch
}

/** Go's `strings.EqualFold` (simple case folding), exact for ASCII. */
export const goEqualFold = (a: string, b: string): boolean => {
  if (a === b) return true
  if (isAsciiString(a) && isAsciiString(b)) return a.length === b.length && a.toLowerCase() === b.toLowerCase()
  const ra = [...a]
  const rb = [...b]
  if (ra.length !== rb.length) return false
  for (let i = 0; i < ra.length; i++) {
    const x = ra[i]!
    const y = rb[i]!
    if (x === y) continue
    if (foldRune(x) !== foldRune(y) && foldRune(x.toUpperCase()) !== foldRune(y.toUpperCase())) return false
  }
  return true
}

/** The sensitive_field normalisation: lower-cased, trimmed, `-` → `_`. */
export const normalizeField = (s: string): string => goToLower(goTrimSpace(s)).replaceAll("-", "_")

// ---------------------------------------------------------------------------------------------
// the text form of a value

/**
 * The text of a number. JSON.parse has already turned the literal into a float64, so this is the
 * shortest round-trip form (`1250.0` → `1250`, `1e3` → `1000`); the Go gate's HTTP path keeps the
 * literal. Identical for integer literals below 2^53 and for decimals written in shortest form.
 */
export const numberText = (n: number): string => String(n)

/**
 * Go's `fmt.Sprint` of a decoded JSON value (what `lookup` compares and reports): strings as is,
 * numbers as text, `<nil>` for null, `[a b]` for lists, `map[k:v …]` (keys sorted) for objects.
 */
export const goText = (v: unknown): string => {
  if (typeof v === "string") return v
  if (typeof v === "number") return numberText(v)
  if (typeof v === "boolean") return v ? "true" : "false"
  if (v === null || v === undefined) return "<nil>"
  if (Array.isArray(v)) return `[${v.map(goText).join(" ")}]`
  if (typeof v === "object") {
    const o = v as Record<string, unknown>
    const keys = Object.keys(o).sort(byteOrder)
    return `map[${keys.map((k) => `${k}:${goText(o[k])}`).join(" ")}]`
  }
  return String(v)
}

const byteOrder = (a: string, b: string): number => {
  const x = Buffer.from(a, "utf8")
  const y = Buffer.from(b, "utf8")
  return Buffer.compare(x, y)
}

/**
 * The single-plain-value test (Go's `atomicValue`): a JSON string, number or boolean whose text has
 * no surrounding white space and none of `, ; < > " ' \`, space, tab, CR, LF, VT, FF, NUL or any
 * control character (< 0x20, 0x7F). Returns the text, or null when the value is not plain.
 */
export const plainText = (v: unknown): string | null => {
  let s: string
  if (typeof v === "string") s = v
  else if (typeof v === "number") s = numberText(v)
  else if (typeof v === "boolean") return v ? "true" : "false"
  else return null
  const n = s.length
  if (n === 0) return s
  if (isGoSpace(s.charCodeAt(0)) || isGoSpace(s.charCodeAt(n - 1))) return null
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x21 || c === 0x7f) return null // controls, space (and NUL, TAB, CR, LF, VT, FF)
    if (c === 0x2c || c === 0x3b || c === 0x3c || c === 0x3e || c === 0x22 || c === 0x27 || c === 0x5c) return null
  }
  return s
}

/** A JSON number usable in a comparison (Go rejects literals out of float64 range; JSON.parse makes them ±Infinity). */
export const finiteNumber = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null)

// ---------------------------------------------------------------------------------------------
// domain: the host of an email address, a URL or a bare host name

export const HOST_NOT_URL = "is not a URL with a host"
export const HOST_AMBIGUOUS = "has more than one @, so its domain is ambiguous"
export const HOST_NOT_ASCII = "has no plain ASCII host"

/** True when `hostOf` returned a reason instead of a host (a host never contains a space). */
export const isHostProblem = (r: string): boolean => r === HOST_NOT_URL || r === HOST_AMBIGUOUS || r === HOST_NOT_ASCII

/** Bytes 0x21–0x7E only (Go's `isASCII` in the gate). */
const isPlainAscii = (s: string): boolean => {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x21 || c > 0x7e) return false
  }
  return true
}

/**
 * The host a domain rule checks (Go's `hostOf`), lower-cased with one trailing dot removed, or one of
 * the HOST_* reasons. URL if the text contains `://` (userinfo ignored); else the part after the single
 * `@`; else the whole text.
 */
export const hostOf = (s: string): string => {
  let host: string
  if (s.includes("://")) {
    const h = goUrlHostname(s)
    if (h === null) return HOST_NOT_URL
    host = h
  } else {
    const at = s.indexOf("@")
    if (at >= 0) {
      if (s.indexOf("@", at + 1) >= 0) return HOST_AMBIGUOUS
      host = s.slice(at + 1)
    } else {
      host = s
    }
  }
  host = goToLower(host)
  if (host.endsWith(".")) host = host.slice(0, -1)
  if (host === "" || !isPlainAscii(host)) return HOST_NOT_ASCII
  return host
}

const isAlpha = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)
const isDigit = (c: number) => c >= 0x30 && c <= 0x39
const isHex = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)

/** Every `%` is followed by two hex digits (Go's `unescape` check for paths, fragments, userinfo). */
const validEscapes = (s: string): boolean => {
  for (let i = s.indexOf("%"); i >= 0; i = s.indexOf("%", i + 1)) {
    if (i + 2 >= s.length || !isHex(s.charCodeAt(i + 1)) || !isHex(s.charCodeAt(i + 2))) return false
  }
  return true
}

/** `""` or `:` followed by digits only. */
const validOptionalPort = (p: string): boolean => {
  if (p === "") return true
  if (p.charCodeAt(0) !== 0x3a) return false
  for (let i = 1; i < p.length; i++) if (!isDigit(p.charCodeAt(i))) return false
  return true
}

const USERINFO_PUNCT = "-._:~!$&'()*+,;=%@"
const validUserinfo = (s: string): boolean => {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (isAlpha(c) || isDigit(c)) continue
    if (!USERINFO_PUNCT.includes(s[i]!)) return false
  }
  return true
}

const HOST_PUNCT = "!$&'()*+,;=:[]<>\"-_.~"
/**
 * Go's `unescape(host, encodeHost)`: `%` escapes only for non-ASCII bytes (or `%25`), other ASCII
 * outside the host alphabet is an error. Escaped non-ASCII bytes become U+0080 here (the caller only
 * needs to know the host is not plain ASCII). Null on error.
 */
const unescapeHost = (s: string): string | null => {
  if (!s.includes("%")) {
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i)
      if (c < 0x80 && !isAlpha(c) && !isDigit(c) && !HOST_PUNCT.includes(s[i]!)) return null
    }
    return s
  }
  let out = ""
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 0x25) {
      if (i + 2 >= s.length || !isHex(s.charCodeAt(i + 1)) || !isHex(s.charCodeAt(i + 2))) return null
      const hi = parseInt(s[i + 1]!, 16)
      if (hi < 8 && s.slice(i, i + 3) !== "%25") return null
      out += hi < 8 ? "%" : "\u0080"
      i += 2
      continue
    }
    if (c < 0x80 && !isAlpha(c) && !isDigit(c) && !HOST_PUNCT.includes(s[i]!)) return null
    out += s[i]
  }
  return out
}

/**
 * `url.Parse(s)` followed by `Hostname()` as in Go's net/url (no request mode): null when the
 * parse fails or the host is empty.
 */
export const goUrlHostname = (raw: string): string | null => {
  let s = raw
  const hash = s.indexOf("#")
  if (hash >= 0) {
    if (!validEscapes(s.slice(hash + 1))) return null
    s = s.slice(0, hash)
  }
  // scheme: a letter, then letters, digits, + - . up to the first ':'
  let scheme = ""
  let rest = s
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (isAlpha(c)) continue
    if (isDigit(c) || c === 0x2b || c === 0x2d || c === 0x2e) {
      if (i === 0) break
      continue
    }
    if (c === 0x3a) {
      if (i === 0) return null // missing protocol scheme
      scheme = s.slice(0, i)
      rest = s.slice(i + 1)
    }
    break
  }
  const q = rest.indexOf("?")
  if (q >= 0) rest = rest.slice(0, q)
  // no authority (opaque, relative, or `///`): the host is empty
  if (!rest.startsWith("//") || (scheme === "" && rest.startsWith("///"))) return null
  let authority = rest.slice(2)
  let path = ""
  const slash = authority.indexOf("/")
  if (slash >= 0) {
    path = authority.slice(slash)
    authority = authority.slice(0, slash)
  }
  let hostPart = authority
  const at = authority.lastIndexOf("@")
  if (at >= 0) {
    const userinfo = authority.slice(0, at)
    if (!validUserinfo(userinfo) || !validEscapes(userinfo)) return null
    hostPart = authority.slice(at + 1)
  }
  if (hostPart.startsWith("[")) {
    const close = hostPart.lastIndexOf("]")
    if (close < 0 || !validOptionalPort(hostPart.slice(close + 1))) return null
  } else {
    const colon = hostPart.lastIndexOf(":")
    if (colon >= 0 && !validOptionalPort(hostPart.slice(colon))) return null
  }
  let host = unescapeHost(hostPart)
  if (host === null || !validEscapes(path)) return null
  const colon = host.lastIndexOf(":")
  if (colon >= 0 && validOptionalPort(host.slice(colon))) host = host.slice(0, colon)
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1)
  return host === "" ? null : host
}
