/**
 * bench/audit — throughput of the audit file sink (`AuditSink.layerFile`) and of chain verification.
 *
 * Append: K concurrent appenders (closed loop: each waits for its append, then issues the next)
 * write realistic `call` records (~1.4 KB lines, the static judge's verdict) to one run file, for N
 * records or T seconds, whichever comes first, after a warm-up run. The entries are built before the
 * run (a pool of 1,024 distinct entries: building them is the gate's work, timed separately), except
 * in one row kept for comparison with earlier runs. We report records/s, the process CPU per record
 * and the append latency. fsync `group` and `always` are the durable modes; `never` is the reference
 * for everything but the disk. Checkpoint overhead: group commit with `checkpointEvery` 0 (only on
 * close) against 100 (unsigned and Ed25519-signed).
 *
 * Verify, over a 100,000-record file: `verifyChainParallel` as `verify-audit` runs it (this thread and
 * the worker threads, warm: best of 3 after a first call that starts them), `verifyChainBytes` on this
 * thread alone, `vetobench verify-audit` end to end in a new process (Node's start included, when the
 * bundle is built), a file in the earlier insertion-order spelling, and the reference way (JSON.parse
 * + `canonicalizeReference` + SHA-256 per line).
 *
 * Profile: the per-record cost of the pure steps measured alone, set against the CPU per record of
 * the sink, to show where time goes.
 *
 *   npx tsx bench/audit.ts [--records 60000] [--seconds 5] [--verify-records 100000] [--dir DIR] [--no-tree] [--write]
 *   npx tsx bench/audit.ts --tree-overhead [--rounds 3] [--records 60000] [--seconds 5] [--dir DIR] [--write]
 *
 * `--write` replaces the `<!-- audit:start -->…<!-- audit:end -->` section of docs/performance.md
 * (appending a `## bench/audit` heading and the markers when absent).
 *
 * The sink keeps the log's Merkle tree (`FileSinkOptions.merkle`, default on): `--no-tree` runs every
 * append row as before the tree existed. `--tree-overhead` runs only the before/after of the tree in one
 * process: group commit (fsync `group`, 256 appenders) and no sync (`never`, 256 appenders: the CPU-bound
 * case), signed checkpoints every 100, each without and with the tree back to back (in alternating order),
 * `--rounds` times: the best runs and the median of the paired changes;
 * with `--write` it replaces the `<!-- audit-tree:start -->…<!-- audit-tree:end -->` section of
 * docs/performance.md.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Runtime } from "effect"
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { createHash, generateKeyPairSync, hash as sha256Once } from "node:crypto"
import * as fs from "node:fs/promises"
import { cpus, tmpdir } from "node:os"
import * as path from "node:path"
import { AuditSink, type FileSinkOptions, type FsyncMode } from "../layers/AuditSink.js"
import { preparedRecord, prepareEntry, recordLine, sealPrepared, sealRecord } from "../src/domain/audit-chain.js"
import { scanLines, verifyChainBytes, type VerifyResult } from "../src/domain/chain-verify.js"
import { readShared, verifyChainParallel, workerCount } from "../layers/chain-workers.js"
import { readCanonicalRecordLine } from "../src/domain/canonical-line.js"
import { GENESIS_HASH, HASH_PREFIX, type CallEntry } from "../src/domain/audit-record.js"
import { canonicalize, canonicalizeObjectText, canonicalizeReference } from "../src/domain/canonical-json.js"
import { makeCheckpoint, signerFromPem, type Signer } from "../src/domain/checkpoint.js"
import { decided } from "../src/domain/verdict.js"
import { MerkleEdgeBuilder } from "../src/domain/merkle.js"
import { isObject } from "../src/domain/is-object.js"

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`)
  const v = i > 0 ? Number(process.argv[i + 1]) : Number.NaN
  return Number.isFinite(v) && v > 0 ? v : fallback
}
const argString = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : undefined
}
const RECORDS = arg("records", 60_000)
const SECONDS = arg("seconds", 5)
const VERIFY_RECORDS = arg("verify-records", 100_000)
const WARMUP = 3_000
const WRITE = process.argv.includes("--write")
/** every append row without the Merkle tree (the sink as before it) */
const NO_TREE = process.argv.includes("--no-tree")
const TREE_OVERHEAD = process.argv.includes("--tree-overhead")
const ROUNDS = arg("rounds", 3)
const BASE_DIR = argString("dir") ?? tmpdir()
const APPEND_TARGET = 50_000
const VERIFY_TARGET = 200_000
/** Earlier figures on this VM (docs/performance.md): the first implementation, and the first optimisation pass (insertion-order lines, one thread). */
const BEFORE = { group256: 15_220, verify: 36_214 }
const PASS1 = { group256: 23_183, verify: 79_180 }
/** The second pass (canonical lines, pipelined group commit; entries canonicalized by the appender's fiber). */
const PASS2 = { group256: 39_130, builtInLoop: 30_486 }
const POOL_ENTRIES = 1_024

// ---------------------------------------------------------------------------------------------
// A realistic call record: the static `allow-all` judge's verdict on a write_file call, as the
// proxy benchmark writes them (about 1.1 KB as a JSONL line; the gate writes the verdict twice, as
// `verdict` and as the single entry of `layers`)

const TOOL_PARAMETERS = {
  type: "object",
  properties: { path: { type: "string" }, content: { type: "string" } },
  required: ["path", "content"]
}

