/**
 * ASB's data files and how a run is cut into shards (reference §8.2, benchmarks.md §3.4, §5.2).
 *
 * - Attacker tools (`<asb>/data/`): `all` → `all_attack_tools.jsonl` (400 tools, 40 per agent),
 *   `agg` → `all_attack_tools_aggressive.jsonl`, `non-agg` → `all_attack_tools_non_aggressive.jsonl`
 *   (200 each). Fields used: `Attacker Tool` (the name), `Corresponding Agent`, `Aggressive` (the
 *   strings "True"/"False"), `Attack goal`. Lines are kept verbatim, so the shard files hold exactly
 *   the benchmark's rows.
 * - Normal tools: `all_normal_tools.jsonl`, `Tool Name` (20, two per agent). Tasks:
 *   `agent_task.jsonl`, `{agent_name, agent_path, tasks}` (10 agents, 5 tasks each, 6 for
 *   academic_search_agent).
 * - Methods → `main_attacker.py` flags: direct → `--direct_prompt_injection`, observation →
 *   `--observation_prompt_injection`, mixed → both, clean → `--clean`. `mixed_attack` is DPI + OPI
 *   only: ASB's own `config/mixed.yml` adds memory poisoning (`--read_db`), which needs a populated
 *   Chroma store and an embeddings endpoint; vetobench keeps the memory store off (`--database`
 *   names a directory that never exists), so its mixed numbers are not the paper's DPI+OPI+MP.
 * - Selection: only the tools of the experiment's `asb.agents` (`Corresponding Agent`; none listed =
 *   every agent: main_attacker runs an agent only for its attacker tools); then `clean` keeps one
 *   tool per agent (main_attacker still loops over attacker tools, so more would repeat identical
 *   tasks) and runs at least 5 tasks per agent; otherwise `tools_per_agent` k keeps the first k
 *   tools of each agent (file order); none = all.
 * - Shards: S = clamp(shards, 1, #tools); shard i gets tools i, i+S, i+2S, … (round-robin).
 * - Episodes of a tool: min(task_num, tasks of its agent), one CSV row each (main_attacker takes
 *   the first task_num tasks of each agent listed in the tasks file).
 */
