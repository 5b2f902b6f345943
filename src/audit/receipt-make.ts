/**
 * `vetobench audit prove`: receipts from a log (./receipt.ts). The log is verified first (chain, anchor,
 * signatures as far as they go without a trusted key): no proof is made from a log that fails. A proof is
 * made against the log's latest signed checkpoint that carries a tree head (its `note`).
 */
import { existsSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import { anchorFileFor } from "../../layers/AuditSink.js"
import { readShared, verifyChainParallel } from "../../layers/chain-workers.js"
import { readFailure } from "../../layers/file-errors.js"
import { parseAnchor, type SinceCheckpoint, verifyAuditChecked } from "../domain/audit-verify.js"
import type { Checkpoint } from "../domain/checkpoint.js"
import { MerkleTree, verifyConsistency, verifyInclusion } from "../domain/merkle.js"
import { parseSignedCheckpoint, type SignedCheckpoint } from "../domain/tlog-checkpoint.js"
import { type ConsistencyReceipt, type InclusionReceipt, RECEIPT_SCHEMA } from "./receipt.js"
import { AuditInputError } from "./verify-files.js"

/** A log read and verified for proving: its records' hashes, tree and latest signed tree head. */
interface ProvableLog {
  readonly file: string
  readonly name: string
  readonly bytes: Buffer
  readonly hashes: ReadonlyArray<string>
  readonly tree: MerkleTree
  /** the last checkpoint with a signed note, and that note read */
  readonly latest: { readonly checkpoint: Checkpoint; readonly signed: SignedCheckpoint }
}

/** Read `file` and its anchor (`anchor`, else `<name>.anchor.jsonl` beside it) and check them. */
const provableLog = (file: string, anchor: string | null): Effect.Effect<ProvableLog, AuditInputError> =>
  Effect.gen(function* () {
    const refuse = (reason: string) => new AuditInputError({ file, reason })
    const bytes = yield* Effect.tryPromise({ try: () => readShared(file), catch: (e) => refuse(readFailure(e)) })
    const anchorFile = anchor ?? anchorFileFor(file)
    if (!existsSync(anchorFile)) return yield* refuse(`no anchor file ${anchorFile}: the log has no checkpoint to prove against`)
    const anchorText = yield* Effect.try({ try: () => readFileSync(anchorFile, "utf8"), catch: (e) => new AuditInputError({ file: anchorFile, reason: readFailure(e) }) })
    const hashes: Array<string> = []
    const chain = yield* Effect.promise(() => verifyChainParallel(bytes, hashes))
    const name = path.basename(file)
    const v = verifyAuditChecked(name, { chain, hashes }, () => [], anchorText, null)
    if (!chain.ok) return yield* refuse(`the chain does not verify (${chain.message}): no proof is made from a broken log (run verify-audit)`)
    if (v.anchor.status === "failed") return yield* refuse(`the anchor does not match the log (${v.anchor.message}): no proof is made (run verify-audit)`)
    if (v.signatures.status === "failed") return yield* refuse(`the checkpoints' signatures fail (${v.signatures.message}): no proof is made (run verify-audit)`)
    const checkpoints = parseAnchor(anchorText)
    if (typeof checkpoints === "string") return yield* refuse(checkpoints)
    const signedOnes = checkpoints.filter((c) => typeof c.note === "string")
    const last = signedOnes[signedOnes.length - 1]
    if (last === undefined) {
      return yield* refuse(
        "no checkpoint carries a signed tree head (the checkpoints are unsigned, or were written before the log was a Merkle tree): set audit.signing_key, and close the file again"
      )
    }
    const signed = parseSignedCheckpoint(last.note!)
    if (typeof signed === "string") return yield* refuse(`the latest checkpoint's note: ${signed}`)
    return { file, name, bytes, hashes, tree: MerkleTree.fromRecordHashes(hashes), latest: { checkpoint: last, signed } }
  })

/** Record `seq`'s line (1-based among the non-blank lines) parsed. */
const recordAt = (bytes: Buffer, seq: number): Record<string, unknown> | null => {
  let n = 0
  let at = 0
  for (let nl = bytes.indexOf(10, at); nl >= 0; nl = bytes.indexOf(10, at)) {
    const line = bytes.toString("utf8", at, nl)
    at = nl + 1
    if (line.trim() === "") continue
    if (++n === seq) {
      const r: unknown = JSON.parse(line)
      return typeof r === "object" && r !== null && !Array.isArray(r) ? (r as Record<string, unknown>) : null
    }
  }
  return null
}

/**
 * The inclusion receipt of record `seq` of `file`: against the latest signed checkpoint, which must cover it.
 * The proof is checked against the checkpoint's root before it is returned.
 */
export const proveRecord = (file: string, seq: number, anchor: string | null = null): Effect.Effect<InclusionReceipt, AuditInputError> =>
  Effect.gen(function* () {
    const log = yield* provableLog(file, anchor)
    const refuse = (reason: string) => new AuditInputError({ file, reason })
    const n = log.hashes.length
    if (!Number.isSafeInteger(seq) || seq < 1 || seq > n) return yield* refuse(`there is no record ${seq}: the log has records 1–${n}`)
    const size = log.latest.signed.head.size
    if (seq > size) {
      return yield* refuse(
        `record ${seq} is not covered by a signed checkpoint yet (the latest covers records 1–${size}): the writer checkpoints every audit.checkpoint_every records and when it closes the file`
      )
    }
    const path = log.tree.inclusionProof(seq - 1, size)
    const why = verifyInclusion(seq - 1, size, log.tree.leaf(seq - 1), path, log.latest.signed.head.root)
    if (why !== null) return yield* refuse(`the proof does not verify against the latest checkpoint: ${why}`)
    const record = recordAt(log.bytes, seq)
    if (record === null) return yield* refuse(`record ${seq} cannot be read`)
    return {
      schema: RECEIPT_SCHEMA,
      type: "inclusion",
      log: log.name,
      record,
      leaf_index: seq - 1,
      tree_size: size,
      audit_path: path.map((h) => h.toString("base64")),
      checkpoint: log.latest.checkpoint.note!
    } satisfies InclusionReceipt
  })

/**
 * The consistency receipt from `old` (a checkpoint kept elsewhere) to the log's latest signed checkpoint.
 * Refused when the log is not consistent with it: a rewritten history, or a log cut below its size.
 */
export const proveConsistency = (file: string, old: SinceCheckpoint, anchor: string | null = null): Effect.Effect<ConsistencyReceipt, AuditInputError> =>
  Effect.gen(function* () {
    const log = yield* provableLog(file, anchor)
    const refuse = (reason: string) => new AuditInputError({ file, reason })
    const from = old.checkpoint.head
    const to = log.latest.signed.head
    if (from.origin !== to.origin) return yield* refuse(`the old checkpoint is of ${from.origin}, this log's are of ${to.origin}`)
    if (from.size > to.size) return yield* refuse(`the old checkpoint covers ${from.size} records, more than the log's latest (${to.size}): the log was cut`)
    if (old.record !== null && log.hashes[old.record.seq - 1] !== old.record.hash) {
      return yield* refuse(`record ${old.record.seq} differs from the receipt's (changed after the receipt was issued)`)
    }
    if (!log.tree.root(from.size).equals(from.root)) {
      return yield* refuse(`history rewritten: records 1–${from.size} are not those the old checkpoint covers (their Merkle root differs)`)
    }
    const proof = log.tree.consistencyProof(from.size, to.size)
    const why = verifyConsistency(from.size, to.size, from.root, to.root, proof)
    if (why !== null) return yield* refuse(`the proof does not verify against the latest checkpoint: ${why}`)
    return {
      schema: RECEIPT_SCHEMA,
      type: "consistency",
      log: log.name,
      old_size: from.size,
      old_root: from.root.toString("base64"),
      old_checkpoint: old.checkpoint.signed,
      tree_size: to.size,
      proof: proof.map((h) => h.toString("base64")),
      checkpoint: log.latest.checkpoint.note!
    } satisfies ConsistencyReceipt
  })
