/**
 * `kind: plugin` — a third-party judge kind in a plain JavaScript module, loaded at start-up:
 *
 * ```yaml
 * judges:
 *   kw:
 *     kind: plugin
 *     module: ./judges-local/keyword-judge.mjs   # relative to the repo root, or absolute
 *     options: { keywords: [rm -rf] }            # any mapping, handed to the plugin's create()
 * ```
 *
 * The module's default export (or named export `judgeKind`) is `{ kind, version?, create }`;
 * `create(name, options, { root, timeout_s })` returns (or resolves to) a judge
 * `{ model?, version?, cacheable?, rule(call, ctx) }`, and `rule` resolves to
 * `{ decision, category?, reason?, probability?, raw? }`. No Effect in the contract, so a plugin never
 * loads a second copy of `effect`. Everything is checked here: a bad module or export stops
 * start-up (JudgeConfigError at `judges.<name>.module`); a failing rule becomes JudgeError
 * `unavailable`, a malformed answer JudgeError `output-invalid` (the gate then applies fail_policy).
 *
 * The module is loaded with `import(pathToFileURL(abs).href)`: a variable specifier, which esbuild
 * leaves alone, so this works from the bundled CLI too.
 */
import { createHash } from "node:crypto"
import { readFile } from "node:fs/promises"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { Clock, Duration, Effect, Either, ParseResult, Schema } from "effect"
import { Settings } from "../src/config/service.js"
import type { ToolCallView } from "../src/domain/tool-call.js"
import { decided, type JudgeIdentity } from "../src/domain/verdict.js"
import { type Judge, JudgeConfigError, type JudgeContext, JudgeError } from "./Judge.js"
import type { JudgeKind, JudgeKindPlugin } from "./registry.js"
import { decodeSpec, JsonObject, NonEmptyString } from "./spec-schema.js"

// ---------------------------------------------------------------------------------------------
// the plain-JavaScript contract (types for plugin authors who write TypeScript)

/** What `create` gets besides the judge name and its options. */
export interface PluginCreateContext {
  /** absolute repo root (relative paths in the settings file resolve against it) */
  readonly root: string
  /** `proxy.judge_timeout_s`: the gate's deadline for one `rule` call */
  readonly timeout_s: number
}

/** What `rule` gets besides the call: who is asking (never request headers). */
export interface PluginRuleContext {
  readonly requestId: string
  readonly runId: string | null
  readonly episodeId: string | null
  readonly sessionId: string | null
  readonly principal: string | null
  readonly agentModel: string
  /** aborted when the gate stops waiting (deadline); pass it to `fetch` and the like */
  readonly signal: AbortSignal
}

export interface PluginResult {
  readonly decision: "allow" | "deny" | "hold"
  /** default `none` for allow, `other` otherwise */
  readonly category?: string | null
  readonly reason?: string | null
  /** in [0, 1] */
  readonly probability?: number | null
  readonly raw?: string | null
}

export interface PluginJudge {
  /** recorded in every verdict; default null */
  readonly model?: string | null
  /** recorded in every verdict and part of the cache key; default: the module's `version`, else a hash of its file */
  readonly version?: string | null
  /** verdicts may be cached per process (judge name + version + call); default false */
  readonly cacheable?: boolean
  readonly rule: (call: ToolCallView, ctx: PluginRuleContext) => PluginResult | Promise<PluginResult>
}

export interface PluginJudgeKind {
  /** verdicts carry kind `plugin:<kind>` */
  readonly kind: string
  readonly version?: string
  readonly create: (name: string, options: Record<string, unknown>, context: PluginCreateContext) => PluginJudge | Promise<PluginJudge>
}

// ---------------------------------------------------------------------------------------------
// schemas: the judge config and the shapes a plugin hands back

const PluginConfig = Schema.Struct({
  module: NonEmptyString,
  options: Schema.optionalWith(JsonObject, { default: () => ({}) })
})

/** A message that replaces every inner one (so `3` for a string field reads "must be …, got 3"). */
const must = (what: string) => ({
  message: (issue: ParseResult.ParseIssue) => ({ message: `must be ${what}, got ${shown(issue.actual)}`, override: true })
})

const fn = <F>() => Schema.declare((u: unknown): u is F => typeof u === "function").annotations(must("a function"))

const optionalNullable = <A, I>(s: Schema.Schema<A, I>) => Schema.optional(Schema.NullOr(s))

const Text = (what: string) => Schema.String.annotations(must(what))

const KindExport = Schema.Struct({
  kind: Schema.String.pipe(Schema.minLength(1)).annotations(must("a non-empty string")),
  version: Schema.optional(Schema.String.pipe(Schema.minLength(1)).annotations(must("a non-empty string"))),
  create: fn<PluginJudgeKind["create"]>()
})