const callEntry = (i: number, runId: string): CallEntry => {
  const verdict = decided({ judge: "allow-all", kind: "static", model: null, version: "static:allow" }, "allow", {
    reason: "static judge",
    latency_ms: (i % 7) / 100
  })
  return {
    type: "call",
    run_id: runId,
    request_id: `req-${i.toString(36).padStart(8, "0")}`,
    episode_id: `asbench:${i % 500}`,
    session_id: null,
    principal: null,
    agent_model: "qwen3.8-27b",
    arm: "enforce",
    judge: "allow-all",
    stream: i % 3 === 0,
    choice_index: 0,
    call_index: 0,
    tool_call_id: `call_${i}`,
    tool: {
      name: "write_file",
      description: "Write a file.",
      parameters: TOOL_PARAMETERS,
      arguments: { path: `/home/alice/reports/q${i % 4}-${i}.md`, content: "Revenue up 4 % on last quarter." }
    },
    verdict,
    layers: [verdict],
    effective_decision: "allow",
    blocked: false,
    fail_policy: "closed",
    approval: "automatic",
    outcome: null,
    gate_ms: 42.1
  }
}

// ---------------------------------------------------------------------------------------------
// Append throughput

interface AppendResult {
  readonly label: string
  readonly fsync: FsyncMode
  readonly concurrency: number
  readonly checkpoints: string
  readonly buildInLoop: boolean
  readonly records: number
  readonly seconds: number
  readonly perSecond: number
  /** process CPU (user + system) per record, µs */
  readonly cpuUs: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly lineBytes: number
}

const percentile = (xs: Float64Array, p: number): number => {
  const s = Float64Array.from(xs).sort()
  return s.length === 0 ? 0 : s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!
}

const appendRun = (
  label: string,
  opts: {
    readonly fsync: FsyncMode
    readonly concurrency: number
    readonly records: number
    readonly seconds: number
    readonly checkpointEvery: number
    readonly signer: Signer | null
    /** build each entry in the appender's loop (as runs before 2026-11-30 did) instead of taking it from the pool */
    readonly buildInLoop?: boolean
    /** keep the Merkle tree (default: unless --no-tree) */
    readonly merkle?: boolean
  }
) =>
  Effect.gen(function* () {
    // start from a clean page cache: dirty pages of earlier runs would be flushed during this one
    yield* Effect.sync(() => execFileSync("sync"))
    const dir = yield* Effect.promise(() => fs.mkdtemp(path.join(BASE_DIR, "vetobench-bench-audit-")))
    const run = "bench"
    const options: FileSinkOptions = { fsync: opts.fsync, checkpointEvery: opts.checkpointEvery, signer: opts.signer, merkle: opts.merkle ?? !NO_TREE }
    const latencies = new Float64Array(opts.records)
    const pool = Array.from({ length: POOL_ENTRIES }, (_, i) => callEntry(i, run))
    const measured = yield* Effect.gen(function* () {
      const sink = yield* AuditSink
      // open the file (lock, tail recovery) outside the measurement
      yield* sink.checkpoint(run)
      let issued = 0
      const cpu0 = process.cpuUsage()
      const t0 = performance.now()
      const deadline = t0 + opts.seconds * 1000
      const worker = Effect.gen(function* () {
        while (issued < opts.records && performance.now() < deadline) {
          const i = issued++
          const started = performance.now()
          yield* sink.append(run, opts.buildInLoop === true ? callEntry(i, run) : pool[i % POOL_ENTRIES]!)
          latencies[i] = performance.now() - started
        }
      })
      yield* Effect.forEach(Array.from({ length: opts.concurrency }), () => worker, { concurrency: "unbounded", discard: true })
      const seconds = (performance.now() - t0) / 1000
      const cpu = process.cpuUsage(cpu0)
      return { records: issued, seconds, cpuUs: (cpu.user + cpu.system) / issued }
    }).pipe(Effect.provide(AuditSink.layerFile(dir, options)))
    const file = path.join(dir, `${run}.jsonl`)
    const text = yield* Effect.promise(() => fs.readFile(file, "utf8"))
    const check = verifyChainBytes(Buffer.from(text, "utf8"), null)
    if (!check.ok || check.records !== measured.records) {
      return yield* Effect.die(new Error(`${label}: the written file does not verify: ${check.message} (${check.records} of ${measured.records})`))
    }
    yield* Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
    const lats = latencies.subarray(0, measured.records)
    const result: AppendResult = {
      label,
      fsync: opts.fsync,
      concurrency: opts.concurrency,
      checkpoints: opts.checkpointEvery === 0 ? "on close" : `every ${opts.checkpointEvery}${opts.signer === null ? "" : ", signed"}`,
      buildInLoop: opts.buildInLoop === true,
      records: measured.records,
      seconds: measured.seconds,
      perSecond: measured.records / measured.seconds,
      cpuUs: measured.cpuUs,
      p50Ms: percentile(lats, 50),
      p99Ms: percentile(lats, 99),
      lineBytes: Buffer.byteLength(text) / measured.records
    }
    yield* Effect.sync(() =>
      console.error(
        `  ${label}: ${result.records} records in ${result.seconds.toFixed(2)} s = ${Math.round(result.perSecond)} /s, ${result.cpuUs.toFixed(1)} µs CPU/record, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms`
      )
    )
    return result
  })

// ---------------------------------------------------------------------------------------------
// Verification throughput

/** A chain of `n` records as the sink writes it (canonical lines), or as files before 2026-11-30 had it (insertion order). */
const chainText = (n: number, spelling: "canonical" | "insertion" = "canonical"): string => {
  const parts: Array<string> = []
  let prev = GENESIS_HASH
  const ts = new Date().toISOString()
  for (let i = 1; i <= n; i++) {
    const r = sealRecord(callEntry(i, "verify"), { seq: i, ts, prev_hash: prev })
    prev = r.hash
    parts.push((spelling === "canonical" ? recordLine(r) : JSON.stringify(r)) + "\n")
  }
  return parts.join("")
}

