/**
 * bench/audit — throughput of the audit file sink (`AuditSink.layerFile`) and of chain verification.
 *
 * Append: K concurrent appenders (closed loop: each waits for its append, then issues the next)
 * write realistic `call` records (~1 KB lines, one LLM judge verdict) to one run file, for N records
 * or T seconds, whichever comes first, after a warm-up run. We report records/s, the process CPU
 * per record and the append latency. fsync `group` and `always` are the durable modes; `never` is
 * the reference for everything but the disk. Checkpoint overhead: group commit with
 * `checkpointEvery` 0 (only on close) against 100 (unsigned and Ed25519-signed).
 *
 * Verify: `verifyChainText` over a 100,000-record file (read separately), best of 3, and once the
 * reference way (JSON.parse + `canonicalizeReference` + SHA-256 per line: the algorithm before the fast
 * path) for comparison.
 *
 * Profile: the per-record cost of the pure steps (canonicalize, the reference canonicalizer, SHA-256,
 * the two sealing steps, JSON.stringify, JSON.parse, the verifier's text reader) measured alone, set
 * against the CPU per record of the sink, to show where time goes.
 *
 *   npx tsx bench/audit.ts [--records 20000] [--seconds 5] [--verify-records 100000] [--dir DIR] [--write]
 *
 * `--write` replaces the `<!-- audit:start -->…<!-- audit:end -->` section of docs/performance.md
 * (appending a `## bench/audit` heading and the markers when absent).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { createHash, generateKeyPairSync, hash as sha256Once } from "node:crypto"
import * as fs from "node:fs/promises"
import { cpus, tmpdir } from "node:os"
import * as path from "node:path"
import { AuditSink, type FileSinkOptions, type FsyncMode } from "../layers/AuditSink.js"
import { preparedRecord, prepareEntry, sealPrepared, sealRecord } from "../src/domain/audit-chain.js"
import { verifyChainText, type VerifyResult } from "../src/domain/chain-verify.js"
import { GENESIS_HASH, HASH_PREFIX, type CallEntry } from "../src/domain/audit-record.js"
import { canonicalize, canonicalizeObjectText, canonicalizeReference } from "../src/domain/canonical-json.js"
import { makeCheckpoint, signerFromPem, type Signer } from "../src/domain/checkpoint.js"
import { decided } from "../src/domain/verdict.js"

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`)
  const v = i > 0 ? Number(process.argv[i + 1]) : Number.NaN
  return Number.isFinite(v) && v > 0 ? v : fallback
}
const argString = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : undefined
}
const RECORDS = arg("records", 20_000)
const SECONDS = arg("seconds", 5)
const VERIFY_RECORDS = arg("verify-records", 100_000)
const WARMUP = 3_000
const WRITE = process.argv.includes("--write")
const BASE_DIR = argString("dir") ?? tmpdir()
const APPEND_TARGET = 50_000
const VERIFY_TARGET = 200_000
/** The figures of the implementation before the fast paths (docs/performance.md, run 2026-11-30 on this VM). */
const BEFORE = { group256: 15_220, never64CpuUs: 65.3, verify: 36_214, sealUs: 21.87, stringifyUs: 5.83, queueUs: 13.49 }

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
  opts: { readonly fsync: FsyncMode; readonly concurrency: number; readonly records: number; readonly seconds: number; readonly checkpointEvery: number; readonly signer: Signer | null }
) =>
  Effect.gen(function* () {
    // start from a clean page cache: dirty pages of earlier runs would be flushed during this one
    yield* Effect.sync(() => execFileSync("sync"))
    const dir = yield* Effect.promise(() => fs.mkdtemp(path.join(BASE_DIR, "vetobench-bench-audit-")))
    const run = "bench"
    const options: FileSinkOptions = { fsync: opts.fsync, checkpointEvery: opts.checkpointEvery, signer: opts.signer }
    const latencies = new Float64Array(opts.records)
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
          yield* sink.append(run, callEntry(i, run))
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
    const check = verifyChainText(text)
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

const chainText = (n: number): string => {
  const parts: Array<string> = []
  let prev = GENESIS_HASH
  const ts = new Date().toISOString()
  for (let i = 1; i <= n; i++) {
    const r = sealRecord(callEntry(i, "verify"), { seq: i, ts, prev_hash: prev })
    prev = r.hash
    parts.push(JSON.stringify(r) + "\n")
  }
  return parts.join("")
}

interface VerifyBench {
  readonly records: number
  readonly megabytes: number
  readonly readSeconds: number
  readonly verifySeconds: number
  readonly perSecond: number
  /** the reference way (JSON.parse + canonicalizeReference + createHash per line), one run */
  readonly referenceSeconds: number
}

const isRecordObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

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
    if (!isRecordObject(rec) || rec.prev_hash !== prev) return bad("link")
    const { hash, ...body } = rec
    const expected = createHash("sha256").update(HASH_PREFIX, "utf8").update(canonicalizeReference(body), "utf8").digest("hex")
    if (hash !== expected || rec.seq !== n) return bad("hash")
    prev = expected
  }
  return tail === "" ? { ok: true, records: n, index: null, message: "ok", torn: false } : bad("torn")
}

