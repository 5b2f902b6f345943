/**
 * The `agentdojo` section of experiment files (docs/agentdojo.md): which AgentDojo suites, tasks,
 * attacks and reference defenses `vetobench run --bench agentdojo` runs, and with which Python.
 *
 * Checked when the file is read: the keys, the suite, attack, defense and benchmark-version names
 * (AgentDojo 0.1.35's, the pinned release), and task ids as names. Whether a task id exists in its
 * suite is checked against the installed AgentDojo when the run starts (the launcher's `plan`).
 *
 * Task subsets: a mapping `suite → [ids]` (suites not named run all their tasks) or a flat list of ids,
 * which applies to every suite run. Defenses run as extra variants on the baseline arm, named
 * `defense-<name>` (`defenseVariants`).
 */
import { Either } from "effect"
import * as path from "node:path"
import { didYouMeanClause } from "../domain/suggest.js"
import * as D from "./decode.js"

/** AgentDojo's suites (`get_suites`), in AgentDojo's order. */
export const AGENTDOJO_SUITES = ["workspace", "travel", "banking", "slack"] as const

/** AgentDojo 0.1.35's benchmark versions (`load_suites._SUITES`), oldest first. */
export const AGENTDOJO_VERSIONS = ["v1", "v1.1", "v1.1.1", "v1.1.2", "v1.2", "v1.2.1", "v1.2.2"] as const

/** AgentDojo 0.1.35's registered attacks (`attack_registry.ATTACKS`). */
export const AGENTDOJO_ATTACKS = [
  "captcha_dos",
  "direct",
  "dos",
  "felony_dos",
  "ignore_previous",
  "important_instructions",
  "important_instructions_no_model_name",
  "important_instructions_no_names",
  "important_instructions_no_user_name",
  "important_instructions_wrong_model_name",
  "important_instructions_wrong_user_name",
  "injecagent",
  "offensive_email_dos",
  "swearwords_dos",
  "system_message",
  "tool_knowledge"
] as const

/** AgentDojo's reference defenses (`agent_pipeline.DEFENSES`); `transformers_pi_detector` needs the torch extra. */
export const AGENTDOJO_DEFENSES = ["tool_filter", "transformers_pi_detector", "spotlighting_with_delimiting", "repeat_user_prompt"] as const

export type AgentdojoDefense = (typeof AGENTDOJO_DEFENSES)[number]

/** Task ids per suite; `all` = every task of the suite. */
export type TaskSelection = { readonly kind: "all" } | { readonly kind: "flat"; readonly ids: ReadonlyArray<string> } | {
  readonly kind: "per-suite"
  readonly ids: Readonly<Record<string, ReadonlyArray<string>>>
}

export interface AgentdojoExperiment {
  /** false when the section is absent */
  readonly enabled: boolean
  readonly suites: ReadonlyArray<string>
  /** null: the installed package's latest */
  readonly benchmark_version: string | null
  readonly attacks: ReadonlyArray<string>
  readonly user_tasks: TaskSelection
  readonly injection_tasks: TaskSelection
  readonly defenses: ReadonlyArray<AgentdojoDefense>
  /** parallel episodes (threads of the launcher) */
  readonly workers: number
  /** the scripted oracle agent served by the fake vLLM (GPU-free tests and demos) */
  readonly oracle: boolean
  /** absolute path of the Python of AgentDojo's venv */
  readonly python: string
  /** the AgentDojo `MODEL_NAMES` key attacks address the model as (default `local`) */
  readonly attack_model_name: string
  /** seconds per model request (the launcher's OpenAI client timeout) */
  readonly timeout_s: number
}

/** `.venv-agentdojo/bin/python`, what scripts/setup_agentdojo_env.sh makes. */
export const DEFAULT_AGENTDOJO_VENV = ".venv-agentdojo"

/** The section as it is when the experiment file has none (nothing runs). */
export const agentdojoOff = (root: string): AgentdojoExperiment => ({
  enabled: false,
  suites: [...AGENTDOJO_SUITES],
  benchmark_version: null,
  attacks: ["important_instructions"],
  user_tasks: { kind: "all" },
  injection_tasks: { kind: "all" },
  defenses: [],
  workers: 4,
  oracle: false,
  python: path.resolve(root, DEFAULT_AGENTDOJO_VENV, "bin", "python"),
  attack_model_name: "local",
  timeout_s: 600
})

const known = <L extends ReadonlyArray<string>>(what: string, names: L): D.Decoder<L[number]> => (n) =>
  Either.flatMap(D.nonEmptyString(n), (s) => {
    if ((names as ReadonlyArray<string>).includes(s)) return Either.right(s as L[number])
    const clause = didYouMeanClause(s, names)
    return n.fail(`AgentDojo has no ${what} '${s}'${clause === "" ? "" : `; ${clause}`} (${what}s: ${names.join(", ")})`)
  })

