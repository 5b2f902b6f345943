/** Read an audit file, its anchor and a trusted public key, and verify them (see domain/audit-verify). */
import { existsSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { Data, Effect } from "effect"
import { anchorFileFor } from "../../layers/AuditSink.js"
import { readShared, verifyChainParallel } from "../../layers/chain-workers.js"
import { readFailure } from "../../layers/file-errors.js"
import { verifyAuditChecked, type FileVerification } from "../domain/audit-verify.js"
import { type CheckpointKey, publicKeyFromPem } from "../domain/checkpoint.js"

export class AuditInputError extends Data.TaggedError("AuditInputError")<{ readonly file: string; readonly reason: string }> {
  override get message() {
    return `${this.file}: ${this.reason}`
  }
}

const readError = (file: string, e: unknown): AuditInputError => new AuditInputError({ file, reason: readFailure(e) })

const read = (file: string) => Effect.try({ try: () => readFileSync(file, "utf8"), catch: (e) => readError(file, e) })

/** A file's lines (split at "\n", as the chain check reads them), each decoded on its own: no one string holds the file. */
const linesOf = (bytes: Buffer): Array<string> => {
  const lines: Array<string> = []
  let start = 0
  for (let end = bytes.indexOf(10); end >= 0; end = bytes.indexOf(10, start)) {
    lines.push(bytes.toString("utf8", start, end))
    start = end + 1
  }
  lines.push(bytes.toString("utf8", start))
  return lines
}

export const loadPublicKey = (file: string): Effect.Effect<CheckpointKey, AuditInputError> =>
  read(file).pipe(
    Effect.flatMap((pem) =>
      Effect.try({
        try: () => publicKeyFromPem(pem),
        catch: (e) => new AuditInputError({ file, reason: `not an Ed25519 public key: ${e instanceof Error ? e.message : String(e)}` })
      })
    )
  )

export interface FileReport extends FileVerification {
  readonly file: string
  /** the anchor file used, or null */
  readonly anchorFile: string | null
}

/** Verify one file; the anchor is `anchor` when given, else `<name>.anchor.jsonl` beside it when present. */
export const verifyFile = (file: string, anchor: string | null, trusted: CheckpointKey | null): Effect.Effect<FileReport, AuditInputError> =>
  Effect.gen(function* () {
    const bytes = yield* Effect.tryPromise({ try: () => readShared(file), catch: (e) => readError(file, e) })
    const anchorFile = anchor ?? (existsSync(anchorFileFor(file)) ? anchorFileFor(file) : null)
    const anchorText = anchorFile === null ? null : yield* read(anchorFile)
    const hashes: Array<string> = []
    const chain = yield* Effect.promise(() => verifyChainParallel(bytes, hashes))
    return { ...verifyAuditChecked(path.basename(file), { chain, hashes }, () => linesOf(bytes), anchorText, trusted), file, anchorFile }
  })

/** One line for a file: status, records, then each check. */
export const reportLine = (r: FileReport): string => {
  const tag = r.status === "ok" ? "OK     " : r.status === "partial" ? "PARTIAL" : "FAIL   "
  const chain = r.chain.ok ? "chain ok" : `chain: ${r.chain.message}`
  const part = (name: string, c: { status: string; message: string }) =>
    c.status === "ok" ? `${name} ok (${c.message})` : c.status === "failed" ? `${name} FAILED: ${c.message}` : `${name} not checked: ${c.message}`
  return `${tag} ${r.file}: ${r.records} records – ${chain}; ${part("anchor", r.anchor)}; ${part("signatures", r.signatures)}`
}
