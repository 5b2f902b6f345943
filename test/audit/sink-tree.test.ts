/**
 * The file sink keeps each log's Merkle tree (layers/AuditSink.ts): every checkpoint's `root` and signed
 * C2SP note are those of the tree over the records it covers — under concurrent appends, after a reopen
 * by a new sink (the edge is rebuilt from the file), after an idle file was closed and reopened (the edge
 * is kept), and when a log written without the tree (as before it existed) is continued. The verifier
 * checks roots and notes, and a checkpoint whose root or note is wrong fails with the reason.
 */
import { generateKeyPairSync } from "node:crypto"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { AuditSink, type FileSinkOptions } from "../../layers/AuditSink.js"
import { proveRecord } from "../../src/audit/receipt-make.js"
import { verifyReceipt } from "../../src/audit/receipt-verify.js"
import { verifyAudit } from "../../src/domain/audit-verify.js"
import { canonicalize } from "../../src/domain/canonical-json.js"
import { type Checkpoint, CHECKPOINT_PREFIX, signerFromPem, type Signer } from "../../src/domain/checkpoint.js"
import { MerkleTree } from "../../src/domain/merkle.js"
import { parseSignedCheckpoint, signCheckpoint } from "../../src/domain/tlog-checkpoint.js"
import { callEntry } from "../support/audit-entry.js"

const newSigner = (): Signer => signerFromPem(generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString())
const tmp = () => mkdtempSync(path.join(tmpdir(), "vetobench-sink-tree-"))

/** Append `entries` per run through one file sink over `dir`, concurrently within a run; the sink closes at the end. */
const session = (dir: string, options: FileSinkOptions, appends: ReadonlyArray<readonly [string, number]>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const sink = yield* AuditSink
        yield* Effect.forEach(appends, ([run, i]) => sink.append(run, callEntry(i, run)), { concurrency: 8, discard: true })
      }).pipe(Effect.provide(AuditSink.layerFile(dir, options)))
    )
  )

const lines = (file: string) => readFileSync(file, "utf8").split("\n").filter((l) => l !== "")
const hashesOf = (log: string) => lines(log).map((l) => (JSON.parse(l) as { hash: string }).hash)
const checkpointsOf = (dir: string, run: string) => lines(path.join(dir, `${run}.anchor.jsonl`)).map((l) => JSON.parse(l) as Checkpoint)

/** Every checkpoint's root and note against the tree over the log's records. */
const expectTreeCheckpoints = (dir: string, run: string, signer: Signer | null) => {
  const hashes = hashesOf(path.join(dir, `${run}.jsonl`))
  const tree = MerkleTree.fromRecordHashes(hashes)
  const checkpoints = checkpointsOf(dir, run)
  expect(checkpoints.length).toBeGreaterThan(0)
  for (const c of checkpoints) {
    expect(c.root, `checkpoint at ${c.seq}`).toBe(tree.root(c.seq).toString("hex"))
    if (signer === null) {
      expect(c.note).toBeNull()
      continue
    }
    const note = parseSignedCheckpoint(c.note!)
    if (typeof note === "string") throw new Error(note)
    expect(note.head.origin).toBe(`vetobench/${run}/${signer.key.key_id}`)
    expect(note.head.size).toBe(c.seq)
    expect(note.head.root.equals(tree.root(c.seq))).toBe(true)
  }
  return { hashes, checkpoints }
}

const verify = (dir: string, run: string, trusted: Signer | null) =>
  verifyAudit(`${run}.jsonl`, readFileSync(path.join(dir, `${run}.jsonl`), "utf8"), readFileSync(path.join(dir, `${run}.anchor.jsonl`), "utf8"), trusted?.key ?? null)

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

