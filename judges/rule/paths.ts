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
export const normalizePath = (value: unknown, root: string, arg: string): string | PathProblem => {
  if (typeof value !== "string") return new PathProblem(`${arg} is not a path string`)
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
  /** the protected entry that `segments` (below the workspace; `abs` the whole path) falls under, or null */
  readonly match: (abs: string, segments: ReadonlyArray<string>) => string | null
}

interface AnchoredGlob {
  readonly entry: string
  /** match against the absolute path (entry starts with `/`) or the workspace-relative one */
  readonly absolute: boolean
  /** one RegExp per segment; null for `**` */
  readonly segments: ReadonlyArray<RegExp | null>
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
  const anchored: Array<AnchoredGlob> = []
  for (const entry of entries) {
    const inner = entry.replace(/\/+$/, "")
    if (!inner.includes("/")) {
      names.push({ entry, regex: segmentRegex(inner) })
      continue
    }
    const absolute = inner.startsWith("/")
    anchored.push({ entry, absolute, segments: inner.replace(/^\/+/, "").split("/").map((s) => (s === "**" ? null : segmentRegex(s))) })
  }
  // one alternation for all names: one test per segment
  const nameRegex = names.length === 0 ? null : new RegExp(`^(?:${names.map((n) => segmentSource(n.entry.replace(/\/+$/, ""))).join("|")})$`, "i")
  return {
    entries,
    match: (abs, segments) => {
      if (nameRegex !== null)
        for (let i = 0; i < segments.length; i++) {
          const seg = segments[i]!
          if (nameRegex.test(seg)) return names.find((n) => n.regex.test(seg))!.entry
        }
      for (const a of anchored) if (matchFrom(a.segments, 0, a.absolute ? abs.slice(1).split("/") : segments, 0)) return a.entry
      return null
    }
  }
}
