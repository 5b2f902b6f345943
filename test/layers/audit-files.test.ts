/**
 * The file sink's trust boundary on file names and file handles: run ids outside the grammar are
 * refused (no file is created for them), open files are bounded by `maxOpenFiles` (idle files are
 * closed and reopened on demand, their chain and checkpoints continued), and a torn last line of the
 * anchor file is repaired like an audit file's, with no empty side file left by a failed repair.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer } from "effect"
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { AuditSink, AuditWriteError, anchorFileFor, type AuditSinkShape } from "../../layers/AuditSink.js"
import type { AuditRecord } from "../../src/domain/audit-record.js"
import { verifyAudit } from "../../src/domain/audit-verify.js"
import { verifyChainText } from "../../src/domain/chain-verify.js"
import { RUN_ID_GRAMMAR, RUN_ID_MAX_LENGTH, runIdProblem } from "../../src/domain/run-id.js"
import { callEntry } from "../support/audit-entry.js"
import { captureLogs, readOrNull, readText, tempDir as tempDirOf, withSink } from "../support/audit-files.js"

const tempDir = tempDirOf("vetobench-audit-files-")
const ls = (dir: string) => Effect.promise(() => fs.readdir(dir))

/** side files `<name>.torn-*` in `dir`, and whether any of them is empty */
const tornFiles = (dir: string, name: string) =>
  Effect.map(ls(dir), (names) => names.filter((n) => n.startsWith(`${name}.torn-`)))
const emptyTornFiles = (dir: string) =>
  Effect.promise(async () => {
    const out: Array<string> = []
    for (const n of await fs.readdir(dir)) if (n.includes(".torn-") && (await fs.stat(path.join(dir, n))).size === 0) out.push(n)
    return out
  })

// ---------------------------------------------------------------------------------------------
// Run ids

const HARNESS_ID = "exp.asbench.qwen3.8-27b.enforce-rules.shard-1-of-4"
const ID_128 = ("r-" + "0123456789abcdef_.".repeat(8)).slice(0, RUN_ID_MAX_LENGTH)

const VALID: ReadonlyArray<string> = ["pilot-2025.01_a", HARNESS_ID, ID_128, "adhoc", "a..b", "x.anchors", "run.jsonlx"]

/** id, and a fragment of the problem `runIdProblem` reports */
const INVALID: ReadonlyArray<readonly [string, string]> = [
  ["", "empty"],
  ["a".repeat(RUN_ID_MAX_LENGTH + 1), `${RUN_ID_MAX_LENGTH + 1} characters long`],
  ["b".repeat(245), "245 characters long"],
  [".x", "outside the grammar"],
  ["..", "outside the grammar"],
  ["-x", "outside the grammar"],
  ["_x", "outside the grammar"],
  ["a/b", "outside the grammar"],
  ["../etc", "outside the grammar"],
  ["a b", "outside the grammar"],
  ["ä", "outside the grammar"],
  ["x\n", "outside the grammar"],
  ["victim.anchor", "'.anchor'"],
  ["victim.ANCHOR", "'.ANCHOR'"],
  ["x.jsonl", "'.jsonl'"],
  ["x.jsonl.y", "'.jsonl.'"],
  ["x.lock", "'.lock'"],
  ["x.torn-1", "'.torn-'"]
]

