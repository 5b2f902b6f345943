/**
 * `vetobench verify-audit FILE… [--anchor FILE] [--pubkey FILE] [--since FILE] [--json] [--strict]` — one line
 * per file: OK (every check made and passed), PARTIAL (nothing failed, but some checks could not
 * be made: without --pubkey, nothing is authenticated; with it, records after the last signed
 * checkpoint of a file its writer still holds, or its last checkpoint not being final), FAIL (see
 * docs/audit-format.md: with --pubkey, also a file no writer holds whose last checkpoint is not final). Exit codes: 0 when
 * every file is OK, 1 when one failed (or, with --strict, is PARTIAL), 3 when none failed but one is
 * PARTIAL, 2 on a usage error. An anchor file among the FILEs (`runs/audit/*.jsonl` names them too)
 * is checked with its audit file. `--since FILE` (one FILE): a checkpoint of the log kept elsewhere
 * (a C2SP checkpoint, an anchor line, a receipt): the log must still be consistent with it (FAIL on a
 * rewritten history, whatever else was recomputed and re-signed). Manifest records found are listed.
 */
import { Args, Command, Options } from "@effect/cli"
import { Console, Data, Effect, Option } from "effect"
import { readOldCheckpoint } from "../audit/old-checkpoint.js"
import { fileTargets, loadPublicKey, reportLine, verifyFile, type FileReport } from "../audit/verify-files.js"
import type { SinceCheckpoint } from "../domain/audit-verify.js"
import { CliFailure, configOption } from "./options.js"

/** The exit code when no file failed but one was only partially verified (0 is OK only; 1 FAIL; 2 usage). */
export const PARTIAL_EXIT_CODE = 3

const files = Args.text({ name: "FILE" }).pipe(Args.atLeast(1), Args.withDescription("audit JSONL files (anchor files among them are checked with their audit file)"))
const anchor = Options.text("anchor").pipe(Options.withPseudoName("FILE"), Options.optional, Options.withDescription("the anchor file (default: <name>.anchor.jsonl beside <name>.jsonl; only with one FILE), e.g. a copy kept elsewhere"))
const pubkey = Options.text("pubkey").pipe(Options.withPseudoName("FILE"), Options.optional, Options.withDescription("the signer's public key (PEM): every record must be covered by a checkpoint it signed, the last one final once the file is closed"))
const since = Options.text("since").pipe(
  Options.withPseudoName("FILE"),
  Options.optional,
  Options.withDescription("a checkpoint of the log kept elsewhere (C2SP checkpoint, anchor line or receipt; only with one FILE): the log must still be consistent with it")
)
const json = Options.boolean("json").pipe(Options.withDescription("print the full results as JSON"))
const strict = Options.boolean("strict").pipe(Options.withDescription("exit 1, not 3, when a file is only partially verified"))

/** No file failed, but one was only partially verified (the line saying so is printed): exit 3 (program.ts). */
export class PartiallyVerified extends Data.TaggedError("PartiallyVerified")<{}> {}

/** A FILE that could not be verified at all (missing, unreadable, an anchor without its audit file). */
export interface FailedInput {
  readonly file: string
  readonly status: "failed"
  readonly error: string
}

/** Verify and print; returns the reports (a missing file is a FAIL report, not a crash). */
export const verifyFiles = (paths: ReadonlyArray<string>, opts: { anchor?: string; pubkey?: string; since?: SinceCheckpoint; json?: boolean } = {}) =>
  Effect.gen(function* () {
    const trusted = opts.pubkey === undefined ? null : yield* loadPublicKey(opts.pubkey).pipe(Effect.mapError((e) => new CliFailure({ message: e.message })))
    const reports: Array<FileReport | FailedInput> = []
    const failed = (file: string, error: string) =>
      Effect.suspend(() => {
        reports.push({ file, status: "failed", error })
        return opts.json ? Effect.void : Console.log(`FAIL    ${file}: ${error}`)
      })
    for (const target of yield* fileTargets(paths)) {
      if (target._tag === "AnchorOf") {
        if (!opts.json) yield* Console.log(`ANCHOR  ${target.file}: the checkpoints of ${target.audit}, checked with it`)
        continue
      }
      if (target._tag === "Orphan") {
        yield* failed(target.file, `an anchor file whose audit file ${target.audit} does not exist (deleted?)`)
        continue
      }
      const r = yield* Effect.either(verifyFile(target.file, opts.anchor ?? null, trusted, opts.since ?? null))
      if (r._tag === "Right") {
        reports.push(r.right)
        if (!opts.json) yield* Console.log(reportLine(r.right))
      } else yield* failed(target.file, r.left.reason)
    }
    if (opts.json) yield* Console.log(JSON.stringify(reports, null, 2))
    return reports
  })

export const verifyAuditCommand = Command.make(
  "verify-audit",
  { config: configOption, files, anchor, pubkey, since, json, strict },
  ({ anchor, files, json, pubkey, since, strict }) =>
    Effect.gen(function* () {
      if (Option.isSome(anchor) && files.length > 1) {
        return yield* new CliFailure({ message: "--anchor names the anchor of one file; give one FILE (or let each file's anchor be found beside it)" })
      }
      if (Option.isSome(since) && files.length > 1) {
        return yield* new CliFailure({ message: "--since names a checkpoint of one log; give one FILE" })
      }
      const old = Option.isSome(since) ? yield* readOldCheckpoint(since.value).pipe(Effect.mapError((e) => new CliFailure({ message: `--since ${e.message}` }))) : null
      const reports = yield* verifyFiles(files, {
        ...(Option.isSome(anchor) ? { anchor: anchor.value } : {}),
        ...(Option.isSome(pubkey) ? { pubkey: pubkey.value } : {}),
        ...(old === null ? {} : { since: old }),
        json
      })
      const failed = reports.filter((r) => r.status === "failed").length
      const partial = reports.filter((r) => r.status === "partial").length
      if (failed > 0) return yield* new CliFailure({ message: `${failed} of ${reports.length} audit file(s) failed verification` })
      if (partial > 0) {
        const what = `${partial} of ${reports.length} audit file(s) could not be fully verified`
        if (strict) return yield* new CliFailure({ message: `${what} (--strict)` })
        yield* Console.error(`vetobench: ${what} (PARTIAL: exit ${PARTIAL_EXIT_CODE})`)
        // the one exit code besides 0, 1 and 2: no failure, but not OK either
        return yield* new PartiallyVerified()
      }
    })
).pipe(Command.withDescription("verify audit files: hash chain, anchor checkpoints, signatures (no settings needed); exit 0 OK, 1 FAIL, 3 PARTIAL"))
