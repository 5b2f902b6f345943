/**
 * `vetobench audit keygen | manifest | outcomes | prove | verify-receipt | score` — keys, a run's results
 * manifest, outcomes, inclusion and consistency receipts (and their check without the log), the five scores.
 */
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { Args, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { AuditSink } from "../../layers/AuditSink.js"
import { generateKeyFiles } from "../audit/keys.js"
import { appendManifest } from "../audit/manifest.js"
import { appendOutcomes } from "../audit/outcomes.js"
import { readOldCheckpoint } from "../audit/old-checkpoint.js"
import { proveConsistency, proveRecord } from "../audit/receipt-make.js"
import { verifyReceipt } from "../audit/receipt-verify.js"
import { AuditInputError, loadPublicKey } from "../audit/verify-files.js"
import { signerFromPem } from "../domain/checkpoint.js"
import { auditScoreCommand } from "./audit-score.js"
import { cliCommand } from "../shell/hint.js"
import { readFailure } from "../../layers/file-errors.js"
import type { FileSinkOptions } from "../../layers/AuditSink.js"
import { CliFailure, configOption, DEFAULT_CONFIG, settingsFrom, withShownDefault } from "./options.js"

const fail = (e: { readonly message: string }) => new CliFailure({ message: e.message })

/** The Ed25519 signer in a PEM private key file (`--key`; also used by `vetobench scenarios approve`). */
export const loadSigner = (file: string) =>
  Effect.try({
    try: () => signerFromPem(readFileSync(file, "utf8")),
    catch: (e) => new CliFailure({ message: `${file}: not an Ed25519 private key (${e instanceof Error ? e.message : String(e)})` })
  })

/**
 * How `manifest` and `outcomes` append to an existing log: signed with `--key`, else with the
 * settings' `audit.signing_key`; synced and checkpointed per the settings' `audit` section. The
 * settings are read when they matter — without `--key` (from the default file when it exists), or
 * with a `-c` other than the default (which must exist).
 */
const appendOptions = (config: string, key: Option.Option<string>) =>
  Effect.gen(function* () {
    const read = config !== DEFAULT_CONFIG || (Option.isNone(key) && existsSync(config))
    const settings = read ? yield* settingsFrom(config) : null
    const keyFile = Option.isSome(key) ? key.value : (settings?.audit.signing_key ?? null)
    const signer = keyFile === null ? null : yield* loadSigner(keyFile)
    return {
      signer,
      ...(settings === null ? {} : { fsync: settings.audit.fsync, checkpointEvery: settings.audit.checkpoint_every, maxOpenFiles: settings.audit.max_open_files })
    } satisfies FileSinkOptions
  })

/**
 * `git check-ignore` on a new private key: true when it lies in a git work tree that does not
 * ignore it (then a `git add .` would commit it). No git, or no work tree: false.
 */
const committable = (file: string): Effect.Effect<boolean> =>
  Effect.sync(() => {
    const r = spawnSync("git", ["check-ignore", "-q", path.basename(file)], { cwd: path.dirname(path.resolve(file)), stdio: "ignore", timeout: 5_000 })
    return r.error === undefined && r.status === 1
  })

const keygen = Command.make(
  "keygen",
  {
    config: configOption,
    out: Options.text("out").pipe(Options.withPseudoName("DIR"), Options.withDescription("directory for <name>.key and <name>.pub (created; keys/ is git-ignored)"), withShownDefault("keys")),
    name: Options.text("name").pipe(Options.withPseudoName("NAME"), Options.withDescription("file name of the pair: <name>.key (private, mode 0600) and <name>.pub"), withShownDefault("audit")),
    force: Options.boolean("force").pipe(Options.withDescription("overwrite existing key files"))
  },
  ({ force, name, out }) =>
    generateKeyFiles(out, name, force).pipe(
      Effect.mapError(fail),
      Effect.flatMap((k) =>
        Console.log(
          [
            `private key ${k.privateKey} (mode 0600: keep it to yourself; set audit.signing_key to it)`,
            `public key  ${k.publicKey} (give it to whoever verifies: ${cliCommand("verify-audit", "FILE", "--pubkey", k.publicKey)})`,
            `key id      ${k.keyId}`
          ].join("\n")
        ).pipe(
          Effect.zipRight(committable(k.privateKey)),
          Effect.flatMap((warn) =>
            warn
              ? Console.error(`warning: ${k.privateKey} is in a git work tree and not git-ignored: add it (or its folder) to .gitignore before you commit`)
              : Effect.void
          )
        )
      )
    )
).pipe(Command.withDescription("make an Ed25519 key pair for signed audit checkpoints"))

const manifest = Command.make(
  "manifest",
  {
    config: configOption,
    key: Options.text("key").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      Options.withDescription("private key (PEM) that signs the final checkpoint (default: audit.signing_key of the settings)")
    ),
    file: Args.text({ name: "AUDIT_FILE" }).pipe(Args.withDescription("the run's audit file (<audit_dir>/<run id>.jsonl); the manifest is appended to it")),
    outputs: Args.text({ name: "OUTPUT" }).pipe(Args.atLeast(1), Args.withDescription("the run's result files, each recorded with its sha256"))
  },
  ({ config, file, key, outputs }) =>
    Effect.gen(function* () {
      const options = yield* appendOptions(config, key)
      const runId = path.basename(file).replace(/\.jsonl$/, "")
      const record = yield* appendManifest(runId, outputs).pipe(
        Effect.provide(AuditSink.layerFile(path.dirname(path.resolve(file)), options)),
        Effect.mapError((e) => (e._tag === "AuditWriteError" ? new CliFailure({ message: `${e.file}: ${e.reason}` }) : fail(e)))
      )
      yield* Console.log(`manifest of ${outputs.length} file(s) appended to ${file} as record ${record.seq}; checkpoint written`)
    })
).pipe(Command.withDescription("append a run's results manifest (sha256 of each output) as its final record, then checkpoint"))

