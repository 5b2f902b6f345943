/** A run's results manifest: sha256 of each output, appended as the run's final record and checkpointed. */
import { readFileSync, statSync } from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import { AuditSink } from "../../layers/AuditSink.js"
import { sha256Hex } from "../domain/audit-chain.js"
import type { ManifestEntry } from "../domain/audit-record.js"
import { AuditInputError } from "./verify-files.js"

export const manifestFiles = (outputs: ReadonlyArray<string>): Effect.Effect<ManifestEntry["files"], AuditInputError> =>
  Effect.forEach(outputs, (file) =>
    Effect.try({
      try: () => {
        if (!statSync(file).isFile()) throw new Error("not a file")
        const bytes = readFileSync(file)
        return { path: path.resolve(file), sha256: sha256Hex(bytes), bytes: bytes.length }
      },
      catch: (e) => new AuditInputError({ file, reason: `cannot hash: ${e instanceof Error ? e.message : String(e)}` })
    })
  )

/**
 * Append the manifest to `runId`'s chain in the sink. The run's final record: closing the sink (the
 * command's scope, right after) writes the final checkpoint (`final: true`) that covers it. A
 * `sink.checkpoint` here would only add a periodic one (`final: false`) before it, covering the same record.
 */
export const appendManifest = (runId: string, outputs: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const files = yield* manifestFiles(outputs)
    const sink = yield* AuditSink
    return yield* sink.append(runId, { type: "manifest", run_id: runId, files })
  })
