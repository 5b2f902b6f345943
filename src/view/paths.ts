/**
 * Path parameters of the view (an experiment's folder, a bench, a model, a variant, a report file)
 * never leave the runs directory: a relative path with `/` separators and no `.`/`..` segment, no
 * backslash, NUL or drive letter, resolved with symlinks followed and checked to be inside the
 * runs directory's own real path. Names of one folder (bench, model, variant, attack tag) are one
 * such segment: any name a folder can have (spaces, quotes, `%`) but no separator or control
 * character; what a name spells is never decoded again, so `%2e%2e` is a folder named `%2e%2e`.
 */
import { Data, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

/** A path parameter was refused (`status` 400) or names nothing there (404). */
export class ViewPathError extends Data.TaggedError("ViewPathError")<{ readonly param: string; readonly status: 400 | 404; readonly reason: string }> {
  override get message(): string {
    return `${this.param}: ${this.reason}`
  }
}

/** One folder name: no separator (`/`, `\\`), NUL or other control character; at most 200 characters. */
const SEGMENT = /^[^/\\\u0000-\u001f\u007f]{1,200}$/

/** Why `s` is not one safe folder name, or null. */
export const segmentProblem = (s: string): string | null =>
  s === "." || s === ".."
    ? "must not be . or .."
    : SEGMENT.test(s)
    ? null
    : "must be one folder name: 1 to 200 characters, no / or \\, no control characters"

/** Why `rel` is not a safe relative path, or null. */
export const relativeProblem = (rel: string): string | null => {
  if (rel === "") return "must not be empty"
  if (rel.length > 1000) return "is too long"
  if (rel.startsWith("/") || /^[A-Za-z]:/.test(rel)) return "must be relative to the runs directory"
  for (const part of rel.split("/")) {
    const p = segmentProblem(part)
    if (p !== null) return `segment '${part}' ${p}`
  }
  return null
}

const realpath = (p: string): string | null => {
  try {
    return fs.realpathSync(p)
  } catch {
    return null
  }
}

/** `inner` (a real path) is `root` (a real path) or below it. */
export const isInside = (root: string, inner: string): boolean => inner === root || inner.startsWith(root.endsWith(path.sep) ? root : root + path.sep)

/**
 * The real path of `rel` under `root` (itself a real path), when it exists and stays inside it:
 * 400 for a path that is not a safe relative path or that resolves (through a symlink) outside;
 * 404 when nothing is there.
 */
export const resolveInside = (root: string, rel: string, param: string): Effect.Effect<string, ViewPathError> =>
  Effect.suspend(() => {
    const problem = relativeProblem(rel)
    if (problem !== null) return Effect.fail(new ViewPathError({ param, status: 400, reason: problem }))
    const real = realpath(path.join(root, ...rel.split("/")))
    if (real === null) return Effect.fail(new ViewPathError({ param, status: 404, reason: `nothing at '${rel}'` }))
    if (!isInside(root, real)) return Effect.fail(new ViewPathError({ param, status: 400, reason: "resolves outside the runs directory" }))
    return Effect.succeed(real)
  })

/** One folder name (`segmentProblem`) as an Effect. */
export const checkSegment = (s: string, param: string): Effect.Effect<string, ViewPathError> => {
  const problem = segmentProblem(s)
  return problem === null ? Effect.succeed(s) : Effect.fail(new ViewPathError({ param, status: 400, reason: problem }))
}
