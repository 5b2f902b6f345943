/**
 * Scenario files (`scenarios/*.yaml`, schema in docs/scenarios.md): types, decoder, loader.
 *
 * Every error names the file and the key path (`scenarios[2].checks[0].must_precede.key: …`).
 * Unknown keys are rejected everywhere except inside values that are data (JSON schemas, state,
 * results, `equals`). Relative paths (the prompt file) are resolved against the scenario file's
 * directory. A file is hashed from the exact bytes that were decoded.
 */
import { isObject } from "../domain/is-object.js"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Either } from "effect"
import * as D from "../config/decode.js"
import { ConfigError } from "../config/errors.js"
import { isPlainObject } from "../config/expand.js"
import { parseYaml } from "../config/yaml-file.js"
import { sha256Hex } from "../domain/audit-chain.js"
import { type Check, type CheckSpec, describeCheck, type Selector } from "./checks.js"
import { type Condition, parsePath, type Path, templatePaths } from "./path.js"
import type { Rule, ToolSpec, Update, UpdateOp } from "./sandbox.js"
import type { Message } from "./trajectory.js"

export interface PromptRef {
  /** absolute */
  readonly file: string
  readonly version: string | null
}

export interface Scenario {
  readonly id: string
  readonly description: string
  readonly trials: number
  /** the initial sandbox state (the file's `state` with the scenario's deep-merged over it) */
  readonly state: Readonly<Record<string, unknown>>
  /** the conversation after the system prompt */
  readonly conversation: ReadonlyArray<Message>
  readonly checks: ReadonlyArray<Check>
}

export interface ScenarioFile {
  /** absolute */
  readonly file: string
  readonly sha256: string
  readonly name: string
  readonly prompt: PromptRef | null
  readonly max_rounds: number | null
  /** extra top-level request fields (`temperature`, `max_tokens`, …) */
  readonly request: Readonly<Record<string, unknown>>
  readonly tools: ReadonlyArray<ToolSpec>
  readonly scenarios: ReadonlyArray<Scenario>
}

// ---------------------------------------------------------------------------------------------
// decoders

type Result<A> = Either.Either<A, ConfigError>

const pathOf: D.Decoder<Path> = (n) =>
  Either.flatMap(D.nonEmptyString(n), (s) => {
    const p = parsePath(s)
    return typeof p === "string" ? n.fail(p) : Either.right(p)
  })

/** Any data value whose `{{ … }}` templates are valid paths. */
const template: D.Decoder<unknown> = (n) => {
  for (const t of templatePaths(n.value)) {
    const p = parsePath(t)
    if (typeof p === "string") return n.fail(`template {{ ${t} }}: ${p}`)
  }
  return Either.right(n.value)
}

const regexOf = (n: D.Node, source: string, flags: string): Result<{ readonly source: string; readonly flags: string }> => {
  try {
    new RegExp(source, flags)
    return Either.right({ source, flags })
  } catch (e) {
    return n.fail(`not a valid regular expression: ${e instanceof Error ? e.message : String(e)}`)
  }
}

const CONDITION_PREDICATES = ["equals", "one_of", "regex", "range", "exists"] as const