describe("run ids", () => {
  it("runIdProblem accepts the grammar and names what is wrong with anything else", () => {
    expect(ID_128).toHaveLength(RUN_ID_MAX_LENGTH)
    for (const id of VALID) expect(runIdProblem(id), id).toBeNull()
    for (const [id, fragment] of INVALID) expect(runIdProblem(id), JSON.stringify(id)).toContain(fragment)
  })

  it.scopedLive("the file sink refuses an invalid run id with an AuditWriteError naming the grammar, and creates no file", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      yield* withSink(dir, { fsync: "never" }, (sink) =>
        Effect.gen(function* () {
          for (const [id] of INVALID) {
            const label = JSON.stringify(id.slice(0, 20))
            const appended = yield* sink.append(id, callEntry(1, id)).pipe(Effect.flip)
            expect(appended._tag, label).toBe("AuditWriteError")
            expect(appended.reason, label).toContain(RUN_ID_GRAMMAR)
            expect(appended.file, label).toBe(dir)
            expect(appended.message.length, label).toBeLessThan(600) // a 245-character id is not echoed whole
            const checkpointed = yield* sink.checkpoint(id).pipe(Effect.flip)
            expect(checkpointed.reason, label).toBe(appended.reason)
            expect(() => sink.fileFor(id), label).toThrow(AuditWriteError)
          }
          // nothing at all was created for them, not even a lock
          expect(yield* ls(dir)).toEqual([])
          expect(sink.fileFor(null)).toBe(path.join(dir, "adhoc.jsonl"))
        })
      )
      expect(yield* ls(dir)).toEqual([])
    })
  )

  it.scopedLive("a valid run id is its file name unchanged; each verifies", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      yield* withSink(dir, { fsync: "never" }, (sink) =>
        Effect.forEach(VALID, (id) =>
          Effect.gen(function* () {
            expect(sink.fileFor(id)).toBe(path.join(dir, `${id}.jsonl`))
            expect((yield* sink.append(id, callEntry(1, id))).seq).toBe(1)
          })
        )
      )
      const names = yield* ls(dir)
      expect(names.filter((n) => !n.endsWith(".anchor.jsonl")).sort()).toEqual(VALID.map((id) => `${id}.jsonl`).sort())
      for (const id of VALID) {
        const text = yield* readText(path.join(dir, `${id}.jsonl`))
        expect(verifyChainText(text)).toMatchObject({ ok: true, records: 1 })
      }
    })
  )

  it.scopedLive("run `victim.anchor` cannot write run `victim`'s anchor file, before or after `victim` exists", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const file = path.join(dir, "victim.jsonl")
      const anchor = anchorFileFor(file)
      const refused = (sink: AuditSinkShape) =>
        Effect.map(sink.append("victim.anchor", callEntry(1, "victim.anchor")).pipe(Effect.flip), (e) => expect(e._tag).toBe("AuditWriteError"))
      yield* withSink(dir, { fsync: "never" }, refused)
      expect(yield* ls(dir)).toEqual([])
      yield* withSink(dir, { fsync: "never" }, (sink) => sink.append("victim", callEntry(1, "victim")))
      const before = yield* readText(anchor)
      yield* withSink(dir, { fsync: "never" }, (sink) =>
        Effect.gen(function* () {
          yield* refused(sink)
          expect((yield* sink.append("victim", callEntry(2, "victim"))).seq).toBe(2)
          yield* refused(sink)
        })
      )
      const v = verifyAudit("victim.jsonl", yield* readText(file), yield* readText(anchor), null)
      expect(v).toMatchObject({ records: 2, chain: { ok: true }, anchor: { status: "ok" } })
      expect((yield* readText(anchor)).startsWith(before)).toBe(true)
      expect((yield* ls(dir)).sort()).toEqual(["victim.anchor.jsonl", "victim.jsonl"])
    })
  )

  it.scopedLive("maxOpenFiles must be an integer of at least 1", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      for (const maxOpenFiles of [0, -1, 1.5, Number.NaN]) {
        const e = yield* withSink(dir, { maxOpenFiles }, () => Effect.void).pipe(Effect.flip)
        expect(e.reason).toContain("maxOpenFiles must be an integer of at least 1")
      }
    })
  )
})

// ---------------------------------------------------------------------------------------------
// Bounded open files

/** open file descriptors of this process that point into `dir` (via /proc/self/fd) */
const fdsInto = (dir: string): number => {
  let n = 0
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir + path.sep)) n++
    } catch {
      // closed meanwhile (e.g. the fd of the directory listing itself)
    }
  }
  return n
}

