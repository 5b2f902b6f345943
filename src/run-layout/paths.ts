/**
 * Where a run's files live: run ids, run directories, attack tags, the replay files and the audit
 * files a variant's calls are in. One home for these names (issue 20 §4): the runners write by
 * them, and merge, replay, scoring, the report and `view` read by them.
 *
 * ```
 * <run_dir>/asbench/<slug(model)>/<variant>/        gen_res.jsonl, gen_res.json, shield.jsonl,
 *                                                   attempts.jsonl, shards.json (files.ts)
 * <run_dir>/asb/<slug(model)>/<variant>/<tag>/      shardNN.csv, attempts.jsonl
 * <run_dir>/agentdojo/<slug(model)>/<variant>/      results.jsonl, attempts.jsonl, launch.log
 * <run_dir>/shards/<I>-of-<N>/asbench/…             one shard of a sharded run (shard.ts)
 * <run_dir>/replay/<bench>.<slug(model)>.jsonl      judge replay lines
 * <audit_dir>/<run id>.jsonl                        the proxy's audit file of a run id
 * ```
 *
 * Run id: `<experiment>.<bench>.<slug(model)>.<variant>` (`.shard-<I>-of-<N>` for a shard).
 * Only `src/domain` is imported here, so every folder of the harness can import this one.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { isObject } from "../domain/is-object.js"
import type { Arm } from "../domain/route.js"
import { auditFileName } from "../domain/run-id.js"
import { SHARDS_JSON } from "./files.js"

export type Bench = "asbench" | "asb"
/** every benchmark with runs of its own: run ids (`runIdFor`) and run directories */
export type RunBench = Bench | "agentdojo"

/** What the layout needs of an experiment: its name (run ids) and its run directory. */
export interface RunDirOf {
  readonly run_dir: string
}
export interface RunNameOf {
  readonly name: string
}
/** A variant as the layout sees it (`config/experiment.ts` `Variant`). */
export interface VariantOf {
  readonly name: string
}
/** An ASB attack as the layout sees it (`config/experiment.ts` `AsbAttack`). */
export interface AttackOf {
  readonly method: string
  readonly attack_type: string
}

/**
 * Runs of characters outside `[A-Za-z0-9_.-]` become `_` (no stripping). A result that is only dots
 * (`.`, `..`) or empty would name this folder or its parent as a path segment: its characters become
 * `_` too, so a slug is always a name inside the folder it is joined to.
 */
export const slug = (s: string): string => {
  const out = s.replace(/[^A-Za-z0-9_.-]+/g, "_")
  return /^\.*$/.test(out) ? "_".repeat(Math.max(1, out.length)) : out
}

/** `<experiment>.<bench>.<slug(model)>.<variant>` */
export const runIdFor = (exp: RunNameOf, bench: RunBench, model: string, v: VariantOf): string => `${exp.name}.${bench}.${slug(model)}.${v.name}`

/** `<run_dir>/asbench/<slug(model)>/<variant>` */
export const asbenchRunDir = (exp: RunDirOf, model: string, v: VariantOf): string => path.join(exp.run_dir, "asbench", slug(model), v.name)

/** `<run_dir>/asb/<slug(model)>/<variant>` (attack settings go one level below: `attackTag`) */
export const asbRunDir = (exp: RunDirOf, model: string, v: VariantOf): string => path.join(exp.run_dir, "asb", slug(model), v.name)

/** `<run_dir>/agentdojo/<slug(model)>/<variant>` (variants include `defense-<name>`: config/agentdojo.ts) */
export const agentdojoRunDir = (exp: RunDirOf, model: string, v: VariantOf): string => path.join(exp.run_dir, "agentdojo", slug(model), v.name)

/** `clean` for method clean, else `<method>-<attack_type>` */
export const attackTag = (a: AttackOf): string => (a.method === "clean" ? "clean" : `${a.method}-${a.attack_type}`)

export const REPLAY_DIR = "replay"

/** `<run_dir>/replay/<bench>.<slug(model)>.jsonl` */
export const replayFile = (exp: RunDirOf, bench: Bench, model: string): string => path.join(exp.run_dir, REPLAY_DIR, `${bench}.${slug(model)}.jsonl`)

/** The experiment's baseline variant (arm `baseline`: the only arm that logs calls unjudged). */
export const baselineVariant = <V extends { readonly arm: Arm }>(exp: { readonly variants: ReadonlyArray<V> }): V | undefined =>
  exp.variants.find((v) => v.arm === "baseline")

/** `<audit_dir>/<auditFileName(run id)>` of a model × variant × bench. */
export const auditFileFor = (auditDir: string, exp: RunNameOf, bench: RunBench, model: string, v: VariantOf): string =>
  path.join(auditDir, auditFileName(runIdFor(exp, bench, model, v)))

/** The audit files a merged run's `shards.json` lists (present or not), in shard order; null when the run has no readable `shards.json`. */
const listedShardAuditFiles = (exp: RunDirOf, bench: RunBench, model: string, v: VariantOf): ReadonlyArray<string> | null => {
  const index = bench === "asbench"
    ? path.join(asbenchRunDir(exp, model, v), SHARDS_JSON)
    : bench === "agentdojo"
    ? path.join(agentdojoRunDir(exp, model, v), SHARDS_JSON)
    : null
  if (index === null || !fs.existsSync(index)) return null
  const shards = shardsListed(index)
  return shards === null ? null : shards.flatMap((s) => (isObject(s) && typeof s.audit_file === "string" ? [s.audit_file] : []))
}

/**
 * The audit files that hold a model × variant × bench's calls, those that exist: for an
 * Agent-SafetyBench or AgentDojo run merged from shards (a `shards.json` beside its results), every shard's
 * audit file that merge listed, in shard order; otherwise the unsharded run id's file. [] when
 * there is none. An unreadable `shards.json` counts as absent. A listed file that is not there is
 * left out here and named by {@link missingShardAuditFiles}, which readers check so that the calls
 * of a lost shard log are never silently missing from a figure.
 */
export const auditFilesFor = (auditDir: string, exp: RunNameOf & RunDirOf, bench: RunBench, model: string, v: VariantOf): ReadonlyArray<string> => {
  const listed = listedShardAuditFiles(exp, bench, model, v)
  if (listed !== null) return listed.filter((f) => fs.existsSync(f))
  const file = auditFileFor(auditDir, exp, bench, model, v)
  return fs.existsSync(file) ? [file] : []
}

/** The audit files a merged run's `shards.json` lists that are not on disk (deleted, moved, never copied back from a node). */
export const missingShardAuditFiles = (exp: RunDirOf, bench: RunBench, model: string, v: VariantOf): ReadonlyArray<string> =>
  (listedShardAuditFiles(exp, bench, model, v) ?? []).filter((f) => !fs.existsSync(f))

/** The `shards` list of a `shards.json` (merge writes it with JSON.stringify), or null when unreadable. */
const shardsListed = (index: string): ReadonlyArray<unknown> | null => {
  try {
    // a FIFO or device there would block the reader (the view serves from one thread): regular files only
    if (!fs.statSync(index).isFile()) return null
    const v: unknown = JSON.parse(fs.readFileSync(index, "utf8"))
    return isObject(v) && Array.isArray(v.shards) ? v.shards : null
  } catch {
    return null
  }
}
