/**
 * The sandbox the runner executes tool calls against, pure: nothing here touches the world.
 *
 * A tool answers either a fixed `result`, or by the first of its `rules` whose `when` conditions
 * hold. A rule may change the sandbox state (`set`, `add`, `subtract`, `append`, in that order)
 * and answers its `result`, expanded after the updates (so it can show the new state).
 * Conditions, updates and results are evaluated against `{args, state, call}`:
 * - `args`: the call's arguments; `state`: the scenario's state (orders, balances, …), fresh per trial;
 * - `call`: `{id, index, round, name}` of the call (e.g. for ids in results).
 * Templates `{{ path }}` in values read that root, e.g. `"{{ state.orders[args.order_id].total }}"`.
 *
 * Errors come back as results the model sees, never as failures of the run:
 * unknown tool, arguments that are not a JSON object, a missing required argument, no matching rule.
 */
import { isObject } from "../domain/is-object.js"
import { asNumber, type Condition, conditionProblem, expand, getPath, type Path, setPath } from "./path.js"

export type UpdateOp = "set" | "add" | "subtract" | "append"

export interface Update {
  readonly op: UpdateOp
  /** under `state` */
  readonly path: Path
  /** a template value */
  readonly value: unknown
}

export interface Rule {
  readonly when: ReadonlyArray<Condition>
  readonly updates: ReadonlyArray<Update>
  readonly result: unknown
}

export interface ToolSpec {
  readonly name: string
  readonly description: string
  /** JSON schema of the arguments (sent to the model as is) */
  readonly parameters: Readonly<Record<string, unknown>>
  /** a fixed answer (a template), or null when `rules` decide */
  readonly result: unknown
  readonly rules: ReadonlyArray<Rule>
}

export interface SandboxCall {
  readonly id: string
  readonly index: number
  readonly round: number
  readonly name: string
  /** parsed arguments, or the raw text when they were not JSON */
  readonly arguments: unknown
}

/** A deep copy of JSON data (the initial state is never mutated). */
export const cloneJson = <A>(v: A): A => JSON.parse(JSON.stringify(v)) as A

/** The tools as the OpenAI `tools` request field. */
export const openAiTools = (tools: ReadonlyArray<ToolSpec>): Array<Record<string, unknown>> =>
  tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } }))

const requiredOf = (schema: Readonly<Record<string, unknown>>): Array<string> =>
  Array.isArray(schema.required) ? schema.required.filter((k): k is string => typeof k === "string") : []

const applyUpdate = (u: Update, root: Record<string, unknown>): string | null => {
  const value = expand(u.value, root)
  if (u.op === "set") return setPath(u.path, root, value)
  const current = getPath(u.path, root)
  if (u.op === "add" || u.op === "subtract") {
    const a = current === undefined || current === null ? 0 : asNumber(current)
    const b = asNumber(value)
    if (a === undefined || b === undefined) return `cannot ${u.op} ${JSON.stringify(value)} ${u.op === "add" ? "to" : "from"} ${u.path.text} (${JSON.stringify(current) ?? "missing"})`
    return setPath(u.path, root, u.op === "add" ? a + b : a - b)
  }
  if (current !== undefined && current !== null && !Array.isArray(current)) return `cannot append to ${u.path.text}: not a list`
  return setPath(u.path, root, [...(Array.isArray(current) ? current : []), value])
}

/**
 * Execute one call against the state (mutated in place by rule updates) and return the result
 * the model will see. A rule's updates are all-or-nothing: when one fails, the state is restored
 * and the result is an error.
 */
export const executeCall = (tools: ReadonlyArray<ToolSpec>, state: Record<string, unknown>, call: SandboxCall): unknown => {
  const tool = tools.find((t) => t.name === call.name)
  if (tool === undefined) return { error: `unknown tool: ${call.name}` }
  if (!isObject(call.arguments)) return { error: "the arguments are not a JSON object" }
  const missing = requiredOf(tool.parameters).filter((k) => !Object.hasOwn(call.arguments as Record<string, unknown>, k))
  if (missing.length > 0) return { error: `missing required argument(s): ${missing.join(", ")}` }
  const root: Record<string, unknown> = {
    args: call.arguments,
    state,
    call: { id: call.id, index: call.index, round: call.round, name: call.name }
  }
  if (tool.rules.length === 0) return expand(tool.result, root)
  const rule = tool.rules.find((r) => r.when.every((c) => conditionProblem(c, root) === null))
  if (rule === undefined) return { error: `no sandbox rule of ${tool.name} matches these arguments` }
  const before = cloneJson(state)
  for (const u of rule.updates) {
    const problem = applyUpdate(u, root)
    if (problem !== null) {
      for (const k of Object.keys(state)) delete state[k]
      Object.assign(state, before)
      return { error: `sandbox: ${problem}` }
    }
  }
  return expand(rule.result, root)
}

/** The tool message content for a result: strings as they are, anything else as JSON. */
export const resultContent = (result: unknown): string => (typeof result === "string" ? result : JSON.stringify(result))
