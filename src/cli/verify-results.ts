/**
 * `vetobench verify-results DIR [--pubkey FILE] [--json] [--strict]` — an experiment's results against
 * what its results log (`DIR/results.jsonl`, src/audit/results.ts) bound: the log is verified as
 * `verify-audit` does, every bound file's sha256 recomputed (the latest manifest naming a path counts) and
 * every bound audit log's first records checked against their Merkle root then. One line per file or log
 * that changed or is missing (`FAIL    <path>: changed since record N (report): …`), one for the results
 * log, then one for the directory. Exit codes as verify-audit's: 0 OK (only with --pubkey), 1 FAIL,
 * 3 PARTIAL (nothing changed, but the results log's signer is not authenticated, or a bound audit log is
 * not there to check), 2 usage error.
 */
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { checkResults, type ResultCheck } from "../audit/results.js"
import { loadPublicKey, reportLine } from "../audit/verify-files.js"
import { CliFailure, configOption } from "./options.js"
import { PartiallyVerified } from "./verify-audit.js"

const dir = Args.directory({ name: "DIR", exists: "either" }).pipe(Args.withDescription("the experiment's run directory (its run_dir), holding results.jsonl"))
const pubkey = Options.text("pubkey").pipe(
  Options.withPseudoName("FILE"),
  Options.optional,
  Options.withDescription("the public key (PEM) of audit.signing_key: the results log must be covered by checkpoints it signed")
)
const json = Options.boolean("json").pipe(Options.withDescription("print the full results as JSON"))
const strict = Options.boolean("strict").pipe(Options.withDescription("exit 1, not 3, when the results are only partially verified"))

const line = (c: ResultCheck): string => {
  const tag = c.status === "ok" ? "OK     " : c.status === "not-checked" ? "PARTIAL" : "FAIL   "
  return `${tag} ${c.kind === "log" ? "audit log " : ""}${c.path}: ${c.message}`
}

const count = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`

export const verifyResultsCommand = Command.make("verify-results", { config: configOption, dir, pubkey, json, strict }, ({ dir, json, pubkey, strict }) =>
  Effect.gen(function* () {
    const trusted = Option.isSome(pubkey) ? yield* loadPublicKey(pubkey.value).pipe(Effect.mapError((e) => new CliFailure({ message: e.message }))) : null
    const r = yield* checkResults(dir, trusted).pipe(Effect.mapError((e) => new CliFailure({ message: e.message })))
    if (json) yield* Console.log(JSON.stringify(r, null, 2))
    else {
      yield* Console.log(reportLine(r.log))
      for (const c of r.checks) if (c.status !== "ok") yield* Console.log(line(c))
      const files = r.checks.filter((c) => c.kind === "file")
      const logs = r.checks.filter((c) => c.kind === "log")
      const okFiles = files.filter((c) => c.status === "ok").length
      const okLogs = logs.filter((c) => c.status === "ok").length
      const tag = r.status === "ok" ? "OK     " : r.status === "partial" ? "PARTIAL" : "FAIL   "
      yield* Console.log(
        `${tag} ${dir}: ${okFiles} of ${count(files.length, "bound file")} unchanged, ${okLogs} of ${count(logs.length, "bound audit log")} unchanged; results log ${r.log.status}`
      )
    }
    if (r.status === "failed") {
      const changed = r.checks.filter((c) => c.status === "changed" || c.status === "missing").map((c) => c.path)
      const what = changed.length > 0 ? `changed or missing since they were bound: ${changed.join(", ")}` : "the results log failed verification"
      return yield* new CliFailure({ message: `results of ${dir}: ${what}` })
    }
    if (r.status === "partial") {
      const what = `the results of ${dir} could not be fully verified`
      if (strict) return yield* new CliFailure({ message: `${what} (--strict)` })
      yield* Console.error(`vetobench: ${what} (PARTIAL: exit 3)`)
      return yield* new PartiallyVerified()
    }
  })
).pipe(Command.withDescription("check an experiment's results against the manifests bound to its results log; exit 0 OK, 1 FAIL, 3 PARTIAL"))
