/**
 * Worker thread of layers/chain-workers.ts: scans ranges of a shared file buffer (pass 1 of the chain
 * verification, `scanLines`) and sends the line tables back. Started as `dist/chain-worker.mjs` next to
 * the CLI bundle, or from source through tsx in development and tests.
 */
import { parentPort } from "node:worker_threads"
import { scanLines } from "../src/domain/chain-verify.js"

export interface ScanJob {
  readonly id: number
  readonly shared: SharedArrayBuffer
  readonly length: number
  readonly from: number
  readonly to: number
}

parentPort?.on("message", (job: ScanJob) => {
  const table = scanLines(Buffer.from(job.shared, 0, job.length), job.from, job.to)
  parentPort?.postMessage({ id: job.id, table }, [
    table.start.buffer,
    table.end.buffer,
    table.kind.buffer,
    table.hashAt.buffer,
    table.prevAt.buffer,
    table.seq.buffer
  ] as Array<ArrayBuffer>)
})
