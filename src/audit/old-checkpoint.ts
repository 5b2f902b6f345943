/**
 * A checkpoint a third party kept (`audit prove --from FILE`, `verify-audit --since FILE`), in any of
 * the forms they may have kept it:
 * - the C2SP signed checkpoint itself (the `note` of an anchor line, as standard tooling saves it);
 * - an anchor file or some of its lines (the last checkpoint of them, which must carry its `note`);
 * - a receipt from `audit prove` (an inclusion receipt's checkpoint, with its record, which must still
 *   be in the log; a consistency receipt's new checkpoint).
 */
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { readFailure } from "../../layers/file-errors.js"
import type { SinceCheckpoint } from "../domain/audit-verify.js"
import { isObject } from "../domain/is-object.js"
import { isRecordHash } from "../domain/merkle.js"
import { parseSignedCheckpoint } from "../domain/tlog-checkpoint.js"
import { parseReceipt, RECEIPT_SCHEMA } from "./receipt.js"
import { AuditInputError } from "./verify-files.js"

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

/** The checkpoint in `text` (see the module comment), or why there is none. */
export const oldCheckpointOf = (text: string): SinceCheckpoint | string => {
  const trimmed = text.trimStart()
  if (!trimmed.startsWith("{")) {
    // a note saved by a tool that adds a newline of its own (`jq -r .note`) ends in a blank line
    const c = parseSignedCheckpoint(text.replace(/\n+$/, "\n"))
    return typeof c === "string" ? `not a signed checkpoint: ${c}` : { checkpoint: c, record: null }
  }
  // one value (a receipt, one anchor line), else one value per line (anchor lines): the last one
  const lines = text.split("\n").filter((l) => l.trim() !== "")
  const last = parseJson(text) ?? parseJson(lines[lines.length - 1] ?? "")
  if (last === undefined) return "not JSON, nor a signed checkpoint"
  if (isObject(last) && last.schema === RECEIPT_SCHEMA) {
    const r = parseReceipt(JSON.stringify(last))
    if (typeof r === "string") return `a receipt, but ${r}`
    const c = parseSignedCheckpoint(r.checkpoint)
    if (typeof c === "string") return `a receipt whose checkpoint is not a signed checkpoint: ${c}`
    if (r.type === "consistency") return { checkpoint: c, record: null }
    const { seq, hash } = r.record
    if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 1 || !isRecordHash(hash)) return "a receipt whose record has no seq or hash"
    return { checkpoint: c, record: { seq, hash } }
  }
  if (isObject(last) && typeof last.note === "string") {
    const c = parseSignedCheckpoint(last.note)
    return typeof c === "string" ? `an anchor checkpoint whose note is not a signed checkpoint: ${c}` : { checkpoint: c, record: null }
  }
  if (isObject(last) && "seq" in last && "head" in last) {
    return "an anchor checkpoint without a signed note (unsigned, or written before the log was a Merkle tree): it has no tree head to check against"
  }
  return "neither a signed checkpoint, an anchor checkpoint nor a receipt"
}

/** Read and parse an old checkpoint file; what is wrong with it is an `AuditInputError` naming the file. */
export const readOldCheckpoint = (file: string): Effect.Effect<SinceCheckpoint, AuditInputError> =>
  Effect.try({ try: () => readFileSync(file, "utf8"), catch: (e) => new AuditInputError({ file, reason: readFailure(e) }) }).pipe(
    Effect.flatMap((text) => {
      const c = oldCheckpointOf(text)
      return typeof c === "string" ? Effect.fail(new AuditInputError({ file, reason: c })) : Effect.succeed(c)
    })
  )
