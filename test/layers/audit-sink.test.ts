import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { AuditMemory, AuditSink, repairTornTail, verifyAuditFile } from "../../layers/AuditSink.js"
import { verifyChainText } from "../../src/domain/chain-verify.js"
import { isRunId, RUN_ID_MAX_LENGTH, runIdProblem, auditFileName } from "../../src/domain/run-id.js"
import { recordLine } from "../../src/domain/audit-chain.js"
import type { CallEntry as AuditEntry } from "../../src/domain/audit-record.js"
import { callEntry } from "../support/audit-entry.js"
import { captureLogs, tempDir as tempDirOf } from "../support/audit-files.js"

const entry = (i: number, runId: string | null = "run-1", args: unknown = { n: i }): AuditEntry =>
  callEntry(i, runId, args, { judge: "static", call_index: i })

const tempDir = tempDirOf("vetobench-audit-")

/** Run `n` appends to one run sequentially through a fresh file layer over `dir`. */
const appendN = (dir: string, runId: string | null, from: number, n: number) =>
  Effect.gen(function* () {
    const sink = yield* AuditSink
    return yield* Effect.forEach(Array.from({ length: n }, (_, i) => from + i), (i) => sink.append(runId, entry(i, runId)))
  }).pipe(Effect.provide(AuditSink.layerFile(dir)))

const readLines = (file: string) =>
  Effect.promise(() => fs.readFile(file, "utf8")).pipe(Effect.map((t) => t.split("\n").filter((l) => l !== "")))

