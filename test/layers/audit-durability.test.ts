/**
 * Durability of the file audit sink beyond the basics in audit-sink.test.ts: a writer process
 * killed mid-write, 1,000 concurrent appends through the Gate, the single-writer lock, signed
 * checkpoints, and every fsync mode under concurrency.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as esbuild from "esbuild"
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, statSync } from "node:fs"
import * as fs from "node:fs/promises"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { AuditSink, anchorFileFor, type AuditSinkShape, type FileSinkOptions, type FsyncMode } from "../../layers/AuditSink.js"
import { staticPlugin } from "../../judges/static.js"
import { generateKeyFiles } from "../../src/audit/keys.js"
import { makeUpstreamSettings } from "../../src/config/settings.js"
import { verifyChainText } from "../../src/domain/chain-verify.js"
import { GENESIS_HASH, type CallEntry } from "../../src/domain/audit-record.js"
import { verifyAudit } from "../../src/domain/audit-verify.js"
import { type Checkpoint, publicKeyFromPem, signatureValid, signerFromPem } from "../../src/domain/checkpoint.js"
import { decided, defaultSettings, Gate, gateLayer, type GateRequest, type JudgeKindPlugin } from "../../src/index.js"
import { callEntry } from "../support/audit-entry.js"
import { captureLogs, readOrNull, readText, tempDir as tempDirOf, withSink } from "../support/audit-files.js"

const CHILD = fileURLToPath(new URL("../support/audit-writer-child.ts", import.meta.url))

/**
 * The writer child bundled as the CLI is (esbuild, with the `require` banner), once per test:
 * starting the bundle takes a fraction of what `node --import tsx` takes to compile the source.
 */
const bundledChild = Effect.promise(async () => {
  const outfile = path.join(mkdtempSync(path.join(tmpdir(), "vetobench-writer-child-")), "audit-writer-child.mjs")
  await esbuild.build({
    entryPoints: [CHILD],
    outfile,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    logLevel: "error"
  })
  return outfile
})

const entry = (i: number, runId: string | null, args: unknown = { n: i }): CallEntry => callEntry(i, runId, args)

const tempDir = tempDirOf("vetobench-durability-")

const exists = (file: string) => Effect.promise(() => fs.access(file).then(() => true, () => false))

interface Line {
  readonly seq: number
  readonly hash: string
  readonly prev_hash: string
  readonly request_id: string
  readonly arm: string
}
const linesOf = (text: string): Array<Line> =>
  text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Line)
const checkpointsOf = (text: string | null): Array<Checkpoint> =>
  (text ?? "")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Checkpoint)

// ---------------------------------------------------------------------------------------------
// Crash: a child process appending at concurrency 16 (fsync group) is killed with SIGKILL

interface Crashed {
  readonly pid: number
  /** seq → hash of every record the child acknowledged */
  readonly acked: ReadonlyMap<number, string>
  /** what `<file>.lock` held when the child was killed */
  readonly lockText: string
}

/**
 * When to kill once enough records are acknowledged: after a random delay below `ms`, or as soon
 * as the file starts growing again (the next batch's write(2) is under way: a torn line is likely).
 */
type KillAt = { readonly after: "delay"; readonly ms: number } | { readonly after: "growing" }

/**
 * Start the writer child (`script`: the bundled child), wait until it has acknowledged `minAcks` records, then SIGKILL it at
 * `killAt`. Resolves once the child is reaped (its pid is dead).
 */
