/**
 * `vetobench run -e FILE [-c FILE] [--model M…] [--variant V…] [--bench asbench|asb|agentdojo…]` — run an
 * experiment's benchmarks through veto-proxy (reference §7.4).
 *
 * For each selected model (experiment order) × variant (experiment order):
 * - Agent-SafetyBench: print `== Agent-SafetyBench | <model> | <variant>` and run (or resume) the
 *   cases into `<run_dir>/asbench/<slug(model)>/<variant>/` (environments in `python3` against the
 *   checkout at `paths.asbench_dir`);
 * - ASB: for each attack in order print `== ASB | <model> | <variant> | <attack tag>`, run (or
 *   resume) its shards into `<run_dir>/asb/<slug(model)>/<variant>/<tag>/` (`main_attacker.py` of
 *   the checkout at `paths.asb_dir`, in `paths.asb_python`, through `launch.py`), then print the
 *   attack's results (ASR, task success, refusal rate — provisional when the refusal judge is a
 *   stand-in — blocked episodes, audit records joined per episode).
 * After a model's variants, for each ASB attack, the paired Δ of every other variant against
 * `baseline` (ΔASR; Δ task success for `clean`, the over-blocking measure).
 * - AgentDojo (when the experiment has an enabled `agentdojo` section), after the others: every
 *   model × variant plus the `defense-<name>` variants (`run-agentdojo.ts`), episodes into
 *   `<run_dir>/agentdojo/<slug(model)>/<variant>/` through `launch.py` in `agentdojo.python`.
 *
 * `--shard I/N` (0-based I): Agent-SafetyBench and AgentDojo, the cases (episodes) whose id hashes to shard I of N
 * (experiment/shard.ts), into `<run_dir>/shards/<I>-of-<N>/` under run id
 * `<runId>.shard-<I>-of-<N>`; `vetobench merge` combines the N shards. A bad value is a usage
 * error (exit 2). ASB is not sharded: with `--shard` it is skipped (named explicitly: exit 1).
 *
 * `--model` / `--variant` are exact names, repeatable or comma-separated; none = all. `--bench`
 * defaults to both benchmarks; a benchmark named explicitly but disabled (or, for ASB, without
 * attacks) is reported with one line. The proxy must be running (`vetobench proxy -c <same
 * settings>`). Progress goes to stderr; errors are one line and exit 1 (a failed ASB shard: every
 * failed shard with its exit status and log, after the other shards finished).
 *
 * Before any work (after the proxy's health check): every selected model, every model the selected
 * variants' judges call and, with ASB, the refusal judge's model must be served (one GET /models
 * per upstream involved, `preflight.ts`); else one line naming the model and the upstream, exit 1.
 * Agent-SafetyBench cases in error: after everything ran, one summary line and exit 1, unless there
 * are at most `--allow-errors N`. `--stop-after N` (default 20; 0 never) stops the run when N cases
 * in a row fail with the same error.
 *
 * At the end (before the summary line of cases in error), the outputs (`gen_res.json`, `gen_res.jsonl`,
 * each ASB attack's files) and the tree heads of the runs' audit logs are bound to the experiment's
 * results log (src/audit/results.ts), one line saying so.
 */
import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Console, Effect, Either, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { auditFileName } from "../domain/run-id.js"
import { bindResultsAndSay, filesUnder } from "../audit/results.js"
import { PythonBridge } from "../../layers/PythonBridge.js"
import { type AsbenchRunSummary, checkProxy, DEFAULT_STOP_AFTER, runAsbench } from "../adapters/agent-safetybench/run.js"
import { readTasks, TASKS_FILE } from "../adapters/asb/data.js"
import { attackDelta, type AttackResults, attackResults, formatDiff, formatResults, refusalJudge } from "../scoring/asb-attack.js"
import { runAsbAttack } from "../adapters/asb/run.js"
import { asbRunDir, attackTag, runIdFor } from "../run-layout/paths.js"
import { type AsbAttack, type Experiment, loadExperiment, selectModels, selectVariants, type Variant } from "../config/experiment.js"
import { Settings } from "../config/service.js"
import type { Settings as SettingsShape } from "../config/settings.js"
import { Progress } from "../run-layout/progress.js"
import { parseShard, type Shard, shardName } from "../run-layout/shard.js"
import { CliFailure, configOption, runDirOption, settingsFrom, withRunDir, withShownDefault } from "./options.js"
import { allowErrorsOption, count, oneLine, settleFailures } from "./failures.js"
import { agentNeeds, checkServed, findingsLine, judgeModelNeeds } from "./preflight.js"
import { agentdojoFailureLine, agentdojoTally, agentdojoVariants, defenseVariantNames, runAgentdojoSelection } from "./run-agentdojo.js"
import type { AgentdojoVariant } from "../config/agentdojo.js"

