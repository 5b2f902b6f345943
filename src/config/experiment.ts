/**
 * Experiment files (`configs/sanity.yaml`, `configs/pilot.yaml`): types, defaults, decoder,
 * loader, and the names derived from them (variants, routes). Run ids and run directories are
 * src/run-layout/paths.ts.
 *
 * Loading follows the settings file (reference §6.1): YAML → `${…}` expansion of string values →
 * decoding with the same decoders, so every error names the experiment file and the key path.
 * Unlike the Python reference, unknown keys are rejected at every level, arms are validated,
 * judged arms need a judge, and duplicate models/judges/arms/attacks are errors. Relative paths
 * (`run_dir`, `agent_safetybench.split`) are resolved against the settings' repo root.
 *
 * Variants (reference §7.1): for each arm in order, `shadow`/`enforce` give one variant per
 * judge (judge order) named `<arm>-<judge>`; `passthrough`/`baseline` give one variant named
 * after the arm. Run id: `<experiment>.<bench>.<slug(model)>.<variant>`.
 */
import { Data, Effect, Either } from "effect"
import * as path from "node:path"
import { BUILTIN_JUDGES } from "./builtin-judges.js"
import type { Wire } from "../domain/audit-record.js"
import { ARMS, type Arm, formatRoute, makeRoute, parseRoute, RouteError } from "../domain/route.js"
import { redactUrl } from "../domain/redact-url.js"
import { runIdProblem } from "../domain/run-id.js"
import { didYouMean, didYouMeanClause } from "../domain/suggest.js"
import { attackTag, runIdFor, slug } from "../run-layout/paths.js"
import { type AgentdojoExperiment, agentdojoSection } from "./agentdojo.js"
import * as D from "./decode.js"
import type { ConfigError } from "./errors.js"
import { type Env, expandEnv } from "./expand.js"
import type { Settings } from "./settings.js"
import { readYamlFile } from "./yaml-file.js"

// ---------------------------------------------------------------------------------------------
// types

export interface Variant {
  /** the arm alone (`baseline`, `passthrough`) or `<arm>-<judge>` (`enforce-small`) */
  readonly name: string
  readonly arm: Arm
  /** set exactly for `shadow` and `enforce` */
  readonly judge: string | null
}

export interface AgentSafetyBenchExperiment {
  readonly enabled: boolean
  /** absolute path of the split JSON; null = all cases */
  readonly split: string | null
  readonly split_part: "test" | "dev"
  /** parallel episodes */
  readonly workers: number
  /** agent max tokens */
  readonly max_tokens: number
  /** the wire format the agent speaks to the proxy (docs/wire-formats.md); default `chat` */
  readonly wire: AgentWire
}

/** The formats the Agent-SafetyBench agent can speak: chat completions, the Responses API, the Messages API. */
export const AGENT_WIRES = ["chat", "responses", "messages"] as const satisfies ReadonlyArray<Wire>
export type AgentWire = (typeof AGENT_WIRES)[number]

export const isAgentWire = (s: string): s is AgentWire => (AGENT_WIRES as ReadonlyArray<string>).includes(s)

export const ASB_METHODS = ["direct_prompt_injection", "observation_prompt_injection", "mixed_attack", "clean"] as const
export type AsbMethod = (typeof ASB_METHODS)[number]

/** `main_attacker.py --attack_type` choices (benchmarks.md §3.2, §3.3) */
export const ASB_ATTACK_TYPES = ["naive", "fake_completion", "escape_characters", "context_ignoring", "combined_attack"] as const

export interface AsbAttack {
  readonly method: AsbMethod
  /** one of `ASB_ATTACK_TYPES`, passed to ASB verbatim; default `naive`, also for clean */
  readonly attack_type: string
}

