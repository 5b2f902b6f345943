/**
 * `vetobench smoke [-c FILE] [-e EXPERIMENT] [--agents M…] [--judges J…]` — endpoint checks
 * before a run (reference §11), all sent directly to the upstreams (never through a proxy):
 *
 * 1. served models per upstream (GET /models; a configured model that is not served fails);
 * 2. agent tool calling: `get_weather` for Paris per agent (model_defaults apply);
 * 3. judges (call-only probes), ruled by the gate exactly as the proxy rules them (layer by layer,
 *    deadline, fail_policy), with the verdict cache off and an in-memory audit sink. A model judge
 *    (an in-process `llama_cpp` one too: its model is loaded here, and its probes run one at a
 *    time) must allow the benign probe and deny the destructive and exfiltration probes; a `static`
 *    control judge must answer its own decision on every probe;
 * 4. the ShieldAgent scorer (`scoring.shieldagent_model`), if configured;
 * 5. every alias: its target answers "Reply with the digit 1.".
 *
 * Before the probes: every agent and every model a selected judge calls must be served (the
 * listings of step 1, one GET /models per upstream; agents routed through `aliases` as the proxy
 * routes them, judge models by their own name). A model no upstream routes, or that its upstream
 * does not list, stops smoke with one line naming the model and the upstream (exit 1); an upstream
 * that does not answer is a FAIL of step 1 and the probes still run.
 *
 * `--agents` / `--judges` are repeatable and take comma lists (`--agents a,b --agents c`).
 * (@effect/cli has no "option with zero or more values": a bare `--agents` or `--agents ''` is the
 * same as not giving it.) Without `--agents` the agents are the `models` of the experiment file
 * given with `-e` (its only use here), else none; without `--judges`, every configured judge
 * including the built-in `allow-all` and `deny-all`. Every check line shows its latency. Output on stdout,
 * ending `SMOKE PASSED` (exit 0) or `SMOKE FAILED (<n> checks failed)` (exit 1).
 */
import { Command, Options } from "@effect/cli"
import { Console, Context, Duration, Effect, Either, Layer, Option } from "effect"
import { AuditSink } from "../../layers/AuditSink.js"
import * as Upstreams from "../../layers/Upstreams.js"
import { Judges } from "../../judges/Judges.js"
import { defaultPlugins } from "../../judges/plugins.js"
import { BUILTIN_JUDGES } from "../config/builtin-judges.js"
import type { JudgeSpec, Settings, UpstreamSettings } from "../config/settings.js"
import { readYamlFile } from "../config/yaml-file.js"
import type { Decision } from "../domain/verdict.js"
import { Gate, type GateRequest } from "../gate/Gate.js"
import { gateLayer } from "../proxy/live.js"
import { CliFailure, configOption, configuredJudges, settingsFrom, unknownJudges } from "./options.js"
import { agentNeeds, findings, findingsLine, judgeModelNeeds, type Listing, listUpstreams } from "./preflight.js"
import {
  agentPayload,
  aliasPayload,
  chatContent,
  completionText,
  errorText,
  JUDGE_PROBES,
  type JudgeProbe,
  judgeAgentAnswer,
  ms,
  oneLine,
  probeCall,
  pyList,
  pyStr,
  SHIELD_PROMPT,
  shieldLabel
} from "./smoke/probes.js"
import { isObject } from "../domain/is-object.js"
import { redactUrlsIn } from "../domain/redact-url.js"

const list = (name: string, pseudo: string, what: string) =>
  Options.text(name).pipe(
    Options.withPseudoName(pseudo),
    Options.repeated,
    Options.withDescription(`${what}; repeatable or comma-separated`)
  )

const agentsOption = list("agents", "MODEL", "agent models to probe (default: the experiment's models)")
const judgesOption = list("judges", "JUDGE", "judges to probe (default: every configured judge)")
const experimentOption = Options.text("experiment").pipe(
  Options.withAlias("e"),
  Options.withPseudoName("FILE"),
  Options.optional,
  Options.withDescription("experiment file (YAML) whose `models` are the agents")
)

const names = (values: ReadonlyArray<string>): Array<string> =>
  [...new Set(values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v !== ""))]

/** The names given (comma lists split, duplicates dropped); None when there are none. */
const given = (values: ReadonlyArray<string>): Option.Option<Array<string>> => {
  const xs = names(values)
  return xs.length === 0 ? Option.none() : Option.some(xs)
}

/** The experiment file's `models`: a non-empty list of model names, else a one-line error. */
export const experimentModels = (file: string): Effect.Effect<ReadonlyArray<string>, CliFailure> =>
  readYamlFile(file, { what: "experiment file" }).pipe(
    Effect.mapError((e) => new CliFailure({ message: e.message })),
    Effect.flatMap((doc) => {
      const models = isObject(doc) ? doc.models : undefined
      const valid = Array.isArray(models) ? models.filter((m): m is string => typeof m === "string" && m.trim() !== "") : []
      return Array.isArray(models) && models.length > 0 && valid.length === models.length
        ? Effect.succeed(valid)
        : Effect.fail(new CliFailure({ message: `${file}: models: must be a non-empty list of model names` }))
    })
  )

