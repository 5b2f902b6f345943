/**
 * A child process for the audit crash test (test/layers/audit-durability.test.ts).
 *
 *   node --import tsx test/support/audit-writer-child.ts <dir> <run> [blobBytes] [fsync]
 *
 * Opens `AuditSink.layerFile(<dir>)` (fsync `group` unless told otherwise) and appends records to
 * run `<run>` forever from 16 concurrent appenders, printing `ACK <seq> <hash>` on stdout once each
 * append has completed (i.e. once its record is durable). Each record carries a `blobBytes` string
 * (default 600, about 1 KB per line); bigger records make a torn write more likely. `READY <pid>` is printed first. The parent kills
 * it with SIGKILL: it never ends by itself.
 *
 * stdout writes to a pipe are synchronous on Linux, so an `ACK` the parent has read was printed
 * after its append returned.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect } from "effect"
import { AuditSink, type FsyncMode } from "../../layers/AuditSink.js"
import type { CallEntry } from "../../src/domain/audit-record.js"
import { decided } from "../../src/domain/verdict.js"
import { callEntry } from "./audit-entry.js"

const [dir, run, blobArg, fsyncArg] = process.argv.slice(2)
if (dir === undefined || run === undefined) {
  process.stderr.write("usage: audit-writer-child.ts <dir> <run> [blobBytes] [fsync]\n")
  process.exit(2)
}
const blob = "x".repeat(Number(blobArg ?? "600"))
const fsync: FsyncMode = fsyncArg === "always" || fsyncArg === "never" ? fsyncArg : "group"
const CONCURRENCY = 16

const entry = (i: number): CallEntry => {
  const verdict = decided({ judge: "static", kind: "static", model: null, version: "static:allow" }, "allow", { reason: "static judge" })
  return callEntry(i, run, null, {
    request_id: `child-${process.pid}-${i}`,
    episode_id: "crash:1",
    agent_model: "qwen3.8-27b",
    tool: { name: "write_file", description: "Write a file.", parameters: null, arguments: { path: `/tmp/f${i}`, content: blob } },
    verdict,
    layers: [verdict],
    gate_ms: 0.1
  })
}

let next = 0
const appender = Effect.gen(function* () {
  const sink = yield* AuditSink
  for (;;) {
    const record = yield* sink.append(run, entry(next++))
    yield* Effect.sync(() => process.stdout.write(`ACK ${record.seq} ${record.hash}\n`))
  }
})

const main = Effect.gen(function* () {
  yield* Effect.sync(() => process.stdout.write(`READY ${process.pid}\n`))
  yield* Effect.forEach(Array.from({ length: CONCURRENCY }), () => appender, { concurrency: "unbounded", discard: true })
}).pipe(Effect.provide(AuditSink.layerFile(dir, { fsync })))

NodeRuntime.runMain(main)