const crashWriter = (script: string, dir: string, run: string, blobBytes: number, minAcks: number, killAt: KillAt) =>
  Effect.async<Crashed, Error>((resume) => {
    const child = spawn(process.execPath, [script, dir, run, String(blobBytes), "group"], {
      stdio: ["ignore", "pipe", "pipe"]
    })
    const acked = new Map<number, string>()
    let out = ""
    let err = ""
    let lockText = ""
    let killing = false
    child.stdout.setEncoding("utf8")
    child.stderr.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => {
      out += chunk
      let nl: number
      while ((nl = out.indexOf("\n")) >= 0) {
        const m = /^ACK (\d+) ([0-9a-f]{64})$/.exec(out.slice(0, nl))
        out = out.slice(nl + 1)
        if (m !== null) acked.set(Number(m[1]), m[2]!)
      }
      if (!killing && acked.size >= minAcks) {
        killing = true
        const kill = () => {
          try {
            lockText = readFileSync(path.join(dir, `${run}.jsonl.lock`), "utf8")
          } catch {
            lockText = "" // no lock: the assertion on it fails
          }
          child.kill("SIGKILL")
        }
        if (killAt.after === "delay") setTimeout(kill, Math.random() * killAt.ms)
        else {
          // a tight synchronous poll (blocks this process for the few ms until the write starts)
          const file = path.join(dir, `${run}.jsonl`)
          const base = statSync(file).size
          const started = Date.now()
          while (statSync(file).size === base && Date.now() - started < 2000) {
            // spin
          }
          kill()
        }
      }
    })
    child.stderr.on("data", (chunk: string) => void (err += chunk))
    // "close": the child has exited, been reaped, and its stdout is drained
    child.once("close", (code, signal) =>
      resume(
        killing && signal === "SIGKILL"
          ? Effect.succeed({ pid: child.pid ?? -1, acked, lockText })
          : Effect.fail(new Error(`writer child ended by itself (code ${code}, signal ${signal}): ${err}`))
      )
    )
    child.once("error", (e) => resume(Effect.fail(e)))
    return Effect.sync(() => void child.kill("SIGKILL"))
  })

/** Run `sleep 5` (a live process that is not us) until the scope closes. */
const liveOtherProcess = Effect.acquireRelease(
  Effect.sync(() => spawn("sleep", ["5"], { stdio: "ignore" })),
  (p) => killAndReap(p)
)
const killAndReap = (p: ReturnType<typeof spawn>) =>
  Effect.async<void>((resume) => {
    if (p.exitCode !== null || p.signalCode !== null) return resume(Effect.void)
    p.once("close", () => resume(Effect.void))
    p.kill("SIGKILL")
  })

describe("audit durability: crash", () => {
  it.scopedLive(
    "a writer killed mid-write loses no acknowledged record; the torn tail is set aside; the chain continues",
    () =>
      Effect.gen(function* () {
        const run = "crash"
        // the first round uses ~1 KB records, killed at a random moment; the others use 256 KB records
        // (a batch is ~4 MB) killed once the next batch's write has begun, so a torn line is likely
        const rounds: ReadonlyArray<{ readonly blob: number; readonly killAt: KillAt }> = [
          { blob: 600, killAt: { after: "delay", ms: 5 } },
          { blob: 256 * 1024, killAt: { after: "growing" } },
          { blob: 256 * 1024, killAt: { after: "growing" } }
        ]
        const summary: Array<string> = []
        const script = yield* bundledChild
        for (const round of rounds) {
          const dir = yield* tempDir
          const file = path.join(dir, `${run}.jsonl`)
          const crashed = yield* crashWriter(script, dir, run, round.blob, 200, round.killAt)
          expect(crashed.acked.size).toBeGreaterThanOrEqual(200)
          // the dead writer's lock is still there and names it
          expect(crashed.lockText.trim()).toBe(String(crashed.pid))
          expect(yield* exists(`${file}.lock`)).toBe(true)

          // what the crash left: complete lines, then at most one torn line
          const before = yield* Effect.promise(() => fs.readFile(file))
          const cut = before.lastIndexOf(10) + 1
          const tornBytes = before.subarray(cut)
          const completeText = before.subarray(0, cut).toString("utf8")
          const complete = linesOf(completeText)
          expect(verifyChainText(completeText)).toMatchObject({ ok: true, records: complete.length })
          const whole = verifyChainText(before.toString("utf8"))
          if (tornBytes.length === 0) expect(whole.ok).toBe(true)
          else expect(whole).toMatchObject({ ok: false, torn: true, index: complete.length + 1 })

          // no acknowledged record lost: each is there, with the hash the writer reported
          for (const [seq, hash] of crashed.acked) expect(complete[seq - 1]?.hash).toBe(hash)

          // reopen in this process: the stale lock is taken over, the tail repaired, the chain continued
          const { result: next, logs } = yield* captureLogs(withSink(dir, {}, (sink) => sink.append(run, entry(0, run))))
          const last = complete[complete.length - 1]
          expect(next.seq).toBe(complete.length + 1)
          expect(next.prev_hash).toBe(last?.hash ?? GENESIS_HASH)

          const side = (yield* Effect.promise(() => fs.readdir(dir))).filter((f) => f.startsWith(`${run}.jsonl.torn-`))
          const warnings = logs.filter((l) => l.level === "WARN" && l.message.includes("torn last line"))
          if (tornBytes.length === 0) {
            expect(side).toEqual([])
            expect(warnings).toEqual([])
          } else {
            expect(side).toHaveLength(1)
            expect(Buffer.compare(yield* Effect.promise(() => fs.readFile(path.join(dir, side[0]!))), tornBytes)).toBe(0)
            expect(warnings).toHaveLength(1)
            expect(warnings[0]!.message).toContain(`${tornBytes.length} bytes`)
          }

          const after = yield* readText(file)
          expect(verifyChainText(after)).toEqual({ ok: true, records: complete.length + 1, index: null, message: "ok", torn: false })
          const v = verifyAudit(path.basename(file), after, yield* readOrNull(anchorFileFor(file)), null)
          expect(["ok", "partial"]).toContain(v.status)
          expect(v.anchor.status).toBe("ok") // the final checkpoint on close covers every record
          expect(linesOf(after).map((r) => r.seq)).toEqual(Array.from({ length: complete.length + 1 }, (_, i) => i + 1))
          expect(yield* exists(`${file}.lock`)).toBe(false)
          summary.push(`${round.blob} B: acked ${crashed.acked.size}, kept ${complete.length}, torn ${tornBytes.length} B`)
        }
        yield* Effect.logInfo(`crash rounds: ${summary.join("; ")}`)
      }),
    120_000
  )
})

