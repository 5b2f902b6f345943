/**
 * `vetobench verify-audit --pubkey` does not pass a forgery: a rewritten chain with its anchor emptied,
 * the last checkpoint dropped and the records after it rewritten, a record with a key written twice,
 * the log and its anchor cut back to a checkpoint the writer did not close the file with (`final: false`),
 * a number respelled so that JavaScript reads the same record but other readers do not.
 * What a holder of the public key may rely on: OK (exit 0) only when every record is covered by a
 * checkpoint signed by that key; PARTIAL (exit 3) only for the records after the last checkpoint of a
 * file its writer still holds; FAIL (exit 1) otherwise. And the README's `verify-audit runs/audit/*.jsonl`
 * takes the anchor files the glob also names for what they are. And what stays undetectable: a cut back to
 * an earlier final checkpoint (the file was closed there and reopened), caught only by a copy of the anchor
 * kept elsewhere (`--anchor`). The commands run in this process (test/support/cli.ts); exit 3 of the
 * bundle itself is checked in cli.test.ts.
 */
import { createPrivateKey, sign } from "node:crypto"
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import { AuditSink } from "../../layers/AuditSink.js"
import { recordHash } from "../../src/domain/audit-chain.js"
import type { AuditEntry } from "../../src/domain/audit-record.js"
import { canonicalize } from "../../src/domain/canonical-json.js"
import { makeCheckpoint, signerFromPem } from "../../src/domain/checkpoint.js"
import { callEntry } from "../support/audit-entry.js"
import { runCliInProcess } from "../support/cli.js"

/** A signed demo log (8 records, one checkpoint on close) and, after `audit manifest`, a 9th record with a second checkpoint. */
let demo = { dir: "", log: "", anchor: "", pub: "", key: "" }
let manifested = { log: "", anchor: "", pub: "" }

const tmp = (prefix: string) => mkdtempSync(path.join(tmpdir(), `vetobench-${prefix}-`))

const runDemo = async () => {
  const out = tmp("forgery-demo")
  expect((await runCliInProcess(["demo", "--arms-only", "--out", out])).code).toBe(0)
  const dir = path.join(out, readdirSync(out)[0]!)
  return {
    dir: path.join(dir, "audit"),
    log: path.join(dir, "audit", "demo.jsonl"),
    anchor: path.join(dir, "audit", "demo.anchor.jsonl"),
    pub: path.join(dir, "keys", "audit.pub"),
    key: path.join(dir, "keys", "audit.key")
  }
}

beforeAll(async () => {
  demo = await runDemo()
  const other = await runDemo()
  const report = path.join(path.dirname(other.dir), "report.md")
  writeFileSync(report, "# results: 8 of 8 blocked\n")
  expect((await runCliInProcess(["audit", "manifest", other.log, report, "--key", other.key])).code).toBe(0)
  // a run of its own, with its own key
  manifested = { log: other.log, anchor: other.anchor, pub: other.pub }
}, 120_000)

const linesOf = (file: string) => readFileSync(file, "utf8").trimEnd().split("\n")

/** A copy of a log and its anchor in a fresh directory, changed by `edit`; the anchor is not written when `edit` sets it to null. */
const forged = (from: { log: string; anchor: string }, edit: (log: Array<string>, anchor: { lines: Array<string> | null }) => void) => {
  const dir = tmp("forgery")
  const log = linesOf(from.log)
  const anchor = { lines: linesOf(from.anchor) as Array<string> | null }
  edit(log, anchor)
  const file = path.join(dir, "demo.jsonl")
  writeFileSync(file, log.map((l) => l + "\n").join(""))
  if (anchor.lines !== null) writeFileSync(path.join(dir, "demo.anchor.jsonl"), anchor.lines.map((l) => l + "\n").join(""))
  return file
}

/** Re-chain records `from`… (0-based) after the genuine ones, each changed by `change`: the chain verifies again. */
const rechain = (log: Array<string>, from: number, change: (rec: Record<string, unknown>, i: number) => Record<string, unknown>) => {
  let prev = from === 0 ? "0".repeat(64) : (JSON.parse(log[from - 1]!) as { hash: string }).hash
  for (let i = from; i < log.length; i++) {
    const { hash: _h, ...body } = JSON.parse(log[i]!) as Record<string, unknown>
    const next = { ...change(body, i), prev_hash: prev }
    const hash = recordHash(next)
    log[i] = JSON.stringify({ ...next, hash })
    prev = hash
  }
}

const verify = (file: string, pub = demo.pub, ...extra: Array<string>) => runCliInProcess(["verify-audit", file, "--pubkey", pub, ...extra])

/**
 * A copy of the demo log and its anchor in a fresh directory, continued by the file sink (signed with the
 * demo's key, a checkpoint every `every` records) in one session per list of entries: each session closes the
 * file, with a final checkpoint.
 */
