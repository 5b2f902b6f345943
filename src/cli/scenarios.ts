/**
 * `vetobench scenarios run | replay | approve | verify` — a team's own scenario suites as the
 * release gate for a system prompt (or model, or gate policy). See docs/scenarios.md.
 *
 * - `run FILE… --model M [--prompt P | --baseline P --candidate P] [--trials N] [--proxy-url URL]`
 *   runs every scenario through veto-proxy, writes the run file and prints per-scenario pass
 *   counts with the failing calls. Exit 1 when a candidate trial failed.
 * - `replay RUNFILE` re-checks the saved trajectories offline; its result can never approve.
 * - `approve RUNFILE --approver NAME` appends the approval record to the approvals chain, or is refused.
 * - `verify [--approvals FILE] [--prompt P]` fails when the approved prompt, scenarios or run file changed.
 */
import * as path from "node:path"
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { loadPublicKey } from "../audit/verify-files.js"
import { parseRoute, RouteError } from "../domain/route.js"
import { approveRun, DEFAULT_APPROVALS, verifyApproval } from "../scenarios/approval.js"
import { loadPrices, type PriceTable } from "../scenarios/cost.js"
import { displayPath } from "../scenarios/report.js"
import { replayRun, runScenarios } from "../scenarios/run.js"
import { resolveFrom } from "../scenarios/runfile.js"
import { loadSigner } from "./audit.js"
import { cliCommand } from "../shell/hint.js"
import { CliFailure, configOption, settingsFrom, withShownDefault } from "./options.js"

const DEFAULT_DIR = "runs/scenarios"

const toCli = (e: { readonly message: string }) => new CliFailure({ message: e.message })

const optionalText = (name: string, pseudo: string, description: string) =>
  Options.text(name).pipe(Options.withPseudoName(pseudo), Options.optional, Options.withDescription(description))

const pricesOption = optionalText("prices", "FILE", "price table (YAML: model -> {input_per_1k, output_per_1k}, USD) for the cost estimate")

const loadPriceTable = (file: Option.Option<string>): Effect.Effect<PriceTable | null, CliFailure> =>
  Option.match(file, { onNone: () => Effect.succeed(null), onSome: (f) => loadPrices(f).pipe(Effect.mapError(toCli)) })

const print = (line: string) => Console.log(line)

const slug = (s: string) => s.replace(/[^A-Za-z0-9_.-]+/g, "_").replace(/^_+|_+$/g, "")

// ---------------------------------------------------------------------------------------------
// run

