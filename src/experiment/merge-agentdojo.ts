/**
 * `vetobench merge` for AgentDojo: the N shards of `vetobench run --bench agentdojo --shard I/N`
 * combined into the unsharded run directory, for one model × variant (defense variants included).
 *
 * Checks, all before anything is written (the same as the Agent-SafetyBench merge, merge.ts):
 * - every shard has its `episodes.json` (the runner writes it first) and a row for each of those
 *   episodes in its `results.jsonl` — a missing or unfinished shard is named with the command that
 *   completes it;
 * - every row belongs to the shard it was found in (`shardOf(episode id, N)`), so no episode is in two;
 * - every shard's audit file verifies (`verifyShardAudit`);
 * - the target holds no unsharded run of its own (`results.jsonl` without `shards.json`).
 *
 * Written into `<run_dir>/agentdojo/<slug(model)>/<variant>/`: `results.jsonl` (the last row per
 * episode of every shard, sorted by episode id), `episodes.json` and `shards.json` (the shards, their
 * run ids and audit files; run-layout `auditFilesFor` reads it).
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { EPISODES_JSON, readRows, resultsFile } from "../adapters/agentdojo/results.js"
import type { AgentdojoVariant } from "../config/agentdojo.js"
import type { Experiment } from "../config/experiment.js"
import type { Settings } from "../config/settings.js"
import type { CheckpointKey } from "../domain/checkpoint.js"
import { formatRoute, makeRoute } from "../domain/route.js"
import { SHARDS_JSON } from "../run-layout/files.js"
import { agentdojoRunDir, runIdFor } from "../run-layout/paths.js"
import { allShards, SHARD_HASH, shardExperiment, shardName, shardOf, shardRunId } from "../run-layout/shard.js"
import { jsonLine, readJsonFile, writeFileAtomic } from "../run-layout/store.js"
import { cliCommand } from "../shell/hint.js"
import { MergeError, verifyShardAudit } from "./merge.js"

export interface AgentdojoMergedShard {
  readonly shard: string
  readonly run_id: string
  /** the shard's `agentdojo/<model>/<variant>` directory */
  readonly dir: string
  readonly episodes: number
  /** null: a shard without episodes, which never called the proxy */
  readonly audit_file: string | null
  readonly audit_status: "ok" | "partial" | null
  readonly audit_records: number
}

export interface AgentdojoMergeSummary {
  readonly route: string
  readonly dir: string
  readonly results: string
  readonly episodes: number
  /** rows with an error (an episode to re-run in its shard) */
  readonly errors: number
  readonly shards: ReadonlyArray<AgentdojoMergedShard>
}

const storeError = (e: { readonly message: string }) => new MergeError({ message: e.message })

export const mergeAgentdojo = (
  exp: Experiment,
  settings: Settings,
  model: string,
  variant: AgentdojoVariant,
  count: number,
  trusted: CheckpointKey | null
): Effect.Effect<AgentdojoMergeSummary, MergeError> =>
  Effect.gen(function*() {
    const route = formatRoute(makeRoute(model, variant.arm, variant.judge))
    if (typeof route !== "string") return yield* new MergeError({ message: `${model} cannot be routed as ${variant.name}: ${route.message}` })
    const runId = runIdFor(exp, "agentdojo", model, variant)
    const dir = agentdojoRunDir(exp, model, variant)
    if (fs.existsSync(resultsFile(dir)) && !fs.existsSync(path.join(dir, SHARDS_JSON))) {
      return yield* new MergeError({ message: `${dir} holds an unsharded run (results.jsonl without ${SHARDS_JSON}); merge would overwrite it` })
    }
    const merged = new Map<string, Record<string, unknown>>()
    const parts: Array<AgentdojoMergedShard> = []
    for (const shard of allShards(count)) {
      const name = shardName(shard)
      const sdir = agentdojoRunDir(shardExperiment(exp, shard), model, variant)
      const rerun = cliCommand("run", "-e", exp.file, "--bench", "agentdojo", "--model", model, "--variant", variant.name, "--shard", `${shard.index}/${count}`)
      const listFile = path.join(sdir, EPISODES_JSON)
      if (!fs.existsSync(listFile)) return yield* new MergeError({ message: `shard ${name} of ${route} is missing: no ${listFile} (run: ${rerun})` })
      const listed = yield* Effect.mapError(readJsonFile(listFile), storeError)
      if (!Array.isArray(listed) || !listed.every((x): x is string => typeof x === "string")) {
        return yield* new MergeError({ message: `shard ${name} of ${route}: ${listFile} is not a list of episode ids` })
      }
      const rows = yield* Effect.mapError(readRows(resultsFile(sdir)), storeError)
      for (const id of [...listed, ...rows.keys()]) {
        const owner = shardOf(id, count)
        if (owner !== shard.index) {
          return yield* new MergeError({
            message: `episode ${id} appears in shard ${name} of ${route} (${sdir}) but belongs to shard ${shardName({ index: owner, count })}; were the shards run with another N?`
          })
        }
      }
      const missing = listed.filter((id) => !rows.has(id))
      if (missing.length > 0) {
        return yield* new MergeError({
          message: `shard ${name} of ${route} is incomplete: ${missing.length} of ${listed.length} episodes missing (first: ${missing[0]}) (run: ${rerun})`
        })
      }
      for (const id of listed) merged.set(id, rows.get(id)!)
      const srunId = shardRunId(runId, shard)
      const audit = yield* verifyShardAudit(settings, route, name, srunId, listed.length > 0, trusted)
      parts.push({
        shard: name,
        run_id: srunId,
        dir: sdir,
        episodes: listed.length,
        audit_file: audit.auditStatus === null ? null : audit.auditFile,
        audit_status: audit.auditStatus,
        audit_records: audit.auditRecords
      })
    }
    const ids = [...merged.keys()].sort()
    const results = resultsFile(dir)
    yield* Effect.mapError(writeFileAtomic(results, ids.map((id) => jsonLine(merged.get(id))).join("")), storeError)
    yield* Effect.mapError(writeFileAtomic(path.join(dir, EPISODES_JSON), `${JSON.stringify(ids)}\n`), storeError)
    const index = { bench: "agentdojo", run_id: runId, route, membership: SHARD_HASH, count, records: ids.length, audit_dir: settings.proxy.audit_dir, shards: parts }
    yield* Effect.mapError(writeFileAtomic(path.join(dir, SHARDS_JSON), `${JSON.stringify(index, null, 2)}\n`), storeError)
    return {
      route,
      dir,
      results,
      episodes: ids.length,
      errors: ids.filter((id) => merged.get(id)!.error !== null).length,
      shards: parts
    } satisfies AgentdojoMergeSummary
  })