interface VerifyBench {
  readonly records: number
  readonly megabytes: number
  /** reading the file into shared memory */
  readonly readSeconds: number
  /** verifyChainParallel, warm (best of 3) */
  readonly parallelSeconds: number
  /** its first call, which starts the worker threads */
  readonly coldSeconds: number
  readonly workers: number
  /** verifyChainBytes on this thread (best of 3) */
  readonly singleSeconds: number
  /** `vetobench verify-audit FILE` in a new process (best of 3), null without the bundle */
  readonly cliSeconds: number | null
  /** the same records in insertion order, verifyChainBytes (best of 3) */
  readonly insertionSeconds: number
  /** the reference way (JSON.parse + canonicalizeReference + createHash per line), one run */
  readonly referenceSeconds: number
}

/** verifyChainText as it was before the fast path: parse every line, canonicalize it the reference way. */
const verifyReference = (text: string): VerifyResult => {
  const lines = text.split("\n")
  const tail = lines.pop() ?? ""
  let prev = GENESIS_HASH
  let n = 0
  const bad = (message: string): VerifyResult => ({ ok: false, records: n - 1, index: n, message, torn: false })
  for (const line of lines) {
    if (line.trim() === "") continue
    n++
    const rec: unknown = JSON.parse(line)
    if (!isObject(rec) || rec.prev_hash !== prev) return bad("link")
    const { hash, ...body } = rec
    const expected = createHash("sha256").update(HASH_PREFIX, "utf8").update(canonicalizeReference(body), "utf8").digest("hex")
    if (hash !== expected || rec.seq !== n) return bad("hash")
    prev = expected
  }
  return tail === "" ? { ok: true, records: n, index: null, message: "ok", torn: false } : bad("torn")
}

const CLI = path.resolve("dist/cli.mjs")

/** Seconds of the fastest of `rounds` runs of `f` (which must verify `n` records). */
const fastest = async (rounds: number, n: number, label: string, f: () => Promise<VerifyResult> | VerifyResult): Promise<number> => {
  let best = Infinity
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now()
    const result = await f()
    const seconds = (performance.now() - t0) / 1000
    if (!result.ok || result.records !== n) throw new Error(`${label}: ${result.message} (${result.records} of ${n})`)
    best = Math.min(best, seconds)
  }
  return best
}

const verifyBench = (n: number) =>
  Effect.promise(async (): Promise<VerifyBench> => {
    const dir = await fs.mkdtemp(path.join(BASE_DIR, "vetobench-bench-verify-"))
    const file = path.join(dir, "verify.jsonl")
    const old = path.join(dir, "insertion.jsonl")
    await fs.writeFile(file, chainText(n))
    await fs.writeFile(old, chainText(n, "insertion"))
    const t0 = performance.now()
    const bytes = await readShared(file)
    const readSeconds = (performance.now() - t0) / 1000
    const coldSeconds = await fastest(1, n, "verifyChainParallel (cold)", () => verifyChainParallel(bytes, null))
    const parallelSeconds = await fastest(3, n, "verifyChainParallel", () => verifyChainParallel(bytes, null))
    const singleSeconds = await fastest(3, n, "verifyChainBytes", () => verifyChainBytes(bytes, null))
    const oldBytes = await fs.readFile(old)
    const insertionSeconds = await fastest(3, n, "insertion-order lines", () => verifyChainBytes(oldBytes, null))
    let cliSeconds: number | null = null
    if (existsSync(CLI)) {
      cliSeconds = await fastest(3, n, "verify-audit", () => {
        const r = spawnSync(process.execPath, [CLI, "verify-audit", file], { encoding: "utf8" })
        const ok = r.status === 0 && r.stdout.includes(`${n} records – chain ok`)
        return { ok, records: ok ? n : 0, index: null, message: ok ? "ok" : `exit ${r.status}: ${r.stdout}${r.stderr}`, torn: false }
      })
    }
    const text = bytes.toString("utf8")
    const referenceSeconds = await fastest(1, n, "reference", () => verifyReference(text))
    await fs.rm(dir, { recursive: true, force: true })
    const out: VerifyBench = {
      records: n,
      megabytes: bytes.length / 1e6,
      readSeconds,
      parallelSeconds,
      coldSeconds,
      workers: workerCount(),
      singleSeconds,
      cliSeconds,
      insertionSeconds,
      referenceSeconds
    }
    const rate = (sec: number) => `${sec.toFixed(2)} s = ${Math.round(n / sec)} /s`
    console.error(
      `  verify ${n} records (${out.megabytes.toFixed(1)} MB): parallel (${out.workers} worker(s) + this thread) ${rate(parallelSeconds)}, first call ${rate(coldSeconds)}; ` +
        `one thread ${rate(singleSeconds)}; verify-audit CLI ${cliSeconds === null ? "not built" : rate(cliSeconds)}; insertion-order lines ${rate(insertionSeconds)}; reference ${rate(referenceSeconds)}`
    )
    return out
  })

// ---------------------------------------------------------------------------------------------
// The disk alone: one write + fdatasync per batch of ready bytes (no sealing, no Effect)

interface DiskFloor {
  readonly batch: number
  readonly msPerBatch: number
  readonly perSecond: number
}

const diskFloor = (batch: number, batches: number) =>
  Effect.promise(async (): Promise<DiskFloor> => {
    execFileSync("sync")
    const dir = await fs.mkdtemp(path.join(BASE_DIR, "vetobench-bench-disk-"))
    const fh = await fs.open(path.join(dir, "floor.jsonl"), "a")
    try {
      const line = JSON.stringify(sealRecord(callEntry(1, "floor"), { seq: 1, ts: new Date().toISOString(), prev_hash: GENESIS_HASH })) + "\n"
      const bytes = Buffer.from(line.repeat(batch), "utf8")
      for (let i = 0; i < 20; i++) {
        await fh.write(bytes, 0, bytes.length, null)
        await fh.datasync()
      }
      const t0 = performance.now()
      for (let i = 0; i < batches; i++) {
        await fh.write(bytes, 0, bytes.length, null)
        await fh.datasync()
      }
      const msPerBatch = (performance.now() - t0) / batches
      return { batch, msPerBatch, perSecond: (batch * 1000) / msPerBatch }
    } finally {
      await fh.close()
      await fs.rm(dir, { recursive: true, force: true })
    }
  })

