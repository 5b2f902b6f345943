/**
 * `vetobench policy skeleton --benchmark agent-safetybench`: reads the benchmark's files (the
 * cases of `released_data.json`, optionally narrowed to a split's dev and test ids, and each
 * environment's schema file `<environments>/<Name>.json`) and builds the skeleton policy and tool
 * catalogue with the rule judge's `buildSkeleton` (judges/rule/skeleton.ts).
 */
import { Data, Effect } from "effect"
import { readFileSync, existsSync } from "node:fs"
import { createHash } from "node:crypto"
import * as path from "node:path"
import { type BenchCase, buildSkeleton, byCodeUnit, type EnvTool, type Skeleton } from "../../../judges/rule/skeleton.js"
import { isObject } from "../../domain/is-object.js"
import { readSplit } from "./split.js"

export class SkeletonError extends Data.TaggedError("SkeletonError")<{ readonly file: string; readonly reason: string }> {
  override get message(): string {
    return `${this.file}: ${this.reason}`
  }
}

const readJson = (file: string): Effect.Effect<unknown, SkeletonError> =>
  Effect.try({
    try: () => JSON.parse(readFileSync(file, "utf8")) as unknown,
    catch: (e) => {
      const code = typeof e === "object" && e !== null && "code" in e ? String(e.code) : ""
      return new SkeletonError({
        file,
        reason: code === "ENOENT" ? "not found" : e instanceof SyntaxError ? `not valid JSON: ${e.message}` : `cannot read: ${e instanceof Error ? e.message : String(e)}`
      })
    }
  })

/** The cases of released_data.json (environments without a name — cases that offer no tools — dropped). */
export const readCases = (file: string): Effect.Effect<ReadonlyArray<BenchCase>, SkeletonError> =>
  Effect.flatMap(readJson(file), (raw) => {
    if (!Array.isArray(raw)) return Effect.fail(new SkeletonError({ file, reason: "must be a list of cases" }))
    const cases: Array<BenchCase> = []
    for (const [i, c] of raw.entries()) {
      if (!isObject(c) || typeof c.id !== "number" || !Array.isArray(c.environments)) {
        return Effect.fail(new SkeletonError({ file, reason: `case ${i} has no numeric id or no environments list` }))
      }
      const environments = c.environments
        .filter(isObject)
        .map((e) => ({ name: typeof e.name === "string" ? e.name : "", tools: Array.isArray(e.tools) ? e.tools.filter((t): t is string => typeof t === "string") : [] }))
        .filter((e) => e.name !== "")
      cases.push({ id: c.id, environments })
    }
    return Effect.succeed(cases)
  })

/** The dev and test ids of a split file (as `vetobench split` writes it). */
export const readSplitIds = (file: string): Effect.Effect<ReadonlySet<number>, SkeletonError> =>
  readSplit(file).pipe(
    Effect.map((s) => new Set([...s.dev, ...s.test])),
    Effect.mapError((e) => new SkeletonError({ file: e.file, reason: e.reason }))
  )

/** The tools of each environment the cases name, from `<dir>/<Name>.json`. */
export const readEnvironments = (dir: string, names: ReadonlyArray<string>): Effect.Effect<ReadonlyMap<string, ReadonlyArray<EnvTool>>, SkeletonError> =>
  Effect.gen(function* () {
    const out = new Map<string, ReadonlyArray<EnvTool>>()
    const missing = names.filter((n) => !existsSync(path.join(dir, `${n}.json`)))
    if (missing.length > 0) {
      return yield* new SkeletonError({ file: dir, reason: `no schema file for ${missing.length} environment(s): ${missing.slice(0, 5).join(", ")}${missing.length > 5 ? ", …" : ""}` })
    }
    for (const name of names) {
      const file = path.join(dir, `${name}.json`)
      const raw = yield* readJson(file)
      if (!Array.isArray(raw)) return yield* new SkeletonError({ file, reason: "must be a list of tool schemas" })
      out.set(
        name,
        raw.filter(isObject).flatMap((t) =>
          typeof t.name === "string" ? [{ name: t.name, description: typeof t.description === "string" ? t.description : "", parameters: t.parameters ?? null }] : []
        )
      )
    }
    return out
  })

/** Where the environments' schema files are: `<dir of data>/environments`, else `<dir of data>/../environments` (a checkout's `data/`). */
export const environmentsDirFor = (dataFile: string): string => {
  const beside = path.join(path.dirname(dataFile), "environments")
  return existsSync(beside) ? beside : path.join(path.dirname(path.dirname(dataFile)), "environments")
}

export interface SkeletonInput {
  readonly data: string
  readonly environments: string
  readonly split: string | null
}

/** Read the benchmark's files and build the skeleton. */
export const asbenchSkeleton = (input: SkeletonInput): Effect.Effect<Skeleton, SkeletonError> =>
  Effect.gen(function* () {
    const all = yield* readCases(input.data)
    const ids = input.split === null ? null : yield* readSplitIds(input.split)
    const cases = ids === null ? all : all.filter((c) => ids.has(c.id))
    if (cases.length === 0) return yield* new SkeletonError({ file: input.split ?? input.data, reason: "selects no cases" })
    const names = [...new Set(cases.flatMap((c) => c.environments.map((e) => e.name)))].sort(byCodeUnit)
    const envs = yield* readEnvironments(input.environments, names)
    const sha = createHash("sha256").update(readFileSync(input.data)).digest("hex")
    return buildSkeleton(cases, envs, { data: input.data, data_sha256: sha, environments: input.environments, split: input.split })
  })