export interface AsbExperiment {
  readonly enabled: boolean
  readonly attacks: ReadonlyArray<AsbAttack>
  readonly attack_tools: "all" | "agg" | "non-agg"
  /** keep the first k attacker tools per agent; null = all */
  readonly tools_per_agent: number | null
  /** tasks per agent per attacker tool (clean forces ≥ 5) */
  readonly task_num: number
  /** parallel `main_attacker` processes */
  readonly shards: number
  /** agent max tokens in ASB */
  readonly max_new_tokens: number
  /** the agents (`agent_name` in ASB's tasks file) whose attacker tools run; null = every agent */
  readonly agents: ReadonlyArray<string> | null
  /**
   * tool-call arguments that are not JSON: `asb` (default) as ASB's GPT backend — the answer keeps
   * no tool call and its text is ASB's error text; `empty` — the call is kept with `{}` arguments
   */
  readonly malformed_arguments: "asb" | "empty"
}

export interface Experiment {
  /** the experiment file as given */
  readonly file: string
  readonly name: string
  /** absolute */
  readonly run_dir: string
  /** where benchmarks send requests, incl. `/v1`, no trailing `/` */
  readonly proxy_url: string
  readonly models: ReadonlyArray<string>
  readonly judges: ReadonlyArray<string>
  readonly arms: ReadonlyArray<Arm>
  /** arms × judges in order */
  readonly variants: ReadonlyArray<Variant>
  readonly agent_safetybench: AgentSafetyBenchExperiment
  readonly asb: AsbExperiment
  /** the AgentDojo section (config/agentdojo.ts); absent in experiments built in code = disabled */
  readonly agentdojo?: AgentdojoExperiment
}

// ---------------------------------------------------------------------------------------------
// derived names

/** Variant name: the arm alone without a judge, else `<arm>-<judge>`. */
export const variantName = (arm: Arm, judge: string | null): string => (judge === null ? arm : `${arm}-${judge}`)

/** The variants of arms × judges: judged arms expand per judge (judge order), others give one. */
export const expandVariants = (arms: ReadonlyArray<Arm>, judges: ReadonlyArray<string>): ReadonlyArray<Variant> =>
  arms.flatMap((arm): ReadonlyArray<Variant> =>
    arm === "shadow" || arm === "enforce"
      ? judges.map((judge) => ({ name: variantName(arm, judge), arm, judge }))
      : [{ name: arm, arm, judge: null }]
  )

/** The model string sent to the proxy (`formatRoute`). A variant of an experiment always formats. */
export const routeFor = (model: string, v: Variant): string => {
  const r = formatRoute(makeRoute(model, v.arm, v.judge))
  if (typeof r !== "string") throw new Error(`invalid variant ${JSON.stringify(v)}: ${r.message}`)
  return r
}

// ---------------------------------------------------------------------------------------------
// selection (CLI filters)

/** A `--variant` / `--model` filter named something the experiment does not have. */
export class SelectionError extends Data.TaggedError("SelectionError")<{
  readonly experiment: string
  readonly kind: "variant" | "model"
  readonly unknown: string
  readonly valid: ReadonlyArray<string>
}> {
  override get message(): string {
    const clause = didYouMeanClause(this.unknown, this.valid)
    return `experiment ${this.experiment} has no ${this.kind} '${this.unknown}'${clause === "" ? "" : `; ${clause}`} (${this.kind}s: ${this.valid.join(", ")})`
  }
}

const select = <A>(
  exp: Experiment,
  kind: "variant" | "model",
  all: ReadonlyArray<A>,
  nameOf: (a: A) => string,
  names: ReadonlyArray<string>
): Either.Either<ReadonlyArray<A>, SelectionError> => {
  if (names.length === 0) return Either.right(all)
  const valid = all.map(nameOf)
  const unknown = names.find((n) => !valid.includes(n))
  if (unknown !== undefined) return Either.left(new SelectionError({ experiment: exp.name, kind, unknown, valid }))
  return Either.right(all.filter((a) => names.includes(nameOf(a))))
}

/**
 * The variants named (exact match), in experiment order; no names = all variants.
 * An unknown name fails with the list of valid ones.
 */