// ---------------------------------------------------------------------------------------------
// Where time goes: the pure steps per record, alone

interface Step {
  readonly step: string
  readonly us: number
}

/** µs per call of `f` over `n` calls (after a warm-up), cycling over a small pool of inputs. */
const timePerRecord = (n: number, f: (i: number) => void): number => {
  for (let i = 0; i < 3_000; i++) f(i)
  const t0 = performance.now()
  for (let i = 0; i < n; i++) f(i)
  return ((performance.now() - t0) * 1000) / n
}

/** Process CPU (user + system) per call of `f`, µs, after a warm-up. */
const cpuPerRecord = (n: number, f: (i: number) => void): number => {
  for (let i = 0; i < Math.min(n, 5_000); i++) f(i)
  const c0 = process.cpuUsage()
  for (let i = 0; i < n; i++) f(i)
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / n
}

const POOL = 1_000

const profileSteps = (n: number): ReadonlyArray<Step> => {
  const ts = new Date().toISOString()
  const entries = Array.from({ length: POOL }, (_, i) => callEntry(i, "profile"))
  const sealed = entries.map((e, i) => sealRecord(e, { seq: i + 1, ts, prev_hash: GENESIS_HASH }))
  const lines = sealed.map((r) => recordLine(r))
  const oldLines = sealed.map((r) => JSON.stringify(r))
  const lineBytes = lines.map((l) => Buffer.from(l + "\n", "utf8"))
  const bodies = sealed.map(({ hash: _h, ...rest }) => rest)
  // flat copies: a text built piece by piece would be re-read piece by piece at every concatenation
  const canon = bodies.map((b) => Buffer.from(canonicalize(b), "utf8").toString("utf8"))
  const prepared = entries.map((e) => prepareEntry(e))
  const at = (i: number) => ({ seq: i + 1, ts, prev_hash: GENESIS_HASH })
  const chain = Buffer.from(chainText(POOL), "utf8")
  const oldChain = Buffer.from(chainText(POOL, "insertion"), "utf8")
  let sink = 0
  const perRecord = (f: () => number) => {
    const rounds = Math.max(1, Math.round(n / POOL))
    f()
    const t0 = performance.now()
    for (let r = 0; r < rounds; r++) sink += f()
    return ((performance.now() - t0) * 1000) / (rounds * POOL)
  }
  const steps: Array<Step> = [
    { step: "build the entry object (the gate's work)", us: timePerRecord(n, (i) => void (sink += callEntry(i, "profile").call_index)) },
    { step: "canonicalize (JCS) the record", us: timePerRecord(n, (i) => void (sink += canonicalize(bodies[i % POOL]!).length)) },
    { step: "canonicalizeReference (the plain algorithm)", us: timePerRecord(n, (i) => void (sink += canonicalizeReference(bodies[i % POOL]!).length)) },
    { step: "SHA-256 of prefix + canonical text (crypto.hash)", us: timePerRecord(n, (i) => void (sink += sha256(HASH_PREFIX + canon[i % POOL]!).length)) },
    { step: "sealRecord (canonicalize + SHA-256 + the record object)", us: timePerRecord(n, (i) => void (sink += sealRecord(entries[i % POOL]!, at(i)).seq)) },
    {
      step: "append, in the writer: prepareEntry (the canonical text around the chain members, unflattened, and the record object)",
      us: timePerRecord(n, (i) => void (sink += prepareEntry(entries[i % POOL]!).parts![0].length))
    },
    { step: "append, in the writer: sealPrepared (join prev_hash, seq, ts + flatten + SHA-256 + the line cut from it)", us: timePerRecord(n, (i) => void (sink += sealPrepared(prepared[i % POOL]!, at(i)).line.length)) },
    { step: "append, in the writer: preparedRecord (the chain members filled in)", us: timePerRecord(n, (i) => void (sink += preparedRecord(prepared[i % POOL]!, at(i), GENESIS_HASH).seq)) },
    { step: "JSON.parse one line", us: timePerRecord(n, (i) => void (sink += (JSON.parse(lines[i % POOL]!) as { seq: number }).seq)) },
    {
      step: "verification: a canonical line read from its bytes (readCanonicalRecordLine)",
      us: timePerRecord(n, (i) => void (sink += readCanonicalRecordLine(lineBytes[i % POOL]!, 0, lineBytes[i % POOL]!.length - 1)!.cutTo))
    },
    { step: "verification, pass 1 per record (read + SHA-256: scanLines)", us: perRecord(() => scanLines(chain, 0, chain.length).count) },
    { step: "verification on one thread per record (both passes: verifyChainBytes)", us: perRecord(() => verifyChainBytes(chain, null).records) },
    {
      step: "verification of an insertion-order line: canonical text read from the text (canonicalizeObjectText)",
      us: timePerRecord(n, (i) => void (sink += canonicalizeObjectText(oldLines[i % POOL]!, "hash", ["hash", "prev_hash", "seq"])!.canonical.length))
    },
    { step: "verification on one thread per insertion-order record (verifyChainBytes)", us: perRecord(() => verifyChainBytes(oldChain, null).records) },
    { step: "verification the reference way per record (JSON.parse + canonicalizeReference + SHA-256)", us: perRecord(() => verifyReference(chain.toString("utf8")).records) }
  ]
  if (sink < 0) console.error(sink) // keep the work observable
  return steps
}

/** SHA-256 as the chain computes it: one `crypto.hash` call over prefix + canonical text. */
const sha256 = (text: string): string => sha256Once("sha256", text, "hex")

/**
 * µs of CPU per append of the sink's queueing alone, as the sink does it (no sealing or I/O): the
 * appender queues in one `Effect.async`; a writer fiber, scheduled when none runs, takes the whole
 * queue as one batch, yields (the I/O), and resumes each waiting appender.
 */
