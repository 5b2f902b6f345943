/**
 * `vetobench verify-audit FILE… [--anchor FILE] [--pubkey FILE] [--json] [--strict]` — one line
 * per file: OK (every check made and passed), PARTIAL (nothing failed, but some checks could not
 * be made: no anchor, no key, records after the last checkpoint), FAIL. Exit 1 on any FAIL (and,
 * with --strict, on any PARTIAL).
 */
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { loadPublicKey, reportLine, verifyFile, type FileReport } from "../audit/verify-files.js"
import { CliFailure, configOption } from "./options.js"

const files = Args.text({ name: "FILE" }).pipe(Args.atLeast(1), Args.withDescription("audit JSONL files"))
const anchor = Options.text("anchor").pipe(Options.optional, Options.withDescription("the anchor file (default: <name>.anchor.jsonl beside <name>.jsonl; only with one FILE)"))
const pubkey = Options.text("pubkey").pipe(Options.optional, Options.withDescription("the signer's public key (PEM) to authenticate checkpoints"))
const json = Options.boolean("json").pipe(Options.withDescription("print the full results as JSON"))
const strict = Options.boolean("strict").pipe(Options.withDescription("fail when a check could not be made"))

/** Verify and print; returns the reports (a missing file is a FAIL report, not a crash). */
export const verifyFiles = (paths: ReadonlyArray<string>, opts: { anchor?: string; pubkey?: string; json?: boolean } = {}) =>
  Effect.gen(function* () {
    const trusted = opts.pubkey === undefined ? null : yield* loadPublicKey(opts.pubkey).pipe(Effect.mapError((e) => new CliFailure({ message: e.message })))
    const reports: Array<FileReport | { readonly file: string; readonly status: "failed"; readonly error: string }> = []
    for (const file of paths) {
      const r = yield* Effect.either(verifyFile(file, opts.anchor ?? null, trusted))
      if (r._tag === "Right") {
        reports.push(r.right)
        if (!opts.json) yield* Console.log(reportLine(r.right))
      } else {
        reports.push({ file, status: "failed", error: r.left.reason })
        if (!opts.json) yield* Console.log(`FAIL    ${file}: ${r.left.reason}`)
      }
    }
    if (opts.json) yield* Console.log(JSON.stringify(reports, null, 2))
    return reports
  })

export const verifyAuditCommand = Command.make(
  "verify-audit",
  { config: configOption, files, anchor, pubkey, json, strict },
  ({ anchor, files, json, pubkey, strict }) =>
    Effect.gen(function* () {
      if (Option.isSome(anchor) && files.length > 1) {
        return yield* new CliFailure({ message: "--anchor names the anchor of one file; give one FILE (or let each file's anchor be found beside it)" })
      }
      const reports = yield* verifyFiles(files, {
        ...(Option.isSome(anchor) ? { anchor: anchor.value } : {}),
        ...(Option.isSome(pubkey) ? { pubkey: pubkey.value } : {}),
        json
      })
      const failed = reports.filter((r) => r.status === "failed").length
      const partial = reports.filter((r) => r.status === "partial").length
      if (failed > 0) return yield* new CliFailure({ message: `${failed} of ${files.length} audit file(s) failed verification` })
      if (strict && partial > 0) return yield* new CliFailure({ message: `${partial} of ${files.length} audit file(s) could not be fully verified (--strict)` })
    })
).pipe(Command.withDescription("verify audit files: hash chain, anchor checkpoints, signatures (no settings needed)"))
