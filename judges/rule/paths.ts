/**
 * Path rules of the `rule` judge's extensions (`vetobench.paths`, docs/policy.md): POSIX
 * normalisation against a workspace root, and protected names and globs.
 *
 * A path is taken as the tool will take it, as far as text allows: a relative path is resolved
 * against the workspace; `.` and empty segments (duplicate slashes) drop out; `..` removes the
 * segment before it (never above `/`). What text cannot settle is refused rather than guessed:
 * a backslash, a control character, a leading `~` (home-relative), a URL (`file://…`). Symbolic
 * links cannot be seen from the call and are not followed.
 */

/** A path that was not checked, with the reason (the rule fires with `cannot verify: …`). */
export class PathProblem {
  constructor(readonly why: string) {}
}

const hasControl = (s: string): boolean => {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c === 0x7f) return true
  }
  return false
}

/**
 * The normalised absolute form of `value` (a path string), resolved against `root` (absolute,
 * normalised) when relative; or the reason it cannot be checked. `arg` names the argument in reasons.
 */
/** Anything that needs a closer look: controls, backslash, `//`, `.` or `..` segments, a trailing `/`, `://`. */
const NOT_NORMAL = /[\x00-\x1f\x7f\\]|\/\/|\/\.\.?(?:\/|$)|\/$|:\/\//

export const normalizePath = (value: unknown, root: string, arg: string): string | PathProblem => {
  if (typeof value !== "string") return new PathProblem(`${arg} is not a path string`)
  // fast path: a path already in normal form (the common case) needs no splitting; a relative one
  // is joined to the (normal) root, so only its own text needs the look (and no leading `.` or `~`)
  const first = value.charCodeAt(0)
  if (first === 0x2f) {
    if (!NOT_NORMAL.test(value)) return value
  } else if (first !== 0x7e && first !== 0x2e && value !== "" && !NOT_NORMAL.test(value)) return root === "/" ? `/${value}` : `${root}/${value}`
  if (value === "") return new PathProblem(`${arg} is empty`)
  if (hasControl(value)) return new PathProblem(`${arg} contains a control character`)
  if (value.includes("\\")) return new PathProblem(`${arg} contains a backslash, which POSIX tools and others read differently`)
  if (value.startsWith("~")) return new PathProblem(`${arg} starts with ~ (home-relative paths are not resolved)`)
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value)) return new PathProblem(`${arg} is a URL, not a file path`)
  return normalizePosix(value.startsWith("/") ? value : `${root}/${value}`)
}

/** POSIX normalisation of an absolute path: `.`, empty segments and `..` resolved; `..` above `/` stays at `/`. */
export const normalizePosix = (abs: string): string => {
  const out: Array<string> = []
  for (const seg of abs.split("/")) {
    if (seg === "" || seg === ".") continue
    if (seg === "..") out.pop()
    else out.push(seg)
  }
  return `/${out.join("/")}`
}

/** `path` is `root` or below it (both normalised). */
export const isInside = (path: string, root: string): boolean =>
  root === "/" || path === root || (path.startsWith(root) && path.charCodeAt(root.length) === 0x2f)

/** The segments of `path` below `root` (empty for the root itself); call only when `isInside`. */
export const relativeSegments = (path: string, root: string): ReadonlyArray<string> => {
  const rest = root === "/" ? path.slice(1) : path.slice(root.length + 1)
  return rest === "" ? [] : rest.split("/")
}

// ---------------------------------------------------------------------------------------------
// protected names and globs

/** Default protected names: environment files, SSH keys, git internals. */
export const DEFAULT_PROTECTED: ReadonlyArray<string> = [".env*", ".ssh/", ".git/"]

const escapeRegex = (s: string) => s.replace(/[.+^${}()|[\]\\]/g, "\\$&")

/** One glob segment (`*` any run within a segment, `?` one character) as RegExp source. */
const segmentSource = (seg: string): string => escapeRegex(seg).replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]")