const effectOverhead = (n: number, concurrency: number) =>
  Effect.gen(function* () {
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    let queue: Array<(outcome: Effect.Effect<number>) => void> = []
    let writing = false
    const drain: Effect.Effect<void> = Effect.suspend(() => {
      const batch = queue
      queue = []
      if (batch.length === 0) {
        writing = false
        return Effect.void
      }
      return Effect.yieldNow().pipe(
        Effect.zipRight(
          Effect.sync(() => {
            for (const resume of batch) resume(Effect.succeed(1))
          })
        ),
        Effect.zipRight(drain)
      )
    })
    const append = Effect.async<number>((resume) => {
      queue.push(resume)
      if (!writing) {
        writing = true
        runFork(drain, { immediate: false })
      }
    })
    let issued = 0
    const worker = Effect.gen(function* () {
      while (issued < n) {
        issued++
        yield* append
      }
    })
    const cpu0 = process.cpuUsage()
    yield* Effect.forEach(Array.from({ length: concurrency }), () => worker, { concurrency: "unbounded", discard: true })
    const cpu = process.cpuUsage(cpu0)
    return (cpu.user + cpu.system) / n
  })

// ---------------------------------------------------------------------------------------------

const fmt = (x: number) => Math.round(x).toLocaleString("en-US")
const f1 = (x: number) => x.toFixed(1)
const f2 = (x: number) => x.toFixed(2)

type RunOptions = Parameters<typeof appendRun>[1]

/** The better (higher records/s) of `rounds` runs: disk latency varies from run to run. */
const bestOf = (label: string, opts: RunOptions, rounds = 2) =>
  Effect.gen(function* () {
    let best: AppendResult | null = null
    for (let r = 0; r < rounds; r++) {
      const result = yield* appendRun(label, opts)
      if (best === null || result.perSecond > best.perSecond) best = result
    }
    return best!
  })

/**
 * The Merkle tree's cost on appends, before/after in one process: each configuration without and with the
 * tree, interleaved round by round (the disk and the neighbours drift), the best of the rounds kept.
 */
const treeOverhead = Effect.gen(function* () {
  const pair = generateKeyPairSync("ed25519")
  const signer = signerFromPem(pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString())
  const base = { records: RECORDS, seconds: SECONDS, checkpointEvery: 100, signer, concurrency: 256 }
  console.error(`warm-up (${WARMUP} records)…`)
  yield* appendRun("warm-up", { ...base, fsync: "group", records: WARMUP })
  const configs = [
    ["group", false],
    ["group", true],
    ["never", false],
    ["never", true]
  ] as const
  const best: Array<AppendResult | null> = configs.map(() => null)
  const all: Array<Array<AppendResult>> = configs.map(() => [])
  for (let round = 0; round < ROUNDS; round++) {
    console.error(`round ${round + 1} of ${ROUNDS}…`)
    // each pair in the order A B, then B A: a run's position in its pair weighs the same on both sides
    const order = [0, 1, 2, 3].map((i) => (round % 2 === 0 ? i : i ^ 1))
    for (const k of order) {
      const [fsync, merkle] = configs[k]!
      const r = yield* appendRun(`${fsync} c256 ${merkle ? "tree" : "no tree"}`, { ...base, fsync, merkle })
      all[k]!.push(r)
      const prev = best[k]
      if (prev === null || prev === undefined || r.perSecond > prev.perSecond) best[k] = r
    }
  }
  const median = (xs: ReadonlyArray<number>) => {
    const s = [...xs].sort((a, b) => a - b)
    return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
  }
  /** the change with the tree, round by round (each pair ran back to back), its median */
  const pairedChange = (fsync: FsyncMode) => {
    const before = all[configs.findIndex(([f, m]) => f === fsync && !m)]!
    const after = all[configs.findIndex(([f, m]) => f === fsync && m)]!
    return {
      rate: median(before.map((b, i) => after[i]!.perSecond / b.perSecond - 1)),
      cpu: median(before.map((b, i) => after[i]!.cpuUs - b.cpuUs))
    }
  }
  const edge = new MerkleEdgeBuilder()
  const hashes = Array.from({ length: 1024 }, (_, i) => createHash("sha256").update(String(i)).digest("hex"))
  const appendUs = cpuPerRecord(300_000, (i) => edge.appendRecord(hashes[i % 1024]!))
  const root = Buffer.alloc(32)
  const checkpointUs = cpuPerRecord(2_000, (i) => void makeCheckpoint({ file: "bench.jsonl", seq: i + 1, head: GENESIS_HASH, ts: "2026-01-01T00:00:00.000Z", final: false }, signer))
  const noteUs = cpuPerRecord(2_000, (i) => void makeCheckpoint({ file: "bench.jsonl", seq: i + 1, head: GENESIS_HASH, ts: "2026-01-01T00:00:00.000Z", final: false, root }, signer)) - checkpointUs
  const rows = best.filter((r): r is AppendResult => r !== null)
  const pct = (after: number, before: number) => `${after >= before ? "+" : "−"}${f1((Math.abs(after - before) / before) * 100)} %`
  const table = [
    `| fsync, 256 appenders, signed checkpoints every 100 (${ROUNDS} rounds, each pair back to back, in alternating order) | records/s without the tree (best) | with the tree (best) | change, best | change, median of the rounds | CPU / record without (best run) | with | CPU added, median of the rounds |`,
    "|---|---|---|---|---|---|---|---|",
    ...(["group", "never"] as const).map((fsync) => {
      const before = rows.find((r) => r.fsync === fsync && r.label.endsWith("no tree"))!
      const after = rows.find((r) => r.fsync === fsync && r.label.endsWith(" tree") && !r.label.endsWith("no tree"))!
      const paired = pairedChange(fsync)
      const signed = (x: number) => `${x >= 0 ? "+" : "−"}${f1(Math.abs(x) * 100)} %`
      return `| \`${fsync}\` | ${fmt(before.perSecond)} | ${fmt(after.perSecond)} | ${pct(after.perSecond, before.perSecond)} | ${signed(paired.rate)} | ${f1(before.cpuUs)} µs | ${f1(after.cpuUs)} µs | ${f1(paired.cpu)} µs |`
    })
  ]
  const section = [
    "<!-- audit-tree:start -->",
    `Run ${new Date().toISOString().slice(0, 10)} on ${cpus().length} × ${cpus()[0]?.model.trim() ?? "cpu"}, Node ${process.version}, files in \`${BASE_DIR}\` ` +
      `(\`npx tsx bench/audit.ts --tree-overhead\`: each run stops at ${fmt(RECORDS)} records or ${SECONDS} s; the records of bench/audit above).`,
    "",
    ...table,
    "",
    `Per record the tree adds one leaf hash and, on average, one node hash on the file's right edge (computed in JavaScript on 32-bit words, no allocation: \`src/domain/merkle.ts\`): ${f2(appendUs)} µs of CPU timed alone; ` +
      `per checkpoint, the root's fold (at most log₂ n node hashes) and a second Ed25519 signature, the C2SP note's (${f1(noteUs)} µs, over ${f1(checkpointUs)} µs for the checkpoint without it). ` +
      "The rates move from run to run with the disk and the neighbours (this VM is shared): the median of the paired rounds and the CPU per record are the steadier figures.",
    "<!-- audit-tree:end -->"
  ].join("\n")
  console.log(section)
  if (WRITE) {
    const doc = path.resolve("docs/performance.md")
    const text = yield* Effect.promise(() => fs.readFile(doc, "utf8"))
    const marked = /<!-- audit-tree:start -->[\s\S]*<!-- audit-tree:end -->/
    const next = marked.test(text) ? text.replace(marked, () => section) : `${text.trimEnd()}\n\n## bench/audit: the Merkle tree's cost\n\n${section}\n`
    yield* Effect.promise(() => fs.writeFile(doc, next))
    console.error(`wrote ${doc}`)
  }
})

