/**
 * Chain verification on every core: pass 1 (`scanLines`, each line on its own: read and hash) runs over
 * ranges of the file in worker threads and on this thread at once; pass 2 (`linkLines`, the links in
 * order) runs here. The result is `verifyChainBytes`'s, line for line.
 *
 * The workers are started on first use and kept (unreferenced: they never keep the process alive).
 * When they cannot be started or fail, the ranges are scanned on this thread: the verdict never
 * depends on them. Files smaller than {@link PARALLEL_MIN_BYTES} are verified on this thread.
 */
import { availableParallelism } from "node:os"
import * as fs from "node:fs/promises"
import type { Worker } from "node:worker_threads"
import { linkLines, scanLines, verifyChainBytes, type LineTable, type VerifyResult } from "../src/domain/chain-verify.js"
import type { ScanJob } from "./chain-worker.js"
import { startWorker } from "./worker-start.js"

/** below this size, starting the work elsewhere costs more than it saves */
export const PARALLEL_MIN_BYTES = 4 * 1024 * 1024

interface Reply {
  readonly id: number
  readonly table: LineTable
}

interface Pool {
  readonly workers: ReadonlyArray<Worker>
  readonly pending: Map<number, { readonly resolve: (t: LineTable) => void; readonly reject: (e: unknown) => void }>
  busy: number
}

let pool: Pool | null = null
let nextId = 1

/** How many workers: one per core beyond this thread's, at most 7. */
export const workerCount = (): number => Math.max(1, Math.min(7, availableParallelism() - 1))

const dropPool = (p: Pool, cause: unknown): void => {
  if (pool === p) pool = null
  for (const { reject } of p.pending.values()) reject(cause)
  p.pending.clear()
  for (const w of p.workers) void w.terminate()
}

const getPool = (): Pool => {
  if (pool !== null) return pool
  const p: Pool = { workers: Array.from({ length: workerCount() }, () => startWorker("chain-worker")), pending: new Map(), busy: 0 }
  for (const w of p.workers) {
    w.unref()
    w.on("message", (reply: Reply) => {
      const job = p.pending.get(reply.id)
      p.pending.delete(reply.id)
      if (--p.busy === 0) for (const x of p.workers) x.unref()
      job?.resolve(reply.table)
    })
    w.on("error", (e) => dropPool(p, e))
    w.on("exit", (code) => dropPool(p, new Error(`chain worker exited (${code})`)))
  }
  pool = p
  return p
}

const scanElsewhere = (worker: number, job: Omit<ScanJob, "id">): Promise<LineTable> =>
  new Promise((resolve, reject) => {
    const p = getPool()
    const id = nextId++
    p.pending.set(id, { resolve, reject })
    // referenced while a job runs, so that the process waits for it
    if (p.busy++ === 0) for (const w of p.workers) w.ref()
    p.workers[worker % p.workers.length]!.postMessage({ ...job, id } satisfies ScanJob)
  })

/** `count` ranges of whole lines covering `bytes`. */
const ranges = (bytes: Buffer, count: number): Array<readonly [number, number]> => {
  const out: Array<readonly [number, number]> = []
  let from = 0
  for (let i = 1; i <= count && from < bytes.length; i++) {
    const target = Math.floor((bytes.length * i) / count)
    const nl = i === count ? -1 : bytes.indexOf(10, Math.max(from, target - 1))
    const to = nl < 0 ? bytes.length : nl + 1
    out.push([from, to])
    from = to
  }
  if (out.length === 0) out.push([0, bytes.length])
  return out
}

/** The file's bytes in shared memory (what the workers read without a copy). */
export const readShared = async (file: string): Promise<Buffer> => {
  const fh = await fs.open(file, "r")
  try {
    const size = (await fh.stat()).size
    const bytes = Buffer.from(new SharedArrayBuffer(Math.max(1, size)), 0, size)
    let at = 0
    while (at < size) {
      const { bytesRead } = await fh.read(bytes, at, size - at, at)
      if (bytesRead === 0) break
      at += bytesRead
    }
    return bytes.subarray(0, at)
  } finally {
    await fh.close()
  }
}

/**
 * Verify the chain of `bytes` (a file's content) with every core; `hashes` as for `verifyChainBytes`.
 * `bytes` must live in a SharedArrayBuffer (see {@link readShared}) to be scanned elsewhere; otherwise,
 * or when small, it is verified on this thread.
 */
export const verifyChainParallel = async (
  bytes: Buffer,
  hashes: Array<string> | null,
  options: { readonly minBytes?: number } = {}
): Promise<VerifyResult> => {
  if (!(bytes.buffer instanceof SharedArrayBuffer) || bytes.length < (options.minBytes ?? PARALLEL_MIN_BYTES)) return verifyChainBytes(bytes, hashes)
  const shared = bytes.buffer
  const at = bytes.byteOffset
  return verifyInRanges(bytes, hashes, workerCount() + 1, (i, from, to) =>
    scanElsewhere(i, { shared, length: at + bytes.length, from: at + from, to: at + to }).then((t) => shift(t, -at))
  )
}

/**
 * Pass 1 over `bytes` in `count` ranges of whole lines, the first on this thread and each other one
 * through `elsewhere` (scanned here instead when that fails), then pass 2 over the tables in order.
 */
export const verifyInRanges = async (
  bytes: Buffer,
  hashes: Array<string> | null,
  count: number,
  elsewhere: (index: number, from: number, to: number) => Promise<LineTable>
): Promise<VerifyResult> => {
  const [mine, ...theirs] = ranges(bytes, count)
  const others = theirs.map(([from, to], i) => elsewhere(i, from, to).catch(() => scanLines(bytes, from, to)))
  const first = scanLines(bytes, mine![0], mine![1])
  return linkLines(bytes, [first, ...(await Promise.all(others))], hashes)
}

/** A table read from the whole shared buffer, with offsets made relative to `bytes`. */
const shift = (t: LineTable, by: number): LineTable => {
  if (by === 0) return t
  for (const a of [t.start, t.end, t.hashAt, t.prevAt]) for (let i = 0; i < t.count; i++) a[i]! += by
  return t
}