const PASS = (ok: boolean) => (ok ? "PASS" : "FAIL")

/**
 * Every line smoke prints: any URL in it (an error quoting an upstream's or a judge's URL, a
 * verdict reason, a model's answer) shown without credentials (userinfo, credential query values).
 */
const say = (line: string) => Console.log(redactUrlsIn(line))

/** Run an effect, returning its result as an Either and its wall time in ms. */
const timed = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.timed(Effect.either(self)), ([d, r]) => [Duration.toMillis(d), r] as const)

/** Each section prints its lines as it goes and returns one boolean per check. */
type Section = Effect.Effect<ReadonlyArray<boolean>>

// ---------------------------------------------------------------------------------------------
// 1. served models

/** One upstream's line(s), from its listing (each upstream was asked on a client of its own, so the latency is its own). */
const servedModels = (listing: Listing) =>
  Effect.gen(function* () {
    const u: UpstreamSettings = listing.upstream
    const took = listing.took
    if (Either.isLeft(listing.served)) {
      yield* say(`  ${u.name}: error: ${listing.served.left} (${ms(took)})`)
      return false
    }
    const got = listing.served.right
    yield* say(`  ${u.name}: ${pyList(got)} (${ms(took)})`)
    const missing = u.models.filter((m) => !got.includes(m))
    if (missing.length > 0) yield* say(`  FAIL ${u.name}: configured but not served: ${missing.join(", ")}`)
    return missing.length === 0
  })

const servedSection = (listings: ReadonlyArray<Listing>): Section =>
  say("## Served models per upstream").pipe(
    Effect.zipRight(Effect.forEach(listings, servedModels))
  )

// ---------------------------------------------------------------------------------------------
// 2. agents

const agentSection = (ups: Upstreams.UpstreamsShape, agents: ReadonlyArray<string>): Section =>
  Effect.gen(function* () {
    yield* say("\n## Agent tool calling (needs vLLM --enable-auto-tool-choice --tool-call-parser ...)")
    if (agents.length === 0) yield* say("  (no agents: give --agents or -e)")
    return yield* Effect.forEach(agents, (model) =>
      Effect.gen(function* () {
        const [took, res] = yield* timed(ups.chat(model, agentPayload()))
        const outcome = Either.isRight(res) ? judgeAgentAnswer(res.right) : { pass: false, detail: errorText(res.left) }
        yield* say(`  ${PASS(outcome.pass)} ${model} (${ms(took)}): ${outcome.detail}`)
        return outcome.pass
      })
    )
  })

// ---------------------------------------------------------------------------------------------
// 3. judges

/** What a judge must decide on a probe: a `static` control its own decision, any other judge the probe's. */
const expectationFor = (spec: JudgeSpec | undefined, probe: JudgeProbe): Decision => {
  if (spec?.kind !== "static") return probe.expect
  const d = spec.decision
  return d === "deny" || d === "hold" ? d : "allow"
}

const probeJudge = (gate: Context.Tag.Service<Gate>, judge: string, spec: JudgeSpec | undefined, probe: JudgeProbe) =>
  Effect.gen(function* () {
    const req: GateRequest = {
      arm: "shadow",
      judge,
      tools: [probe.tool],
      stream: false,
      context: {
        requestId: `smoke-${judge}-${probe.name}`,
        runId: "smoke",
        episodeId: null,
        sessionId: null,
        principal: null,
        agentModel: "smoke",
        headers: {}
      }
    }
    const [took, res] = yield* timed(gate.ruleChoice(req, 0, [probeCall(probe)]))
    if (Either.isLeft(res)) return yield* Effect.die(res.left) // the memory sink does not fail
    const v = res.right[0]?.verdict
    const subject = `${judge} / ${probe.name}`
    if (v === undefined || v === null) return { pass: false, line: `  FAIL ${subject}: not judged (${ms(took)})` }
    const expected = expectationFor(spec, probe)
    if (v.status !== "ok" || v.decision === null) {
      return { pass: false, line: `  FAIL ${subject}: ${v.status}: ${oneLine(v.reason, 100)} (${ms(took)})` }
    }
    const pass = v.decision === expected
    return {
      pass,
      line: `  ${PASS(pass)} ${subject}: ${v.decision} (${v.category}) ${ms(took)} – ${oneLine(v.reason, 100)}`
    }
  })