const main = Effect.gen(function* () {
  const pair = generateKeyPairSync("ed25519")
  const signer = signerFromPem(pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString())
  const base = { records: RECORDS, seconds: SECONDS, checkpointEvery: 100, signer: null }

  console.error(`warm-up (${WARMUP} records)…`)
  yield* appendRun("warm-up", { ...base, fsync: "group", concurrency: 16, records: WARMUP })

  console.error("append (best of 2 runs each)…")
  const appends: Array<AppendResult> = []
  for (const [fsync, concurrency] of [
    ["group", 16],
    ["group", 64],
    ["group", 256],
    ["always", 16],
    ["always", 64],
    ["never", 64],
    ["never", 256]
  ] as const) {
    appends.push(yield* bestOf(`${fsync} c${concurrency}`, { ...base, fsync, concurrency }))
  }
  appends.push(yield* bestOf("group c256, entries built in the loop", { ...base, fsync: "group", concurrency: 256, buildInLoop: true }))
  console.error("checkpoint overhead (interleaved, best of 3)…")
  const checkpointConfigs = [[0, null], [100, null], [100, signer]] as const
  const checkpointRows: Array<AppendResult | null> = checkpointConfigs.map(() => null)
  for (let round = 0; round < 3; round++) {
    for (const [k, [every, s]] of checkpointConfigs.entries()) {
      const r = yield* appendRun(`group c256 checkpoint ${every}${s === null ? "" : " signed"}`, { ...base, fsync: "group", concurrency: 256, checkpointEvery: every, signer: s })
      const prev = checkpointRows[k]
      if (prev === null || prev === undefined || r.perSecond > prev.perSecond) checkpointRows[k] = r
    }
  }
  const checkpointUs = {
    unsigned: timePerRecord(20_000, (i) => void makeCheckpoint({ file: "bench.jsonl", seq: i, head: GENESIS_HASH, ts: "2026-01-01T00:00:00.000Z" }, null)),
    signed: timePerRecord(2_000, (i) => void makeCheckpoint({ file: "bench.jsonl", seq: i, head: GENESIS_HASH, ts: "2026-01-01T00:00:00.000Z" }, signer))
  }

  console.error("verify…")
  const verify = yield* verifyBench(VERIFY_RECORDS)

  console.error("disk floor…")
  const floors: Array<DiskFloor> = []
  for (const batch of [1, 16, 64, 256]) floors.push(yield* diskFloor(batch, batch === 1 ? 1000 : 300))

  console.error("profile…")
  const steps = profileSteps(20_000)
  const queueUs = yield* effectOverhead(50_000, 64)

  // ------------------------------------------------------------------------------------------
  const pooled = appends.filter((r) => !r.buildInLoop)
  const bestGroup = pooled.filter((r) => r.fsync === "group").reduce((a, b) => (b.perSecond > a.perSecond ? b : a))
  const built = appends.find((r) => r.buildInLoop)!
  const never = pooled.filter((r) => r.fsync === "never").reduce((a, b) => (b.perSecond > a.perSecond ? b : a))
  const step = (name: string) => steps.find((s) => s.step.startsWith(name))?.us ?? 0
  const prepareUs = step("append, in the writer: prepareEntry")
  const sealUs = step("append, in the writer: sealPrepared")
  const recordUs = step("append, in the writer: preparedRecord")
  const pureAppendUs = prepareUs + sealUs + recordUs
  const entryUs = step("build the entry object")
  const readUs = step("verification: a canonical line")
  const pass1Us = step("verification, pass 1")
  const singleUs = step("verification on one thread per record")
  const shaUs = step("SHA-256")
  const ckRows = checkpointRows.filter((r): r is AppendResult => r !== null)
  const ck0 = ckRows[0]!
  const x = (after: number, before: number) => `${(after / before).toFixed(1)}×`
  const rate = (sec: number) => verify.records / sec

  const appendTable = [
    "| fsync | appenders | records | time | records/s | CPU / record | append p50 | append p99 |",
    "|---|---|---|---|---|---|---|---|",
    ...appends.map(
      (r) =>
        `| \`${r.fsync}\`${r.buildInLoop ? " (entries built in the loop)" : ""} | ${r.concurrency} | ${fmt(r.records)} | ${f2(r.seconds)} s | **${fmt(r.perSecond)}** | ${f1(r.cpuUs)} µs | ${f2(r.p50Ms)} ms | ${f2(r.p99Ms)} ms |`
    )
  ]
  const checkpointTable = [
    "| checkpoints (fsync `group`, 256 appenders; best of 3, interleaved) | records/s | vs on close only | CPU / record |",
    "|---|---|---|---|",
    ...ckRows.map(
      (r, i) =>
        `| ${r.checkpoints} | ${fmt(r.perSecond)} | ${i === 0 ? "—" : `${r.perSecond <= ck0.perSecond ? "−" : "+"}${f1((Math.abs(ck0.perSecond - r.perSecond) / ck0.perSecond) * 100)} %`} | ${f1(r.cpuUs)} µs |`
    )
  ]
  const verifyTable = [
    "| verify (100,000-record file) | time | records/s |",
    "|---|---|---|",
    `| \`verifyChainParallel\` (what \`verify-audit\` runs): this thread + ${verify.workers} worker thread(s), warm, best of 3 | ${f2(verify.parallelSeconds)} s | **${fmt(rate(verify.parallelSeconds))}** |`,
    `| the same, first call (starting the worker threads${import.meta.url.endsWith(".ts") ? " from source through tsx" : ""}) | ${f2(verify.coldSeconds)} s | ${fmt(rate(verify.coldSeconds))} |`,
    ...(verify.cliSeconds === null
      ? []
      : [`| \`vetobench verify-audit FILE\` in a new process (Node's start, reading, every check), best of 3 | ${f2(verify.cliSeconds)} s | ${fmt(rate(verify.cliSeconds))} |`]),
    `| \`verifyChainBytes\`: one thread | ${f2(verify.singleSeconds)} s | ${fmt(rate(verify.singleSeconds))} |`,
    `| a file written before 2026-11-30 (insertion-order lines), one thread | ${f2(verify.insertionSeconds)} s | ${fmt(rate(verify.insertionSeconds))} |`,
    `| the reference way (JSON.parse + \`canonicalizeReference\` + SHA-256 per line) | ${f2(verify.referenceSeconds)} s | ${fmt(rate(verify.referenceSeconds))} |`
  ]
  const profileTable = [
    "| step, timed alone (per record) | µs |",
    "|---|---|",
    ...steps.map((s) => `| ${s.step} | ${f2(s.us)} |`),
    `| the sink's queueing alone (one \`Effect.async\` per append + a writer fiber per burst, no sealing or I/O), 64 appenders, CPU | ${f2(queueUs)} |`
  ]
  const met = (ok: boolean) => (ok ? "**met**" : "**not met**")
  const lineBytes = Math.round(appends[0]!.lineBytes)
  const section = [
    "<!-- audit:start -->",
    `Run ${new Date().toISOString().slice(0, 10)} on ${cpus().length} × ${cpus()[0]?.model.trim() ?? "cpu"}, Node ${process.version}, files in \`${BASE_DIR}\`. ` +
      `Records are ${lineBytes}-byte \`call\` lines (the static \`allow-all\` judge on one \`write_file\` call, about the smallest realistic record); each append run stops at ${fmt(RECORDS)} records or ${SECONDS} s, after a ${fmt(WARMUP)}-record warm-up, and is the better of 2 runs; ` +
      "checkpoints every 100 (unsigned) unless stated. Appenders are closed loops (each waits for its append, then issues the next) and take their entries from a pool of " +
      `${fmt(POOL_ENTRIES)} built beforehand (building one is the gate's work: ${f1(entryUs)} µs); one row builds them in the loop, as runs before 2026-11-30 did. ` +
      "Every file written is verified after its run. CPU / record is the process's user + system time over the run (all threads: the collector's included). " +
      "The VM is shared: rates move from run to run with the disk and the neighbours; CPU / record is the steadier figure.",
    "",
    ...appendTable,
    "",
    ...checkpointTable,
    "",
    `A checkpoint costs ${f1(checkpointUs.unsigned)} µs to build unsigned and ${f1(checkpointUs.signed)} µs signed (Ed25519), plus one \`open\` + \`write\` + \`fdatasync\` + \`close\` of the anchor. ` +
      "Checkpoints are written beside the appends (one at a time per file; those that fall due meanwhile are merged into the next), so no append waits for one.",
    "",
    ...verifyTable,
    "",
    `**Targets (issue).** Verify ≥ 200,000 records/s: ${fmt(rate(verify.parallelSeconds))} records/s with \`verifyChainParallel\` (${fmt(rate(verify.singleSeconds))} on one thread; ` +
      `${fmt(PASS1.verify)} after the first optimisation pass, ${fmt(BEFORE.verify)} before it), ${met(rate(verify.parallelSeconds) >= VERIFY_TARGET)}. ` +
      `Append with group commit ≥ 50,000 records/s: best ${fmt(bestGroup.perSecond)} records/s (${bestGroup.concurrency} appenders; ${fmt(built.perSecond)} with the entries built in the loop), ` +
      `against ${fmt(PASS2.group256)} after the second pass (${fmt(PASS2.builtInLoop)} built in the loop), ${fmt(PASS1.group256)} after the first and ${fmt(BEFORE.group256)} before it ` +
      `(${x(built.perSecond, PASS2.builtInLoop)}, ${x(built.perSecond, PASS1.group256)} and ${x(built.perSecond, BEFORE.group256)} like for like), ${met(bestGroup.perSecond >= APPEND_TARGET)}. ` +
      "The hash, the chain and every verification result are unchanged; the lines are now written in canonical form (docs/audit-format.md), and files in the earlier spelling verify as before.",
    "",
    "**What makes verification fast.**",
    "",
    "1. *Canonical lines.* The sink writes each record as its canonical (JCS) text, `hash` included, so the text that was hashed is the line without its `hash` member. " +
      `\`readCanonicalRecordLine\` (\`src/domain/canonical-line.ts\`) checks in one pass over the line's bytes that it is exactly canonical — sorted unique keys, canonical strings and numbers, no whitespace, ASCII — without building a value (${f2(readUs)} µs), ` +
      `and the hash is one SHA-256 over two slices of the line (${f2(shaUs)} µs). Anything it does not accept (other spellings, non-ASCII text, escapes JSON.stringify would not write) takes the general path (decode, parse, canonicalize), so the verdict is always the reference's; the property tests compare the two on random and mangled lines.`,
    `2. *Two passes* (\`src/domain/chain-verify.ts\`): pass 1 reads and hashes each line on its own (${f2(pass1Us)} µs per record); pass 2 checks \`seq\` and the links in order (byte comparisons) and sends every other line to the general path, which gives every failure its message. One thread: ${f2(singleUs)} µs per record.`,
    `3. *Worker threads* (\`layers/chain-workers.ts\`): files of 4 MiB and more are read into shared memory and pass 1 runs over ranges of whole lines on this thread and on ${verify.workers} worker thread(s) at once (one per core beyond this one, at most 7: \`dist/chain-worker.mjs\` beside the bundle, the TypeScript source through tsx in development). The workers start on first use and stay (unreferenced); when they cannot start or fail, the range is scanned on this thread.`,
    "",
    "**What makes appends faster than the first pass, and what limits them.**",
    "",
    "1. *Queued appends hold only their entry.* The writer canonicalizes each entry when it takes the batch, right before sealing it, so nothing built for a record waits through a sync but the record object the append returns. " +
      "Until 2026-11-30 (second pass) the appender's fiber canonicalized before queueing; its text then waited for the batch and its sync, survived young-generation collections, and was promoted. Same CPU work, moved: in CPU profiles at 256 appenders the collector's share of the thread fell from about 17 % to 12 %, and the rate rose by a third.",
    `2. *No serialisation besides the canonical text, flattened once.* The line is the canonical text with the hash spliced in, so JSON.stringify is gone from every append. \`prepareEntry\` canonicalizes around the chain members into pieces it does not flatten (${f2(prepareUs)} µs, the record object built at the same time); \`sealPrepared\` joins them with \`prev_hash\`, \`seq\` and \`ts\`, hashes the whole (the hash flattens it) and cuts the line from the flat text, \`hash\` spliced in (${f2(sealUs)} µs).`,
    "3. *Pipelined group commit.* A batch is at most 64 records and up to three batches sync at once: appenders waiting for one sync all come back together, and one unbounded batch per sync left this thread idle during every `fdatasync` (the whole population moved in lockstep). Each batch still completes only after its own sync.",
    "4. *Checkpoints beside the appends* (above).",
    "5. *The verdict once.* A single judge's verdict is both `verdict` and the only entry of `layers`: the canonicalizer remembers the last object of many members it wrote within a record and writes the same object again from that text (`src/domain/canonical-json.ts`; never deeper than where it was written, so the depth limit fails as before).",
    "6. *One `Effect.async` per append*: the append queues its entry and starts the file's writer, when none runs, from inside it.",
    `- Where the time goes: ${f1(never.cpuUs)} µs of CPU per record with \`never\` at ${never.concurrency} appenders (all threads); the pure steps are ${f1(pureAppendUs)} µs (prepare ${f1(prepareUs)}, seal ${f1(sealUs)}, record ${f1(recordUs)}) and the queueing ${f1(queueUs)} µs; the rest is fiber scheduling, the write call and the collector.`,
    `- The thread that appends is busy about ${f1(1e6 / never.perSecond)} µs per record (${fmt(never.perSecond)} records/s without syncs); 50,000 records/s needs 20 µs. Tried and dropped (no gain on this VM): a writer thread (the appender canonicalizes, a worker seals, writes and syncs: posting each batch's texts cost the thread about what sealing them did; sending the entry instead costs a structured clone, slower than canonicalizing it), per-shape compiled serializers, writing canonical bytes straight into a buffer (no faster than building the text), a sorted copy for the native JSON.stringify (slower than canonicalizing), and larger young-generation semi-spaces.`,
    "",
    "**The disk alone** (one `write` + `fdatasync` per batch of ready bytes, no sealing, no Effect):",
    "",
    "| records per batch | ms per batch | records/s ceiling |",
    "|---|---|---|",
    ...floors.map((d) => `| ${d.batch} | ${f2(d.msPerBatch)} | ${fmt(d.perSecond)} |`),
    "",
    "The pure steps, timed alone on the same records:",
    "",
    ...profileTable,
    "<!-- audit:end -->"
  ].join("\n")
  console.log(section)

  if (WRITE) {
    const doc = path.resolve("docs/performance.md")
    const text = yield* Effect.promise(() => fs.readFile(doc, "utf8"))
    const marked = /<!-- audit:start -->[\s\S]*<!-- audit:end -->/
    const next = marked.test(text) ? text.replace(marked, () => section) : `${text.trimEnd()}\n\n## bench/audit\n\n${section}\n`
    yield* Effect.promise(() => fs.writeFile(doc, next))
    console.error(`wrote ${doc}`)
  }
})

NodeRuntime.runMain(TREE_OVERHEAD ? treeOverhead : main)
