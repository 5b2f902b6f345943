/**
 * Release approvals bound to evidence.
 *
 * `approve`: refused unless the run file is a finished live run (a replay never approves), the
 * prompt and scenario files are byte-for-byte the ones the run used, every scenario has trials,
 * and every candidate trial passes — re-checked now against the scenario files, not taken from the
 * run file's own `passed` flags. Then a `scenario_approval` record (approver; hashes of the prompt,
 * the scenario files and the run file) is appended to the approvals audit chain
 * (`<dir of the run file>/approvals.jsonl` unless `--approvals`) through `AuditSink.layerFile`,
 * and covered by the final checkpoint the sink writes as it closes the file (signed with `--key`).
 * The sink adds `ts` and the chain.
 *
 * `verify`: verifies the approvals chain (and anchor, signatures), takes the latest approval (for
 * `--prompt FILE`, the latest of that prompt) and recomputes every bound hash. It fails when the
 * prompt, a scenario file or the run file changed or is gone.
 */
import { isObject } from "../domain/is-object.js"
import * as fs from "node:fs"
import * as path from "node:path"
import { Data, Effect } from "effect"
import { auditFileName } from "../domain/run-id.js"
import { AuditSink, type AuditWriteError } from "../../layers/AuditSink.js"
import { type FileReport, verifyFile } from "../audit/verify-files.js"
import type { AuditRecord, ScenarioApprovalEntry, Sealed } from "../domain/audit-record.js"
import type { CheckpointKey, Signer } from "../domain/checkpoint.js"
import { judgeTrajectory } from "./outcome.js"
import { loadRunFile, loadSuite, type ScenarioError } from "./run.js"
import { readBytes, relativeTo, resolveFrom, RunFileError } from "./runfile.js"
import { sha256Hex } from "../domain/audit-chain.js"

/** Approval refused: every reason, one per line. */
export class ApprovalRefused extends Data.TaggedError("ApprovalRefused")<{ readonly reasons: ReadonlyArray<string> }> {
  override get message() {
    return `approval refused: ${this.reasons.join("; ")}`
  }
}

export const DEFAULT_APPROVALS = "approvals.jsonl"

const hashNow = (file: string): string | null => {
  try {
    return sha256Hex(fs.readFileSync(file))
  } catch {
    return null
  }
}

export interface ApproveOptions {
  readonly runFile: string
  readonly approver: string
  /** default `<dir of the run file>/approvals.jsonl` */
  readonly approvals: string | null
  readonly signer: Signer | null
}

export interface Approved {
  readonly approvalsFile: string
  readonly record: Sealed<ScenarioApprovalEntry>
}

/** The sink's run id for an approvals file (`<dir>/<name>.jsonl` ↔ run id `<name>`). */
const sinkRunId = (file: string): string | null => {
  const name = path.basename(file).replace(/\.jsonl$/, "")
  return path.basename(file).endsWith(".jsonl") && auditFileName(name) === path.basename(file) ? name : null
}

export const approveRun = (opts: ApproveOptions): Effect.Effect<Approved, ScenarioError | ApprovalRefused | AuditWriteError> =>
  Effect.gen(function*() {
    const run = yield* loadRunFile(opts.runFile)
    const dir = path.dirname(run.file)
    const refuse = (reasons: ReadonlyArray<string>) => new ApprovalRefused({ reasons })
    if (opts.approver.trim() === "") return yield* refuse(["--approver must name a person"])
    if (!run.header.live) return yield* refuse([`${opts.runFile} is a replay (live: false): a replay result can never be used to approve; approve the live run it re-checked`])
    if (run.summary === null) return yield* refuse([`${opts.runFile}: the run did not finish (no summary line)`])
    const reasons: Array<string> = []
    const promptFile = resolveFrom(dir, run.header.prompt.path)
    const promptNow = hashNow(promptFile)
    if (promptNow === null) reasons.push(`prompt ${promptFile} is gone`)
    else if (promptNow !== run.header.prompt.sha256) reasons.push(`prompt ${promptFile} changed since the run`)
    for (const s of run.header.scenarios) {
      const f = resolveFrom(dir, s.path)
      const now = hashNow(f)
      if (now === null) reasons.push(`scenario file ${f} is gone`)
      else if (now !== s.sha256) reasons.push(`scenario file ${f} changed since the run`)
    }
    if (reasons.length > 0) return yield* refuse(reasons)
    const suite = yield* loadSuite(run.header.scenarios.map((s) => resolveFrom(dir, s.path)))
    const candidate = run.trials.filter((t) => t.variant === "candidate")
    for (const file of suite) {
      const rel = relativeTo(dir, file.file)
      for (const scenario of file.scenarios) {
        const trials = candidate.filter((t) => t.file === rel && t.scenario === scenario.id)
        if (trials.length === 0) {
          reasons.push(`scenario ${scenario.id} has no trials in the run`)
          continue
        }
        const failed = trials.filter((t) => !t.passed || !judgeTrajectory(scenario, t).passed)
        if (failed.length > 0) {
          const checks = [...new Set(failed.flatMap((t) => (t.passed ? judgeTrajectory(scenario, t).failures : t.failures).map((f) => f.check)))]
          reasons.push(`scenario ${scenario.id}: ${failed.length}/${trials.length} trial(s) failed (${checks.join(", ")})`)
        }
      }
    }
    if (reasons.length > 0) return yield* refuse(reasons)
    const approvalsFile = path.resolve(opts.approvals ?? path.join(dir, DEFAULT_APPROVALS))
    const sinkRun = sinkRunId(approvalsFile)
    if (sinkRun === null) return yield* refuse([`the approvals file must be <dir>/<name>.jsonl with a name of [A-Za-z0-9_.-] (got ${approvalsFile})`])
    const adir = path.dirname(approvalsFile)
    const entry: ScenarioApprovalEntry = {
      type: "scenario_approval",
      run_id: run.header.run_id,
      approver: opts.approver.trim(),
      model: run.header.model,
      prompt_path: relativeTo(adir, promptFile),
      prompt_sha256: run.header.prompt.sha256,
      scenarios: run.header.scenarios.map((s) => ({ path: relativeTo(adir, resolveFrom(dir, s.path)), sha256: s.sha256 })),
      run_file: relativeTo(adir, run.file),
      run_file_sha256: run.sha256,
      passed: candidate.filter((t) => t.passed).length,
      trials: candidate.length
    }
    const record = yield* Effect.gen(function*() {
      const sink = yield* AuditSink
      // closing the sink (right after) writes the final checkpoint that covers it (signed with `--key`)
      return yield* sink.append(sinkRun, entry)
    }).pipe(Effect.provide(AuditSink.layerFile(adir, { signer: opts.signer, checkpointEvery: 0 })))
    return { approvalsFile, record: record as Sealed<ScenarioApprovalEntry> }
  })

