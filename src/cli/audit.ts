/** `vetobench audit keygen | manifest | outcomes | score` — keys, a run's results manifest, outcomes, the five scores. */
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { AuditSink } from "../../layers/AuditSink.js"
import { generateKeyFiles } from "../audit/keys.js"
import { appendManifest } from "../audit/manifest.js"
import { appendOutcomes } from "../audit/outcomes.js"
import { signerFromPem } from "../domain/checkpoint.js"
import { auditScoreCommand } from "./audit-score.js"
import { cliCommand } from "../shell/hint.js"
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

/** The subcommands, in the order help lists them. */
export const auditSubcommands = [keygen, manifest, outcomes, auditScoreCommand] as const

export const auditCommand = Command.make("audit").pipe(
  Command.withDescription("audit log tools: keys, outcomes, results manifest, the five scores"),
  Command.withSubcommands(auditSubcommands)
)