describe("AuditSink.layerFile", () => {
  it.scopedLive("appends a verifiable chain, one line per record", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const records = yield* appendN(dir, "run-1", 1, 5)
      expect(records.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5])
      const file = path.join(dir, "run-1.jsonl")
      const result = yield* verifyAuditFile(file)
      expect(result).toEqual({ ok: true, records: 5, index: null, message: "ok", torn: false, file })
      const ls = yield* readLines(file)
      expect(ls.map((l) => JSON.parse(l).hash)).toEqual(records.map((r) => r.hash))
      expect(records[0]!.ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    })
  )

  it.scopedLive("continues seq and chain when the file is reopened", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const first = yield* appendN(dir, "run-1", 1, 3)
      const second = yield* appendN(dir, "run-1", 4, 2)
      expect(second.map((r) => r.seq)).toEqual([4, 5])
      expect(second[0]!.prev_hash).toBe(first[2]!.hash)
      expect(yield* verifyAuditFile(path.join(dir, "run-1.jsonl"))).toMatchObject({ ok: true, records: 5 })
    })
  )

  it.scopedLive("repairs a torn tail on open: side file, warning, chain still verifies", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      yield* appendN(dir, "run-1", 1, 3)
      const file = path.join(dir, "run-1.jsonl")
      const tornBytes = `{"schema":"vetobench/v2","seq":4,"ts":"2025-`
      yield* Effect.promise(() => fs.appendFile(file, tornBytes))
      expect(verifyChainText(yield* Effect.promise(() => fs.readFile(file, "utf8")))).toMatchObject({
        ok: false,
        index: 4,
        torn: true
      })

      const { result: more, logs } = yield* captureLogs(appendN(dir, "run-1", 4, 1))
      expect(more[0]!.seq).toBe(4)

      const warnings = logs.filter((l) => l.level === "WARN")
      expect(warnings).toHaveLength(1)
      expect(warnings[0]!.message).toContain(file)
      expect(warnings[0]!.message).toContain(`${Buffer.byteLength(tornBytes)} bytes`)

      const side = (yield* Effect.promise(() => fs.readdir(dir))).filter((f) => f.startsWith("run-1.jsonl.torn-"))
      expect(side).toHaveLength(1)
      expect(yield* Effect.promise(() => fs.readFile(path.join(dir, side[0]!), "utf8"))).toBe(tornBytes)
      expect(yield* verifyAuditFile(file)).toMatchObject({ ok: true, records: 4 })
    })
  )

  it.scopedLive("repairTornTail reports what it did, across chunk boundaries", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const big = "x".repeat(100_000) // records and torn line larger than the 64 KiB read chunk
      yield* Effect.gen(function* () {
        const sink = yield* AuditSink
        for (let i = 1; i <= 3; i++) yield* sink.append("big", entry(i, "big", { blob: big }))
      }).pipe(Effect.provide(AuditSink.layerFile(dir)))
      const file = path.join(dir, "big.jsonl")
      const sizeBefore = (yield* Effect.promise(() => fs.stat(file))).size
      const torn = `{"seq":4,"blob":"${big}`
      yield* Effect.promise(() => fs.appendFile(file, torn))

      const repair = yield* repairTornTail(file)
      expect(repair.repaired).toBe(true)
      expect(repair.bytes).toBe(torn.length)
      expect(repair.savedTo).toMatch(/big\.jsonl\.torn-\d+$/)
      expect((yield* Effect.promise(() => fs.stat(file))).size).toBe(sizeBefore)
      expect(yield* Effect.promise(() => fs.readFile(repair.savedTo!, "utf8"))).toBe(torn)
      expect(yield* repairTornTail(file)).toEqual({ repaired: false, bytes: 0, savedTo: null })
      expect(yield* repairTornTail(path.join(dir, "missing.jsonl"))).toEqual({ repaired: false, bytes: 0, savedTo: null })

      const next = yield* appendN(dir, "big", 4, 1)
      expect(next[0]!.seq).toBe(4)
      expect(yield* verifyAuditFile(file)).toMatchObject({ ok: true, records: 4 })
    })
  )

  it.scopedLive("a file that is only a torn line restarts from genesis", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const file = path.join(dir, "run-1.jsonl")
      yield* Effect.promise(() => fs.writeFile(file, `{"schema":`))
      const recs = yield* appendN(dir, "run-1", 1, 2)
      expect(recs.map((r) => r.seq)).toEqual([1, 2])
      expect(yield* verifyAuditFile(file)).toMatchObject({ ok: true, records: 2 })
    })
  )

  it.scopedLive("serialises 200 concurrent appends to one run", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const { recs, file } = yield* Effect.gen(function* () {
        const sink = yield* AuditSink
        const recs = yield* Effect.forEach(
          Array.from({ length: 200 }, (_, i) => i + 1),
          (i) => sink.append("busy-run", entry(i, "busy-run")),
          { concurrency: "unbounded" }
        )
        return { recs, file: sink.fileFor("busy-run") }
      }).pipe(Effect.provide(AuditSink.layerFile(dir)))
      expect(recs.map((r) => r.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1))
      expect(file).toBe(path.join(dir, "busy-run.jsonl"))
      const ls = yield* readLines(file)
      expect(ls).toHaveLength(200)
      const parsed = ls.map((l) => JSON.parse(l) as { seq: number; ts: string })
      expect(parsed.map((r) => r.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1))
      expect(parsed.map((r) => r.ts)).toEqual(parsed.map((r) => r.ts).sort())
      expect(yield* verifyAuditFile(file)).toMatchObject({ ok: true, records: 200 })
    })
  )

  it.scopedLive("1,000 concurrent appends go in pipelined batches; each returned record is the line written at its seq", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      for (const fsync of ["group", "never"] as const) {
        const run = `pipelined-${fsync}`
        const { recs, file } = yield* Effect.gen(function* () {
          const sink = yield* AuditSink
          const recs = yield* Effect.forEach(
            Array.from({ length: 1_000 }, (_, i) => i + 1),
            (i) => sink.append(run, entry(i, run)),
            { concurrency: "unbounded" }
          )
          return { recs, file: sink.fileFor(run) }
        }).pipe(Effect.provide(AuditSink.layerFile(dir, { fsync, checkpointEvery: 100 })))
        const lines = yield* readLines(file)
        expect(lines).toHaveLength(1_000)
        for (const r of recs) {
          const line = lines[r.seq - 1]!
          expect(JSON.parse(line)).toEqual(JSON.parse(JSON.stringify(r)))
          expect(recordLine(r)).toBe(line)
        }
        expect(recs.map((r) => r.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 1_000 }, (_, i) => i + 1))
        expect(yield* verifyAuditFile(file)).toMatchObject({ ok: true, records: 1_000 })
        // checkpoints were written beside the appends, the last one on close
        const anchor = (yield* readLines(`${file.slice(0, -".jsonl".length)}.anchor.jsonl`)).map((l) => JSON.parse(l) as { seq: number; head: string })
        expect(anchor.at(-1)).toMatchObject({ seq: 1_000, head: recs.find((r) => r.seq === 1_000)!.hash })
        expect(anchor.map((c) => c.seq)).toEqual([...anchor.map((c) => c.seq)].sort((a, b) => a - b))
        for (const c of anchor) expect(recs.find((r) => r.seq === c.seq)!.hash).toBe(c.head)
      }
    })
  )

  it.scopedLive("a burst of concurrent appends shares one write (group commit)", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      // count the records in each write to a file handle (the sink's only writes of call lines)
      const probe = yield* Effect.promise(() => fs.open(path.join(dir, "probe"), "w"))
      const proto = Object.getPrototypeOf(probe) as { write: (...args: Array<unknown>) => Promise<unknown> }
      yield* Effect.promise(() => probe.close())
      const original = proto.write
      const perWrite: Array<number> = []
      proto.write = function (this: unknown, ...args: Array<unknown>) {
        const data = args[0]
        if (Buffer.isBuffer(data)) perWrite.push(data.toString("utf8").split("\n").filter((l) => l.includes('"type":"call"')).length)
        return original.apply(this, args)
      }
      yield* Effect.addFinalizer(() => Effect.sync(() => void (proto.write = original)))
      yield* Effect.gen(function* () {
        const sink = yield* AuditSink
        for (let round = 0; round < 3; round++) {
          yield* Effect.forEach(Array.from({ length: 20 }, (_, i) => round * 20 + i + 1), (i) => sink.append("burst", entry(i, "burst")), {
            concurrency: "unbounded"
          })
        }
      }).pipe(Effect.provide(AuditSink.layerFile(dir, { fsync: "group", checkpointEvery: 0 })))
      expect(perWrite.filter((n) => n > 0)).toEqual([20, 20, 20])
    })
  )

  it.scopedLive("two sinks writing different runs concurrently do not interfere", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const writer = (runId: string) =>
        Effect.gen(function* () {
          const sink = yield* AuditSink
          yield* Effect.forEach(
            Array.from({ length: 50 }, (_, i) => i + 1),
            (i) => sink.append(runId, entry(i, runId)),
            { concurrency: "unbounded" }
          )
          return sink.fileFor(runId)
        }).pipe(Effect.provide(AuditSink.layerFile(dir)))
      const [a, b] = yield* Effect.all([writer("run-a"), writer("run-b")], { concurrency: "unbounded" })
      expect(yield* verifyAuditFile(a)).toMatchObject({ ok: true, records: 50 })
      expect(yield* verifyAuditFile(b)).toMatchObject({ ok: true, records: 50 })
    })
  )

  it.scopedLive("refuses to continue after a corrupt complete last line, and reports unhashable entries", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const file = path.join(dir, "run-1.jsonl")
      yield* Effect.promise(() => fs.writeFile(file, "not json\n"))
      const failed = yield* appendN(dir, "run-1", 1, 1).pipe(Effect.either)
      expect(Either.isLeft(failed) && failed.left._tag === "AuditWriteError" && failed.left.file === file).toBe(true)

      const nan = yield* Effect.gen(function* () {
        const sink = yield* AuditSink
        const bad = yield* sink.append("ok", { ...entry(1, "ok"), gate_ms: Number.NaN }).pipe(Effect.flip)
        const good = yield* sink.append("ok", entry(2, "ok"))
        return { bad, good }
      }).pipe(Effect.provide(AuditSink.layerFile(dir)))
      expect(nan.bad.reason).toMatch(/record cannot be hashed: non-finite number/)
      expect(nan.good.seq).toBe(1)
      expect(yield* verifyAuditFile(path.join(dir, "ok.jsonl"))).toMatchObject({ ok: true, records: 1 })
    })
  )

  it.effect("verifyAuditFile fails with a typed error for a missing file", () =>
    Effect.gen(function* () {
      const err = yield* verifyAuditFile("/nonexistent/vetobench/x.jsonl").pipe(Effect.flip)
      expect(err._tag).toBe("AuditReadError")
      expect(err.reason).toBe("file not found")
      expect(err.file).toBe("/nonexistent/vetobench/x.jsonl")
      expect(err.message).toBe("file not found (/nonexistent/vetobench/x.jsonl)")
    })
  )
})