export const selectVariants = (exp: Experiment, names: ReadonlyArray<string>): Either.Either<ReadonlyArray<Variant>, SelectionError> =>
  select(exp, "variant", exp.variants, (v) => v.name, names)

/** The models named (exact match), in experiment order; no names = all models. */
export const selectModels = (exp: Experiment, names: ReadonlyArray<string>): Either.Either<ReadonlyArray<string>, SelectionError> =>
  select(exp, "model", exp.models, (m) => m, names)

// ---------------------------------------------------------------------------------------------
// decoders

const AGENT_SAFETYBENCH_DEFAULTS: Omit<AgentSafetyBenchExperiment, "split"> = {
  enabled: true,
  split_part: "test",
  workers: 16,
  max_tokens: 2048,
  wire: "chat"
}

const ASB_DEFAULTS: AsbExperiment = {
  enabled: true,
  attacks: [],
  attack_tools: "all",
  tools_per_agent: null,
  task_num: 1,
  shards: 8,
  max_new_tokens: 1024,
  agents: null,
  malformed_arguments: "asb"
}

const DEFAULT_ARMS: ReadonlyArray<Arm> = ["baseline", "enforce"]

/** safe as a file name and inside run ids: starts with a letter or digit */
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/
/** attack types become directory names */
const SAFE_ATTACK_TYPE = /^[A-Za-z0-9_-]+$/

const experimentName: D.Decoder<string> = (n) =>
  Either.flatMap(D.nonEmptyString(n), (s) =>
    SAFE_NAME.test(s) ? Either.right(s) : n.fail(`must be safe for file names (letters, digits, _ . -; starting with a letter or digit), got ${JSON.stringify(s)}`))

const httpUrl: D.Decoder<string> = (n) =>
  Either.flatMap(D.nonEmptyString(n), (s) => {
    const url = URL.canParse(s.trim()) ? new URL(s.trim()) : undefined
    return url !== undefined && (url.protocol === "http:" || url.protocol === "https:")
      ? Either.right(s.trim().replace(/\/+$/, ""))
      : n.fail(`expected an http(s) URL, got ${JSON.stringify(redactUrl(s))}`)
  })

/** A list of distinct items (by `key`), each checked by `item`. */
const distinctList = <A>(item: D.Decoder<A>, key: (a: A) => string, what: string): D.Decoder<ReadonlyArray<A>> => (n) =>
  Either.flatMap(D.list(item)(n), (xs) => {
    const seen = new Map<string, number>()
    for (const [i, x] of xs.entries()) {
      const k = key(x)
      const first = seen.get(k)
      if (first !== undefined) return n.at(i, x).fail(`duplicate ${what} '${k}' (also ${n.path}[${first}])`)
      seen.set(k, i)
    }
    return Either.right(xs)
  })

const nonEmpty = <A>(decoder: D.Decoder<ReadonlyArray<A>>): D.Decoder<ReadonlyArray<A>> => (n) =>
  Either.flatMap(decoder(n), (xs) => (xs.length === 0 ? n.fail("must list at least one entry") : Either.right(xs)))

/** A model name; slugs must differ too, or two models would share run ids and directories. */
const models: D.Decoder<ReadonlyArray<string>> = (n) =>
  Either.flatMap(nonEmpty(distinctList(D.nonEmptyString, (m) => m, "model"))(n), (ms) => {
    const seen = new Map<string, number>()
    for (const [i, m] of ms.entries()) {
      const first = seen.get(slug(m))
      if (first !== undefined) return n.at(i, m).fail(`model '${m}' has the same file name ('${slug(m)}') as ${n.path}[${first}]`)
      seen.set(slug(m), i)
    }
    return Either.right(ms)
  })

const judgeName = (settings: Settings): D.Decoder<string> => (n) =>
  Either.flatMap(D.nonEmptyString(n), (j) => {
    if (!Object.hasOwn(settings.judges, j) && !Object.hasOwn(BUILTIN_JUDGES, j)) {
      return n.fail(`judge '${j}' is not configured in ${settings.file}${didYouMean(j, [...Object.keys(settings.judges), ...Object.keys(BUILTIN_JUDGES)])}`)
    }
    if (slug(j) !== j) return n.fail(`judge name '${j}' cannot be used in variant and file names (letters, digits, _ . - only)`)
    return Either.right(j)
  })