describe("the sink's Merkle tree", () => {
  it("concurrent appends, a checkpoint every 3 records and on close: every root and note is the tree's; a new sink continues it", async () => {
    const dir = tmp()
    const signer = newSigner()
    await session(dir, { signer, checkpointEvery: 3 }, range(1, 40).map((i) => ["r", i] as const))
    const first = expectTreeCheckpoints(dir, "r", signer)
    expect(first.hashes).toHaveLength(40)
    expect(first.checkpoints.at(-1)).toMatchObject({ seq: 40, final: true })
    // a new sink (a new process): the edge is rebuilt from the file
    await session(dir, { signer, checkpointEvery: 3 }, range(41, 57).map((i) => ["r", i] as const))
    const second = expectTreeCheckpoints(dir, "r", signer)
    expect(second.hashes).toHaveLength(57)
    expect(verify(dir, "r", signer)).toMatchObject({ status: "ok", anchor: { status: "ok" }, signatures: { status: "ok" } })
  }, 120_000)

  it("idle files closed and reopened (max 1 open file): the kept edge continues each tree", async () => {
    const dir = tmp()
    const signer = newSigner()
    const appends = range(1, 30).map((i) => [i % 3 === 0 ? "a" : i % 3 === 1 ? "b" : "c", i] as const)
    // one at a time, so that every append finds the others' files idle
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sink = yield* AuditSink
          for (const [run, i] of appends) yield* sink.append(run, callEntry(i, run))
        }).pipe(Effect.provide(AuditSink.layerFile(dir, { signer, checkpointEvery: 4, maxOpenFiles: 1 })))
      )
    )
    for (const run of ["a", "b", "c"]) {
      const { checkpoints } = expectTreeCheckpoints(dir, run, signer)
      // closed for being idle again and again: a final checkpoint each time
      expect(checkpoints.filter((c) => c.final).length).toBeGreaterThan(3)
      expect(verify(dir, run, signer).status).toBe("ok")
    }
  }, 120_000)

  it("a log written without the tree (as before it existed) verifies as before; a sink with the tree continues it and it can then be proven", async () => {
    const dir = tmp()
    const signer = newSigner()
    await session(dir, { signer, checkpointEvery: 2, merkle: false }, range(1, 5).map((i) => ["old", i] as const))
    const old = checkpointsOf(dir, "old")
    expect(old.every((c) => !("root" in c) && !("note" in c))).toBe(true)
    expect(verify(dir, "old", signer).status).toBe("ok")
    const log = path.join(dir, "old.jsonl")
    const refused = await Effect.runPromise(Effect.flip(proveRecord(log, 2)))
    expect(refused.reason).toMatch(/^no checkpoint carries a signed tree head \(the checkpoints are unsigned, or were written before the log was a Merkle tree\)/)
    await session(dir, { signer, checkpointEvery: 2 }, range(6, 7).map((i) => ["old", i] as const))
    const all = checkpointsOf(dir, "old")
    const rooted = all.filter((c) => c.root !== undefined)
    expect(rooted.map((c) => c.seq)).toEqual([7, 7])
    expect(verify(dir, "old", signer).status).toBe("ok")
    // records written before the tree are leaves like the others
    const receipt = await Effect.runPromise(proveRecord(log, 2))
    expect(receipt).toMatchObject({ leaf_index: 1, tree_size: 7 })
    expect(verifyReceipt(JSON.stringify(receipt), signer.key)).toMatchObject({ ok: true })
  }, 120_000)

  it("unsigned checkpoints carry the root and no note", async () => {
    const dir = tmp()
    await session(dir, { checkpointEvery: 2 }, range(1, 5).map((i) => ["u", i] as const))
    expectTreeCheckpoints(dir, "u", null)
    expect(verify(dir, "u", null)).toMatchObject({ status: "partial", anchor: { status: "ok" } })
  }, 120_000)
})

describe("the verifier checks each checkpoint's root and note", () => {
  /** A signed log of 6 records and its anchor; `edit` changes the last checkpoint's body, which is then re-signed (v1) by `resigner`. */
  const forged = async (edit: (c: Omit<Checkpoint, "sig">, signer: Signer) => Omit<Checkpoint, "sig">, resigner?: Signer) => {
    const dir = tmp()
    const signer = newSigner()
    await session(dir, { signer, checkpointEvery: 0 }, range(1, 6).map((i) => ["f", i] as const))
    const anchor = path.join(dir, "f.anchor.jsonl")
    const [line] = lines(anchor)
    const { sig: _sig, ...body } = JSON.parse(line!) as Checkpoint
    const next = edit(body, signer)
    const by = resigner ?? signer
    const sig = by.sign(Buffer.from(CHECKPOINT_PREFIX + canonicalize(next), "utf8")).toString("base64")
    writeFileSync(anchor, JSON.stringify({ ...next, sig }) + "\n")
    return { dir, signer }
  }

  it("a root that is not the tree's (signed by the key: a writer's bug, or a key holder's forgery)", async () => {
    const { dir, signer } = await forged((c) => ({ ...c, root: "0".repeat(64) }))
    expect(verify(dir, "f", signer).anchor).toEqual({ status: "failed", message: "checkpoint 1: its root is not the Merkle tree root of records 1–6 (forged or edited)" })
  })

  it("a note that says another tree size, or is signed by another key, or is missing", async () => {
    const size = await forged((c, signer) => {
      const note = parseSignedCheckpoint(c.note!)
      if (typeof note === "string") throw new Error(note)
      return { ...c, note: signCheckpoint({ ...note.head, size: 5 }, signer) }
    })
    expect(verify(size.dir, "f", size.signer).signatures.message).toMatch(/^checkpoint 1: its note \(origin vetobench\/f\/[0-9a-f]{16}, tree size 5, root [0-9a-f]{16}…\) is not this checkpoint's \(origin vetobench\/f\/[0-9a-f]{16}, seq 6, root/)
    const other = newSigner()
    const byOther = await forged((c) => {
      const note = parseSignedCheckpoint(c.note!)
      if (typeof note === "string") throw new Error(note)
      return { ...c, note: signCheckpoint(note.head, other) }
    })
    expect(verify(byOther.dir, "f", byOther.signer).signatures).toMatchObject({ status: "failed", message: expect.stringMatching(/^checkpoint 1: its note is not signed by the given key \(vetobench\/f\/[0-9a-f]{16}, key id [0-9a-f]{8}\): signed by vetobench\/f\/[0-9a-f]{16} \(key id [0-9a-f]{8}\)$/) })
    const none = await forged((c) => ({ ...c, note: null }))
    expect(verify(none.dir, "f", none.signer).signatures).toEqual({ status: "failed", message: "checkpoint 1: signed, with a root, but without its signed note" })
  })
})