const outcomes = Command.make(
  "outcomes",
  {
    config: configOption,
    results: Options.text("results").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      Options.withDescription("benchmark results, JSON lines {request_id, tool_call_id?, call_index?, outcome} (without it: blocked calls only)")
    ),
    key: Options.text("key").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      Options.withDescription("private key (PEM) that signs the checkpoint (default: audit.signing_key of the settings)")
    ),
    file: Args.text({ name: "AUDIT_FILE" }).pipe(Args.withDescription("the run's audit file (<audit_dir>/<run id>.jsonl); the outcome records are appended to it"))
  },
  ({ config, file, key, results }) =>
    Effect.gen(function* () {
      const options = yield* appendOptions(config, key)
      const plan = yield* appendOutcomes(path.basename(file).replace(/\.jsonl$/, ""), file, Option.getOrNull(results)).pipe(
        Effect.provide(AuditSink.layerFile(path.dirname(path.resolve(file)), options)),
        Effect.mapError((e) => (e._tag === "AuditWriteError" ? new CliFailure({ message: `${e.file}: ${e.reason}` }) : fail(e)))
      )
      yield* Console.log(
        `${plan.entries.length} outcome record(s) appended to ${file}; ${plan.already} call(s) already had one; ${plan.unmatched} call(s) without a result`
      )
    })
).pipe(Command.withDescription("append each call's outcome (blocked, or executed/not_executed from the benchmark results) as later records"))

/** A usage error of a subcommand: one line on stderr, exit 2 (program.ts). */
const usageError = (command: string, message: string) =>
  Console.error(`vetobench ${command}: ${message}`).pipe(Effect.zipRight(Effect.fail(ValidationError.invalidArgument(HelpDoc.p(message)))))

const inputFailure = (e: AuditInputError) => new CliFailure({ message: e.message })