/** The predicates of a condition, read from `f` (shared by conditions and `args_match`). */
const conditionFrom = (f: D.Fields, p: Path): Result<Condition> =>
  Either.gen(function*() {
    // `equals: null` is a real test (the value is null); only a missing key means "no equals"
    const hasEquals = Object.hasOwn(isObject(f.node.value) ? f.node.value : {}, "equals")
    if (!hasEquals && CONDITION_PREDICATES.every((k) => f.child(k).isMissing)) {
      return yield* f.node.fail(`needs one of ${CONDITION_PREDICATES.join(", ")}`)
    }
    const flags = yield* f.get("flags", D.string, "")
    const regexSource = yield* f.get("regex", D.string, null)
    const rangeNode = f.child("range")
    let range: Condition["range"] | undefined
    if (!rangeNode.isMissing) {
      const r = yield* D.fields(rangeNode, ["min", "max"])
      const bound = (k: string) => {
        const b = r.child(k)
        if (b.isMissing) return Either.right(undefined)
        return typeof b.value === "number" || (typeof b.value === "string" && templatePaths(b.value).length > 0)
          ? template(b)
          : b.fail("expected a number or a {{ path }} template")
      }
      const min = yield* bound("min")
      const max = yield* bound("max")
      if (min === undefined && max === undefined) return yield* rangeNode.fail("needs min or max")
      range = { ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) }
    }
    const equals = hasEquals ? yield* template(f.child("equals")) : undefined
    const oneOf = yield* f.get("one_of", D.list(template), null)
    const exists = yield* f.get("exists", D.boolean, null)
    const regex = regexSource === null ? null : yield* regexOf(f.child("regex"), regexSource, flags)
    return {
      path: p,
      ...(hasEquals ? { equals: equals ?? null } : {}),
      ...(oneOf !== null ? { one_of: oneOf } : {}),
      ...(regex !== null ? { regex } : {}),
      ...(range !== undefined ? { range } : {}),
      ...(exists !== null ? { exists } : {})
    }
  })

const CONDITION_KEYS = ["path", ...CONDITION_PREDICATES, "flags"]

const condition: D.Decoder<Condition> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, CONDITION_KEYS)
    return yield* conditionFrom(f, yield* f.get("path", pathOf))
  })

const selector: D.Decoder<Selector> = (n) => {
  if (typeof n.value === "string") return Either.map(D.nonEmptyString(n), (tool) => ({ tool, where: [] }))
  return Either.gen(function*() {
    const f = yield* D.fields(n, ["tool", "where"])
    return { tool: yield* f.get("tool", D.nonEmptyString), where: yield* f.get("where", D.list(condition), []) }
  })
}

/** `must_call` / `must_not_call`: a tool name, or `{tool, where?, min?}`. */
const callSelector = (withMin: boolean): D.Decoder<{ readonly call: Selector; readonly min: number }> => (n) => {
  if (typeof n.value === "string") return Either.map(D.nonEmptyString(n), (tool) => ({ call: { tool, where: [] }, min: 1 }))
  return Either.gen(function*() {
    const f = yield* D.fields(n, withMin ? ["tool", "where", "min"] : ["tool", "where"])
    return {
      call: { tool: yield* f.get("tool", D.nonEmptyString), where: yield* f.get("where", D.list(condition), []) },
      min: withMin ? yield* f.get("min", D.number({ integer: true, min: 1 }), 1) : 1
    }
  })
}

const CHECK_KINDS = ["must_call", "must_not_call", "must_precede", "max_total", "args_match", "final_text_matches"] as const

const checkSpec = (kind: (typeof CHECK_KINDS)[number], n: D.Node): Result<CheckSpec> =>
  Either.gen(function*() {
    switch (kind) {
      case "must_call": {
        const s = yield* callSelector(true)(n)
        return { kind, call: s.call, min: s.min }
      }
      case "must_not_call":
        return { kind, call: (yield* callSelector(false)(n)).call }
      case "must_precede": {
        const f = yield* D.fields(n, ["first", "then", "key", "separate_rounds"])
        return {
          kind,
          first: yield* f.get("first", selector),
          then: yield* f.get("then", selector),
          key: yield* f.get("key", pathOf, null),
          separate_rounds: yield* f.get("separate_rounds", D.boolean, false)
        }
      }
      case "max_total": {
        const f = yield* D.fields(n, ["tool", "arg", "group_by", "max"])
        return {
          kind,
          call: yield* f.get("tool", selector),
          arg: yield* f.get("arg", pathOf),
          group_by: yield* f.get("group_by", pathOf, null),
          max: yield* f.get("max", D.number())
        }
      }
      case "args_match": {
        const f = yield* D.fields(n, ["tool", ...CONDITION_KEYS])
        const call = yield* f.get("tool", selector)
        return { kind, call, condition: yield* conditionFrom(f, yield* f.get("path", pathOf)) }
      }
      case "final_text_matches": {
        if (typeof n.value === "string") return { kind, regex: yield* regexOf(n, n.value, "") }
        const f = yield* D.fields(n, ["regex", "flags"])
        return { kind, regex: yield* regexOf(f.child("regex"), yield* f.get("regex", D.string), yield* f.get("flags", D.string, "")) }
      }
    }
  })