// ---------------------------------------------------------------------------------------------
// 1,000 concurrent appends through the Gate, file sink

const testKind: JudgeKindPlugin = Effect.succeed({
  kind: "test",
  make: (name) =>
    Effect.succeed({
      judge: name,
      kind: "test",
      model: null,
      version: "v1",
      cacheable: false,
      rule: (call) =>
        Effect.sleep(`${Math.floor(Math.random() * 3)} millis`).pipe(
          Effect.as(decided({ judge: name, kind: "test", model: null, version: "v1" }, "allow", { reason: `ruled ${call.name}` }))
        )
    })
})

describe("audit durability: gate", () => {
  it.scopedLive("1,000 concurrent rulings through the gate write one verifying chain, every request once", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const run = "gate-1000"
      const settings = defaultSettings(dir, {
        upstreams: [makeUpstreamSettings({ name: "u", base_url: "http://127.0.0.1:9/v1" })],
        judges: { probe: { kind: "test" }, "allow-all": { kind: "static", decision: "allow" } },
        proxy: { audit_dir: path.join(dir, "audit"), judge_cache: false },
        audit: { fsync: "group", checkpoint_every: 100 }
      })
      const N = 1000
      const request = (i: number): GateRequest => ({
        arm: i % 2 === 0 ? "shadow" : "baseline",
        judge: i % 2 === 0 ? (i % 4 === 0 ? "probe" : "allow-all") : null,
        tools: undefined,
        stream: false,
        context: { requestId: `req-${i}`, runId: run, episodeId: null, sessionId: null, principal: null, agentModel: "m", headers: {} }
      })
      const call = (i: number) => [{ id: `c${i}`, type: "function", function: { name: "list_dir", arguments: JSON.stringify({ path: `/d/${i}` }) } }]
      // the gate layer uses the settings' file sink (proxy.audit_dir, audit.fsync); it closes with this effect
      const rulings = yield* Effect.gen(function* () {
        const gate = yield* Gate
        return yield* Effect.forEach(
          Array.from({ length: N }, (_, i) => i),
          (i) => gate.ruleChoice(request(i), 0, call(i)),
          { concurrency: "unbounded" }
        )
      }).pipe(Effect.provide(gateLayer({ settings, plugins: [staticPlugin, testKind] })))
      expect(rulings.every((r) => r.length === 1)).toBe(true)

      const file = path.join(dir, "audit", `${run}.jsonl`)
      const text = yield* readText(file)
      const lines = linesOf(text)
      expect(lines).toHaveLength(N)
      expect(lines.map((r) => r.seq)).toEqual(Array.from({ length: N }, (_, i) => i + 1))
      expect(verifyChainText(text)).toEqual({ ok: true, records: N, index: null, message: "ok", torn: false })
      expect(new Set(lines.map((r) => r.request_id))).toEqual(new Set(Array.from({ length: N }, (_, i) => `req-${i}`)))
      expect(lines.filter((r) => r.arm === "baseline")).toHaveLength(N / 2)
      const v = verifyAudit(path.basename(file), text, yield* readOrNull(anchorFileFor(file)), null)
      expect(v.chain.ok).toBe(true)
      expect(v.anchor.status).toBe("ok")
      expect(yield* exists(`${file}.lock`)).toBe(false)
    })
  )
})