const MAX_OPEN = 16
const RUNS = 3_000
const SEQUENTIAL = 1_000
const CONCURRENCY = 8
/**
 * What may be open beside the `MAX_OPEN` idle-bounded handles:
 * - between sequential appends: nothing (each append's open first closes an idle file, awaited); the
 *   slack of 2 is for a transient handle of the open (the tail or anchor being read) or of a close
 *   (the checkpoint being appended to the anchor), should one still be under way;
 * - while `CONCURRENCY` appends run: each may open a file past the limit before the others' files are
 *   counted (≤ CONCURRENCY - 1), each open may hold a transient handle (≤ CONCURRENCY), and each close
 *   started by an open or a writer's trim holds the file and its anchor (≤ 2 · CONCURRENCY).
 */
const SLACK_SEQUENTIAL = 2
const SLACK_CONCURRENT = 4 * CONCURRENCY

const hasProc = existsSync("/proc/self/fd")

describe("bounded open files", () => {
  it.scopedLive.skipIf(!hasProc)(
    `${RUNS} runs through one sink with maxOpenFiles ${MAX_OPEN}: bounded fds; an early run continues its chain; every file verifies`,
    () =>
      Effect.gen(function* () {
        const dir = yield* Effect.flatMap(tempDir, (d) => Effect.promise(() => fs.realpath(d))) // as /proc shows it
        const runId = (i: number) => `fd-run-${String(i).padStart(4, "0")}`
        const first = new Map<number, AuditRecord>()
        const peaks = { sequential: 0, concurrent: 0, settled: 0 }

        const appendOne = (sink: AuditSinkShape, i: number) =>
          Effect.map(sink.append(runId(i), callEntry(i, runId(i))), (r) => {
            first.set(i, r)
            return r
          })

        yield* Effect.scoped(
          Effect.gen(function* () {
            const sink = Context.get(
              yield* Layer.build(AuditSink.layerFile(dir, { fsync: "never", maxOpenFiles: MAX_OPEN, checkpointEvery: 100 })),
              AuditSink
            )
            // one run after the other
            for (let i = 0; i < SEQUENTIAL; i++) {
              yield* appendOne(sink, i)
              if (i % 5 === 0 || i === SEQUENTIAL - 1) peaks.sequential = Math.max(peaks.sequential, fdsInto(dir))
            }
            expect(peaks.sequential).toBeGreaterThan(MAX_OPEN / 2) // the count sees the sink's files
            expect(peaks.sequential).toBeLessThanOrEqual(MAX_OPEN + SLACK_SEQUENTIAL)

            // several at once
            let done = 0
            yield* Effect.forEach(
              Array.from({ length: RUNS - SEQUENTIAL }, (_, k) => SEQUENTIAL + k),
              (i) =>
                Effect.tap(appendOne(sink, i), () =>
                  Effect.sync(() => {
                    if (++done % 10 === 0) peaks.concurrent = Math.max(peaks.concurrent, fdsInto(dir))
                  })
                ),
              { concurrency: CONCURRENCY, discard: true }
            )
            expect(peaks.concurrent).toBeLessThanOrEqual(MAX_OPEN + SLACK_CONCURRENT)
            // once the writers have closed what they opened past the limit (a bounded wait, not a timing)
            for (let k = 0; k < 1000 && fdsInto(dir) > MAX_OPEN; k++) yield* Effect.sleep("10 millis")
            peaks.settled = fdsInto(dir)
            expect(peaks.settled).toBeLessThanOrEqual(MAX_OPEN)

            // run 0 was closed long ago: its checkpoint was written on closing, and its lock is still held
            const file0 = sink.fileFor(runId(0))
            const anchor0 = (yield* readText(anchorFileFor(file0))).trim().split("\n").map((l) => JSON.parse(l) as { seq: number; head: string })
            expect(anchor0).toEqual([expect.objectContaining({ seq: 1, head: first.get(0)!.hash })])
            expect((yield* readText(`${file0}.lock`)).trim()).toBe(String(process.pid))
            const other = yield* Effect.scoped(
              Effect.flatMap(Layer.build(AuditSink.layerFile(dir, { fsync: "never" })), (ctx) =>
                Context.get(ctx, AuditSink).append(runId(0), callEntry(0, runId(0))).pipe(Effect.flip)
              )
            )
            expect(other.message).toContain("another audit sink in this process")

            // appending again to run 0 reopens it and continues its chain
            const again = yield* sink.append(runId(0), callEntry(RUNS, runId(0)))
            expect(again.seq).toBe(2)
            expect(again.prev_hash).toBe(first.get(0)!.hash)
            expect(fdsInto(dir)).toBeLessThanOrEqual(MAX_OPEN + SLACK_SEQUENTIAL)
          })
        )
        yield* Effect.logInfo(`fds into the audit dir: ${JSON.stringify(peaks)} (max open ${MAX_OPEN})`)

        // every file verifies, checkpoints covering every record; no lock and no side file is left
        expect(first.size).toBe(RUNS)
        const names = new Set(yield* ls(dir))
        expect(names.size).toBe(2 * RUNS)
        for (let i = 0; i < RUNS; i++) {
          const name = `${runId(i)}.jsonl`
          const text = readFileSync(path.join(dir, name), "utf8")
          const anchor = readFileSync(path.join(dir, `${runId(i)}.anchor.jsonl`), "utf8")
          const v = verifyAudit(name, text, anchor, null)
          expect(v.chain.ok, name).toBe(true)
          expect(v.records, name).toBe(i === 0 ? 2 : 1)
          expect(v.anchor.status, name).toBe("ok")
        }
      }),
    180_000
  )

  it.scopedLive("maxOpenFiles 1: two runs appended in turn close each other and both chains continue", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const recs = yield* withSink(dir, { fsync: "group", maxOpenFiles: 1, checkpointEvery: 0 }, (sink) =>
        Effect.forEach(Array.from({ length: 20 }, (_, i) => i), (i) => {
          const run = i % 2 === 0 ? "even" : "odd"
          return sink.append(run, callEntry(i, run))
        }, {
          concurrency: 3
        })
      )
      expect(recs.map((r) => r.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => Math.floor(i / 2) + 1))
      for (const run of ["even", "odd"]) {
        const file = path.join(dir, `${run}.jsonl`)
        const v = verifyAudit(`${run}.jsonl`, yield* readText(file), yield* readText(anchorFileFor(file)), null)
        expect(v).toMatchObject({ records: 10, chain: { ok: true }, anchor: { status: "ok" } })
      }
      expect((yield* ls(dir)).filter((n) => n.endsWith(".lock"))).toEqual([])
    })
  )

  it.scopedLive("closing an idle file writes a final checkpoint (final: true), as closing the sink does; checkpoint() and periodic ones are not final", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      /** [seq, final] of each checkpoint of the run's anchor */
      const finals = (run: string) =>
        Effect.map(readOrNull(anchorFileFor(path.join(dir, `${run}.jsonl`))), (t) =>
          (t ?? "")
            .split("\n")
            .filter((l) => l.trim() !== "")
            .map((l) => JSON.parse(l) as { seq: number; final: boolean })
            .map((c) => [c.seq, c.final])
        )
      yield* withSink(dir, { fsync: "group", maxOpenFiles: 1, checkpointEvery: 2 }, (sink) =>
        Effect.gen(function* () {
          yield* sink.append("a", callEntry(1, "a"))
          yield* sink.checkpoint("a")
          expect(yield* finals("a")).toEqual([[1, false]])
          yield* sink.append("a", callEntry(2, "a"))
          // `b` takes the one open file: `a` is closed with a final checkpoint (its lock kept: it is still this sink's)
          yield* sink.append("b", callEntry(1, "b"))
          expect(yield* finals("a")).toEqual([[1, false], [2, true]])
          expect(existsSync(path.join(dir, "a.jsonl.lock"))).toBe(true)
          const fileA = path.join(dir, "a.jsonl")
          const live = verifyAudit("a.jsonl", yield* readText(fileA), yield* readText(anchorFileFor(fileA)), null, { lock: "a.jsonl.lock", pid: process.pid })
          expect(live.anchor).toEqual({ status: "ok", message: "2 checkpoint(s) cover all records" })
          // reopened: a periodic checkpoint (every 2) at 4, not final
          yield* sink.append("a", callEntry(3, "a"))
          yield* sink.append("a", callEntry(4, "a"))
          for (let i = 0; i < 200 && (yield* finals("a")).length < 3; i++) yield* Effect.sleep("5 millis")
          expect(yield* finals("a")).toEqual([[1, false], [2, true], [4, false]])
          expect(yield* finals("b")).toEqual([[1, true]])
        })
      )
      // the sink's close: a final checkpoint for `a` (covered already by a periodic one: the same seq again); `b` was closed final, untouched
      expect(yield* finals("a")).toEqual([[1, false], [2, true], [4, false], [4, true]])
      expect(yield* finals("b")).toEqual([[1, true]])
    })
  )
})

