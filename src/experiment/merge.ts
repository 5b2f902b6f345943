/**
 * `vetobench merge`: the N shards of an Agent-SafetyBench run (`vetobench run --shard I/N`,
 * experiment/shard.ts) combined into the unsharded run directory, for one model × variant.
 *
 * Checks, all before anything is written (a failed check writes nothing):
 * - every shard with cases has its `gen_res.jsonl`, holding every one of its cases (the split's
 *   cases, when the experiment names a split, whose id hashes to that shard) — a missing or
 *   unfinished shard is named with the command that completes it;
 * - every record belongs to the shard it was found in (so no case appears in two shards);
 * - every shard's audit file (`<audit_dir>/<run id>.shard-<I>-of-<N>.jsonl`) exists and
 *   verifies (audit/verify-files `verifyFile`: chain, anchor beside it, signatures with `trusted`);
 *   status `failed` aborts with the file's path (`partial` — a check that could not be made — is
 *   reported, not fatal).
 * - the target holds no unsharded run of its own (a directory without `shards.json` but with a
 *   `gen_res.jsonl`).
 *
 * Written into `<run_dir>/asbench/<slug(model)>/<variant>/`: `gen_res.jsonl` (the last record
 * per case of every shard, sorted by id), `gen_res.json` (as `runAsbench` writes it),
 * `shield.jsonl` when every shard with cases has one, and `shards.json` listing the shards,
 * their run ids and their audit files. Audit files are not merged or rewritten — each keeps its
 * own hash chain and anchor; `shards.json` says which belong to the run. Merging again after a
 * shard was re-run replaces the merged files.
 */
