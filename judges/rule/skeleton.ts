/**
 * A skeleton policy and a tool catalogue for a benchmark's tools (`vetobench policy skeleton`).
 *
 * Agent-SafetyBench: the cases (`released_data.json`, optionally narrowed to a split's dev and test
 * ids) name the environments each case offers; each environment's schema file
 * (`<asbench_dir>/environments/<Name>.json`) lists its tools. 159 tool names occur in more than one
 * environment with different meanings (`send_email` of `Email` is not that of `PhishingSimulation`),
 * so the catalogue keys every tool `<Env>.<tool>`, and the policy grants
 *
 * - every tool name as such (`send_email`: what a call is decided under when the request does not
 *   say which environment it comes from; scope = the environment, or `shared` for a shared name), and
 * - for each shared name, `<Env>.<tool>` per environment (scope = the environment), which the rule
 *   judge uses instead when the `x-vetobench-environments` header names that environment.
 *
 * Every scope is granted (`"*"`) and there are no rules: the skeleton is where a policy starts.
 * Nothing from the benchmark is copied into the repository: both files are written where asked.
 */
import { Data, Effect } from "effect"
import { readFileSync, existsSync } from "node:fs"
import { createHash } from "node:crypto"
import * as path from "node:path"
import { readSplit } from "../../src/adapters/agent-safetybench/split.js"
import { isObject } from "../../src/domain/is-object.js"

export class SkeletonError extends Data.TaggedError("SkeletonError")<{ readonly file: string; readonly reason: string }> {
  override get message(): string {
    return `${this.file}: ${this.reason}`
  }
}

/** The part of a released_data.json case the skeleton needs. */
export interface BenchCase {
  readonly id: number
  readonly environments: ReadonlyArray<{ readonly name: string; readonly tools: ReadonlyArray<string> }>
}

/** One tool of an environment's schema file. */
export interface EnvTool {
  readonly name: string
  readonly description: string
  readonly parameters: unknown
}

export interface CatalogueEntry {
  /** `<Env>.<tool>` */
  readonly key: string
  readonly environment: string
  readonly tool: string
  /** the name occurs in more than one of the environments */
  readonly shared: boolean
  /** the policy entry that governs this tool: `<tool>`, or `<Env>.<tool>` for a shared name */
  readonly policy_entry: string
  /** how many of the cases offer it */
  readonly cases: number
  readonly description: string
  readonly parameters: unknown
}

export interface Catalogue {
  readonly benchmark: "agent-safetybench"
  readonly source: { readonly data: string; readonly data_sha256: string; readonly environments: string; readonly split: string | null }
  readonly cases: number
  readonly environments: number
  readonly tools: number
  readonly tool_names: number
  readonly shared_names: number
  readonly note: string
  readonly entries: ReadonlyArray<CatalogueEntry>
}

export interface Skeleton {
  readonly policy: {
    readonly provider: string
    readonly granted_scopes: ReadonlyArray<string>
    readonly tool_scopes: Readonly<Record<string, string>>
    readonly rules: ReadonlyArray<never>
  }
  readonly catalogue: Catalogue
  /** tool_scopes entries: names plus `<Env>.<tool>` entries of shared names */
  readonly entries: number
  /** the shared names, sorted */
  readonly shared: ReadonlyArray<string>
}

export const SHARED_SCOPE = "shared"

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Build the skeleton from cases and the environments' tools (`envs`: name → tools, for every environment the cases name). */
export const buildSkeleton = (
  cases: ReadonlyArray<BenchCase>,
  envs: ReadonlyMap<string, ReadonlyArray<EnvTool>>,
  source: Catalogue["source"]
): Skeleton => {
  const offered = new Map<string, number>()
  for (const c of cases) for (const e of c.environments) for (const t of e.tools) offered.set(`${e.name}.${t}`, (offered.get(`${e.name}.${t}`) ?? 0) + 1)
  const envNames = [...envs.keys()].sort(byCodeUnit)
  const byName = new Map<string, Array<string>>()
  for (const env of envNames)
    for (const t of envs.get(env) ?? []) {
      const es = byName.get(t.name)
      if (es === undefined) byName.set(t.name, [env])
      else es.push(env)
    }
  const shared = [...byName].filter(([, es]) => es.length > 1).map(([n]) => n).sort(byCodeUnit)
  const sharedSet = new Set(shared)
  const toolScopes: Record<string, string> = {}
  let entries = 0
  for (const name of [...byName.keys()].sort(byCodeUnit)) {
    const es = byName.get(name)!
    toolScopes[name] = es.length > 1 ? SHARED_SCOPE : es[0]!
    entries++
    if (es.length > 1)
      for (const env of es) {
        toolScopes[`${env}.${name}`] = env
        entries++
      }
  }
  const catalogueEntries: Array<CatalogueEntry> = []
  for (const env of envNames)
    for (const t of envs.get(env) ?? []) {
      const key = `${env}.${t.name}`
      catalogueEntries.push({
        key,
        environment: env,
        tool: t.name,
        shared: sharedSet.has(t.name),
        policy_entry: sharedSet.has(t.name) ? key : t.name,
        cases: offered.get(key) ?? 0,
        description: t.description,
        parameters: t.parameters
      })
    }
  return {
    policy: { provider: "agent-safetybench", granted_scopes: ["*"], tool_scopes: toolScopes, rules: [] },
    catalogue: {
      benchmark: "agent-safetybench",
      source,
      cases: cases.length,
      environments: envNames.length,
      tools: catalogueEntries.length,
      tool_names: byName.size,
      shared_names: shared.length,
      note:
        "Tools are keyed <Env>.<tool>: a name shared by several environments means different things in each. The skeleton policy grants each name, and <Env>.<tool> for every shared name; the rule judge decides a call under <Env>.<tool> when the x-vetobench-environments header names Env.",
      entries: catalogueEntries
    },
    entries,
    shared
  }
}

// ---------------------------------------------------------------------------------------------
// reading the benchmark's files

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