import { Data, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { AsbExperiment, AsbMethod } from "../../config/experiment.js"
import { isObject } from "../../domain/is-object.js"

export class AsbDataError extends Data.TaggedError("AsbDataError")<{ readonly file: string; readonly reason: string }> {
  override get message(): string {
    return `${this.file}: ${this.reason}`
  }
}

export type AttackToolSet = AsbExperiment["attack_tools"]

export const ATTACK_TOOL_FILES: Readonly<Record<AttackToolSet, string>> = {
  all: "all_attack_tools.jsonl",
  agg: "all_attack_tools_aggressive.jsonl",
  "non-agg": "all_attack_tools_non_aggressive.jsonl"
}
export const NORMAL_TOOLS_FILE = "all_normal_tools.jsonl"
export const TASKS_FILE = "agent_task.jsonl"

export const METHOD_FLAGS: Readonly<Record<AsbMethod, ReadonlyArray<string>>> = {
  direct_prompt_injection: ["--direct_prompt_injection"],
  observation_prompt_injection: ["--observation_prompt_injection"],
  mixed_attack: ["--direct_prompt_injection", "--observation_prompt_injection"],
  clean: ["--clean"]
}

/** The flags of a method, or the reference's error text for an unknown one. */
export const methodFlags = (method: string): ReadonlyArray<string> | { readonly error: string } =>
  Object.hasOwn(METHOD_FLAGS, method)
    ? METHOD_FLAGS[method as AsbMethod]
    : { error: `unknown ASB method '${method}'; expected one of [${Object.keys(METHOD_FLAGS).sort().join(", ")}]` }

/** One row of an attacker tool file. */
export interface AttackerTool {
  /** `Attacker Tool` */
  readonly name: string
  /** `Corresponding Agent` */
  readonly agent: string
  /** `Aggressive == "True"` */
  readonly aggressive: boolean
  /** `Attack goal` */
  readonly goal: string
  /** the line as in the file (written to shard files unchanged) */
  readonly line: string
}

export interface NormalTool {
  readonly name: string
  readonly agent: string
}

export interface AgentTasks {
  /** `agent_name` (`system_admin_agent`) */
  readonly name: string
  /** `agent_path` (`example/system_admin_agent`: the CSV's `Agent Name`) */
  readonly path: string
  readonly tasks: ReadonlyArray<string>
}

const reasonOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** The non-blank lines of a JSONL file, each with its parsed object. */
const readJsonlObjects = (file: string): Effect.Effect<ReadonlyArray<{ readonly line: string; readonly value: Record<string, unknown> }>, AsbDataError> =>
  Effect.try({
    try: () => fs.readFileSync(file, "utf8"),
    catch: (e) => {
      const code = isObject(e) ? e.code : undefined
      return new AsbDataError({ file, reason: code === "ENOENT" ? "not found" : `cannot read: ${reasonOf(e)}` })
    }
  }).pipe(
    Effect.flatMap((text) => {
      const out: Array<{ line: string; value: Record<string, unknown> }> = []
      for (const [i, raw] of text.split("\n").entries()) {
        const line = raw.replace(/\r$/, "")
        if (line.trim() === "") continue
        let value: unknown
        try {
          value = JSON.parse(line)
        } catch (e) {
          return Effect.fail(new AsbDataError({ file, reason: `line ${i + 1} is not JSON: ${reasonOf(e)}` }))
        }
        if (!isObject(value)) return Effect.fail(new AsbDataError({ file, reason: `line ${i + 1} is not a JSON object` }))
        out.push({ line, value })
      }
      return Effect.succeed(out)
    })
  )

const text = (v: unknown): string => (typeof v === "string" ? v : v === undefined || v === null ? "" : String(v))

export const attackToolsFile = (asbDir: string, set: AttackToolSet): string => path.join(asbDir, "data", ATTACK_TOOL_FILES[set])

/** The attacker tools of a file, in file order; every row needs a name and an agent. */
export const readAttackerTools = (file: string): Effect.Effect<ReadonlyArray<AttackerTool>, AsbDataError> =>
  Effect.flatMap(readJsonlObjects(file), (rows) => {
    const out: Array<AttackerTool> = []
    for (const [i, { line, value }] of rows.entries()) {
      const name = text(value["Attacker Tool"])
      const agent = text(value["Corresponding Agent"])
      if (name === "" || agent === "") {
        return Effect.fail(new AsbDataError({ file, reason: `row ${i + 1} has no "Attacker Tool" or "Corresponding Agent"` }))
      }
      out.push({ name, agent, aggressive: text(value.Aggressive) === "True", goal: text(value["Attack goal"]), line })
    }
    return Effect.succeed(out)
  })

export const readNormalTools = (file: string): Effect.Effect<ReadonlyArray<NormalTool>, AsbDataError> =>
  Effect.map(readJsonlObjects(file), (rows) =>
    rows.map(({ value }) => ({ name: text(value["Tool Name"]), agent: text(value["Corresponding Agent"]) })).filter((t) => t.name !== "")
  )

export const readTasks = (file: string): Effect.Effect<ReadonlyArray<AgentTasks>, AsbDataError> =>
  Effect.map(readJsonlObjects(file), (rows) =>
    rows.map(({ value }) => ({
      name: text(value.agent_name),
      path: text(value.agent_path),
      tasks: Array.isArray(value.tasks) ? value.tasks.map(text) : []
    }))
  )

/** The first k tools of each agent, in file order. */
export const limitPerAgent = <A extends { readonly agent: string }>(tools: ReadonlyArray<A>, k: number): ReadonlyArray<A> => {
  const seen = new Map<string, number>()
  return tools.filter((t) => {
    const n = seen.get(t.agent) ?? 0
    seen.set(t.agent, n + 1)
    return n < k
  })
}

/** The tools a method runs: one per agent for clean, else the first `tools_per_agent` per agent (null = all). */
export const selectTools = <A extends { readonly agent: string }>(
  tools: ReadonlyArray<A>,
  opts: { readonly method: AsbMethod; readonly toolsPerAgent: number | null }
): ReadonlyArray<A> =>
  opts.method === "clean" ? limitPerAgent(tools, 1) : opts.toolsPerAgent === null ? tools : limitPerAgent(tools, opts.toolsPerAgent)

/** Tasks per agent per tool: clean runs at least 5 (every agent's own tasks: the utility measure). */
export const effectiveTaskNum = (method: AsbMethod, taskNum: number): number => (method === "clean" ? Math.max(taskNum, 5) : taskNum)

/** Round-robin: S = clamp(shards, 1, #items) lists, list i holding items i, i+S, … */
export const shardRoundRobin = <A>(items: ReadonlyArray<A>, shards: number): ReadonlyArray<ReadonlyArray<A>> => {
  const s = Math.max(1, Math.min(Math.floor(shards), items.length))
  return Array.from({ length: s }, (_, i) => items.filter((_x, j) => j % s === i))
}

/** `shard00`, `shard01`, … */
export const shardName = (i: number): string => `shard${String(i).padStart(2, "0")}`

/** Episodes main_attacker runs for one tool: min(task_num, its agent's tasks); 0 for an agent without tasks. */
export const episodesPerTool = (tasks: ReadonlyArray<AgentTasks>, taskNum: number) => {
  const count = new Map(tasks.map((a) => [a.name, a.tasks.length] as const))
  return (tool: { readonly agent: string }): number => Math.min(taskNum, count.get(tool.agent) ?? 0)
}

export interface ShardPlan {
  /** `shardNN` */
  readonly name: string
  readonly tools: ReadonlyArray<AttackerTool>
  /** rows main_attacker writes for this shard */
  readonly episodes: number
}

/** The shards of one attack: selection, round-robin split, expected rows. */
export const planShards = (
  tools: ReadonlyArray<AttackerTool>,
  tasks: ReadonlyArray<AgentTasks>,
  opts: {
    readonly method: AsbMethod
    readonly toolsPerAgent: number | null
    readonly taskNum: number
    readonly shards: number
    /** only these agents' tools; null or absent = every agent */
    readonly agents?: ReadonlyArray<string> | null
  }
): { readonly taskNum: number; readonly shards: ReadonlyArray<ShardPlan> } => {
  const taskNum = effectiveTaskNum(opts.method, opts.taskNum)
  const perTool = episodesPerTool(tasks, taskNum)
  const agents = opts.agents ?? null
  const selected = selectTools(agents === null ? tools : tools.filter((t) => agents.includes(t.agent)), opts)
  const shards = selected.length === 0 ? [] : shardRoundRobin(selected, opts.shards)
  return {
    taskNum,
    shards: shards.map((list, i) => ({ name: shardName(i), tools: list, episodes: list.reduce((n, t) => n + perTool(t), 0) }))
  }
}

/** A shard's tool file: its rows as in the benchmark's file, one per line. */
export const shardToolsText = (tools: ReadonlyArray<AttackerTool>): string => tools.map((t) => `${t.line}\n`).join("")
