/**
 * What a runs directory holds, as the view lists it: the experiments (a folder with a
 * `summary.json`, or with benchmark folders `asbench/`, `asb/`, `agentdojo/` laid out as
 * `<bench>/<slug(model)>/<variant>`), each with its models, variants, runs and report files, and
 * where its audit logs are. Read on every request (small directories; episode files are indexed
 * separately, `index.ts`). Symlinked folders are not followed while searching.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { type RunBench, slug } from "../run-layout/paths.js"
import { isObject } from "../domain/is-object.js"
import { isInside } from "./paths.js"

export const BENCHES: ReadonlyArray<RunBench> = ["asbench", "asb", "agentdojo"]
export type ViewBench = RunBench

/** Folders that are never experiments (searched no further). */
const NOT_EXPERIMENTS = new Set(["audit", "audit-mcp", "replay", "receipts", "keys", "shards", "node_modules"])
/** How deep below the runs directory experiments are looked for. */
const MAX_DEPTH = 3

export interface ViewVariant {
  readonly name: string
  readonly arm: string
  readonly judge: string | null
}

export interface ViewRun {
  readonly bench: ViewBench
  /** the model's name (from the summary), else its folder name */
  readonly model: string
  /** its folder name under `<bench>/` */
  readonly modelDir: string
  readonly variant: string
  /** ASB: the attack tags run (sub-folders of the variant folder) */
  readonly tags: ReadonlyArray<string>
  /** the variant's folder (real path) */
  readonly dir: string
}

export interface ViewExperiment {
  /** the folder relative to the runs directory, `/`-separated: the experiment's id in URLs */
  readonly id: string
  readonly dir: string
  readonly name: string
  readonly generatedAt: string | null
  readonly summary: Record<string, unknown> | null
  readonly variants: ReadonlyArray<ViewVariant>
  /** the variant paired differences are taken against (`baseline`, else `passthrough`), or null */
  readonly baseline: string | null
  readonly runs: ReadonlyArray<ViewRun>
  readonly reports: { readonly html: boolean; readonly markdown: boolean; readonly json: boolean }
  /** where the run's audit logs are (real path), or null when none is found */
  readonly auditDir: string | null
}

const dirs = (dir: string): Array<string> => {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !d.name.startsWith("."))
      .map((d) => d.name)
      .sort()
  } catch {
    return []
  }
}

const isFile = (p: string) => {
  try {
    return fs.statSync(p).isFile()
  } catch {
    return false
  }
}

const realDir = (p: string): string | null => {
  try {
    const r = fs.realpathSync(p)
    return fs.statSync(r).isDirectory() ? r : null
  } catch {
    return null
  }
}

/** A symlink, or gone since its folder was listed. */
const isSymlink = (p: string) => {
  try {
    return fs.lstatSync(p).isSymbolicLink()
  } catch {
    return true
  }
}

const readSummary = (dir: string): Record<string, unknown> | null => {
  const file = path.join(dir, "summary.json")
  if (!isFile(file)) return null
  try {
    const v: unknown = JSON.parse(fs.readFileSync(file, "utf8"))
    return isObject(v) ? v : null
  } catch {
    return null
  }
}

const strings = (v: unknown): Array<string> => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [])

/** A variant named by its folder: `baseline`, `passthrough`, `<arm>-<judge>`. */
export const variantFromName = (name: string): ViewVariant => {
  const m = /^(shadow|enforce)-(.+)$/.exec(name)
  return m !== null ? { name, arm: m[1]!, judge: m[2]! } : { name, arm: name, judge: null }
}

const variantsOf = (summary: Record<string, unknown> | null, found: ReadonlyArray<string>): Array<ViewVariant> => {
  const exp = isObject(summary?.experiment) ? summary.experiment : {}
  const listed = Array.isArray(exp.variants)
    ? exp.variants.flatMap((v): Array<ViewVariant> =>
      isObject(v) && typeof v.name === "string" && typeof v.arm === "string" ? [{ name: v.name, arm: v.arm, judge: typeof v.judge === "string" ? v.judge : null }] : []
    )
    : []
  const names = new Set(listed.map((v) => v.name))
  return [...listed, ...found.filter((n) => !names.has(n)).map(variantFromName)]
}

const hasBench = (dir: string) => BENCHES.some((b) => realDir(path.join(dir, b)) !== null)

const runsOf = (dir: string, models: ReadonlyArray<string>): Array<ViewRun> => {
  const bySlug = new Map(models.map((m) => [slug(m), m]))
  const out: Array<ViewRun> = []
  for (const bench of BENCHES) {
    for (const modelDir of dirs(path.join(dir, bench))) {
      for (const variant of dirs(path.join(dir, bench, modelDir))) {
        const vdir = realDir(path.join(dir, bench, modelDir, variant))
        if (vdir === null || !isInside(dir, vdir)) continue
        out.push({ bench, model: bySlug.get(modelDir) ?? modelDir, modelDir, variant, tags: bench === "asb" ? dirs(vdir) : [], dir: vdir })
      }
    }
  }
  return out
}

/** The experiment's audit folder: the summary's `audit_dir`, else `audit/` beside the experiment, else in the runs directory. */
const auditDirOf = (root: string, dir: string, summary: Record<string, unknown> | null): string | null => {
  const exp = isObject(summary?.experiment) ? summary.experiment : {}
  const candidates = [typeof exp.audit_dir === "string" ? exp.audit_dir : null, path.join(path.dirname(dir), "audit"), path.join(root, "audit")]
  for (const c of candidates) {
    const r = c === null ? null : realDir(c)
    if (r !== null) return r
  }
  return null
}

const experimentAt = (root: string, dir: string): ViewExperiment | null => {
  const summary = readSummary(dir)
  if (summary === null && !hasBench(dir)) return null
  const exp = isObject(summary?.experiment) ? summary.experiment : {}
  const runs = runsOf(dir, strings(exp.models))
  const variants = variantsOf(summary, [...new Set(runs.map((r) => r.variant))])
  const named = typeof exp.baseline === "string" ? exp.baseline : null
  const baseline = named ?? variants.find((v) => v.arm === "baseline")?.name ?? variants.find((v) => v.arm === "passthrough")?.name ?? null
  const rel = path.relative(root, dir).split(path.sep).join("/")
  return {
    id: rel === "" ? "." : rel,
    dir,
    name: typeof exp.name === "string" ? exp.name : path.basename(dir),
    generatedAt: typeof summary?.generated_at === "string" ? summary.generated_at : null,
    summary,
    variants,
    baseline,
    runs,
    reports: { html: isFile(path.join(dir, "report.html")), markdown: isFile(path.join(dir, "report.md")), json: isFile(path.join(dir, "summary.json")) },
    auditDir: auditDirOf(root, dir, summary)
  }
}

/** Every experiment under `root` (a real path), in path order. */
export const discoverExperiments = (root: string): Array<ViewExperiment> => {
  const out: Array<ViewExperiment> = []
  const walk = (dir: string, depth: number) => {
    const e = experimentAt(root, dir)
    if (e !== null) {
      out.push(e)
      return
    }
    if (depth >= MAX_DEPTH) return
    for (const d of dirs(dir)) {
      if (NOT_EXPERIMENTS.has(d)) continue
      const p = path.join(dir, d)
      if (isSymlink(p)) continue
      walk(p, depth + 1)
    }
  }
  walk(root, 0)
  return out
}

/** The experiment whose id is `id`, found again by walking (ids are what `discoverExperiments` gives). */
export const findExperiment = (root: string, id: string): ViewExperiment | null => discoverExperiments(root).find((e) => e.id === id) ?? null