const continued = async (sessions: ReadonlyArray<ReadonlyArray<AuditEntry>>, every = 1) => {
  const dir = tmp("forgery-continued")
  const log = path.join(dir, "demo.jsonl")
  const anchor = path.join(dir, "demo.anchor.jsonl")
  copyFileSync(demo.log, log)
  copyFileSync(demo.anchor, anchor)
  const signer = signerFromPem(readFileSync(demo.key, "utf8"))
  for (const entries of sessions) {
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sink = yield* AuditSink
          for (const e of entries) yield* sink.append("demo", e)
        }).pipe(Effect.provide(AuditSink.layerFile(dir, { signer, checkpointEvery: every })))
      )
    )
  }
  return { log, anchor }
}

/** The checkpoints of an anchor file: seq and `final` (undefined when absent). */
const checkpointsOf = (anchor: string) => linesOf(anchor).map((l) => JSON.parse(l) as { seq: number; final?: boolean })

describe("verify-audit --pubkey: forgeries fail (exit 1)", () => {
  it("the genuine logs are OK (exit 0)", async () => {
    const r = await verify(demo.log)
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^OK {6}.*: 8 records – chain ok; anchor ok \(1 checkpoint\(s\) cover all records\); signatures ok/m)
    const m = await verify(manifested.log, manifested.pub)
    expect(m.code).toBe(0)
    expect(m.stdout).toMatch(/^OK {6}.*: 9 records – chain ok; anchor ok \(2 checkpoint\(s\) cover all records\); signatures ok/m)
  })

  it("1. every record rewritten and re-chained, the anchor emptied (or removed): nothing signed covers the file", async () => {
    const file = forged(demo, (log, anchor) => {
      rechain(log, 0, (rec, i) => (i === 7 ? { ...rec, blocked: false, effective_decision: "allow" } : rec))
      anchor.lines = []
    })
    const r = await verify(file)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/^FAIL {4}.*: 8 records – chain ok; anchor FAILED: the anchor holds no checkpoint: none of the 8 records is covered by a signed checkpoint; signatures FAILED/m)
    rmSync(file.replace(/\.jsonl$/, ".anchor.jsonl"))
    const gone = await verify(file)
    expect(gone.code).toBe(1)
    expect(gone.stdout).toMatch(/^FAIL {4}.*: 8 records – chain ok; anchor FAILED: no anchor file: none of the 8 records is covered by a signed checkpoint/m)
  })

  it("2. the last checkpoint dropped, the records after the new last one rewritten and re-chained: uncovered, and no writer holds the file", async () => {
    // the manifest (record 9) names another report hash; its checkpoint is gone
    const file = forged(manifested, (log, anchor) => {
      rechain(log, 8, (rec) => ({ ...rec, files: [{ path: "report.md", sha256: "0".repeat(64), bytes: 1 }] }))
      anchor.lines!.pop()
    })
    const r = await verify(file, manifested.pub)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(
      /^FAIL {4}.*: 9 records – chain ok; anchor FAILED: 1 checkpoint\(s\) cover records 1–8; record 9 not covered by a signed checkpoint, and no writer holds the file \(closing it checkpoints every record\): checkpoints were removed, or the writer stopped without closing the file; signatures ok/m
    )
    // dropping the checkpoint alone is the same finding
    const dropped = forged(manifested, (_log, anchor) => void anchor.lines!.pop())
    expect((await verify(dropped, manifested.pub)).code).toBe(1)
  })

  it("3. a record with a key written twice (JSON.parse keeps the last, the hash verifies): refused, naming the line and the key", async () => {
    const file = forged(demo, (log) => {
      const i = log.findIndex((l) => (JSON.parse(l) as { blocked: boolean }).blocked === false)
      expect(i).toBeGreaterThanOrEqual(0)
      // reads as blocked to a reader that keeps the first value
      log[i] = log[i]!.replace("{", '{"blocked":true,')
    })
    const r = await verify(file)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/^FAIL {4}.*– chain: record (\d+): duplicate key "blocked" at line \1 \(refused: JSON readers disagree on which value counts\)/m)
  })
})