const run = Command.make(
  "run",
  {
    config: configOption,
    files: Args.text({ name: "FILE" }).pipe(Args.atLeast(1), Args.withDescription("scenario files (YAML)")),
    model: Options.text("model").pipe(Options.withPseudoName("MODEL"), Options.withDescription("model name sent to the proxy; may carry an arm, e.g. qwen3.8-27b@enforce:small")),
    prompt: optionalText("prompt", "FILE", "system prompt file (default: the scenario files' prompt)"),
    baseline: optionalText("baseline", "FILE", "baseline prompt file: run it too and classify the candidate's failures"),
    candidate: optionalText("candidate", "FILE", "candidate prompt file (same as --prompt)"),
    trials: Options.integer("trials").pipe(Options.withPseudoName("N"), Options.optional, Options.withDescription("trials per scenario (default: each scenario's trials)")),
    maxRounds: Options.integer("max-rounds").pipe(Options.withPseudoName("N"), Options.optional, Options.withDescription("model rounds per trial (default: the file's max_rounds, else 8)")),
    proxyUrl: optionalText("proxy-url", "URL", "veto-proxy base URL incl. /v1 (default http://<proxy.host>:<proxy.port>/v1 from the settings)"),
    out: optionalText("out", "FILE", `run file to write (default ${DEFAULT_DIR}/<run name>.jsonl)`),
    name: optionalText("run-name", "NAME", "run name; x-vetobench-run is scenarios.<name> (default <files>.<timestamp>)"),
    concurrency: Options.integer("concurrency").pipe(Options.withPseudoName("N"), Options.withDescription("trials in flight at once"), withShownDefault(4)),
    prices: pricesOption
  },
  (o) =>
    Effect.gen(function*() {
      if (Option.isSome(o.prompt) && Option.isSome(o.candidate)) return yield* new CliFailure({ message: "give --prompt or --candidate, not both" })
      if (Option.isSome(o.candidate) && Option.isNone(o.baseline)) return yield* new CliFailure({ message: "--candidate goes with --baseline (or use --prompt)" })
      const route = parseRoute(o.model)
      if (route instanceof RouteError) return yield* new CliFailure({ message: route.message })
      if (route.model === "") return yield* new CliFailure({ message: "--model must name a model" })
      const positive = (name: string, v: Option.Option<number>) =>
        Option.isSome(v) && v.value < 1 ? Effect.fail(new CliFailure({ message: `--${name} must be at least 1` })) : Effect.void
      yield* positive("trials", o.trials)
      yield* positive("max-rounds", o.maxRounds)
      const proxyUrl = Option.isSome(o.proxyUrl)
        ? o.proxyUrl.value
        : yield* settingsFrom(o.config).pipe(Effect.map((s) => `http://${s.proxy.host.includes(":") ? `[${s.proxy.host}]` : s.proxy.host}:${s.proxy.port}/v1`))
      const prices = yield* loadPriceTable(o.prices)
      const stamp = new Date().toISOString().replace(/[:.]/g, "-")
      const name = slug(Option.getOrElse(o.name, () => `${o.files.map((f) => path.basename(f).replace(/\.ya?ml$/, "")).join("+")}.${stamp}`))
      if (name === "") return yield* new CliFailure({ message: "--run-name must contain a letter or digit" })
      const result = yield* runScenarios({
        files: o.files,
        model: o.model,
        proxyUrl,
        prompt: Option.getOrNull(Option.orElse(o.candidate, () => o.prompt)),
        baseline: Option.getOrNull(o.baseline),
        trials: Option.getOrNull(o.trials),
        maxRounds: Option.getOrNull(o.maxRounds),
        out: Option.getOrElse(o.out, () => path.join(DEFAULT_DIR, `${name}.jsonl`)),
        runId: `scenarios.${name}`,
        concurrency: o.concurrency,
        prices,
        log: print
      }).pipe(Effect.mapError(toCli))
      const failed = result.summary.candidate.trials - result.summary.candidate.passed
      if (failed > 0) return yield* new CliFailure({ message: `scenarios: ${failed} of ${result.summary.candidate.trials} candidate trial(s) failed` })
    })
).pipe(Command.withDescription("run scenario files through veto-proxy and check every trajectory (baseline vs candidate with --baseline)"))

// ---------------------------------------------------------------------------------------------
// replay

const replay = Command.make(
  "replay",
  {
    config: configOption,
    file: Args.text({ name: "RUNFILE" }).pipe(Args.withDescription("a run file written by vetobench scenarios run")),
    out: optionalText("out", "FILE", "new run file (default <RUNFILE>.replay-<ms>.jsonl)"),
    prices: pricesOption
  },
  (o) =>
    Effect.gen(function*() {
      const prices = yield* loadPriceTable(o.prices)
      const r = yield* replayRun({ runFile: o.file, out: Option.getOrNull(o.out), prices, log: print }).pipe(Effect.mapError(toCli))
      yield* print(`replay written to ${r.run.file} (live: false: it can never be used to approve)`)
      const failed = r.summary.candidate.trials - r.summary.candidate.passed
      if (failed > 0) return yield* new CliFailure({ message: `scenarios replay: ${failed} of ${r.summary.candidate.trials} candidate trial(s) fail the current checks` })
    })
).pipe(Command.withDescription("re-check a run file's saved trajectories with the current scenario files (no model calls)"))

// ---------------------------------------------------------------------------------------------
// approve, verify