export const experimentOption = Options.text("experiment").pipe(
  Options.withAlias("e"),
  Options.withPseudoName("FILE"),
  Options.withDescription("experiment file (YAML)")
)

const listOption = (name: string, pseudo: string, what: string) =>
  Options.text(name).pipe(Options.withPseudoName(pseudo), Options.repeated, Options.withDescription(`${what}; repeatable or comma-separated (default: all)`))

export const modelOption = listOption("model", "MODEL", "only these models of the experiment")
export const variantOption = listOption("variant", "VARIANT", "only these variants of the experiment (baseline, enforce-<judge>, …)")
const benchOption = Options.choice("bench", ["asbench", "asb", "agentdojo"]).pipe(
  Options.repeated,
  Options.withDescription("benchmarks to run (default: every one the experiment enables)")
)

/** `--shard I/N`: parsed and checked while the command line is parsed (a bad value: exit 2). */
export const shardOption = Options.text("shard").pipe(
  Options.withPseudoName("I/N"),
  Options.withDescription("run shard I of N (0-based, e.g. 0/4) of the Agent-SafetyBench cases and AgentDojo episodes; see `vetobench merge`"),
  Options.mapEffect((text) =>
    Either.match(parseShard(text), {
      onLeft: (message) => Effect.fail(ValidationError.invalidValue(HelpDoc.p(message))),
      onRight: (shard) => Effect.succeed(shard)
    })
  ),
  Options.optional
)

