/**
 * Shards of an Agent-SafetyBench run (`vetobench run --shard I/N`, `vetobench merge`).
 *
 * Membership: case `id` belongs to shard `shardOf(id, N)` = the first 4 bytes of
 * `sha256(String(id))` as an unsigned big-endian integer, mod N. It depends on the id and N only
 * (not on file order, the split or the machine), so a shard re-run selects the same cases and the N
 * shards of any case set partition it exactly. It is applied after the split filter.
 *
 * Layout: shard I of N writes into `<run_dir>/shards/<I>-of-<N>/` (the usual
 * `asbench/<model>/<variant>/` below it) under run id `<runId>.shard-<I>-of-<N>`, so every shard has
 * an audit file of its own (the audit sink is single-writer per file).
 */
import { createHash } from "node:crypto"
import * as path from "node:path"
import { Either } from "effect"
import type { RunDirOf } from "./paths.js"

export interface Shard {
  /** 0-based */
  readonly index: number
  /** number of shards, ≥ 1 */
  readonly count: number
}

/** How membership is computed (recorded in `shards.json`). */
export const SHARD_HASH = "sha256(String(id))[0:4] big-endian mod N"

/** `I/N` with 0 ≤ I < N, both decimal integers; else a one-line reason. */
export const parseShard = (text: string): Either.Either<Shard, string> => {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text)
  if (m === null) return Either.left(`--shard: expected I/N (e.g. 0/4), got '${text}'`)
  const index = Number(m[1])
  const count = Number(m[2])
  if (!Number.isSafeInteger(count) || count < 1) return Either.left(`--shard ${text}: N must be at least 1`)
  if (!Number.isSafeInteger(index) || index >= count) return Either.left(`--shard ${text}: I must be in 0..${count - 1} (0-based)`)
  return Either.right({ index, count })
}

/** The shard (0..count-1) a case id belongs to. */
export const shardOf = (id: number | string, count: number): number =>
  createHash("sha256").update(String(id)).digest().readUInt32BE(0) % count

export const inShard = (id: number | string, shard: Shard): boolean => shardOf(id, shard.count) === shard.index

/** The items of a shard, in their order. */
export const selectShard = <A extends { readonly id: number }>(items: ReadonlyArray<A>, shard: Shard): Array<A> =>
  items.filter((x) => inShard(x.id, shard))

/** `<I>-of-<N>` */
export const shardName = (s: Shard): string => `${s.index}-of-${s.count}`

/** `<runId>.shard-<I>-of-<N>` */
export const shardRunId = (runId: string, s: Shard): string => `${runId}.shard-${shardName(s)}`

/** `<run_dir>/shards/<I>-of-<N>` */
export const shardRunDir = (exp: RunDirOf, s: Shard): string => path.join(exp.run_dir, "shards", shardName(s))

/** The experiment as a shard sees it: `run_dir` is the shard's directory. */
export const shardExperiment = <E extends RunDirOf>(exp: E, s: Shard): E => ({ ...exp, run_dir: shardRunDir(exp, s) })

/** The N shards of a count. */
export const allShards = (count: number): Array<Shard> => Array.from({ length: count }, (_, index) => ({ index, count }))