const prove = Command.make(
  "prove",
  {
    config: configOption,
    record: Options.integer("record").pipe(
      Options.withPseudoName("N"),
      Options.optional,
      Options.withDescription("an inclusion receipt of record N (its seq; the N of an x-vetobench-record header) against the latest signed checkpoint")
    ),
    from: Options.text("from").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      Options.withDescription("a consistency proof from this old checkpoint (C2SP checkpoint, anchor line or receipt) to the latest signed checkpoint")
    ),
    anchor: Options.text("anchor").pipe(Options.withPseudoName("FILE"), Options.optional, Options.withDescription("the anchor file (default: <name>.anchor.jsonl beside the log)")),
    out: Options.text("out").pipe(Options.withPseudoName("FILE"), Options.optional, Options.withDescription("write the receipt (JSON) to FILE instead of stdout")),
    file: Args.text({ name: "AUDIT_FILE" }).pipe(Args.withDescription("the log (<audit_dir>/<run id>.jsonl); it is verified first: no proof is made from a log that fails"))
  },
  ({ anchor, file, from, out, record }) =>
    Effect.gen(function* () {
      if (Option.isSome(record) === Option.isSome(from)) return yield* usageError("audit prove", "give --record N or --from FILE (one of them)")
      const anchorFile = Option.getOrNull(anchor)
      const receipt = Option.isSome(record)
        ? yield* proveRecord(file, record.value, anchorFile).pipe(Effect.mapError(inputFailure))
        : yield* readOldCheckpoint(Option.getOrThrow(from)).pipe(
            Effect.flatMap((old) => proveConsistency(file, old, anchorFile)),
            Effect.mapError(inputFailure)
          )
      const text = JSON.stringify(receipt, null, 2) + "\n"
      if (Option.isNone(out)) return yield* Console.log(text.trimEnd())
      yield* Effect.try({
        try: () => writeFileSync(out.value, text),
        catch: (e) => new CliFailure({ message: `${out.value}: cannot write the receipt: ${e instanceof Error ? e.message : String(e)}` })
      })
      const what =
        receipt.type === "inclusion"
          ? `inclusion receipt of record ${receipt.leaf_index + 1} in the tree of ${receipt.tree_size} records`
          : `consistency proof from ${receipt.old_size} to ${receipt.tree_size} records`
      yield* Console.log(`${what} written to ${out.value}; check it with: ${cliCommand("audit", "verify-receipt", out.value, "--pubkey", "KEY.pub")}`)
    })
).pipe(Command.withDescription("write an inclusion receipt of one record, or a consistency proof from an old checkpoint, against the latest signed checkpoint"))

const verifyReceiptCommand = Command.make(
  "verify-receipt",
  {
    config: configOption,
    pubkey: Options.text("pubkey").pipe(Options.withPseudoName("FILE"), Options.withDescription("the log's public key (PEM): the checkpoint must be signed by it")),
    receipt: Args.text({ name: "RECEIPT" }).pipe(Args.withDescription("a receipt from audit prove (inclusion or consistency); the log is not needed"))
  },
  ({ pubkey, receipt }) =>
    Effect.gen(function* () {
      const key = yield* loadPublicKey(pubkey).pipe(Effect.mapError(inputFailure))
      const text = yield* Effect.either(Effect.try({ try: () => readFileSync(receipt, "utf8"), catch: (e) => new AuditInputError({ file: receipt, reason: readFailure(e) }) }))
      const verdict = text._tag === "Left" ? { ok: false as const, reason: text.left.reason } : verifyReceipt(text.right, key)
      if (verdict.ok) return yield* Console.log(`OK      ${receipt}: ${verdict.message}`)
      yield* Console.log(`FAIL    ${receipt}: ${verdict.reason}`)
      return yield* new CliFailure({ message: "the receipt did not verify" })
    })
).pipe(Command.withDescription("check a receipt from audit prove with the log's public key, without the log; exit 0 OK, 1 FAIL"))

/** The subcommands, in the order help lists them. */
export const auditSubcommands = [keygen, manifest, outcomes, prove, verifyReceiptCommand, auditScoreCommand] as const

export const auditCommand = Command.make("audit").pipe(
  Command.withDescription("audit log tools: keys, outcomes, results manifest, receipts, the five scores"),
  Command.withSubcommands(auditSubcommands)
)