// ---------------------------------------------------------------------------------------------
// Single-writer lock

describe("audit durability: lock", () => {
  it.scopedLive("one writer per file: in this process, in another live process; a dead writer's lock is taken over", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const run = "locked"
      const file = path.join(dir, `${run}.jsonl`)
      const lock = `${file}.lock`

      // sink A holds the file; a second layerFile instance in this process is refused
      yield* Effect.scoped(
        Effect.gen(function* () {
          const a = Context.get(yield* Layer.build(AuditSink.layerFile(dir)), AuditSink)
          expect((yield* a.append(run, entry(1, run))).seq).toBe(1)
          expect((yield* readText(lock)).trim()).toBe(String(process.pid))

          const refused = yield* Effect.scoped(
            Effect.gen(function* () {
              const b = Context.get(yield* Layer.build(AuditSink.layerFile(dir)), AuditSink)
              return yield* b.append(run, entry(2, run)).pipe(Effect.flip)
            })
          )
          expect(refused._tag).toBe("AuditWriteError")
          expect(refused.file).toBe(file)
          expect(refused.message).toContain("another audit sink in this process")
          // B closing must not release A's lock: A keeps writing, the lock stays
          expect(yield* exists(lock)).toBe(true)
          expect((yield* a.append(run, entry(2, run))).seq).toBe(2)
          expect(yield* exists(lock)).toBe(true)
        })
      )
      expect(yield* exists(lock)).toBe(false)

      // a live other process holds the lock: refused, naming its pid; once it is dead, taken over
      const sleeper = yield* liveOtherProcess
      const pid = sleeper.pid!
      yield* Effect.promise(() => fs.writeFile(lock, `${pid}\n`))
      yield* withSink(dir, {}, (sink) =>
        Effect.gen(function* () {
          const err = yield* sink.append(run, entry(3, run)).pipe(Effect.flip)
          expect(err._tag).toBe("AuditWriteError")
          expect(err.message).toContain(`pid ${pid}`)
          expect(linesOf(yield* readText(file))).toHaveLength(2) // nothing written
          expect((yield* readText(lock)).trim()).toBe(String(pid)) // and the other writer's lock left alone
          yield* killAndReap(sleeper)
          expect((yield* sink.append(run, entry(3, run))).seq).toBe(3)
          expect((yield* readText(lock)).trim()).toBe(String(process.pid))
        })
      )
      expect(yield* exists(lock)).toBe(false)

      // a lock left by a dead process is taken over by a fresh sink
      yield* Effect.promise(() => fs.writeFile(lock, `${pid}\n`))
      const fourth = yield* withSink(dir, {}, (sink) => sink.append(run, entry(4, run)))
      expect(fourth.seq).toBe(4)
      expect(yield* exists(lock)).toBe(false)
      expect(verifyChainText(yield* readText(file))).toMatchObject({ ok: true, records: 4 })
    })
  )

  it.scopedLive("a sink whose open failed can retry: its own lock does not block it, and it is released on close", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const run = "retry"
      const file = path.join(dir, `${run}.jsonl`)
      yield* Effect.promise(() => fs.writeFile(file, "not a record\n"))
      yield* withSink(dir, {}, (sink) =>
        Effect.gen(function* () {
          const err = yield* sink.append(run, entry(1, run)).pipe(Effect.flip)
          expect(err.message).toContain("the last line is not an audit record")
          yield* Effect.promise(() => fs.writeFile(file, "")) // an operator moves the bad file aside
          expect((yield* sink.append(run, entry(1, run))).seq).toBe(1)
        })
      )
      expect(yield* exists(`${file}.lock`)).toBe(false)
      expect(verifyChainText(yield* readText(file))).toMatchObject({ ok: true, records: 1 })
    })
  )
})

// ---------------------------------------------------------------------------------------------
// Signed checkpoints