describe("verify-audit --pubkey: cut back to an earlier checkpoint", () => {
  it("4. the log and its anchor cut back to a periodic checkpoint (final: false), no writer: FAIL (exit 1)", async () => {
    // closed by the demo at 8, reopened: 9 and 10 with a checkpoint each, closed at 10
    const genuine = await continued([[callEntry(9, "demo"), callEntry(10, "demo")]])
    expect(checkpointsOf(genuine.anchor).map((c) => [c.seq, c.final])).toEqual([
      [8, true],
      [9, false],
      [10, false],
      [10, true]
    ])
    expect((await verify(genuine.log)).code).toBe(0)
    // record 10 and the checkpoints after 9 cut: every record left is covered by a signed checkpoint
    for (const keep of [9, 10]) {
      const file = forged(genuine, (log, anchor) => {
        log.splice(keep)
        anchor.lines!.splice(keep - 7)
      })
      expect(checkpointsOf(file.replace(/\.jsonl$/, ".anchor.jsonl")).at(-1)).toMatchObject({ seq: keep, final: false })
      const r = await verify(file)
      expect(r.code).toBe(1)
      expect(r.stdout).toMatch(
        new RegExp(
          `^FAIL {4}.*: ${keep} records – chain ok; anchor FAILED: ${keep - 7} checkpoint\\(s\\) cover all records, but checkpoint ${keep - 7}, the last, is not final: ` +
            `the file was not closed by its writer after this checkpoint: records may have been cut \\(no writer holds the file, and closing it writes a final checkpoint\\); signatures ok`,
          "m"
        )
      )
    }
  }, 120_000)

  it("a file closed, reopened and closed again (final checkpoints at each close, periodic ones between) is OK (exit 0)", async () => {
    const genuine = await continued([[callEntry(9, "demo"), callEntry(10, "demo")], [callEntry(11, "demo")], []], 2)
    expect(checkpointsOf(genuine.anchor).map((c) => [c.seq, c.final])).toEqual([
      [8, true],
      [10, false],
      [10, true],
      [11, true]
    ])
    const r = await verify(genuine.log)
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^OK {6}.*: 11 records – chain ok; anchor ok \(4 checkpoint\(s\) cover all records\); signatures ok/m)
  }, 120_000)

  it("an anchor written before `final` existed (no such field) verifies as before: OK, and a cut back to one of its checkpoints is not detectable", async () => {
    // the checkpoints as the writer wrote them before the field: signed by hand over the documented bytes
    const priv = createPrivateKey(readFileSync(demo.key, "utf8"))
    const key = signerFromPem(readFileSync(demo.key, "utf8")).key
    const oldCheckpoint = (seq: number, head: string) => {
      const body = { schema: "vetobench/anchor-v1", file: "demo.jsonl", seq, head, count: seq, ts: "2026-11-30T12:00:00.000Z", key }
      const line = JSON.stringify({ ...body, sig: sign(null, Buffer.from("vetobench/v2 checkpoint\n" + canonicalize(body), "utf8"), priv).toString("base64") })
      // what makeCheckpoint writes without `final`
      expect(JSON.stringify(makeCheckpoint({ file: "demo.jsonl", seq, head, ts: body.ts }, signerFromPem(readFileSync(demo.key, "utf8"))))).toBe(line)
      return line
    }
    const hashOf = (line: string) => (JSON.parse(line) as { hash: string }).hash
    const file = forged(demo, (log, anchor) => {
      anchor.lines = [oldCheckpoint(4, hashOf(log[3]!)), oldCheckpoint(8, hashOf(log[7]!))]
    })
    expect(readFileSync(file.replace(/\.jsonl$/, ".anchor.jsonl"), "utf8")).not.toContain('"final"')
    const r = await verify(file)
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^OK {6}.*: 8 records – chain ok; anchor ok \(2 checkpoint\(s\) cover all records\); signatures ok/m)
    const cut = forged({ log: file, anchor: file.replace(/\.jsonl$/, ".anchor.jsonl") }, (log, anchor) => {
      log.splice(4)
      anchor.lines!.splice(1)
    })
    expect((await verify(cut)).code).toBe(0)
  })

  it("documented limit: cut back to an earlier final checkpoint (closed by the demo, reopened by `audit manifest`) is OK; a copy of the anchor kept elsewhere (--anchor) catches it", async () => {
    const copy = path.join(tmp("forgery-anchor-copy"), "demo.anchor.jsonl")
    copyFileSync(manifested.anchor, copy)
    expect(checkpointsOf(manifested.anchor).map((c) => [c.seq, c.final])).toEqual([
      [8, true],
      [9, true]
    ])
    // the manifest record and its checkpoint cut: what remains is the directory as the demo closed it
    const file = forged(manifested, (log, anchor) => {
      log.splice(8)
      anchor.lines!.splice(1)
    })
    expect((await verify(file, manifested.pub)).code).toBe(0)
    const r = await verify(file, manifested.pub, "--anchor", copy)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/^FAIL {4}.*: 8 records – chain ok; anchor FAILED: truncated: checkpoint 2 covers 9 records but the file has 8; signatures ok/m)
  })
})