const check: D.Decoder<Check> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, [...CHECK_KINDS, "id", "why"])
    const kinds = CHECK_KINDS.filter((k) => !f.child(k).isMissing)
    const [kind] = kinds
    if (kind === undefined || kinds.length > 1) return yield* n.fail(`needs exactly one of ${CHECK_KINDS.join(", ")}`)
    const spec = yield* checkSpec(kind, f.child(kind))
    return { id: yield* f.get("id", D.nonEmptyString, describeCheck(spec)), why: yield* f.get("why", D.string, null), spec }
  })

const message: D.Decoder<Message> = (n) => {
  if (typeof n.value === "string") return Either.right({ role: "user", content: n.value })
  return Either.gen(function*() {
    const f = yield* D.fields(n, ["role", "content"])
    return { role: yield* f.get("role", D.literal("user", "assistant", "system")), content: yield* f.get("content", D.string) }
  })
}

const dataMapping: D.Decoder<Readonly<Record<string, unknown>>> = (n) => (n.isMissing ? Either.right({}) : D.mapping(n))

const statePath: D.Decoder<Path> = (n) =>
  Either.flatMap(pathOf(n), (p) => {
    const head = p.segments[0]
    return head?._tag === "key" && head.key === "state" && p.segments.length > 1 ? Either.right(p) : n.fail("must be a path under state (e.g. state.orders[args.order_id].refunded)")
  })

const updates = (f: D.Fields): Result<ReadonlyArray<Update>> =>
  Either.gen(function*() {
    const out: Array<Update> = []
    for (const op of ["set", "add", "subtract", "append"] as const satisfies ReadonlyArray<UpdateOp>) {
      const node = f.child(op)
      if (node.isMissing) continue
      const m = yield* D.mapping(node)
      for (const [k, v] of Object.entries(m)) {
        const child = node.child(k, v)
        out.push({ op, path: yield* statePath(new D.Node(child.ctx, child.path, k)), value: yield* template(child) })
      }
    }
    return out
  })

const rule: D.Decoder<Rule> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, ["when", "set", "add", "subtract", "append", "result"])
    if (f.child("result").value === undefined) return yield* n.fail("result: is required")
    return { when: yield* f.get("when", D.list(condition), []), updates: yield* updates(f), result: yield* template(f.child("result")) }
  })

const EMPTY_SCHEMA = { type: "object", properties: {} }

const tool: D.Decoder<ToolSpec> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, ["name", "description", "parameters", "result", "rules"])
    const hasResult = f.child("result").value !== undefined
    const rules = yield* f.get("rules", D.list(rule), [])
    if (hasResult === (rules.length > 0)) return yield* n.fail("needs either result (a fixed answer) or rules (a state machine)")
    return {
      name: yield* f.get("name", D.nonEmptyString),
      description: yield* f.get("description", D.string, ""),
      parameters: yield* f.get("parameters", D.mapping, EMPTY_SCHEMA),
      result: hasResult ? yield* template(f.child("result")) : null,
      rules
    }
  })

/** Objects merge key by key; anything else in `over` replaces. */
export const deepMerge = (base: unknown, over: unknown): unknown => {
  if (!isPlainObject(base) || !isPlainObject(over)) return over
  const out: Record<string, unknown> = { ...base }
  for (const [k, v] of Object.entries(over)) out[k] = Object.hasOwn(out, k) ? deepMerge(out[k], v) : v
  return out
}

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/