const approve = Command.make(
  "approve",
  {
    config: configOption,
    file: Args.text({ name: "RUNFILE" }).pipe(Args.withDescription("the live run file to approve (from vetobench scenarios run)")),
    approver: Options.text("approver").pipe(Options.withPseudoName("NAME"), Options.withDescription("who approves (recorded)")),
    approvals: optionalText("approvals", "FILE", `approvals audit file (default <dir of RUNFILE>/${DEFAULT_APPROVALS})`),
    key: optionalText("key", "FILE", "private key (PEM) that signs the approvals checkpoint")
  },
  (o) =>
    Effect.gen(function*() {
      const signer = Option.isNone(o.key) ? null : yield* loadSigner(o.key.value)
      const r = yield* approveRun({ runFile: o.file, approver: o.approver, approvals: Option.getOrNull(o.approvals), signer }).pipe(
        Effect.catchTag("ApprovalRefused", (e) =>
          Effect.forEach(e.reasons, (reason) => print(`REFUSED ${reason}`), { discard: true }).pipe(
            Effect.zipRight(Effect.fail(new CliFailure({ message: `approval refused (${e.reasons.length} reason(s))` })))
          )
        ),
        Effect.mapError((e) => (e._tag === "CliFailure" ? e : e._tag === "AuditWriteError" ? new CliFailure({ message: `${e.file}: ${e.reason}` }) : toCli(e)))
      )
      const shown = (p: string) => displayPath(resolveFrom(path.dirname(r.approvalsFile), p))
      yield* print(`APPROVED ${o.file} by ${r.record.approver} at ${r.record.ts}`)
      yield* print(`  prompt    ${shown(r.record.prompt_path)} sha256 ${r.record.prompt_sha256}`)
      for (const s of r.record.scenarios) yield* print(`  scenarios ${shown(s.path)} sha256 ${s.sha256}`)
      yield* print(`  run file  ${shown(r.record.run_file)} sha256 ${r.record.run_file_sha256} (${r.record.passed}/${r.record.trials} trials passed)`)
      yield* print(`  record ${r.record.seq} of ${displayPath(r.approvalsFile)} (verify with: ${cliCommand("scenarios", "verify", "--approvals", displayPath(r.approvalsFile))})`)
    })
).pipe(Command.withDescription("approve a live run in which every scenario passed: an audit record binding the prompt, scenarios and run file"))

const verify = Command.make(
  "verify",
  {
    config: configOption,
    approvals: Options.text("approvals").pipe(Options.withPseudoName("FILE"), Options.withDescription("approvals audit file"), withShownDefault(path.join(DEFAULT_DIR, DEFAULT_APPROVALS))),
    prompt: optionalText("prompt", "FILE", "check the latest approval of this prompt file (default: the latest approval)"),
    pubkey: optionalText("pubkey", "FILE", "public key (PEM) that must have signed the approvals checkpoints")
  },
  (o) =>
    Effect.gen(function*() {
      const trusted = Option.isNone(o.pubkey) ? null : yield* loadPublicKey(o.pubkey.value).pipe(Effect.mapError(toCli))
      const v = yield* verifyApproval({ approvals: o.approvals, prompt: Option.getOrNull(o.prompt), trusted }).pipe(Effect.mapError(toCli))
      yield* print(`approvals ${v.approvalsFile}: ${v.chain.status === "ok" ? "OK" : v.chain.status.toUpperCase()} (${v.chain.records} records; chain ${v.chain.chain.ok ? "ok" : v.chain.chain.message}; anchor ${v.chain.anchor.status}; signatures ${v.chain.signatures.status})`)
      const a = v.approval
      if (a !== null) {
        yield* print(`approval (record ${a.seq}) by ${a.approver} at ${a.ts}: run ${a.run_id ?? "?"}, model ${a.model}, ${a.passed}/${a.trials} trials passed`)
        for (const f of v.files) {
          const state = f.ok ? "ok     " : f.now === null ? "MISSING" : "CHANGED"
          yield* print(`  ${state} ${f.what} ${f.path}${f.ok ? "" : ` (approved ${f.approved.slice(0, 12)}…, now ${f.now === null ? "gone" : `${f.now.slice(0, 12)}…`})`}`)
        }
      }
      if (!v.ok) {
        yield* print("NOT VERIFIED")
        return yield* new CliFailure({ message: `scenarios verify: ${v.problems.join("; ")}` })
      }
      yield* print("VERIFIED: the approved prompt, scenarios and run file are unchanged")
    })
).pipe(Command.withDescription("recompute the latest approval's hashes: fails when the approved prompt, scenarios or run file changed"))

/** The subcommands, in the order help lists them. */
export const scenariosSubcommands = [run, replay, approve, verify] as const

export const scenariosCommand = Command.make("scenarios").pipe(
  Command.withDescription("scenario suites as a release gate: run, replay, approve, verify"),
  Command.withSubcommands(scenariosSubcommands)
)