// ---------------------------------------------------------------------------------------------
// The anchor's torn tail

describe("anchor torn tail", () => {
  it.scopedLive("a torn last anchor line is repaired on open: side file, warning, the anchor parses; a second open repairs nothing", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const run = "anc"
      const file = path.join(dir, `${run}.jsonl`)
      const anchor = anchorFileFor(file)
      yield* withSink(dir, {}, (sink) => Effect.forEach([1, 2, 3], (i) => sink.append(run, callEntry(i, run))))
      const torn = `{"schema":"vetobench/anchor-v1","file":"anc.jsonl","seq":4,"he`
      yield* Effect.promise(() => fs.appendFile(anchor, torn))

      const { result: fourth, logs } = yield* captureLogs(withSink(dir, {}, (sink) => sink.append(run, callEntry(4, run))))
      expect(fourth.seq).toBe(4)
      const warnings = logs.filter((l) => l.level === "WARN")
      expect(warnings).toHaveLength(1)
      expect(warnings[0]!.message).toContain(`torn last line in ${anchor}`)
      expect(warnings[0]!.message).toContain(`${Buffer.byteLength(torn)} bytes`)
      const side = yield* tornFiles(dir, `${run}.anchor.jsonl`)
      expect(side).toHaveLength(1)
      expect(yield* readText(path.join(dir, side[0]!))).toBe(torn)

      const lines = (yield* readText(anchor)).split("\n")
      expect(lines.pop()).toBe("")
      expect(lines.map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual([3, 4])
      expect(verifyAudit(`${run}.jsonl`, yield* readText(file), yield* readText(anchor), null)).toMatchObject({
        records: 4,
        chain: { ok: true },
        anchor: { status: "ok" }
      })

      const { logs: again } = yield* captureLogs(withSink(dir, {}, (sink) => sink.append(run, callEntry(5, run))))
      expect(again.filter((l) => l.level === "WARN")).toEqual([])
      expect(yield* tornFiles(dir, `${run}.anchor.jsonl`)).toEqual(side)
      expect(yield* tornFiles(dir, `${run}.jsonl`)).toEqual([])
      expect(yield* emptyTornFiles(dir)).toEqual([])
    })
  )

  /** anchor content, and whether the append goes through (else the fragment of its error) */
  const ANCHORS: ReadonlyArray<readonly [string, string, true | string]> = [
    ["entirely garbage, no newline (all of it torn)", "garbage without any newline", true],
    ["garbage line", "garbage\n", "the anchor's last line is not a checkpoint"],
    ["valid JSON, not a checkpoint", `{"x":1}\n`, "the anchor's last line is not a checkpoint"],
    ["JSON null", "null\n", "the anchor's last line is not a checkpoint"],
    ["a checkpoint without its schema", `{"seq":1,"head":"00","key":null}\n`, "the anchor's last line is not a checkpoint"],
    ["blank lines only", "\n\n  \n", true]
  ]
  for (const [label, content, outcome] of ANCHORS) {
    it.scopedLive(`an anchor that is ${label}: ${outcome === true ? "continued" : "refused"}`, () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const run = "adv"
        const file = path.join(dir, `${run}.jsonl`)
        yield* Effect.promise(() => fs.writeFile(anchorFileFor(file), content))
        const result = yield* withSink(dir, { fsync: "never" }, (sink) => sink.append(run, callEntry(1, run))).pipe(Effect.either)
        if (outcome === true) {
          expect(Either.isRight(result) && result.right.seq).toBe(1)
        } else {
          expect(Either.isLeft(result) && result.left.file).toBe(anchorFileFor(file))
          expect(Either.isLeft(result) && result.left.reason).toContain(outcome)
          expect(yield* readOrNull(file)).toBeNull() // nothing appended
          expect(yield* readText(anchorFileFor(file))).toBe(content) // the anchor left as it was
        }
        expect(yield* emptyTornFiles(dir)).toEqual([])
        expect((yield* ls(dir)).filter((n) => n.endsWith(".lock"))).toEqual([])
      })
    )
  }
})

