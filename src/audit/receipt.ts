/**
 * Receipts (docs/audit-format.md, "Receipts"): what `vetobench audit prove` writes and `vetobench audit
 * verify-receipt` checks without the log. One JSON object, schema `vetobench/receipt-v1`, of one of two
 * types:
 * - `inclusion`: a record, its leaf index (seq − 1), the tree size, the audit path from its leaf to the
 *   root (RFC 9162 §2.1.3) and the log's signed C2SP checkpoint of that size;
 * - `consistency`: an old tree head (size, root, and the old signed checkpoint when there was one), the
 *   consistency proof (RFC 9162 §2.1.4) to the log's latest signed checkpoint, and that checkpoint.
 * Hashes in proofs and roots are base64 (as in the checkpoints), the record as it is in the log.
 */
import { isObject } from "../domain/is-object.js"
import { HASH_BYTES } from "../domain/merkle.js"

export const RECEIPT_SCHEMA = "vetobench/receipt-v1"

export interface InclusionReceipt {
  readonly schema: typeof RECEIPT_SCHEMA
  readonly type: "inclusion"
  /** the log's file name (`<run id>.jsonl`) */
  readonly log: string
  /** the record, every member as in its line */
  readonly record: Record<string, unknown>
  /** the record's leaf: its seq − 1 */
  readonly leaf_index: number
  /** the size of the tree the checkpoint signs */
  readonly tree_size: number
  /** base64 hashes, from the leaf's sibling up */
  readonly audit_path: ReadonlyArray<string>
  /** the log's C2SP checkpoint of `tree_size`, a signed note */
  readonly checkpoint: string
}

export interface ConsistencyReceipt {
  readonly schema: typeof RECEIPT_SCHEMA
  readonly type: "consistency"
  readonly log: string
  readonly old_size: number
  /** base64 root of the old tree */
  readonly old_root: string
  /** the old signed checkpoint, when the old tree head came as one (null for a bare receipt's head) */
  readonly old_checkpoint: string | null
  readonly tree_size: number
  /** base64 hashes (RFC 9162 §2.1.4.1's order) */
  readonly proof: ReadonlyArray<string>
  /** the log's C2SP checkpoint of `tree_size`, a signed note */
  readonly checkpoint: string
}

export type Receipt = InclusionReceipt | ConsistencyReceipt

/** 32 bytes in standard base64, or null. */
export const hashFromBase64 = (s: unknown): Buffer | null => {
  if (typeof s !== "string") return null
  const b = Buffer.from(s, "base64")
  return b.length === HASH_BYTES && b.toString("base64") === s ? b : null
}

const isSize = (n: unknown): n is number => typeof n === "number" && Number.isSafeInteger(n) && n >= 0

/** Read a receipt's JSON text, or say what is wrong with it. */
export const parseReceipt = (text: string): Receipt | string => {
  let r: unknown
  try {
    r = JSON.parse(text)
  } catch {
    return "not JSON"
  }
  if (!isObject(r) || r.schema !== RECEIPT_SCHEMA) return `not a ${RECEIPT_SCHEMA} receipt`
  if (typeof r.log !== "string" || r.log === "") return "log is not a file name"
  if (typeof r.checkpoint !== "string") return "checkpoint is not a signed note"
  if (!isSize(r.tree_size)) return "tree_size is not a non-negative integer"
  const hashes = (name: string, v: unknown): string | null =>
    Array.isArray(v) && v.every((h) => hashFromBase64(h) !== null) ? null : `${name} is not a list of base64 SHA-256 hashes`
  if (r.type === "inclusion") {
    if (!isObject(r.record)) return "record is not an object"
    if (!isSize(r.leaf_index)) return "leaf_index is not a non-negative integer"
    const bad = hashes("audit_path", r.audit_path)
    return bad ?? (r as unknown as InclusionReceipt)
  }
  if (r.type === "consistency") {
    if (!isSize(r.old_size)) return "old_size is not a non-negative integer"
    if (hashFromBase64(r.old_root) === null) return "old_root is not a base64 SHA-256 hash"
    if (r.old_checkpoint !== null && typeof r.old_checkpoint !== "string") return "old_checkpoint is not a signed note or null"
    const bad = hashes("proof", r.proof)
    return bad ?? (r as unknown as ConsistencyReceipt)
  }
  return `type ${JSON.stringify(r.type)} is not inclusion or consistency`
}