describe("verify-audit --pubkey: numbers spelled otherwise than the writer spells them", () => {
  it("5. 10000000000000000 respelled 10000000000000001 (JavaScript reads the same record, the hash verifies; Python reads another integer): FAIL (exit 1), naming the line", async () => {
    const genuine = await continued([[callEntry(9, "demo", { id: 1e16 })]], 0)
    expect(linesOf(genuine.log)[8]).toContain('"id":10000000000000000')
    expect((await verify(genuine.log)).code).toBe(0)
    const file = forged(genuine, (log) => {
      log[8] = log[8]!.replace('"id":10000000000000000', '"id":10000000000000001')
    })
    expect(linesOf(file)[8]).toContain('"id":10000000000000001')
    const r = await verify(file)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(
      /^FAIL {4}.*: 9 records – chain: record 9: number 10000000000000001 at line 9 is not in canonical form \(10000000000000000\) \(refused: the hash covers the number JavaScript reads, and JSON readers disagree on its value\); anchor ok/m
    )
  }, 120_000)
})

describe("verify-audit --pubkey: PARTIAL (exit 3) while a writer holds the file", () => {
  it("records appended after the last checkpoint by a live writer: PARTIAL exit 3 (1 with --strict); OK once it closes the file", async () => {
    const dir = tmp("forgery-live")
    const log = path.join(dir, "demo.jsonl")
    copyFileSync(demo.log, log)
    copyFileSync(demo.anchor, path.join(dir, "demo.anchor.jsonl"))
    const signer = signerFromPem(readFileSync(demo.key, "utf8"))
    const whileOpen = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sink = yield* AuditSink
          yield* sink.append("demo", callEntry(9, "demo"))
          yield* sink.append("demo", callEntry(10, "demo"))
          return { partial: yield* Effect.promise(() => verify(log)), strict: yield* Effect.promise(() => verify(log, demo.pub, "--strict")) }
        }).pipe(Effect.provide(AuditSink.layerFile(dir, { signer, checkpointEvery: 100 })))
      )
    )
    expect(whileOpen.partial.code).toBe(3)
    expect(whileOpen.partial.stdout).toMatch(
      new RegExp(
        `^PARTIAL .*: 10 records – chain ok; anchor not checked: 1 checkpoint\\(s\\) cover records 1–8; records 9–10 not covered yet: a writer holds the file \\(demo\\.jsonl\\.lock, pid ${process.pid}\\); signatures ok`,
        "m"
      )
    )
    expect(whileOpen.partial.stderr).toMatch(/1 of 1 audit file\(s\) could not be fully verified \(PARTIAL: exit 3\)/)
    expect(whileOpen.strict.code).toBe(1)
    // closing the file wrote the checkpoint that covers them
    const closed = await verify(log)
    expect(closed.code).toBe(0)
    expect(closed.stdout).toMatch(/^OK {6}.*: 10 records – chain ok; anchor ok \(2 checkpoint\(s\) cover all records\); signatures ok/m)
  }, 120_000)
})

describe("verify-audit runs/audit/*.jsonl: anchor files among the FILEs", () => {
  const glob = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".jsonl")).sort().map((f) => path.join(dir, f))

  it("a clean directory is OK (exit 0): the anchor is checked with its audit file, not as a log", async () => {
    const files = glob(demo.dir)
    expect(files.map((f) => path.basename(f))).toEqual(["demo.anchor.jsonl", "demo.jsonl"])
    const r = await runCliInProcess(["verify-audit", ...files, "--pubkey", demo.pub])
    expect(r.code).toBe(0)
    expect(r.stdout).not.toMatch(/^FAIL/m)
    expect(r.stdout).toMatch(/^ANCHOR {2}.*demo\.anchor\.jsonl: the checkpoints of .*demo\.jsonl, checked with it$/m)
    expect(r.stdout).toMatch(/^OK {6}.*demo\.jsonl: 8 records – chain ok; anchor ok/m)
    const json = JSON.parse((await runCliInProcess(["verify-audit", ...files, "--pubkey", demo.pub, "--json"])).stdout) as Array<{ file: string; status: string; anchorFile: string }>
    expect(json).toEqual([expect.objectContaining({ file: demo.log, status: "ok", anchorFile: demo.anchor })])
  })

  it("an anchor file alone stands for its audit file; an anchor whose audit file is gone fails", async () => {
    const alone = await runCliInProcess(["verify-audit", demo.anchor, "--pubkey", demo.pub])
    expect(alone.code).toBe(0)
    expect(alone.stdout).toMatch(/^OK {6}.*demo\.jsonl: 8 records/m)
    const dir = tmp("forgery-orphan")
    copyFileSync(demo.anchor, path.join(dir, "demo.anchor.jsonl"))
    const orphan = await runCliInProcess(["verify-audit", ...glob(dir), "--pubkey", demo.pub])
    expect(orphan.code).toBe(1)
    expect(orphan.stdout).toMatch(/^FAIL {4}.*demo\.anchor\.jsonl: an anchor file whose audit file .*demo\.jsonl does not exist \(deleted\?\)$/m)
  })
})