// ---------------------------------------------------------------------------------------------
// Failed repairs leave nothing behind

/** Make the next call of a FileHandle method fail (once, when `when` holds), for the test's scope. */
const failOnce = (method: "writeFile" | "truncate", when: (args: ReadonlyArray<unknown>) => boolean) =>
  Effect.gen(function* () {
    const probeDir = yield* tempDir
    const probe = yield* Effect.promise(() => fs.open(path.join(probeDir, "probe"), "w"))
    const proto = Object.getPrototypeOf(probe) as Record<typeof method, (...args: Array<unknown>) => Promise<unknown>>
    yield* Effect.promise(() => probe.close())
    const original = proto[method]
    let armed = true
    proto[method] = function (this: unknown, ...args: Array<unknown>) {
      if (armed && when(args)) {
        armed = false
        return Promise.reject(Object.assign(new Error(`${method} failed (test)`), { code: "EIO" }))
      }
      return original.apply(this, args)
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => void (proto[method] = original)))
    return { fired: () => !armed }
  })

describe("failed repairs", () => {
  const cases = [
    { target: "audit file", method: "writeFile" },
    { target: "audit file", method: "truncate" },
    { target: "anchor", method: "writeFile" },
    { target: "anchor", method: "truncate" }
  ] as const
  for (const { target, method } of cases) {
    it.scopedLive(`the ${target}'s repair fails at ${method}: no side file is left; the retry repairs it once`, () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const run = "retry"
        const file = path.join(dir, `${run}.jsonl`)
        const damaged = target === "audit file" ? file : anchorFileFor(file)
        yield* withSink(dir, {}, (sink) => Effect.forEach([1, 2], (i) => sink.append(run, callEntry(i, run))))
        const torn = `{"torn":"${target}`
        yield* Effect.promise(() => fs.appendFile(damaged, torn))
        const tornBuf = Buffer.from(torn)
        const fault = yield* failOnce(method, (args) =>
          method === "truncate" ? true : Buffer.isBuffer(args[0]) && Buffer.compare(args[0], tornBuf) === 0
        )
        yield* withSink(dir, { fsync: "never" }, (sink) =>
          Effect.gen(function* () {
            const err = yield* sink.append(run, callEntry(3, run)).pipe(Effect.flip)
            expect(fault.fired()).toBe(true)
            expect(err.file).toBe(damaged)
            expect(err.reason).toContain(`cannot recover the file's tail: ${method} failed (test)`)
            expect(yield* tornFiles(dir, path.basename(damaged))).toEqual([])
            expect((yield* readText(damaged)).endsWith(torn)).toBe(true) // still there, repaired next time
            // the retry (same sink: it keeps its lock) repairs it
            expect((yield* sink.append(run, callEntry(3, run))).seq).toBe(3)
          })
        )
        const side = yield* tornFiles(dir, path.basename(damaged))
        expect(side).toHaveLength(1)
        expect(yield* readText(path.join(dir, side[0]!))).toBe(torn)
        expect(yield* emptyTornFiles(dir)).toEqual([])
        expect(verifyAudit(`${run}.jsonl`, yield* readText(file), yield* readText(anchorFileFor(file)), null)).toMatchObject({
          records: 3,
          chain: { ok: true },
          anchor: { status: "ok" }
        })
      })
    )
  }
})
