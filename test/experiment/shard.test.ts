/** `--shard I/N`: parsing, and membership by a stable hash of the case id (experiment/shard.ts). */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { allShards, inShard, parseShard, selectShard, shardExperiment, shardName, shardOf, shardRunDir, shardRunId } from "../../src/run-layout/shard.js"

const cases = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i * 7 + 3, name: `case ${i}` }))

describe("parseShard", () => {
  it("accepts 0-based I/N", () => {
    expect(parseShard("0/1")).toEqual(Either.right({ index: 0, count: 1 }))
    expect(parseShard("3/4")).toEqual(Either.right({ index: 3, count: 4 }))
    expect(parseShard(" 2 / 10 ")).toEqual(Either.right({ index: 2, count: 10 }))
  })

  it.each(["", "1", "4/4", "5/4", "0/0", "-1/4", "1/-4", "a/4", "1.5/4", "1/4/2"])("rejects %j with one line", (text) => {
    const r = parseShard(text)
    expect(Either.isLeft(r)).toBe(true)
    if (Either.isLeft(r)) expect(r.left).toMatch(/^--shard/)
  })
})

describe("shard membership", () => {
  it("N shards partition the cases exactly (every case in exactly one shard)", () => {
    const all = cases(1000)
    for (const n of [1, 2, 3, 4, 7, 16]) {
      const parts = allShards(n).map((s) => selectShard(all, s))
      const ids = parts.flatMap((p) => p.map((c) => c.id))
      expect(ids.length, `N=${n}`).toBe(all.length)
      expect(new Set(ids).size, `N=${n}`).toBe(all.length)
      expect([...ids].sort((a, b) => a - b)).toEqual(all.map((c) => c.id))
      for (const [i, p] of parts.entries()) {
        for (const c of p) expect(shardOf(c.id, n)).toBe(i)
        // a roughly even spread: no shard of 1000 cases is empty or holds more than twice its share
        expect(p.length).toBeGreaterThan(0)
        expect(p.length).toBeLessThan((2 * all.length) / n)
      }
    }
  })

  it("depends on the id and N only: stable across runs, order and subsets (the split filter comes first)", () => {
    const all = cases(200)
    const s = { index: 1, count: 3 }
    const once = selectShard(all, s).map((c) => c.id)
    expect(selectShard(all, s).map((c) => c.id)).toEqual(once)
    expect(selectShard([...all].reverse(), s).map((c) => c.id)).toEqual([...once].reverse())
    const subset = all.filter((c) => c.id % 2 === 0)
    expect(selectShard(subset, s).map((c) => c.id)).toEqual(once.filter((id) => id % 2 === 0))
    // pinned values: sha256("0") … sha256("8"), first 4 bytes mod 2 and mod 3
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8].map((id) => shardOf(id, 2))).toEqual([0, 1, 0, 1, 1, 1, 1, 1, 0])
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8].map((id) => shardOf(id, 3))).toEqual([2, 0, 2, 0, 2, 1, 2, 2, 0])
    expect(shardOf(5, 1)).toBe(0)
    expect(inShard("5", { index: 1, count: 2 })).toBe(inShard(5, { index: 1, count: 2 }))
  })

  it("names: directory, run id", () => {
    const s = { index: 2, count: 8 }
    expect(shardName(s)).toBe("2-of-8")
    expect(shardRunId("pilot.asbench.qwen.baseline", s)).toBe("pilot.asbench.qwen.baseline.shard-2-of-8")
    expect(shardRunDir({ run_dir: "/runs/pilot" }, s)).toBe("/runs/pilot/shards/2-of-8")
    expect(shardExperiment({ run_dir: "/runs/pilot", name: "pilot" }, s)).toEqual({ run_dir: "/runs/pilot/shards/2-of-8", name: "pilot" })
  })
})
