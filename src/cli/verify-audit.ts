/** `vetobench verify-audit FILE…` — one line per file; exit 1 if any file fails. */
import { Args, Command } from "@effect/cli"
import { Console, Effect } from "effect"
import { verifyAuditFile } from "../../layers/AuditSink.js"
import { CliFailure, configOption } from "./options.js"

const files = Args.text({ name: "FILE" }).pipe(Args.atLeast(1), Args.withDescription("audit JSONL files"))

/** Verify files and print one line each; returns how many failed. */
export const verifyFiles = (paths: ReadonlyArray<string>) =>
  Effect.forEach(paths, (file) =>
    verifyAuditFile(file).pipe(
      Effect.map((r) => ({ ok: r.ok, line: `${r.ok ? "OK  " : "FAIL"} ${file}: ${r.records} records – ${r.message}` })),
      Effect.catchAll((e) => Effect.succeed({ ok: false, line: `FAIL ${file}: ${e.reason}` })),
      Effect.tap((r) => Console.log(r.line))
    )
  ).pipe(Effect.map((rs) => rs.filter((r) => !r.ok).length))

export const verifyAuditCommand = Command.make("verify-audit", { config: configOption, files }, ({ files }) =>
  verifyFiles(files).pipe(
    Effect.flatMap((failed) =>
      failed > 0 ? Effect.fail(new CliFailure({ message: `${failed} of ${files.length} audit file(s) failed verification` })) : Effect.void
    )
  )
).pipe(Command.withDescription("verify the hash chain of audit files (no settings needed)"))