const verifyBench = (n: number) =>
  Effect.gen(function* () {
    const dir = yield* Effect.promise(() => fs.mkdtemp(path.join(BASE_DIR, "vetobench-bench-verify-")))
    const file = path.join(dir, "verify.jsonl")
    yield* Effect.promise(() => fs.writeFile(file, chainText(n)))
    let best = { readSeconds: Infinity, verifySeconds: Infinity, bytes: 0 }
    let text = ""
    for (let round = 0; round < 3; round++) {
      const t0 = performance.now()
      text = yield* Effect.promise(() => fs.readFile(file, "utf8"))
      const t1 = performance.now()
      const result = verifyChainText(text)
      const t2 = performance.now()
      if (!result.ok || result.records !== n) return yield* Effect.die(new Error(`verify: ${result.message}`))
      if (t2 - t1 < best.verifySeconds * 1000) best = { readSeconds: (t1 - t0) / 1000, verifySeconds: (t2 - t1) / 1000, bytes: Buffer.byteLength(text) }
    }
    const t3 = performance.now()
    const reference = verifyReference(text)
    const referenceSeconds = (performance.now() - t3) / 1000
    if (!reference.ok || reference.records !== n) return yield* Effect.die(new Error(`verify (reference): ${reference.message}`))
    yield* Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
    const out: VerifyBench = {
      records: n,
      megabytes: best.bytes / 1e6,
      readSeconds: best.readSeconds,
      verifySeconds: best.verifySeconds,
      perSecond: n / best.verifySeconds,
      referenceSeconds
    }
    yield* Effect.sync(() =>
      console.error(
        `  verify: ${n} records (${out.megabytes.toFixed(1)} MB) in ${out.verifySeconds.toFixed(2)} s = ${Math.round(out.perSecond)} /s; reference way ${referenceSeconds.toFixed(2)} s = ${Math.round(n / referenceSeconds)} /s`
      )
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

const POOL = 1_000

const profileSteps = (n: number): ReadonlyArray<Step> => {
  const ts = new Date().toISOString()
  const entries = Array.from({ length: POOL }, (_, i) => callEntry(i, "profile"))
  const sealed = entries.map((e, i) => sealRecord(e, { seq: i + 1, ts, prev_hash: GENESIS_HASH }))
  const lines = sealed.map((r) => JSON.stringify(r))
  const bodies = sealed.map(({ hash: _h, ...rest }) => rest)
  const canon = bodies.map((b) => canonicalize(b))
  const prepared = entries.map((e) => prepareEntry(e))
  const at = (i: number) => ({ seq: i + 1, ts, prev_hash: GENESIS_HASH })
  const chain = chainText(POOL)
  let sink = 0
  const verifyUs = (verify: (text: string) => VerifyResult) => {
    const rounds = Math.max(1, Math.round(n / POOL))
    verify(chain)
    const t0 = performance.now()
    for (let r = 0; r < rounds; r++) sink += verify(chain).records
    return ((performance.now() - t0) * 1000) / (rounds * POOL)
  }
  const steps: Array<Step> = [
    { step: "build the entry object", us: timePerRecord(n, (i) => void (sink += callEntry(i, "profile").call_index)) },
    { step: "canonicalize (JCS) the record", us: timePerRecord(n, (i) => void (sink += canonicalize(bodies[i % POOL]!).length)) },
    { step: "canonicalizeReference (the plain algorithm, as before)", us: timePerRecord(n, (i) => void (sink += canonicalizeReference(bodies[i % POOL]!).length)) },
    {
      step: "SHA-256 of prefix + canonical text (crypto.hash)",
      us: timePerRecord(n, (i) => void (sink += sha256(HASH_PREFIX + canon[i % POOL]!).length))
    },
    {
      step: "sealRecord (copy + canonicalize + SHA-256 + the record object)",
      us: timePerRecord(n, (i) => void (sink += sealRecord(entries[i % POOL]!, at(i)).seq))
    },
    {
      step: "append, in the appender's fiber: prepareEntry (canonical texts around the chain members + JSON.stringify)",
      us: timePerRecord(n, (i) => void (sink += prepareEntry(entries[i % POOL]!).parts![0].length))
    },
    { step: "append, in the writer: sealPrepared (splice prev_hash, seq, ts + SHA-256 + the line)", us: timePerRecord(n, (i) => void (sink += sealPrepared(prepared[i % POOL]!, at(i)).line.length)) },
    { step: "append, in the appender's fiber: preparedRecord (the record object returned)", us: timePerRecord(n, (i) => void (sink += preparedRecord(prepared[i % POOL]!, at(i), GENESIS_HASH).seq)) },
    { step: "JSON.stringify the record (the written line)", us: timePerRecord(n, (i) => void (sink += JSON.stringify(sealed[i % POOL]!).length)) },
    { step: "JSON.parse one line", us: timePerRecord(n, (i) => void (sink += (JSON.parse(lines[i % POOL]!) as { seq: number }).seq)) },
    {
      step: "verification's canonical text read from the line (canonicalizeObjectText)",
      us: timePerRecord(n, (i) => void (sink += canonicalizeObjectText(lines[i % POOL]!, "hash", ["hash", "prev_hash", "seq"])!.canonical.length))
    },
    { step: "verifyChainText per record (read + SHA-256 + checks)", us: verifyUs(verifyChainText) },
    { step: "verification the reference way per record (JSON.parse + canonicalizeReference + SHA-256)", us: verifyUs(verifyReference) }
  ]
  if (sink < 0) console.error(sink) // keep the work observable
  return steps
}

/** SHA-256 as the chain computes it: one `crypto.hash` call over prefix + canonical text. */
const sha256 = (text: string): string => sha256Once("sha256", text, "hex")

/**
 * µs of CPU per append of the sink's queueing alone, as the sink does it (no sealing or I/O): the
 * appender queues and waits in `Effect.async`; a writer fiber, forked when none runs, takes the whole
 * queue as one batch, yields (the I/O), and resumes each waiting appender.
 */
const effectOverhead = (n: number, concurrency: number) =>
  Effect.gen(function* () {
    interface Waiting {
      resume: ((outcome: Effect.Effect<number>) => void) | null
      outcome: Effect.Effect<number> | null
    }
    let queue: Array<Waiting> = []
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
            for (const w of batch) {
              const outcome = Effect.succeed(1)
              if (w.resume !== null) w.resume(outcome)
              else w.outcome = outcome
            }
          })
        ),
        Effect.zipRight(drain)
      )
    })
    const append = Effect.suspend(() => {
      const w: Waiting = { resume: null, outcome: null }
      queue.push(w)
      const wait = Effect.async<number>((resume) => {
        if (w.outcome !== null) resume(w.outcome)
        else w.resume = resume
      })
      if (writing) return wait
      writing = true
      return Effect.zipRight(Effect.forkDaemon(drain), wait)
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
    ["never", 16],
    ["never", 64]
  ] as const) {
    appends.push(yield* bestOf(`${fsync} c${concurrency}`, { ...base, fsync, concurrency }))
  }
  console.error("checkpoint overhead (interleaved, best of 3)…")
  const checkpointConfigs = [[0, null], [100, null], [100, signer]] as const
  const checkpointRows: Array<AppendResult | null> = checkpointConfigs.map(() => null)
  for (let round = 0; round < 3; round++) {
    for (const [k, [every, s]] of checkpointConfigs.entries()) {
      const r = yield* appendRun(`group c64 checkpoint ${every}${s === null ? "" : " signed"}`, { ...base, fsync: "group", concurrency: 64, checkpointEvery: every, signer: s })
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
  const groups = appends.filter((r) => r.fsync === "group")
  const bestGroup = groups.reduce((a, b) => (b.perSecond > a.perSecond ? b : a))
  const never64 = appends.find((r) => r.fsync === "never" && r.concurrency === 64)!
  const step = (name: string) => steps.find((s) => s.step.startsWith(name))?.us ?? 0
  const prepareUs = step("append, in the appender's fiber: prepareEntry")
  const sealUs = step("append, in the writer")
  const recordUs = step("append, in the appender's fiber: preparedRecord")
  const pureAppendUs = prepareUs + sealUs + recordUs
  const entryUs = step("build the entry object")
  const verifyStepUs = step("verifyChainText")
  const readUs = step("verification's canonical text")
  const shaUs = step("SHA-256")
  const pipelineDiskMs = floors.find((d) => d.batch === 64)?.msPerBatch ?? 0
  const ckRows = checkpointRows.filter((r): r is AppendResult => r !== null)
  const ck0 = ckRows[0]!
  const x = (after: number, before: number) => `${(after / before).toFixed(1)}×`

  const appendTable = [
    "| fsync | appenders | records | time | records/s | CPU / record | append p50 | append p99 |",
    "|---|---|---|---|---|---|---|---|",
    ...appends.map(
      (r) => `| \`${r.fsync}\` | ${r.concurrency} | ${fmt(r.records)} | ${f2(r.seconds)} s | **${fmt(r.perSecond)}** | ${f1(r.cpuUs)} µs | ${f2(r.p50Ms)} ms | ${f2(r.p99Ms)} ms |`
    )
  ]
  const checkpointTable = [
    "| checkpoints (fsync `group`, 64 appenders; best of 3, interleaved) | records/s | vs on close only | CPU / record |",
    "|---|---|---|---|",
    ...ckRows.map(
      (r, i) =>
        `| ${r.checkpoints} | ${fmt(r.perSecond)} | ${i === 0 ? "—" : `${r.perSecond <= ck0.perSecond ? "−" : "+"}${f1((Math.abs(ck0.perSecond - r.perSecond) / ck0.perSecond) * 100)} %`} | ${f1(r.cpuUs)} µs |`
    )
  ]
  const verifyTable = [
    "| verify | records | size | read | verification | records/s |",
    "|---|---|---|---|---|---|",
    `| \`verifyChainText\` | ${fmt(verify.records)} | ${f1(verify.megabytes)} MB | ${f2(verify.readSeconds)} s | ${f2(verify.verifySeconds)} s | **${fmt(verify.perSecond)}** |`,
    `| the reference way (JSON.parse + \`canonicalizeReference\` + SHA-256 per line, as before) | ${fmt(verify.records)} | ${f1(verify.megabytes)} MB | — | ${f2(verify.referenceSeconds)} s | ${fmt(verify.records / verify.referenceSeconds)} |`
  ]
  const profileTable = [
    "| step, timed alone (per record) | µs |",
    "|---|---|",
    ...steps.map((s) => `| ${s.step} | ${f2(s.us)} |`),
    `| the sink's queueing alone (\`Effect.async\` per append + a forked writer per burst, no sealing or I/O), 64 appenders, CPU | ${f2(queueUs)} |`
  ]
  const met = (ok: boolean) => (ok ? "met" : "**not met**")
  const lineBytes = Math.round(appends[0]!.lineBytes)
  const section = [
    "<!-- audit:start -->",
    `Run ${new Date().toISOString().slice(0, 10)} on ${cpus().length} × ${cpus()[0]?.model.trim() ?? "cpu"}, Node ${process.version}, files in \`${BASE_DIR}\`. ` +
      `Records are ${lineBytes}-byte \`call\` lines (the static \`allow-all\` judge on one \`write_file\` call, about the smallest realistic record); each append run stops at ${fmt(RECORDS)} records or ${SECONDS} s, after a ${fmt(WARMUP)}-record warm-up, and is the better of 2 runs; ` +
      "checkpoints every 100 (unsigned) unless stated. Appenders are closed loops (each waits for its append, then issues the next). " +
      "Every file written is verified after its run. CPU / record is the process's user + system time over the run (the appenders' own work included: building each entry is " +
      `${f1(entryUs)} µs). The VM is shared: rates move from run to run with the disk and the neighbours; CPU / record is the steadier figure.`,
    "",
    ...appendTable,
    "",
    ...checkpointTable,
    "",
    `A checkpoint costs ${f1(checkpointUs.unsigned)} µs to build unsigned and ${f1(checkpointUs.signed)} µs signed (Ed25519), plus one \`open\` + \`write\` + \`fdatasync\` + \`close\` of the anchor ` +
      `inside the batch that crosses the threshold (that batch's appends wait for it). At every 100 records the signature is ${f2(checkpointUs.signed / 100)} µs of CPU per record; ` +
      "what a checkpoint really costs is the extra sync's latency in that batch.",
    "",
    ...verifyTable,
    "",
    `**Targets (issue).** Append with group commit ≥ 50,000 records/s: best ${fmt(bestGroup.perSecond)} records/s (${bestGroup.concurrency} appenders; ` +
      `${fmt(BEFORE.group256)} before the fast paths, ${x(bestGroup.perSecond, BEFORE.group256)}), ${met(bestGroup.perSecond >= APPEND_TARGET)}. ` +
      `Verify ≥ 200,000 records/s: ${fmt(verify.perSecond)} records/s (${fmt(BEFORE.verify)} before, ${x(verify.perSecond, BEFORE.verify)}), ${met(verify.perSecond >= VERIFY_TARGET)}. ` +
      "The on-disk format, the hash and every result are unchanged (the fast paths are tested against the reference implementations on random values, real records and tampered files).",
    "",
    "**What the fast paths are** (none changes a byte on disk):",
    "",
    `1. *Canonicalization* (\`canonicalize\`, \`src/domain/canonical-json.ts\`): the sorted order and the quoted keys of each key shape are cached (every call record has the same shapes), ` +
      `values are read with \`Object.values\`, the text is built as a rope. ${f2(step("canonicalize (JCS)"))} µs per record against ${f2(step("canonicalizeReference"))} µs for the plain algorithm, ` +
      "which stays as `canonicalizeReference`, the specification the tests compare with. SHA-256 is one `crypto.hash` call.",
    `2. *Sealing out of the writer's serial section* (\`prepareEntry\` / \`sealPrepared\`, \`src/domain/audit-chain.ts\`): the appender's fiber canonicalizes every member of its entry ` +
      "around the four chain members (`prev_hash`, `schema`, `seq`, `ts` at their sorted places) and serialises the entry once; the writer only splices `prev_hash`, `seq` and `ts` " +
      `into both texts and hashes: ${f2(sealUs)} µs per record in the serial section, against sealRecord + JSON.stringify (${f1(BEFORE.sealUs + BEFORE.stringifyUs)} µs) before. ` +
      "The record object the append returns is built in the appender's fiber after the sync.",
    `3. *Lighter queueing* (\`layers/AuditSink.ts\`): an append waits in one \`Effect.async\` that the writer resumes (no \`Deferred\`, no \`Effect.gen\` per append): ${f2(queueUs)} µs of CPU per append against ${f2(BEFORE.queueUs)} µs.`,
    `4. *Verification reads the canonical text from the line* (\`canonicalizeObjectText\`): one pass over the JSON text reorders members by the cached shapes and copies strings and ` +
      `numbers that are already canonical, without building the value (${f2(readUs)} µs per line; JSON.parse alone is ${f2(step("JSON.parse"))} µs). It answers only for the JSON that ` +
      "JSON.stringify writes (no control characters or surrogates, no duplicate keys, finite numbers, bounded depth) and otherwise hands the line to JSON.parse + `canonicalize`; " +
      "every record's hash is still recomputed from its content, and every failure is reported by the reference path, so messages are unchanged. `verifyAudit` takes the " +
      "records' hashes from the chain check instead of parsing the file a second time.",
    "",
    "**Where time goes.** The disk alone (one `write` + `fdatasync` per batch of ready bytes, no sealing, no Effect):",
    "",
    "| records per batch | ms per batch | records/s ceiling |",
    "|---|---|---|",
    ...floors.map((d) => `| ${d.batch} | ${f2(d.msPerBatch)} | ${fmt(d.perSecond)} |`),
    "",
    "The pure steps, timed alone on the same records:",
    "",
    ...profileTable,
    "",
    `- Append: ${f1(never64.cpuUs)} µs of CPU per record with \`never\` at 64 appenders (${f1(BEFORE.never64CpuUs)} µs before). The pure steps are ${f1(pureAppendUs)} µs ` +
      `(prepare ${f1(prepareUs)}, seal ${f1(sealUs)}, record ${f1(recordUs)}), the queueing ${f1(queueUs)} µs, building the entry ${f1(entryUs)} µs; ` +
      `the remaining ${f1(Math.max(0, never64.cpuUs - pureAppendUs - queueUs - entryUs))} µs are the appenders' loop, fiber scheduling, the write call, the Buffer copy and GC.`,
    `- Group commit is still a serial loop per batch: the writer seals the batch, then \`write\` + \`fdatasync\`, then resumes the appends, whose fibers prepare their next entries before the next batch. ` +
      `At 64 appenders that is about ${f1((64 * never64.cpuUs) / 1000)} ms of CPU plus ${f1(pipelineDiskMs)} ms of disk per batch of 64: CPU-bound, on one core.`,
    `- Verify: ${f2(verifyStepUs)} µs per record in a warm loop (${fmt(1e6 / verifyStepUs)} records/s): reading the line ${f2(readUs)} µs, SHA-256 ${f2(shaUs)} µs (more on the rope the reader builds), ` +
      "the rest the line checks (a scan for control characters) and the loop.",
    "",
    "**What would still be needed** (not implemented):",
    "",
    `1. *Appends on a second core.* One core cannot append more than about ${fmt(1e6 / never64.cpuUs)} records/s at ${f1(never64.cpuUs)} µs per record; 50,000 records/s needs 20 µs ` +
      `including the appenders' own work, and preparing an entry alone is ${f1(prepareUs)} µs (JSON.stringify of the line is most of what is left of it). Preparing in worker threads ` +
      "means sending each entry across (a structured clone or its JSON text costs about what JSON.stringify does, and JSON text loses the non-finite numbers the hash must reject) " +
      "and a worker module that loads under tsx, vitest and the esbuild bundle alike.",
    "2. *Verification on worker threads.* Each record's hash is independent; only the links are sequential. A throwaway prototype (2 workers, each verifying half of the " +
      "100,000-record file, bundled with esbuild) reached about 128,000 records/s against about 80,000 on one thread on this 2-vCPU VM (measured once, 2026-11-30): short of 200,000, " +
      "and a worker entry point that works under tsx, vitest and the single-file bundle is not simple, so `verifyChainText` and `verifyAuditFile` stay on one thread.",
    `3. *200,000 records/s on one thread* is 5 µs per record: the SHA-256 of a ${fmt(lineBytes)}-byte record alone is ${f2(shaUs)} µs and reading its structure in JS ${f2(readUs)} µs. ` +
      "It needs lines that are hashed as written (a format change, `vetobench/v3`), which the issue excludes.",
    "4. *Pipelined group commit* (seal and write batch k+1 while batch k syncs) would gain little here: with closed-loop appenders almost every pending append is in the batch " +
      `being synced, and the disk is ${f1(pipelineDiskMs)} ms of a ${f1((64 * never64.cpuUs) / 1000 + pipelineDiskMs)} ms batch of 64.`,
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

NodeRuntime.runMain(main)
