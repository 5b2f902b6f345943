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
 * Reading the benchmark's files is the adapter's (src/adapters/agent-safetybench/skeleton.ts).
 */

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

export const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

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