describe("auditFileName", () => {
  it("is the run id unchanged for a run id, adhoc for null", () => {
    expect(auditFileName(null)).toBe("adhoc.jsonl")
    expect(auditFileName("pilot-2025.01_a")).toBe("pilot-2025.01_a.jsonl")
    expect(auditFileName("exp.asbench.qwen3.8-27b.enforce-rules.shard-1-of-4")).toBe("exp.asbench.qwen3.8-27b.enforce-rules.shard-1-of-4.jsonl")
    expect(auditFileName("a__b")).toBe("a__b.jsonl")
    expect(auditFileName("x_")).toBe("x_.jsonl")
    expect(auditFileName("r".repeat(RUN_ID_MAX_LENGTH))).toBe(`${"r".repeat(RUN_ID_MAX_LENGTH)}.jsonl`)
  })

  it("maps anything else into the grammar (the file sink refuses such ids)", () => {
    expect(auditFileName("")).toBe("adhoc.jsonl")
    expect(auditFileName("/// ")).toBe("adhoc.jsonl")
    expect(auditFileName("___")).toBe("adhoc.jsonl")
    expect(auditFileName("..")).toBe("adhoc.jsonl")
    expect(auditFileName("run 1/ä")).toBe("run_1.jsonl")
    expect(auditFileName("a  b//c")).toBe("a_b_c.jsonl")
    expect(auditFileName("_x_")).toBe("x.jsonl")
    expect(auditFileName(".x")).toBe("x.jsonl")
    expect(auditFileName("-x")).toBe("x.jsonl")
    expect(auditFileName("../../etc/passwd")).toBe("etc_passwd.jsonl")
    expect(auditFileName("victim.anchor")).toBe("victim_anchor.jsonl")
    expect(auditFileName("x.jsonl")).toBe("x_jsonl.jsonl")
    expect(auditFileName("x.LOCK.y")).toBe("x_LOCK.y.jsonl")
    expect(auditFileName("x.torn-1")).toBe("x_torn-1.jsonl")
    expect(auditFileName("b".repeat(245))).toBe(`${"b".repeat(RUN_ID_MAX_LENGTH)}.jsonl`)
    // cut to the maximum length first, so the cut cannot leave a reserved part at the end
    expect(auditFileName(`${"c".repeat(RUN_ID_MAX_LENGTH - 7)}.anchorage!`)).toBe(`${"c".repeat(RUN_ID_MAX_LENGTH - 7)}_anchor.jsonl`)
  })

  it("never gives a name outside the grammar", () => {
    // a deterministic pseudo-random walk over the troublesome characters and parts
    const parts = ["a", "Z", "9", "_", "-", ".", "/", " ", "ä", "\n", ".anchor", ".jsonl", ".lock", ".torn-", "..", "\u0000"]
    let seed = 42
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31)
    for (let n = 0; n < 5_000; n++) {
      let id = ""
      const len = next() % 60
      for (let i = 0; i < len; i++) id += parts[next() % parts.length]!
      if (next() % 10 === 0) id = id.repeat(8)
      const name = auditFileName(id)
      expect(name.endsWith(".jsonl")).toBe(true)
      expect(runIdProblem(name.slice(0, -".jsonl".length)), JSON.stringify(id)).toBeNull()
      if (isRunId(id)) expect(name).toBe(`${id}.jsonl`)
    }
  })
})

describe("AuditSink.layerMemory", () => {
  it.effect("keeps one chain per run and exposes the records", () =>
    Effect.gen(function* () {
      const sink = yield* AuditSink
      const memory = yield* AuditMemory
      yield* Effect.forEach([1, 2, 3], (i) => sink.append("run a", entry(i, "run a")), { concurrency: "unbounded" })
      yield* sink.append(null, entry(9, null))
      expect(sink.fileFor("run a")).toBe("memory:run_a.jsonl")
      expect((yield* memory.records).map((r) => r.seq)).toEqual([1, 2, 3, 1])
      expect((yield* memory.recordsFor(null)).map((r) => (r.type === "call" ? r.request_id : null))).toEqual(["req-9"])
      expect(verifyChainText(yield* memory.textFor("run a"))).toMatchObject({ ok: true, records: 3 })
    }).pipe(Effect.provide(AuditSink.layerMemory))
  )
})