import { Data, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { auditFileName } from "../domain/run-id.js"
import { cliCommand } from "../shell/hint.js"
import { recordStatus } from "../adapters/agent-safetybench/episode.js"
import { GEN_RES_JSON, GEN_RES_JSONL, SHARDS_JSON, SHIELD_JSONL } from "../run-layout/files.js"
import { genResJson, loadCases, splitIds } from "../adapters/agent-safetybench/run.js"
import { jsonLine, lastById, readJsonl, writeFileAtomic } from "../run-layout/store.js"
import { reportLine, verifyFile } from "../audit/verify-files.js"
import { asbenchRunDir, runIdFor } from "../run-layout/paths.js"
import { type Experiment, routeFor, type Variant } from "../config/experiment.js"
import type { Settings } from "../config/settings.js"
import type { CheckpointKey } from "../domain/checkpoint.js"
import { allShards, selectShard, SHARD_HASH, shardExperiment, shardName, shardOf, shardRunId } from "../run-layout/shard.js"

export class MergeError extends Data.TaggedError("MergeError")<{ readonly message: string }> {}

export interface MergedShard {
  readonly shard: string
  readonly run_id: string
  /** the shard's `asbench/<model>/<variant>` directory */
  readonly dir: string
  /** cases of the shard */
  readonly cases: number
  /** records found (last line per id) */
  readonly records: number
  /** null: a shard without cases, which never called the proxy */
  readonly audit_file: string | null
  readonly audit_status: "ok" | "partial" | null
  readonly audit_records: number
  readonly shield: boolean
}

export interface MergeSummary {
  readonly route: string
  readonly run_id: string
  readonly dir: string
  readonly genRes: string
  readonly records: number
  readonly status: Readonly<Record<string, number>>
  /** shield.jsonl written */
  readonly shield: boolean
  readonly shards: ReadonlyArray<MergedShard>
}

const storeError = (e: { readonly message: string }) => new MergeError({ message: e.message })

/**
 * A shard's audit file (`<audit_dir>/<shard run id>.jsonl`) verified: required when the shard had
 * work (`needed`), else checked only if present; `failed` verification is a MergeError naming the
 * file. Shared by every benchmark's merge (Agent-SafetyBench here, AgentDojo in adapters/agentdojo).
 */
export const verifyShardAudit = (
  settings: Settings,
  route: string,
  name: string,
  shardRunIdText: string,
  needed: boolean,
  trusted: CheckpointKey | null
) =>
  Effect.gen(function*() {
    const auditFile = path.join(settings.proxy.audit_dir, auditFileName(shardRunIdText))
    if (!fs.existsSync(auditFile) && !needed) return { auditFile, auditStatus: null, auditRecords: 0 } as const
    const report = yield* verifyFile(auditFile, null, trusted).pipe(
      Effect.mapError((e) => new MergeError({ message: `shard ${name} of ${route}: audit file ${e.message}` }))
    )
    if (report.status === "failed") {
      return yield* new MergeError({ message: `shard ${name} of ${route}: audit file ${auditFile} failed verification: ${reportLine(report)}` })
    }
    return { auditFile, auditStatus: report.status, auditRecords: report.records } as const
  })

const readRecords = (file: string) => readJsonl(file).pipe(Effect.map(lastById), Effect.mapError(storeError))

/** Merge the `count` shards of one model × variant. */
export const mergeAsbench = (
  exp: Experiment,
  settings: Settings,
  model: string,
  variant: Variant,
  count: number,
  trusted: CheckpointKey | null
): Effect.Effect<MergeSummary, MergeError> =>
  Effect.gen(function*() {
    const route = routeFor(model, variant)
    const runId = runIdFor(exp, "asbench", model, variant)
    const dir = asbenchRunDir(exp, model, variant)
    if (fs.existsSync(path.join(dir, GEN_RES_JSONL)) && !fs.existsSync(path.join(dir, SHARDS_JSON))) {
      return yield* new MergeError({ message: `${dir} holds an unsharded run (gen_res.jsonl without ${SHARDS_JSON}); merge would overwrite it` })
    }
    const ids = yield* Effect.mapError(splitIds(exp), storeError)
    const cases = yield* Effect.mapError(loadCases(path.join(settings.paths.asbench_dir, "data", "released_data.json"), ids), storeError)

    const merged = new Map<number, Record<string, unknown>>()
    const shields = new Map<number, Record<string, unknown>>()
    const parts: Array<MergedShard> = []
    let shieldAll = true
    for (const shard of allShards(count)) {
      const name = shardName(shard)
      const sdir = asbenchRunDir(shardExperiment(exp, shard), model, variant)
      const jsonl = path.join(sdir, GEN_RES_JSONL)
      const expected = selectShard(cases, shard).map((c) => c.id)
      const rerun = cliCommand("run", "-e", exp.file, "--model", model, "--variant", variant.name, "--shard", `${shard.index}/${count}`)
      if (!fs.existsSync(jsonl) && expected.length > 0) {
        return yield* new MergeError({ message: `shard ${name} of ${route} is missing: no ${jsonl} (run: ${rerun})` })
      }
      const records = yield* readRecords(jsonl)
      for (const id of records.keys()) {
        const owner = shardOf(id, count)
        if (owner !== shard.index) {
          return yield* new MergeError({
            message: `case ${id} appears in shard ${name} of ${route} (${jsonl}) but belongs to shard ${shardName({ index: owner, count })}; were the shards run with another N?`
          })
        }
      }
      const missing = expected.filter((id) => !records.has(id))
      if (missing.length > 0) {
        return yield* new MergeError({
          message: `shard ${name} of ${route} is incomplete: ${missing.length} of ${expected.length} cases missing (first: ${missing.slice(0, 5).join(", ")}) (run: ${rerun})`
        })
      }
      for (const [id, r] of records) merged.set(id, r)

      const srunId = shardRunId(runId, shard)
      const { auditFile, auditStatus, auditRecords } = yield* verifyShardAudit(settings, route, name, srunId, expected.length > 0, trusted)

      const shieldFile = path.join(sdir, SHIELD_JSONL)
      const hasShield = fs.existsSync(shieldFile)
      if (hasShield) for (const [id, l] of yield* readRecords(shieldFile)) shields.set(id, l)
      else if (expected.length > 0) shieldAll = false

      parts.push({
        shard: name,
        run_id: srunId,
        dir: sdir,
        cases: expected.length,
        records: records.size,
        audit_file: auditStatus === null ? null : auditFile,
        audit_status: auditStatus,
        audit_records: auditRecords,
        shield: hasShield
      })
    }

    const sorted = [...merged.values()].sort((a, b) => Number(a.id) - Number(b.id))
    yield* Effect.mapError(writeFileAtomic(path.join(dir, GEN_RES_JSONL), sorted.map(jsonLine).join("")), storeError)
    const genRes = path.join(dir, GEN_RES_JSON)
    yield* Effect.mapError(writeFileAtomic(genRes, genResJson(sorted)), storeError)
    const shield = shieldAll && shields.size > 0
    if (shield) {
      const labels = [...shields.values()].sort((a, b) => Number(a.id) - Number(b.id))
      yield* Effect.mapError(writeFileAtomic(path.join(dir, SHIELD_JSONL), labels.map(jsonLine).join("")), storeError)
    }
    const status: Record<string, number> = {}
    for (const r of sorted) {
      const key = recordStatus(r) ?? "unknown"
      status[key] = (status[key] ?? 0) + 1
    }
    const index = {
      bench: "asbench",
      run_id: runId,
      route,
      membership: SHARD_HASH,
      count,
      records: sorted.length,
      shield,
      audit_dir: settings.proxy.audit_dir,
      shards: parts
    }
    yield* Effect.mapError(writeFileAtomic(path.join(dir, SHARDS_JSON), `${JSON.stringify(index, null, 2)}\n`), storeError)
    return { route, run_id: runId, dir, genRes, records: sorted.length, status, shield, shards: parts } satisfies MergeSummary
  })