const arm: D.Decoder<Arm> = D.literal(...ARMS)

const attack: D.Decoder<AsbAttack> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, ["method", "attack_type"])
    const method = yield* f.get("method", D.literal(...ASB_METHODS))
    const typeNode = f.child("attack_type")
    const attack_type = typeNode.isMissing ? "naive" : yield* D.nonEmptyString(typeNode)
    if (!SAFE_ATTACK_TYPE.test(attack_type)) {
      return yield* typeNode.fail(`must be a plain name (letters, digits, _ -), got ${JSON.stringify(attack_type)}`)
    }
    if (!(ASB_ATTACK_TYPES as ReadonlyArray<string>).includes(attack_type)) {
      const clause = didYouMeanClause(attack_type, ASB_ATTACK_TYPES)
      return yield* typeNode.fail(`unknown attack type '${attack_type}'${clause === "" ? "" : `; ${clause}`} (ASB's: ${ASB_ATTACK_TYPES.join(", ")})`)
    }
    return { method, attack_type }
  })

const positiveInt = D.number({ integer: true, min: 1 })

/** `agent_safetybench.wire`: one of the agent's formats; a near miss is named */
const agentWire: D.Decoder<AgentWire> = (n) =>
  Either.flatMap(D.string(n), (s) => {
    if (isAgentWire(s)) return Either.right(s)
    const clause = didYouMeanClause(s, AGENT_WIRES)
    return n.fail(`unknown wire format '${s}'${clause === "" ? "" : `; ${clause}`} (the formats: ${AGENT_WIRES.join(", ")})`)
  })

const agentSafetybench: D.Decoder<AgentSafetyBenchExperiment> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, ["enabled", "split", "split_part", "workers", "max_tokens", "wire"])
    const d = AGENT_SAFETYBENCH_DEFAULTS
    return {
      enabled: yield* f.get("enabled", D.boolean, d.enabled),
      split: yield* f.get("split", D.rootPath, null),
      split_part: yield* f.get("split_part", D.literal("test", "dev"), d.split_part),
      workers: yield* f.get("workers", positiveInt, d.workers),
      max_tokens: yield* f.get("max_tokens", positiveInt, d.max_tokens),
      wire: yield* f.get("wire", agentWire, d.wire)
    }
  })

const asb: D.Decoder<AsbExperiment> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, ["enabled", "attacks", "attack_tools", "tools_per_agent", "task_num", "shards", "max_new_tokens", "agents", "malformed_arguments"])
    const d = ASB_DEFAULTS
    return {
      enabled: yield* f.get("enabled", D.boolean, d.enabled),
      attacks: yield* f.get("attacks", distinctList(attack, attackTag, "attack"), d.attacks),
      attack_tools: yield* f.get("attack_tools", D.literal("all", "agg", "non-agg"), d.attack_tools),
      tools_per_agent: yield* f.get("tools_per_agent", positiveInt, d.tools_per_agent),
      task_num: yield* f.get("task_num", positiveInt, d.task_num),
      shards: yield* f.get("shards", positiveInt, d.shards),
      max_new_tokens: yield* f.get("max_new_tokens", positiveInt, d.max_new_tokens),
      agents: yield* f.get("agents", nonEmpty(distinctList(D.nonEmptyString, (a) => a, "agent")), d.agents),
      malformed_arguments: yield* f.get("malformed_arguments", D.literal("asb", "empty"), d.malformed_arguments)
    }
  })

/** `http://<host>:<port>/v1`, with a wildcard bind address replaced by loopback. */
export const defaultProxyUrl = (settings: Pick<Settings, "proxy">): string => {
  const { host, port } = settings.proxy
  const h = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host
  return `http://${h.includes(":") ? `[${h}]` : h}:${port}/v1`
}

