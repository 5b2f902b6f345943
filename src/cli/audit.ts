/** `vetobench audit keygen | manifest` — keys for signed checkpoints, and a run's results manifest. */
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { AuditSink } from "../../layers/AuditSink.js"
import { generateKeyFiles } from "../audit/keys.js"
import { appendManifest } from "../audit/manifest.js"
import { appendOutcomes } from "../audit/outcomes.js"
import { signerFromPem } from "../domain/checkpoint.js"
import { auditScoreCommand } from "./audit-score.js"
import { CliFailure, configOption } from "./options.js"

const fail = (e: { readonly message: string }) => new CliFailure({ message: e.message })

/** The Ed25519 signer in a PEM private key file (`--key`; also used by `vetobench scenarios approve`). */
export const loadSigner = (file: string) =>
  Effect.try({
    try: () => signerFromPem(readFileSync(file, "utf8")),
    catch: (e) => new CliFailure({ message: `${file}: not an Ed25519 private key (${e instanceof Error ? e.message : String(e)})` })
  })

const keygen = Command.make(
  "keygen",
  {
    config: configOption,
    out: Options.text("out").pipe(Options.withDefault("keys"), Options.withDescription("directory for <name>.key and <name>.pub")),
    name: Options.text("name").pipe(Options.withDefault("audit")),
    force: Options.boolean("force").pipe(Options.withDescription("overwrite existing key files"))
  },
  ({ force, name, out }) =>
    generateKeyFiles(out, name, force).pipe(
      Effect.mapError(fail),
      Effect.flatMap((k) =>
        Console.log(
          [
            `private key ${k.privateKey} (mode 0600: keep it to yourself; set audit.signing_key to it)`,
            `public key  ${k.publicKey} (give it to whoever verifies: vetobench verify-audit FILE --pubkey ${k.publicKey})`,
            `key id      ${k.keyId}`
          ].join("\n")
        )
      )
    )
).pipe(Command.withDescription("make an Ed25519 key pair for signed audit checkpoints"))

const manifest = Command.make(
  "manifest",
  {
    config: configOption,
    key: Options.text("key").pipe(Options.optional, Options.withDescription("private key (PEM) that signs the final checkpoint")),
    file: Args.text({ name: "AUDIT_FILE" }),
    outputs: Args.text({ name: "OUTPUT" }).pipe(Args.atLeast(1))
  },
  ({ file, key, outputs }) =>
    Effect.gen(function* () {
      const signer = Option.isNone(key) ? null : yield* loadSigner(key.value)
      const runId = path.basename(file).replace(/\.jsonl$/, "")
      const record = yield* appendManifest(runId, outputs).pipe(
        Effect.provide(AuditSink.layerFile(path.dirname(path.resolve(file)), { signer })),
        Effect.mapError((e) => (e._tag === "AuditWriteError" ? new CliFailure({ message: `${e.file}: ${e.reason}` }) : fail(e)))
      )
      yield* Console.log(`manifest of ${outputs.length} file(s) appended to ${file} as record ${record.seq}; checkpoint written`)
    })
).pipe(Command.withDescription("append a run's results manifest (sha256 of each output) as its final record, then checkpoint"))

const outcomes = Command.make(
  "outcomes",
  {
    config: configOption,
    results: Options.text("results").pipe(Options.optional, Options.withDescription("benchmark results, JSON lines {request_id, tool_call_id?, call_index?, outcome}")),
    key: Options.text("key").pipe(Options.optional, Options.withDescription("private key (PEM) that signs the checkpoint")),
    file: Args.text({ name: "AUDIT_FILE" })
  },
  ({ file, key, results }) =>
    Effect.gen(function* () {
      const signer = Option.isNone(key) ? null : yield* loadSigner(key.value)
      const plan = yield* appendOutcomes(path.basename(file).replace(/\.jsonl$/, ""), file, Option.getOrNull(results)).pipe(
        Effect.provide(AuditSink.layerFile(path.dirname(path.resolve(file)), { signer })),
        Effect.mapError((e) => (e._tag === "AuditWriteError" ? new CliFailure({ message: `${e.file}: ${e.reason}` }) : fail(e)))
      )
      yield* Console.log(
        `${plan.entries.length} outcome record(s) appended to ${file}; ${plan.already} call(s) already had one; ${plan.unmatched} call(s) without a result`
      )
    })
).pipe(Command.withDescription("append each call's outcome (blocked, or executed/not_executed from the benchmark results) as later records"))

export const auditCommand = Command.make("audit").pipe(
  Command.withDescription("audit log tools: keys, outcomes, results manifest, the five scores"),
  Command.withSubcommands([keygen, manifest, outcomes, auditScoreCommand])
)