describe("audit durability: checkpoints", () => {
  it.scopedLive("every N records and on close, signed; reopening continues; checkpoint() writes only what is new", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const keys = yield* generateKeyFiles(path.join(dir, "keys"), "audit")
      const signer = signerFromPem(yield* readText(keys.privateKey))
      const trusted = publicKeyFromPem(yield* readText(keys.publicKey))
      const options: FileSinkOptions = { checkpointEvery: 10, signer, fsync: "group" }
      const run = "ck"
      const file = path.join(dir, "audit", `${run}.jsonl`)
      const anchor = anchorFileFor(file)
      const anchorSeqs = Effect.map(readOrNull(anchor), (t) => checkpointsOf(t).map((c) => c.seq))
      const appendSeq = (sink: AuditSinkShape, from: number, n: number) =>
        Effect.forEach(Array.from({ length: n }, (_, i) => from + i), (i) => sink.append(run, entry(i, run)))

      yield* withSink(path.join(dir, "audit"), options, (sink) =>
        Effect.gen(function* () {
          yield* appendSeq(sink, 1, 25)
          expect(yield* anchorSeqs).toEqual([10, 20]) // 25 is written on close
        })
      )
      const checkpoints = checkpointsOf(yield* readOrNull(anchor))
      expect(checkpoints.map((c) => c.seq)).toEqual([10, 20, 25])
      const lines = linesOf(yield* readText(file))
      for (const c of checkpoints) {
        expect(signatureValid(c)).toBe(true)
        expect(c.key?.key_id).toBe(keys.keyId)
        expect(c.head).toBe(lines[c.seq - 1]!.hash)
        expect(c.file).toBe(`${run}.jsonl`)
      }
      const verified = verifyAudit(`${run}.jsonl`, yield* readText(file), yield* readOrNull(anchor), trusted)
      expect(verified.status).toBe("ok")

      // reopen: 3 more, a checkpoint at 28 on close
      yield* withSink(path.join(dir, "audit"), options, (sink) => appendSeq(sink, 26, 3))
      expect(yield* anchorSeqs).toEqual([10, 20, 25, 28])

      // checkpoint(): writes one now (final: false), then nothing while covered; closing adds the final one
      yield* withSink(path.join(dir, "audit"), options, (sink) =>
        Effect.gen(function* () {
          yield* appendSeq(sink, 29, 2)
          expect(yield* anchorSeqs).toEqual([10, 20, 25, 28])
          yield* sink.checkpoint(run)
          expect(yield* anchorSeqs).toEqual([10, 20, 25, 28, 30])
          yield* sink.checkpoint(run)
          expect(yield* anchorSeqs).toEqual([10, 20, 25, 28, 30])
        })
      )
      expect(yield* anchorSeqs).toEqual([10, 20, 25, 28, 30, 30])
      expect(checkpointsOf(yield* readOrNull(anchor)).map((c) => c.final)).toEqual([false, false, true, true, false, true])
      // a fresh sink whose file is already covered by a final checkpoint writes nothing
      yield* withSink(path.join(dir, "audit"), options, (sink) => sink.checkpoint(run))
      expect(yield* anchorSeqs).toEqual([10, 20, 25, 28, 30, 30])

      const final = verifyAudit(`${run}.jsonl`, yield* readText(file), yield* readOrNull(anchor), trusted)
      expect(final).toMatchObject({ status: "ok", records: 30 })
      expect(checkpointsOf(yield* readOrNull(anchor)).every((c) => signatureValid(c) === true)).toBe(true)
    })
  )
})

// ---------------------------------------------------------------------------------------------
// fsync modes

describe("audit durability: fsync modes", () => {
  for (const mode of ["always", "group", "never"] as const satisfies ReadonlyArray<FsyncMode>) {
    it.scopedLive(`fsync ${mode}: 200 concurrent appends make one verifying chain`, () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const run = `fsync-${mode}`
        const recs = yield* withSink(dir, { fsync: mode }, (sink) =>
          Effect.forEach(Array.from({ length: 200 }, (_, i) => i + 1), (i) => sink.append(run, entry(i, run)), {
            concurrency: "unbounded"
          })
        )
        expect(recs.map((r) => r.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1))
        const file = path.join(dir, `${run}.jsonl`)
        const text = yield* readText(file)
        expect(verifyChainText(text)).toEqual({ ok: true, records: 200, index: null, message: "ok", torn: false })
        expect(new Set(linesOf(text).map((r) => r.request_id)).size).toBe(200)
        // each append returned the record that is on disk at its seq
        const bySeq = linesOf(text)
        expect(recs.every((r) => bySeq[r.seq - 1]!.hash === r.hash)).toBe(true)
        // a checkpoint once 100 records are past the last one (at a batch boundary), and the final one
        const seqs = checkpointsOf(yield* readOrNull(anchorFileFor(file))).map((c) => c.seq)
        expect(seqs[0]).toBeGreaterThanOrEqual(100)
        expect(seqs[seqs.length - 1]).toBe(200)
        // (the periodic one at 200, then the final one on close: final: true, covering the same record)
        if (mode === "always") expect(seqs).toEqual([100, 200, 200])
      })
    )
  }
})