const TOP_KEYS = ["name", "run_dir", "proxy_url", "models", "judges", "arms", "agent_safetybench", "asb", "agentdojo"]

/**
 * Decodes a parsed experiment document (the YAML value, before expansion) against the
 * settings it will run with. `file` labels errors; `env` defaults to `process.env`.
 */
export const decodeExperiment = (
  raw: unknown,
  opts: { readonly file: string; readonly settings: Settings; readonly env?: Env }
): Either.Either<Experiment, ConfigError> =>
  Either.gen(function*() {
    const { settings } = opts
    const root = settings.root
    const { expanded, value } = yield* expandEnv(raw, { file: opts.file, ...(opts.env ? { env: opts.env } : {}) })
    const f = yield* D.fields(new D.Node({ file: opts.file, root, expanded }, "", value), TOP_KEYS)
    const name = yield* f.get("name", experimentName)
    const modelList = yield* f.get("models", models)
    const judges = yield* f.get("judges", distinctList(judgeName(settings), (j) => j, "judge"), [])
    const arms = yield* f.get("arms", nonEmpty(distinctList(arm, (a) => a, "arm")), DEFAULT_ARMS)
    if (judges.length === 0) {
      const i = arms.findIndex((a) => a === "shadow" || a === "enforce")
      if (i >= 0) {
        const armsNode = f.child("arms")
        const node = armsNode.isMissing ? armsNode : armsNode.at(i, arms[i])
        const why = armsNode.isMissing ? " (arms default to [baseline, enforce])" : ""
        return yield* node.fail(`arm '${arms[i]}' needs at least one judge: list them under \`judges\`${why}`)
      }
    }
    const variants = expandVariants(arms, judges)
    // every model × variant must survive the route grammar (e.g. a passthrough model with `@`)
    for (const [i, model] of modelList.entries()) {
      for (const v of variants) {
        const route = routeFor(model, v)
        const back = parseRoute(route)
        if (back instanceof RouteError || back.model !== model || back.arm !== v.arm || back.judge !== v.judge) {
          return yield* f.child("models").at(i, model).fail(`model '${model}' cannot be routed as ${v.name} ('${route}' reads back differently)`)
        }
      }
    }
    // every run id the experiment will send as x-vetobench-run must be of the grammar (else a 400 mid-run);
    // room is kept for the shard suffix `.shard-I-of-N` (N up to 9999)
    for (const [i, model] of modelList.entries()) {
      for (const v of variants) {
        for (const bench of ["asbench", "asb", "agentdojo"] as const) {
          const id = `${runIdFor({ name }, bench, model, v)}.shard-9999-of-9999`
          const problem = runIdProblem(id)
          if (problem !== null) {
            return yield* f.child("models").at(i, model).fail(`model '${model}' with variant ${v.name} gives a run id outside the grammar: ${problem}`)
          }
        }
      }
    }
    return {
      file: opts.file,
      name,
      run_dir: yield* f.get("run_dir", D.rootPath, path.resolve(root, "runs", name)),
      proxy_url: yield* f.get("proxy_url", httpUrl, defaultProxyUrl(settings)),
      models: modelList,
      judges,
      arms,
      variants,
      agent_safetybench: yield* f.get("agent_safetybench", agentSafetybench, { ...AGENT_SAFETYBENCH_DEFAULTS, split: null }),
      asb: yield* f.get("asb", asb, ASB_DEFAULTS),
      agentdojo: yield* agentdojoSection(root)(f.child("agentdojo"))
    }
  })

/** Reads, expands and decodes an experiment file against loaded settings. */
export const loadExperiment = (file: string, settings: Settings, env?: Env): Effect.Effect<Experiment, ConfigError> =>
  readYamlFile(file, { what: "experiment file" }).pipe(
    Effect.flatMap((raw) => decodeExperiment(raw, { file, settings, ...(env ? { env } : {}) }))
  )