const JudgeExport = Schema.Struct({
  model: optionalNullable(Text("a string or null")),
  version: optionalNullable(Text("a string or null")),
  cacheable: Schema.optional(Schema.Boolean.annotations(must("true or false"))),
  rule: fn<PluginJudge["rule"]>()
})

const ResultShape = Schema.Struct({
  decision: Schema.Literal("allow", "deny", "hold").annotations(must("allow, deny or hold")),
  category: optionalNullable(Text("a string")),
  reason: optionalNullable(Text("a string")),
  probability: optionalNullable(Schema.Number.pipe(Schema.between(0, 1)).annotations(must("a number between 0 and 1"))),
  raw: optionalNullable(Text("a string"))
})

const isObjectLike = (u: unknown): u is Record<PropertyKey, unknown> => (typeof u === "object" && u !== null) || typeof u === "function"

/**
 * Read `keys` by property access (so methods on a class prototype count), then check them with
 * `schema`. Left = the first problem as `key: message`.
 */
const checkShape = <A, I>(value: Record<PropertyKey, unknown>, keys: ReadonlyArray<string>, schema: Schema.Schema<A, I>): Either.Either<A, string> => {
  const picked: Record<string, unknown> = {}
  for (const k of keys) {
    try {
      picked[k] = value[k]
    } catch (e) {
      return Either.left(`${k}: cannot be read: ${messageOf(e)}`)
    }
  }
  return Either.mapLeft(Schema.decodeUnknownEither(schema, { errors: "first" })(picked), (e) => {
    const [issue] = ParseResult.ArrayFormatter.formatErrorSync(e)
    return issue === undefined ? "invalid" : `${issue.path.map(String).join(".")}: ${issue.message}`
  })
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : typeof e === "string" ? e : safeJson(e))

const safeJson = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

/** A value in an error message: short JSON, or its type. */
const shown = (u: unknown): string =>
  u === undefined ? "undefined" : typeof u === "function" ? "a function" : typeof u === "symbol" ? "a symbol" : clip(safeJson(u), 80)

const describeValue = (u: unknown): string => (u === null ? "null" : Array.isArray(u) ? "an array" : typeof u)

const errnoCode = (e: unknown): string | undefined =>
  typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" ? e.code : undefined

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)} …[truncated]` : s)

// ---------------------------------------------------------------------------------------------
// loading

/** A plugin module, loaded and checked. */
export interface LoadedPlugin {
  /** absolute path of the module file */
  readonly file: string
  /** first 16 hex chars of the sha256 of the file's content */
  readonly hash: string
  /** the exported object, as exported (methods are called on it) */
  readonly exported: PluginJudgeKind
  readonly kind: string
  readonly version: string | null
}

/** Load `module` (resolved against `root`) and check its export; failures name `judges.<judge>.module`. */
export const loadPluginModule = (judge: string, module: string, root: string): Effect.Effect<LoadedPlugin, JudgeConfigError> =>
  Effect.gen(function* () {
    const fail = (reason: string) => new JudgeConfigError({ judge, path: "module", reason })
    const file = path.resolve(root, module)
    const content = yield* Effect.tryPromise({
      try: () => readFile(file),
      catch: (e) => {
        const code = errnoCode(e)
        return fail(
          code === "ENOENT"
            ? `file not found: ${file}${path.isAbsolute(module) ? "" : ` (resolved against the repo root ${root})`}`
            : code === "EISDIR"
              ? `${file} is a directory, not a module file`
              : `cannot read ${file}: ${messageOf(e)}`
        )
      }
    })
    const hash = createHash("sha256").update(content).digest("hex").slice(0, 16)
    const namespace = yield* Effect.tryPromise({
      // a variable specifier: esbuild keeps this a native dynamic import
      try: (): Promise<unknown> => import(pathToFileURL(file).href),
      catch: (e) => fail(`${file} is not a loadable JavaScript module: ${messageOf(e)}`)
    })
    const ns = isObjectLike(namespace) ? namespace : {}
    const exported = ns["default"] !== undefined ? ns["default"] : ns["judgeKind"]
    if (exported === undefined) {
      return yield* fail(`${file} has no default export (nor a named export \`judgeKind\`); export { kind, create }`)
    }
    if (!isObjectLike(exported)) {
      return yield* fail(`the export of ${file} must be an object { kind, version?, create }, got ${describeValue(exported)}`)
    }
    const shape = checkShape(exported, ["kind", "version", "create"], KindExport)
    if (Either.isLeft(shape)) return yield* fail(`the export of ${file} is not a judge kind: ${shape.left}`)
    return {
      file,
      hash,
      exported: exported as unknown as PluginJudgeKind,
      kind: shape.right.kind,
      version: shape.right.version ?? null
    }
  })