// ---------------------------------------------------------------------------------------------
// verify

export interface BoundFile {
  readonly what: "prompt" | "scenario file" | "run file"
  /** as recorded (relative to the approvals file) */
  readonly path: string
  readonly approved: string
  /** null when the file is gone */
  readonly now: string | null
  readonly ok: boolean
}

export interface Verification {
  readonly ok: boolean
  readonly approvalsFile: string
  readonly chain: FileReport
  /** the approval checked (null when there is none) */
  readonly approval: Sealed<ScenarioApprovalEntry> | null
  readonly files: ReadonlyArray<BoundFile>
  /** why it failed, when it did */
  readonly problems: ReadonlyArray<string>
}

export interface VerifyOptions {
  readonly approvals: string
  /** only approvals of this prompt file */
  readonly prompt: string | null
  /** with a trusted key the chain must verify completely (signed checkpoints covering every record) */
  readonly trusted: CheckpointKey | null
}

const isApproval = (r: unknown): r is Sealed<ScenarioApprovalEntry> => isObject(r) && r.type === "scenario_approval"

export const verifyApproval = (opts: VerifyOptions): Effect.Effect<Verification, ScenarioError> =>
  Effect.gen(function*() {
    const approvalsFile = path.resolve(opts.approvals)
    const adir = path.dirname(approvalsFile)
    const chain = yield* verifyFile(approvalsFile, null, opts.trusted).pipe(
      Effect.mapError((e) => new RunFileError({ file: e.file, reason: e.reason === "file not found" ? "approvals file not found" : e.reason }))
    )
    const problems: Array<string> = []
    if (chain.status === "failed") problems.push("the approvals chain does not verify")
    if (opts.trusted !== null && chain.status !== "ok") problems.push("the approvals chain is not fully verified under the trusted key")
    const text = (yield* readBytes(approvalsFile, "approvals file")).toString("utf8")
    const records: Array<AuditRecord> = []
    for (const l of text.split("\n")) {
      if (l.trim() === "") continue
      try {
        records.push(JSON.parse(l) as AuditRecord)
      } catch {
        // reported by the chain check
      }
    }
    const wanted = opts.prompt === null ? null : path.resolve(opts.prompt)
    const approvals = records.filter(isApproval).filter((r) => wanted === null || resolveFrom(adir, r.prompt_path) === wanted)
    const approval = approvals[approvals.length - 1] ?? null
    if (approval === null) {
      problems.push(wanted === null ? "no scenario approval in the file" : `no scenario approval of ${opts.prompt}`)
      return { ok: false, approvalsFile, chain, approval, files: [], problems }
    }
    const bound = (what: BoundFile["what"], p: string, approved: string): BoundFile => {
      const now = hashNow(resolveFrom(adir, p))
      return { what, path: p, approved, now, ok: now === approved }
    }
    const files = [
      bound("prompt", approval.prompt_path, approval.prompt_sha256),
      ...approval.scenarios.map((s) => bound("scenario file", s.path, s.sha256)),
      bound("run file", approval.run_file, approval.run_file_sha256)
    ]
    for (const f of files.filter((f) => !f.ok)) problems.push(`${f.what} ${f.path} ${f.now === null ? "is gone" : "changed since the approval"}`)
    return { ok: problems.length === 0, approvalsFile, chain, approval, files, problems }
  })
