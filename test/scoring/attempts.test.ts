/**
 * Attempts: the header the runners send and the gate reads, the attempt log of a run directory, and
 * the rule that counts each episode's calls from its final attempt (src/scoring/current.ts).
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { attemptOf } from "../../src/domain/attempt.js"
import { attemptsFile, openAttemptLog, readAttempts } from "../../src/run-layout/attempts.js"
import { asbenchFinal, asbFinal, currentCalls, toolAttempts } from "../../src/scoring/current.js"
import { callRecordOf } from "../../src/scoring/files.js"

interface Rec {
  readonly id: string
  readonly episode_id: string | null
  readonly session_id: string | null
  readonly attempt?: number
}

const rec = (id: string, episode: string | null, attempt?: number, session: string | null = null): Rec => ({
  id,
  episode_id: episode,
  session_id: session,
  ...(attempt !== undefined ? { attempt } : {})
})
const ids = (rs: ReadonlyArray<Rec>) => rs.map((r) => r.id)
const none = () => null

describe("x-vetobench-attempt", () => {
  it("a positive decimal integer, else none", () => {
    expect(attemptOf({ "x-vetobench-attempt": "2" })).toBe(2)
    expect(attemptOf({ "x-vetobench-attempt": " 17 " })).toBe(17)
    expect(["0", "-1", "1.5", "x", "", "01", "1234567890"].map((v) => attemptOf({ "x-vetobench-attempt": v }))).toEqual([null, null, null, null, null, null, null])
    expect(attemptOf({})).toBeNull()
  })

  it("a call record keeps its attempt; a record without one reads as none", () => {
    const base = { type: "call", hash: "h", arm: "baseline", tool: { name: "t" } }
    expect(callRecordOf({ ...base, attempt: 3 })?.attempt).toBe(3)
    expect(callRecordOf(base)?.attempt).toBeUndefined()
    expect(callRecordOf({ ...base, attempt: "3" })?.attempt).toBeUndefined()
  })
})

describe("the attempt log", () => {
  it("numbers the starts of each key from 1, across opens; the last line per key wins", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-attempts-"))
    const first = await Effect.runPromise(
      Effect.scoped(Effect.flatMap(openAttemptLog(dir), (log) => Effect.all([log.start("7"), log.start("8"), log.start("7", { tools: ["A"] })])))
    )
    expect(first).toEqual([1, 1, 2])
    const again = await Effect.runPromise(Effect.scoped(Effect.flatMap(openAttemptLog(dir), (log) => log.start("7"))))
    expect(again).toBe(3)
    const lines = fs.readFileSync(attemptsFile(dir), "utf8").trim().split("\n").map((l) => JSON.parse(l) as unknown)
    expect(lines).toEqual([{ key: "7", attempt: 1 }, { key: "8", attempt: 1 }, { tools: ["A"], key: "7", attempt: 2 }, { key: "7", attempt: 3 }])
    const last = await Effect.runPromise(readAttempts(dir))
    expect([...last.values()].map((l) => [l.key, l.attempt])).toEqual([["7", 3], ["8", 1]])
    expect((await Effect.runPromise(readAttempts(path.join(dir, "none")))).size).toBe(0)
  })
})

describe("each episode's calls from its final attempt", () => {
  it("records without attempts all count (logs from before attempts)", () => {
    const rs = [rec("a", "asbench:1"), rec("b", "asbench:1"), rec("c", "asbench:2")]
    expect(ids(currentCalls(rs, none))).toEqual(["a", "b", "c"])
  })

  it("a killed start's calls are left out: the known final attempt wins, else the highest", () => {
    const rs = [
      rec("k1", "asbench:1", 1), // case 1 killed mid-way …
      rec("k2", "asbench:1", 1),
      rec("f1", "asbench:1", 2), // … and run again
      rec("d1", "asbench:2", 1), // case 2: finished in its first start
      rec("x1", "asbench:3", 1), // case 3: its second start made no call
      rec("n1", null, 5) // a call without an episode always counts
    ]
    const final = asbenchFinal([{ id: 1, attempt: 2 }, { id: 2, attempt: 1 }, { id: 3, attempt: 2 }])
    expect(ids(currentCalls(rs, final))).toEqual(["f1", "d1", "n1"])
    // without the results (never finished): the highest attempt in the log
    expect(ids(currentCalls(rs, none))).toEqual(["f1", "d1", "x1", "n1"])
  })

  it("records without an attempt next to numbered ones belong to an earlier start", () => {
    const rs = [rec("old", "asbench:4"), rec("new", "asbench:4", 1)]
    expect(ids(currentCalls(rs, none))).toEqual(["new"])
  })

  it("ASB: an episode belongs to its tool's shard; sessions are apart", () => {
    const dpi = "direct_prompt_injection-naive"
    const tools = toolAttempts([
      { key: "shard00", attempt: 1, tools: ["Evil Tool", "Sneaky"] },
      { key: "shard01", attempt: 2, tools: ["Other"] }
    ])
    expect([...tools]).toEqual([["Evil%20Tool", 1], ["Sneaky", 1], ["Other", 2]])
    const rs = [
      rec("s0", "asb:sys:Evil%20Tool:0", 1, dpi),
      rec("s1a", "asb:sys:Other:0", 1, dpi), // shard01's first start
      rec("s1b", "asb:sys:Other:0", 2, dpi), // … its second
      rec("c1", "asb:sys:Other:0", 1, "clean") // another attack: no attempts known there
    ]
    expect(ids(currentCalls(rs, asbFinal(new Map([[dpi, tools]]))))).toEqual(["s0", "s1b", "c1"])
  })
})