// ---------------------------------------------------------------------------------------------
// the judge

/** Build judge `name` from a loaded plugin: call its `create`, check the judge, wrap `rule`. */
export const makePluginJudge = (
  name: string,
  plugin: LoadedPlugin,
  options: Readonly<Record<string, unknown>>,
  context: PluginCreateContext
): Effect.Effect<Judge, JudgeConfigError> =>
  Effect.gen(function* () {
    const fail = (reason: string) => new JudgeConfigError({ judge: name, path: "module", reason })
    const label = `plugin '${plugin.kind}' (${plugin.file})`
    const created = yield* Effect.tryPromise({
      try: (): Promise<unknown> =>
        Promise.resolve().then(() => plugin.exported.create.call(plugin.exported, name, structuredClone({ ...options }), { ...context })),
      catch: (e) => fail(`create() of ${label} failed: ${messageOf(e)}`)
    }).pipe(
      Effect.timeoutFail({
        duration: Duration.seconds(context.timeout_s),
        onTimeout: () => fail(`create() of ${label} did not finish within ${context.timeout_s}s`)
      })
    )
    if (!isObjectLike(created)) {
      return yield* fail(`create() of ${label} must return a judge object { rule, … }, got ${describeValue(created)}`)
    }
    const shape = checkShape(created, ["model", "version", "cacheable", "rule"], JudgeExport)
    if (Either.isLeft(shape)) return yield* fail(`create() of ${label} returned an invalid judge: ${shape.left}`)
    const j = shape.right
    const id: JudgeIdentity = {
      judge: name,
      kind: `plugin:${plugin.kind}`,
      model: j.model ?? null,
      version: j.version ?? plugin.version ?? `sha256:${plugin.hash}`
    }

    const rule = (call: ToolCallView, ctx: JudgeContext) =>
      Effect.gen(function* () {
        const start = yield* Clock.currentTimeNanos
        const elapsed = Effect.map(Clock.currentTimeNanos, (now) => Number(now - start) / 1e6)
        const outcome = yield* Effect.either(
          Effect.tryPromise({
            try: (signal): Promise<unknown> =>
              Promise.resolve().then(() =>
                j.rule.call(created, structuredClone(call), {
                  requestId: ctx.requestId,
                  runId: ctx.runId,
                  episodeId: ctx.episodeId,
                  sessionId: ctx.sessionId,
                  principal: ctx.principal,
                  agentModel: ctx.agentModel,
                  signal
                })
              ),
            catch: messageOf
          })
        )
        const latency_ms = yield* elapsed
        if (Either.isLeft(outcome)) {
          return yield* new JudgeError({ judge: name, reason: "unavailable", message: `${label} failed: ${outcome.left}`, latency_ms })
        }
        const result = outcome.right
        const invalid = (problem: string) =>
          new JudgeError({
            judge: name,
            reason: "output-invalid",
            message: `${label} returned an invalid result: ${problem}`,
            raw: clip(safeJson(result), 2000),
            latency_ms
          })
        if (!isObjectLike(result)) return yield* invalid(`expected an object { decision, … }, got ${describeValue(result)}`)
        const checked = checkShape(result, ["decision", "category", "reason", "probability", "raw"], ResultShape)
        if (Either.isLeft(checked)) return yield* invalid(checked.left)
        const r = checked.right
        return decided(id, r.decision, {
          category: r.category ? r.category : r.decision === "allow" ? "none" : "other",
          reason: clip(r.reason ?? "", 500),
          raw: r.raw ?? "",
          probability: r.probability ?? null,
          latency_ms
        })
      })

    return { ...id, cacheable: j.cacheable ?? false, rule } satisfies Judge
  })

/** The `plugin` kind; relative module paths resolve against `root`. */
export const makePluginKind = (root: string): JudgeKind => ({
  kind: "plugin",
  make: (name, spec, defaults) =>
    Effect.gen(function* () {
      const config = yield* decodeSpec(name, spec, PluginConfig)
      const plugin = yield* loadPluginModule(name, config.module, root)
      return yield* makePluginJudge(name, plugin, config.options, { root, timeout_s: defaults.timeout_s })
    })
})

/** Register with `JudgeKinds.layer([...defaultPlugins, pluginKindPlugin])`. */
export const pluginKindPlugin: JudgeKindPlugin<Settings> = Effect.map(Settings, (settings) => makePluginKind(settings.root))