const scenario = (baseState: Readonly<Record<string, unknown>>, trials: number): D.Decoder<Scenario> => (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, ["id", "description", "trials", "state", "conversation", "checks"])
    const id = yield* f.get("id", D.nonEmptyString)
    if (!ID.test(id)) return yield* f.child("id").fail("use letters, digits, '_', '.', '-'")
    const conversation = yield* f.get("conversation", D.list(message))
    if (!conversation.some((m) => m.role === "user")) return yield* f.child("conversation").fail("needs at least one user message")
    const checks = yield* f.get("checks", D.list(check))
    if (checks.length === 0) return yield* f.child("checks").fail("needs at least one check")
    const seen = new Set<string>()
    for (const [i, c] of checks.entries()) {
      if (seen.has(c.id)) return yield* f.child("checks").at(i, c.id).fail(`two checks are named ${JSON.stringify(c.id)}; give one an id`)
      seen.add(c.id)
    }
    const state = deepMerge(baseState, yield* f.get("state", dataMapping, {}))
    return {
      id,
      description: yield* f.get("description", D.string, ""),
      trials: yield* f.get("trials", D.number({ integer: true, min: 1 }), trials),
      state: isPlainObject(state) ? state : {},
      conversation,
      checks
    }
  })

const FILE_KEYS = ["name", "prompt", "trials", "max_rounds", "request", "state", "tools", "scenarios"]

const promptRef: D.Decoder<PromptRef> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, ["file", "version"])
    return { file: yield* f.get("file", D.existingFile("prompt file")), version: yield* f.get("version", D.string, null) }
  })

/** Decode a parsed scenario file (`file` absolute, `sha256` of its bytes). */
export const decodeScenarioFile = (file: string, sha256: string, doc: unknown): Result<ScenarioFile> =>
  Either.gen(function*() {
    const root = new D.Node({ file, root: path.dirname(file), expanded: new Set() }, "", doc)
    const f = yield* D.fields(root, FILE_KEYS)
    const trials = yield* f.get("trials", D.number({ integer: true, min: 1 }), 1)
    const state = yield* f.get("state", dataMapping, {})
    const tools = yield* f.get("tools", D.list(tool))
    const names = new Set<string>()
    for (const [i, t] of tools.entries()) {
      if (names.has(t.name)) return yield* f.child("tools").at(i, t.name).fail(`duplicate tool ${t.name}`)
      names.add(t.name)
    }
    const scenarios = yield* f.get("scenarios", D.list(scenario(state, trials)))
    if (scenarios.length === 0) return yield* f.child("scenarios").fail("needs at least one scenario")
    const ids = new Set<string>()
    for (const [i, s] of scenarios.entries()) {
      if (ids.has(s.id)) return yield* f.child("scenarios").at(i, s.id).fail(`duplicate scenario id ${s.id}`)
      ids.add(s.id)
    }
    return {
      file,
      sha256,
      name: yield* f.get("name", D.nonEmptyString, path.basename(file).replace(/\.ya?ml$/, "")),
      prompt: yield* f.get("prompt", promptRef, null),
      max_rounds: yield* f.get("max_rounds", D.number({ integer: true, min: 1 }), null),
      request: yield* f.get("request", dataMapping, {}),
      tools,
      scenarios
    }
  })

/** Read, hash and decode a scenario file. */
export const loadScenarioFile = (file: string): Effect.Effect<ScenarioFile, ConfigError> => {
  const abs = path.resolve(file)
  return Effect.try({
    try: () => fs.readFileSync(abs),
    catch: (e) => {
      const code = typeof e === "object" && e !== null && "code" in e ? e.code : undefined
      return new ConfigError({ file, path: "", reason: code === "ENOENT" ? "scenario file not found" : `cannot read: ${e instanceof Error ? e.message : String(e)}` })
    }
  }).pipe(
    Effect.flatMap((bytes) =>
      Either.flatMap(parseYaml(bytes.toString("utf8"), file), (doc) => decodeScenarioFile(abs, sha256Hex(bytes), doc)).pipe(
        Either.mapLeft((e) => new ConfigError({ file, path: e.path, reason: e.reason }))
      )
    )
  )
}
