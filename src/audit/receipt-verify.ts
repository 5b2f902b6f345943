/**
 * `vetobench audit verify-receipt`: a receipt (./receipt.ts) checked with the log's public key only, no
 * access to the log. Pure: the caller reads the files.
 *
 * Inclusion: the checkpoint is a C2SP signed checkpoint signed by the key under its origin, of this log
 * and naming this key (`vetobench/<run id>/<key id>`), of `tree_size`; the record's `hash` is the hash of
 * its content (else the record in the receipt was edited); its leaf index is its seq − 1; the audit path
 * leads from its leaf to the checkpoint's root.
 * Consistency: the new checkpoint as above; the old one (when the receipt carries it) signed by the same
 * key, of the same log, with the receipt's old size and root; the proof leads from the old root to the new.
 */
import { recordHash } from "../domain/audit-chain.js"
import type { CheckpointKey } from "../domain/checkpoint.js"
import { isRecordHash, recordLeaf, verifyConsistency, verifyInclusion } from "../domain/merkle.js"
import { checkpointSignatureProblem, originFor, parseSignedCheckpoint, type SignedCheckpoint } from "../domain/tlog-checkpoint.js"
import { type ConsistencyReceipt, hashFromBase64, type InclusionReceipt, parseReceipt } from "./receipt.js"

export type ReceiptVerdict = { readonly ok: true; readonly message: string } | { readonly ok: false; readonly reason: string }

const failed = (reason: string): ReceiptVerdict => ({ ok: false, reason })

/** The receipt's (new) checkpoint: signed by `key`, of `log`, of `size`; or why not. */
const checkedCheckpoint = (what: string, note: string, log: string, size: number, key: CheckpointKey): SignedCheckpoint | string => {
  const c = parseSignedCheckpoint(note)
  if (typeof c === "string") return `${what} is not a C2SP signed checkpoint: ${c}`
  const sig = checkpointSignatureProblem(c, key)
  if (sig !== null) return `${what} is ${sig}`
  const origin = originFor(log, key.key_id)
  if (c.head.origin !== origin) return `${what} is of ${c.head.origin}, not of this log (${origin})`
  if (c.head.size !== size) return `${what} is of tree size ${c.head.size}, not the receipt's ${size}`
  return c
}

const verifyInclusionReceipt = (r: InclusionReceipt, key: CheckpointKey): ReceiptVerdict => {
  const c = checkedCheckpoint("the checkpoint", r.checkpoint, r.log, r.tree_size, key)
  if (typeof c === "string") return failed(c)
  const rec = r.record
  if (!isRecordHash(rec.hash)) return failed("the record has no hash of 64 lowercase hex digits")
  let recomputed: string
  try {
    recomputed = recordHash(rec)
  } catch {
    return failed("the record cannot be hashed (it holds a value that is not JSON)")
  }
  if (recomputed !== rec.hash) return failed("the record's hash does not match its content (the record was edited)")
  if (rec.seq !== r.leaf_index + 1) return failed(`leaf index ${r.leaf_index} is not the record's (seq ${JSON.stringify(rec.seq)} − 1)`)
  const why = verifyInclusion(r.leaf_index, r.tree_size, recordLeaf(rec.hash), r.audit_path.map((h) => hashFromBase64(h)!), c.head.root)
  if (why !== null) return failed(`the record is not in the signed tree: ${why}`)
  return { ok: true, message: `record ${r.leaf_index + 1} of ${r.log} is in the tree of ${r.tree_size} records signed by ${key.key_id} (${c.head.origin})` }
}

const verifyConsistencyReceipt = (r: ConsistencyReceipt, key: CheckpointKey): ReceiptVerdict => {
  const c = checkedCheckpoint("the new checkpoint", r.checkpoint, r.log, r.tree_size, key)
  if (typeof c === "string") return failed(c)
  const oldRoot = hashFromBase64(r.old_root)!
  if (r.old_checkpoint !== null) {
    const old = checkedCheckpoint("the old checkpoint", r.old_checkpoint, r.log, r.old_size, key)
    if (typeof old === "string") return failed(old)
    if (!old.head.root.equals(oldRoot)) return failed("the old checkpoint's root is not the receipt's old_root")
  }
  const why = verifyConsistency(r.old_size, r.tree_size, oldRoot, c.head.root, r.proof.map((h) => hashFromBase64(h)!))
  if (why !== null) return failed(why)
  return {
    ok: true,
    message: `${r.log} grew from ${r.old_size} to ${r.tree_size} records without rewriting any (consistency proof verifies; checkpoint${r.old_checkpoint === null ? "" : "s"} signed by ${key.key_id})`
  }
}

/** Verify a receipt's text with the log's public key. */
export const verifyReceipt = (text: string, key: CheckpointKey): ReceiptVerdict => {
  const r = parseReceipt(text)
  if (typeof r === "string") return failed(`not a receipt: ${r}`)
  return r.type === "inclusion" ? verifyInclusionReceipt(r, key) : verifyConsistencyReceipt(r, key)
}