/** `--stop-after N`: stop when N cases in a row fail with the same error (0: never). */
const stopAfterOption = Options.integer("stop-after").pipe(
  Options.withPseudoName("N"),
  Options.withDescription("stop the run when N Agent-SafetyBench cases in a row fail with the same error (0: never)"),
  withShownDefault(DEFAULT_STOP_AFTER),
  Options.mapEffect((n) =>
    n >= 0 ? Effect.succeed(n) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--stop-after must be 0 or more, got ${n}`)))
  )
)

/** Names from repeatable, comma-separated options, duplicates dropped. */
export const names = (values: ReadonlyArray<string>): Array<string> =>
  [...new Set(values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v !== ""))]

const fail = (message: string) => new CliFailure({ message })

export interface Selection {
  readonly settings: SettingsShape
  readonly exp: Experiment
  readonly models: ReadonlyArray<string>
  readonly variants: ReadonlyArray<Variant>
  /** AgentDojo: `variants` plus the `defense-<name>` variants selected */
  readonly agentdojoVariants: ReadonlyArray<AgentdojoVariant>
}

/** Settings, experiment and the selected models × variants, or a one-line failure. */
export const selection = (
  config: string,
  experiment: string,
  model: ReadonlyArray<string>,
  variant: ReadonlyArray<string>,
  runDir: Option.Option<string> = Option.none()
) =>
  Effect.gen(function*() {
    const settings = yield* settingsFrom(config)
    const exp = withRunDir(yield* loadExperiment(experiment, settings).pipe(Effect.mapError((e) => fail(e.message))), runDir)
    const models = selectModels(exp, names(model))
    if (Either.isLeft(models)) return yield* fail(models.left.message)
    // `defense-<name>` variants exist for AgentDojo only: they select nothing of the other benchmarks
    const defenses = defenseVariantNames(exp, settings.root)
    const asked = names(variant)
    const own = asked.filter((n) => !defenses.includes(n))
    const variants = asked.length > 0 && own.length === 0 ? Either.right([]) : selectVariants(exp, own)
    if (Either.isLeft(variants)) return yield* fail(variants.left.message)
    const askedDefenses = asked.filter((n) => defenses.includes(n))
    const agentdojo = agentdojoVariants(exp, settings.root, variants.right, asked.length === 0 ? "all" : askedDefenses)
    return { settings, exp, models: models.right, variants: variants.right, agentdojoVariants: agentdojo } satisfies Selection
  })

/** The bridge for a settings file: its checkout, `workers` processes. */
export const bridgeLayer = (settings: SettingsShape, workers: number) =>
  PythonBridge.layer({ asbenchDir: settings.paths.asbench_dir, workers }).pipe(Layer.mapError((e) => fail(e.message)))

/** Agent-SafetyBench cases in error over every model × variant run (for the summary line). */
interface CaseTally {
  selected: number
  failed: number
  first: { readonly run: AsbenchRunSummary; readonly id: number; readonly error: string } | null
  /** what the run wrote, and the audit logs it wrote to: bound to the results log at the end */
  readonly outputs: { readonly files: Array<string>; readonly dirs: Array<string>; readonly logs: Array<string> }
}

const runAsbenchOne = (sel: Selection, model: string, variant: Variant, shard: Shard | undefined, stopAfter: number, tally: CaseTally) =>
  Effect.gen(function*() {
    yield* Console.log(`== Agent-SafetyBench | ${model} | ${variant.name}${shard === undefined ? "" : ` | shard ${shardName(shard)}`}`)
    const s = yield* runAsbench(sel.exp, model, variant, { stopAfter, ...(shard === undefined ? {} : { shard }) }).pipe(Effect.mapError((e) => fail(e.message)))
    yield* Console.log(
      `[asbench] ${s.route}: ${s.ran.ok} ok, ${s.ran.exceeded} exceeded, ${s.ran.error} error` +
        ` (${s.skipped} of ${s.selected} done before) → ${s.genRes}`
    )
    tally.selected += s.selected
    tally.failed += s.ran.error
    tally.outputs.files.push(s.genRes, s.jsonl)
    tally.outputs.logs.push(path.join(sel.settings.proxy.audit_dir, auditFileName(s.runId)))
    if (tally.first === null && s.firstError !== null) tally.first = { run: s, ...s.firstError }
  })

/** `run: 3 of 40 cases failed (first: case 7 of m@baseline: …); details in …/gen_res.jsonl` */
const caseFailureLine = (t: CaseTally): string => {
  const first = t.first === null ? "" : ` (first: case ${t.first.id} of ${t.first.run.route}: ${oneLine(t.first.error, 200)})`
  const where = t.first === null ? "" : `; details in ${t.first.run.jsonl}`
  return `run: ${t.failed} of ${count(t.selected, "case")} failed${first}${where}; a re-run retries them`
}

/** The results of one model × variant × attack as on disk (shard CSVs, audit file). */
const asbResults = (sel: Selection, model: string, variant: Variant, attack: AsbAttack) =>
  Effect.gen(function*() {
    const { settings, exp } = sel
    const tasks = yield* readTasks(path.join(settings.paths.asb_dir, "data", TASKS_FILE)).pipe(Effect.mapError((e) => fail(`ASB data: ${e.message}`)))
    return yield* attackResults({
      dir: path.join(asbRunDir(exp, model, variant), attackTag(attack)),
      tasks,
      auditFile: path.join(settings.proxy.audit_dir, auditFileName(runIdFor(exp, "asb", model, variant))),
      session: attackTag(attack),
      refusalTemplate: settings.proxy.refusal_template,
      refusalJudge: refusalJudge(settings.aliases, exp.models)
    }).pipe(Effect.mapError((e) => fail(e.message)))
  })

const runAsbOne = (sel: Selection, model: string, variant: Variant, attack: AsbAttack, outputs: CaseTally["outputs"]) =>
  Effect.gen(function*() {
    const tag = attackTag(attack)
    yield* Console.log(`== ASB | ${model} | ${variant.name} | ${tag}`)
    const s = yield* runAsbAttack(sel.exp, model, variant, attack).pipe(Effect.mapError((e) => fail(e.message)))
    outputs.dirs.push(s.dir)
    outputs.logs.push(path.join(sel.settings.proxy.audit_dir, auditFileName(s.runId)))
    const skipped = s.shards.filter((x) => x.status === "skipped").length
    yield* Console.log(
      `[asb] ${s.route} ${tag}: ${s.shards.length - skipped} shards run, ${skipped} done before` +
        ` (${s.tools} tools × ${s.taskNum} task${s.taskNum === 1 ? "" : "s"} = ${s.episodes} episodes) → ${s.dir}`
    )
    const r = yield* asbResults(sel, model, variant, attack)
    yield* Console.log(`[asb] ${s.route} ${tag}: ${formatResults(r)}`)
    return r
  })

/**
 * Paired Δ against `baseline` for each other variant run here (baseline read from disk if not
 * selected; one line saying so when it has no results there).
 */
const asbDeltas = (sel: Selection, model: string, attack: AsbAttack, results: ReadonlyMap<string, AttackResults>) =>
  Effect.gen(function*() {
    const baseline = sel.exp.variants.find((v) => v.name === "baseline")
    const others = [...results.keys()].filter((name) => name !== "baseline")
    if (baseline === undefined || others.length === 0) return
    const tag = attackTag(attack)
    const baseDir = path.join(asbRunDir(sel.exp, model, baseline), tag)
    const base = results.get("baseline") ?? (fs.existsSync(baseDir) ? yield* asbResults(sel, model, baseline, attack) : undefined)
    if (base === undefined || base.shards === 0) {
      const hint = results.has("baseline") ? "" : " (run --variant baseline)"
      yield* Console.log(`[asb] ${model} ${tag}: no paired Δ: no baseline results in ${baseDir}${hint}`)
      return
    }
    for (const name of others) {
      const d = attackDelta("baseline", base.core, results.get(name)!.core)
      yield* Console.log(
        attack.method === "clean"
          ? `[asb] ${model} ${tag}: Δ task success ${name} − baseline ${formatDiff(d.original_task_success)}`
          : `[asb] ${model} ${tag}: ΔASR ${name} − baseline ${formatDiff(d.asr)}`
      )
    }
  })

const runSelection = (sel: Selection, doAsbench: boolean, doAsb: boolean, shard: Shard | undefined, stopAfter: number, tally: CaseTally) =>
  Effect.scoped(
    Effect.gen(function*() {
      // the bridge only when Agent-SafetyBench runs: it needs that checkout
      const bridge = doAsbench ? yield* Layer.build(bridgeLayer(sel.settings, sel.exp.agent_safetybench.workers)) : null
      for (const model of sel.models) {
        const asb = new Map<string, Map<string, AttackResults>>()
        for (const variant of sel.variants) {
          if (bridge !== null) yield* Effect.provide(runAsbenchOne(sel, model, variant, shard, stopAfter, tally), bridge)
          if (!doAsb) continue
          for (const attack of sel.exp.asb.attacks) {
            const r = yield* runAsbOne(sel, model, variant, attack, tally.outputs)
            const tag = attackTag(attack)
            const byVariant = asb.get(tag) ?? new Map<string, AttackResults>()
            byVariant.set(variant.name, r)
            asb.set(tag, byVariant)
          }
        }
        if (doAsb) {
          for (const attack of sel.exp.asb.attacks) yield* asbDeltas(sel, model, attack, asb.get(attackTag(attack)) ?? new Map())
        }
      }
    })
  ).pipe(Effect.provide(Layer.mergeAll(Progress.Live, Settings.layerValue(sel.settings))))

export const runCommand = Command.make(
  "run",
  {
    config: configOption,
    experiment: experimentOption,
    model: modelOption,
    variant: variantOption,
    bench: benchOption,
    shard: shardOption,
    runDir: runDirOption,
    allowErrors: allowErrorsOption("Agent-SafetyBench cases are in error"),
    stopAfter: stopAfterOption
  },
  ({ allowErrors, bench, config, experiment, model, runDir, shard: shardOpt, stopAfter, variant }) =>
    Effect.gen(function*() {
      const sel = yield* selection(config, experiment, model, variant, runDir)
      const explicit = bench.length > 0
      const benches: ReadonlyArray<string> = explicit ? bench : ["asbench", "asb", "agentdojo"]
      let doAsbench = benches.includes("asbench")
      if (doAsbench && !sel.exp.agent_safetybench.enabled) {
        doAsbench = false
        yield* Console.log(`== Agent-SafetyBench: disabled in ${sel.exp.file} (agent_safetybench.enabled: false)`)
      }
      const shard = Option.getOrUndefined(shardOpt)
      let doAsb = benches.includes("asb")
      if (doAsb && shard !== undefined && sel.exp.asb.enabled && sel.exp.asb.attacks.length > 0) {
        if (explicit) return yield* fail(`--shard applies to Agent-SafetyBench only (drop --bench asb)`)
        doAsb = false
        yield* Console.log(`== ASB: not sharded (--shard applies to Agent-SafetyBench only)`)
      }
      if (doAsb && (!sel.exp.asb.enabled || sel.exp.asb.attacks.length === 0)) {
        doAsb = false
        // named explicitly: say why nothing runs; by default: an experiment without ASB is normal
        if (explicit) {
          yield* Console.log(
            sel.exp.asb.enabled
              ? `== ASB: no attacks in ${sel.exp.file} (asb.attacks is empty)`
              : `== ASB: disabled in ${sel.exp.file} (asb.enabled: false)`
          )
        }
      }
      const agentdojoOn = sel.exp.agentdojo?.enabled === true
      const doAgentdojo = benches.includes("agentdojo") && agentdojoOn && sel.agentdojoVariants.length > 0
      if (explicit && benches.includes("agentdojo") && !agentdojoOn) {
        yield* Console.log(`== AgentDojo: not enabled in ${sel.exp.file} (no agentdojo section, or agentdojo.enabled: false)`)
      }
      if (!doAsbench && !doAsb && !doAgentdojo) return
      // before anything starts: a missing proxy is the most likely problem and its line names the fix
      yield* checkProxy(sel.exp.proxy_url, sel.settings.file).pipe(Effect.mapError((e) => fail(e.message)))
      // then: is every model this run calls served? (one GET /models per upstream involved)
      const judges = [...new Set(sel.variants.flatMap((v) => (v.judge === null ? [] : [v.judge])))]
      const needs = [
        ...agentNeeds(sel.models),
        ...judgeModelNeeds(sel.settings, judges),
        ...(doAsb ? agentNeeds([refusalJudge(sel.settings.aliases, sel.models).requested], "ASB's refusal judge model") : [])
      ]
      const problems = yield* checkServed(sel.settings, needs)
      if (problems.length > 0) return yield* fail(findingsLine(problems, sel.settings.file))
      const tally: CaseTally = { selected: 0, failed: 0, first: null, outputs: { files: [], dirs: [], logs: [] } }
      yield* runSelection(sel, doAsbench, doAsb, shard, stopAfter, tally)
      const adTally = agentdojoTally()
      if (doAgentdojo) {
        yield* runAgentdojoSelection(sel.settings, sel.exp, sel.models, sel.agentdojoVariants, shard, adTally, tally.outputs).pipe(
          Effect.provide(Layer.mergeAll(Progress.Live, Settings.layerValue(sel.settings)))
        )
      }
      const { files, dirs, logs } = tally.outputs
      yield* bindResultsAndSay({ runDir: sel.exp.run_dir, command: "run", files: [...files, ...dirs.flatMap(filesUnder)], logs, audit: sel.settings.audit }).pipe(
        Effect.mapError((e) => fail(`results not bound: ${e.message}`))
      )
      const lines = [...(tally.failed > 0 ? [caseFailureLine(tally)] : []), ...(adTally.failed > 0 ? [agentdojoFailureLine(adTally)] : [])]
      yield* settleFailures(tally.failed + adTally.failed, lines.join("; "), allowErrors)
    })
).pipe(Command.withDescription("run an experiment's benchmarks through veto-proxy (resumable)"))