/** Why a protected entry is malformed, or null. */
export const protectedProblem = (entry: string): string | null => {
  if (entry === "" || entry === "/") return "is empty"
  if (hasControl(entry) || entry.includes("\\")) return "contains a control character or a backslash"
  const inner = entry.replace(/^\/+/, "").replace(/\/+$/, "")
  if (inner.split("/").some((s) => s === "" || s === "." || s === "..")) return "has an empty, . or .. segment"
  if (/\*\*/.test(inner.replace(/(^|\/)\*\*(\/|$)/g, "$1$2"))) return "uses ** inside a segment (** must be a whole segment)"
  return null
}

export interface ProtectedSet {
  /** the entries, as written */
  readonly entries: ReadonlyArray<string>
  /** the protected entry that `abs` (normalised, inside `root`) falls under, or null */
  readonly match: (abs: string, root: string) => string | null
}

/** The glob's segments match a leading part of `segs` (so the glob covers what lies below, too). */
const matchFrom = (pat: ReadonlyArray<RegExp | null>, pi: number, segs: ReadonlyArray<string>, si: number): boolean => {
  if (pi === pat.length) return true
  const p = pat[pi]!
  if (p === null) {
    for (let k = si; k <= segs.length; k++) if (matchFrom(pat, pi + 1, segs, k)) return true
    return false
  }
  return si < segs.length && p.test(segs[si]!) && matchFrom(pat, pi + 1, segs, si + 1)
}

const segmentRegex = (seg: string) => new RegExp(`^${segmentSource(seg)}$`, "i")

interface Anchored {
  readonly entry: string
  /** matched against the absolute path (entry starts with `/`) or the workspace-relative one */
  readonly absolute: boolean
  /** without `**`: one RegExp over the path text; with `**`: null (see `segments`) */
  readonly regex: RegExp | null
  /** one RegExp per segment, null for `**` */
  readonly segments: ReadonlyArray<RegExp | null>
}

/**
 * Compile protected entries (validated with `protectedProblem` first). An entry without an inner
 * `/` (a trailing one marks a directory, for the reader) is a **name**: any segment below the
 * workspace that matches it, case-insensitively, protects the path (`.env*` covers `.env`,
 * `.env.local`, `config/.envrc`; `.git/` covers `.git/config`). An entry with an inner `/` is a
 * **glob anchored** at the workspace (or at `/` when it starts with `/`), `**` spanning any number
 * of segments; it protects what it matches and everything below (`config/secrets` covers
 * `config/secrets/a`).
 */
export const compileProtected = (entries: ReadonlyArray<string>): ProtectedSet => {
  const names: Array<{ readonly entry: string; readonly regex: RegExp }> = []
  const anchored: Array<Anchored> = []
  for (const entry of entries) {
    const inner = entry.replace(/\/+$/, "")
    if (!inner.includes("/")) {
      names.push({ entry, regex: segmentRegex(inner) })
      continue
    }
    const absolute = inner.startsWith("/")
    const segs = inner.replace(/^\/+/, "").split("/")
    anchored.push({
      entry,
      absolute,
      regex: segs.includes("**") ? null : new RegExp(`^${segs.map(segmentSource).join("/")}(?:/|$)`, "i"),
      segments: segs.map((s) => (s === "**" ? null : segmentRegex(s)))
    })
  }
  // all names in one RegExp over the relative path: one test per path
  const names1 = names.length === 0 ? null : new RegExp(`(?:^|/)(?:${names.map((n) => segmentSource(n.entry.replace(/\/+$/, ""))).join("|")})(?:/|$)`, "i")
  return {
    entries,
    match: (abs, root) => {
      if (abs === root) return null
      const rel = root === "/" ? abs.slice(1) : abs.slice(root.length + 1)
      if (names1 !== null && names1.test(rel)) {
        const segs = rel.split("/")
        for (const n of names) if (segs.some((seg) => n.regex.test(seg))) return n.entry
      }
      for (const a of anchored) {
        const text = a.absolute ? abs.slice(1) : rel
        if (a.regex !== null ? a.regex.test(text) : matchFrom(a.segments, 0, text.split("/"), 0)) return a.entry
      }
      return null
    }
  }
}
