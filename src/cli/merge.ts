/**
 * `vetobench merge -e FILE [-c FILE] --shards N [--model M…] [--variant V…] [--pubkey PEM]` —
 * combine the N shards of an Agent-SafetyBench run (`vetobench run --shard I/N`) into the
 * unsharded run directory that `score`, `replay` and `report` read (experiment/merge.ts).
 *
 * For each selected model × variant: print `== merge | <model> | <variant>`, check and merge
 * (every shard present and complete, no case in two shards, every shard's audit file verifies),
 * then one line: records by status, shield labels, the audit files and where `shards.json` is.
 * `--shards` below 1 is a usage error (exit 2); a failed check is one line naming the shard or
 * audit file, exit 1, and nothing of that model × variant is written.
 */
import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import * as path from "node:path"
import { loadPublicKey } from "../audit/verify-files.js"
import { SHARDS_JSON } from "../run-layout/files.js"
import { mergeAsbench } from "../experiment/merge.js"
import { mergeAgentdojo } from "../experiment/merge-agentdojo.js"
import { CliFailure, configOption, runDirOption } from "./options.js"
import { experimentOption, modelOption, selection, variantOption } from "./run.js"

const shardsOption = Options.integer("shards").pipe(
  Options.withPseudoName("N"),
  Options.withDescription("the N of the shards' --shard I/N"),
  Options.mapEffect((n) =>
    n >= 1 ? Effect.succeed(n) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--shards: expected at least 1, got ${n}`)))
  )
)
const pubkeyOption = Options.text("pubkey").pipe(
  Options.withPseudoName("FILE"),
  Options.optional,
  Options.withDescription("the audit signer's public key (PEM) to authenticate the shards' checkpoints")
)

const benchOption = Options.choice("bench", ["asbench", "agentdojo"]).pipe(
  Options.repeated,
  Options.withDescription("benchmarks to merge (default: every one the experiment enables)")
)

const fail = (message: string) => new CliFailure({ message })

export const mergeCommand = Command.make(
  "merge",
  { config: configOption, experiment: experimentOption, model: modelOption, variant: variantOption, shards: shardsOption, pubkey: pubkeyOption, runDir: runDirOption, bench: benchOption },
  ({ bench, config, experiment, model, pubkey, runDir, shards, variant }) =>
    Effect.gen(function*() {
      const sel = yield* selection(config, experiment, model, variant, runDir)
      const benches: ReadonlyArray<string> = bench.length > 0 ? bench : ["asbench", "agentdojo"]
      const doAsbench = benches.includes("asbench") && sel.exp.agent_safetybench.enabled
      const doAgentdojo = benches.includes("agentdojo") && sel.exp.agentdojo?.enabled === true
      if (!doAsbench && !doAgentdojo) {
        return yield* fail(`nothing to merge: Agent-SafetyBench is disabled in ${sel.exp.file} (agent_safetybench.enabled: false) and AgentDojo is not enabled there`)
      }
      const trusted = Option.isSome(pubkey) ? yield* loadPublicKey(pubkey.value).pipe(Effect.mapError((e) => fail(e.message))) : null
      for (const m of sel.models) {
        for (const v of doAgentdojo ? sel.agentdojoVariants : []) {
          yield* Console.log(`== merge | AgentDojo | ${m} | ${v.name}`)
          const s = yield* mergeAgentdojo(sel.exp, sel.settings, m, v, shards, trusted).pipe(Effect.mapError((e) => fail(e.message)))
          const audits = s.shards.filter((x) => x.audit_file !== null).length
          yield* Console.log(`[merge] ${s.route}: ${shards} shards, ${s.episodes} episodes (${s.errors} in error), ${audits} audit files verified → ${s.results}`)
        }
        for (const v of doAsbench ? sel.variants : []) {
          yield* Console.log(`== merge | ${m} | ${v.name}`)
          const s = yield* mergeAsbench(sel.exp, sel.settings, m, v, shards, trusted).pipe(Effect.mapError((e) => fail(e.message)))
          const status = Object.entries(s.status).map(([k, n]) => `${n} ${k}`).join(", ")
          const audits = s.shards.filter((x) => x.audit_file !== null)
          const partial = audits.filter((x) => x.audit_status === "partial").length
          yield* Console.log(
            `[merge] ${s.route}: ${shards} shards, ${s.records} records (${status === "" ? "none" : status}), ` +
              `shield labels ${s.shield ? "merged" : "not merged (not every shard has shield.jsonl)"}, ` +
              `${audits.length} audit files verified${partial > 0 ? ` (${partial} partial)` : ""} → ${s.genRes}`
          )
          yield* Console.log(`[merge] ${s.route}: audit files per shard listed in ${path.join(s.dir, SHARDS_JSON)}`)
        }
      }
    })
).pipe(Command.withDescription("merge the shards of `run --shard I/N` into one run directory"))