const distinct = <A extends string>(item: D.Decoder<A>, what: string, allowEmpty = false): D.Decoder<ReadonlyArray<A>> => (n) =>
  Either.flatMap(D.list(item)(n), (xs) => {
    if (xs.length === 0 && !allowEmpty) return n.fail("must list at least one entry")
    const first = xs.findIndex((x, i) => xs.indexOf(x) !== i)
    return first >= 0 ? n.at(first, xs[first]).fail(`duplicate ${what} '${xs[first]}'`) : Either.right(xs)
  })

/** a task id as AgentDojo names them (`user_task_3`, `injection_task_0`) */
const taskId = (prefix: string): D.Decoder<string> => (n) =>
  Either.flatMap(D.nonEmptyString(n), (s) =>
    new RegExp(`^${prefix}_\\d+$`).test(s) ? Either.right(s) : n.fail(`expected an AgentDojo ${prefix.replace("_", " ")} id such as '${prefix}_0', got ${JSON.stringify(s)}`))

const taskSelection = (prefix: string, suites: ReadonlyArray<string>): D.Decoder<TaskSelection> => (n) => {
  if (Array.isArray(n.value)) return Either.map(distinct(taskId(prefix), "task")(n), (ids) => ({ kind: "flat", ids }))
  return Either.flatMap(D.record(distinct(taskId(prefix), "task"))(n), (ids) => {
    const stray = Object.keys(ids).find((s) => !suites.includes(s))
    return stray === undefined
      ? Either.right({ kind: "per-suite", ids })
      : n.child(stray, ids[stray]).fail(`suite '${stray}' is not among the suites run (${suites.join(", ")})`)
  })
}

/**
 * AgentDojo's Python: a path whose file name is a Python interpreter's (`python`, `python3`,
 * `python3.11`, `python.exe`), since the launcher is its first argument: `/bin/sh` or `/bin/rm`
 * there would run or delete `launch.py` instead of importing AgentDojo.
 */
const pythonPath: D.Decoder<string> = (n) =>
  Either.flatMap(D.rootPath(n), (p) =>
    /^python(\d+(\.\d+)*)?(\.exe)?$/.test(path.basename(p))
      ? Either.right(p)
      : n.fail(`expected the Python of AgentDojo's venv (a file named python, python3 or python3.X, such as .venv-agentdojo/bin/python), got ${JSON.stringify(p)}`))

const KEYS = [
  "enabled",
  "suites",
  "benchmark_version",
  "attacks",
  "user_tasks",
  "injection_tasks",
  "defenses",
  "workers",
  "oracle",
  "python",
  "attack_model_name",
  "timeout_s"
]

/** The `agentdojo` section (present: enabled unless it says `enabled: false`). */
export const agentdojoSection = (root: string): D.Decoder<AgentdojoExperiment> => (n) =>
  Either.gen(function*() {
    const d = agentdojoOff(root)
    if (n.isMissing) return d
    const f = yield* D.fields(n, KEYS)
    const suites = yield* f.get("suites", distinct(known("suite", AGENTDOJO_SUITES), "suite"), d.suites)
    return {
      enabled: yield* f.get("enabled", D.boolean, true),
      suites,
      benchmark_version: yield* f.get("benchmark_version", known("benchmark version", AGENTDOJO_VERSIONS), d.benchmark_version),
      attacks: yield* f.get("attacks", distinct(known("attack", AGENTDOJO_ATTACKS), "attack", true), d.attacks),
      user_tasks: yield* f.get("user_tasks", taskSelection("user_task", suites), d.user_tasks),
      injection_tasks: yield* f.get("injection_tasks", taskSelection("injection_task", suites), d.injection_tasks),
      defenses: yield* f.get("defenses", distinct(known("defense", AGENTDOJO_DEFENSES), "defense", true), d.defenses),
      workers: yield* f.get("workers", D.number({ integer: true, min: 1 }), d.workers),
      oracle: yield* f.get("oracle", D.boolean, d.oracle),
      python: yield* f.get("python", pythonPath, d.python),
      attack_model_name: yield* f.get("attack_model_name", D.nonEmptyString, d.attack_model_name),
      timeout_s: yield* f.get("timeout_s", D.number({ min: 1 }), d.timeout_s)
    }
  })

/** The selection as the launcher reads it (`--user-tasks` / `--injection-tasks`): suite → ids, or null for all. */
export const selectionJson = (s: TaskSelection, suites: ReadonlyArray<string>): string | null =>
  s.kind === "all" ? null : JSON.stringify(s.kind === "flat" ? Object.fromEntries(suites.map((suite) => [suite, s.ids])) : s.ids)

/** A variant of an AgentDojo run: an experiment variant, or a reference defense on the baseline arm. */
export interface AgentdojoVariant {
  readonly name: string
  readonly arm: "baseline" | "passthrough" | "shadow" | "enforce"
  readonly judge: string | null
  readonly defense: AgentdojoDefense | null
}

/** `defense-<name>` */
export const defenseVariantName = (d: string): string => `defense-${d}`

/** The defense variants of a section (baseline arm, no judge). */
export const defenseVariants = (s: Pick<AgentdojoExperiment, "defenses">): ReadonlyArray<AgentdojoVariant> =>
  s.defenses.map((defense) => ({ name: defenseVariantName(defense), arm: "baseline", judge: null, defense }))