const judgeSection = (settings: Settings, judges: ReadonlyArray<string>): Section =>
  Effect.gen(function* () {
    yield* say("\n## Judges (call-only probes)")
    const specs: Readonly<Record<string, JudgeSpec>> = { ...BUILTIN_JUDGES, ...settings.judges }
    const noCache: Settings = { ...settings, proxy: { ...settings.proxy, judge_cache: false } }
    return yield* Effect.scoped(
      Effect.gen(function* () {
        const ctx = yield* Layer.build(gateLayer({ settings: noCache, plugins: defaultPlugins, audit: AuditSink.layerMemory }))
        const gate = Context.get(ctx, Gate)
        const built = Context.get(ctx, Judges)
        const results: Array<boolean> = []
        for (const judge of judges) {
          const j = built.get(judge)
          if (j === undefined) {
            yield* say(`  FAIL ${judge}: not built`)
            results.push(false)
            continue
          }
          // an in-process model rules one call at a time: its probes go one after the other, so each
          // line's latency is that ruling's own rather than time spent queueing behind the others
          const inProcess = j.kind === "llama_cpp"
          if (inProcess) yield* say(`  ${judge}: in-process GGUF model ${j.model ?? "?"} (kind llama_cpp, CPU, no upstream); probes one at a time`)
          const rows = yield* Effect.forEach(JUDGE_PROBES, (p) => probeJudge(gate, judge, specs[judge], p), { concurrency: inProcess ? 1 : "unbounded" })
          for (const r of rows) {
            yield* say(r.line)
            results.push(r.pass)
          }
        }
        return results
      })
    ).pipe(
      Effect.catchTags({
        JudgeConfigError: (e) => say(`  FAIL judges: ${settings.file}: ${e.message}`).pipe(Effect.as([false])),
        AuditWriteError: (e) => say(`  FAIL judges: audit: ${e.message}`).pipe(Effect.as([false]))
      })
    )
  })

// ---------------------------------------------------------------------------------------------
// 4. ShieldAgent, 5. aliases

const shieldSection = (ups: Upstreams.UpstreamsShape, model: string): Section =>
  Effect.gen(function* () {
    yield* say("\n## ShieldAgent scorer (/v1/completions)")
    const [took, res] = yield* timed(ups.completion(model, { prompt: SHIELD_PROMPT, max_tokens: 10, temperature: 0 }))
    if (Either.isLeft(res)) {
      yield* say(`  FAIL ${model} (${ms(took)}): ${errorText(res.left)}`)
      return [false]
    }
    const text = completionText(res.right)
    const pass = text !== undefined && shieldLabel(text) !== -1
    yield* say(`  ${PASS(pass)} ${model} (${ms(took)}): ${text === undefined ? "no choices[0].text" : pyStr(text)}`)
    return [pass]
  })

const aliasSection = (ups: Upstreams.UpstreamsShape, alias: string, target: string): Section =>
  Effect.gen(function* () {
    yield* say(`\n## Alias ${alias} -> ${target}`)
    const [took, res] = yield* timed(ups.chat(target, aliasPayload()))
    if (Either.isLeft(res)) {
      yield* say(`  FAIL ${target} (${ms(took)}): ${errorText(res.left)}`)
      return [false]
    }
    const content = chatContent(res.right)
    yield* say(`  PASS ${target} (${ms(took)}): ${content === null ? "None" : pyStr(content)}`)
    return [true]
  })

// ---------------------------------------------------------------------------------------------

/**
 * All sections in order; returns the number of checks and of failed checks. Fails with one line
 * (after the served-models section) when an agent or a judge's model is not served.
 */
export const runSmoke = (settings: Settings, agents: ReadonlyArray<string>, judges: ReadonlyArray<string>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const listings = yield* listUpstreams(settings, settings.upstreams)
      const served = yield* servedSection(listings)
      // an upstream that did not answer is already a FAIL above; a model that is not served stops here
      const missing = findings(settings, [...agentNeeds(agents), ...judgeModelNeeds(settings, judges)], listings).filter((f) => f._tag !== "Unreachable")
      if (missing.length > 0) return yield* new CliFailure({ message: findingsLine(missing, settings.file) })
      const ups = yield* Upstreams.make(settings)
      const sections: Array<Section> = [Effect.succeed(served), agentSection(ups, agents), judgeSection(settings, judges)]
      const shield = settings.scoring.shieldagent_model
      if (shield !== null) sections.push(shieldSection(ups, shield))
      for (const [alias, target] of Object.entries(settings.aliases)) sections.push(aliasSection(ups, alias, target))
      const results = (yield* Effect.all(sections)).flat()
      return { checks: results.length, failed: results.filter((ok) => !ok).length }
    })
  )

export const smokeCommand = Command.make(
  "smoke",
  { config: configOption, experiment: experimentOption, agents: agentsOption, judges: judgesOption },
  ({ config, experiment, agents, judges }) =>
    Effect.gen(function* () {
      const settings = yield* settingsFrom(config)
      const agentList = yield* Option.match(given(agents), {
        onSome: Effect.succeed<ReadonlyArray<string>>,
        onNone: () => Option.match(experiment, { onSome: experimentModels, onNone: () => Effect.succeed([]) })
      })
      const judgeList = Option.getOrElse(given(judges), () => configuredJudges(settings.judges))
      const bad = unknownJudges(judgeList, settings.judges)
      if (bad !== null) return yield* bad
      const { checks, failed } = yield* runSmoke(settings, agentList, judgeList)
      if (failed === 0) return yield* say("\nSMOKE PASSED")
      yield* say(`\nSMOKE FAILED (${failed} check${failed === 1 ? "" : "s"} failed)`)
      return yield* new CliFailure({ message: `smoke: ${failed} of ${checks} checks failed` })
    })
).pipe(Command.withDescription("check the endpoints before a run: served models, agent tool calling, judges, scorer, aliases"))
