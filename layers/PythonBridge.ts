/**
 * PythonBridge: the Agent-SafetyBench environments run in `python3` processes (standard library
 * only, `src/adapters/agent-safetybench/bridge.py`) with the user's checkout on `sys.path`; we talk
 * JSON lines over stdio. The benchmark's own texts (system prompt, ShieldAgent instruction) are read
 * from the checkout at run time and never stored in our code.
 *
 * One process per worker: `withSession` borrows a process exclusively for one case (its environments
 * live in that process until the next `openCase` or the end of the session, which closes the case).
 * Processes are owned by the layer's scope (killed on interrupt); a crashed process is replaced, and
 * the caller sees `BridgeError` with reason `crashed` (the runner retries the case once). `texts` and
 * `envInfo` called inside `withSession` use the session's process, elsewhere any free one.
 *
 * `PythonBridge.layer({ asbenchDir, python, workers })` (see `PythonBridgeOptions`): building the layer
 * checks the checkout (`environments/EnvManager.py`) and starts one process (so a missing python3 or
 * checkout fails at once with reason `setup`); up to `workers` processes are started on demand. The
 * protocol spoken with `bridge.py` is described at the top of that file.
 *
 * Numbers: Python tells `1.0` from `1`, `JSON.parse` does not. Requests are written with `pyJson`,
 * which writes a `PyFloat` as a float, and answers are read with `parsePythonJson`, which keeps
 * integral floats as `PyFloat` (see `src/domain/python-json.ts`). Load the cases with
 * `parsePythonJson` too, so that `parameters` such as `{"celsius": 21.0}` reach the environments (and
 * ShieldAgent's `env_info`) as floats, as they do upstream.
 */
import { Context, Data, Duration, Effect, FiberRef, Layer, Option, type Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { parsePythonJson, PyFloat, pyJson } from "../src/domain/python-json.js"
import { BridgeProcess } from "./python-bridge/process.js"
import { isObject } from "../src/domain/is-object.js"

export class BridgeError extends Data.TaggedError("BridgeError")<{
  /** `setup`: no python3 / no checkout / bad checkout (one clear message naming what to install);
   *  `crashed`: the process died (or timed out and was killed); `protocol`: an unreadable answer;
   *  `case`: the benchmark refused the case; `bad_arguments`: `callTool` got arguments that are not
   *  valid JSON (eval.py's `json.loads` raises; the runner makes the case an error, as eval.py does — benchmarks.md §5.1) */
  readonly reason: "setup" | "crashed" | "protocol" | "case" | "bad_arguments"
  readonly message: string
}> {}

/** The benchmark's texts, read from the checkout. */
export interface BenchmarkTexts {
  /** `BaseAPI().without_strict_jsonformat_sys_prompt` */
  readonly systemPrompt: string
  /** the ShieldAgent instruction template of `score/eval_with_shield.py`, with `{env_info}` and `{dialog_content}` placeholders as in the script */
  readonly shieldInstruction: string
}

/** One environment entry of a case (`released_data.json`). */
export interface CaseEnvironment {
  readonly name: string
  readonly tools: ReadonlyArray<string>
  readonly parameters?: unknown
}

/** The result of one tool call, with the Python-serialised forms the episode messages use. */
export interface ToolResult {
  /** the dict the tool returned (or the benchmark's error dict) */
  readonly result: unknown
  /** `json.dumps(result)` (Python defaults: ASCII-escaped, `", "` / `": "`) */
  readonly resultJson: string
  /** `json.dumps(arguments)` as the benchmark re-serialises the call's arguments */
  readonly argumentsJson: string
  /**
   * Set when the result holds values `json.dumps` refuses (a set, bytes…): upstream the case would
   * fail; here `resultJson` is `json.dumps(result, default=str)` and this is Python's error text.
   */
  readonly resultNotJson?: string
}

export interface BridgeSession {
  /**
   * Instantiate the case's environments (`EnvManager.init_env(name, parameters or None)`) and return
   * the tool specs to offer, in case order (`get_tool_descs(env.tools)` per env), without the
   * non-standard `type: object` key. A case with no environments, or whose first env is named "",
   * has no tools. An env that cannot be created → BridgeError reason `case`.
   */
  readonly openCase: (environments: ReadonlyArray<CaseEnvironment>) => Effect.Effect<ReadonlyArray<Record<string, unknown>>, BridgeError>
  /**
   * Call a tool of the open case with the benchmark's semantics: the first env whose case tool list
   * contains the name and `has_tool(name)`; `call_tool(name, deepcopy(args))`; an exception →
   * `{"success": false, "message": "Tool error: <e>"}`; no env → `{"success": false, "message":
   * "Tool <name> doesn't exist."}`.
   *
   * `args` is best given as the model's raw `function.arguments` **string**: Python parses it as
   * OpenaiAPI does (`json.loads(arguments) if arguments else {}`, so `""` is `{}`), keeping `1.0` a
   * float; invalid JSON → BridgeError `bad_arguments`. `null`/`undefined` → `{}`. Any other value is
   * taken as already-parsed arguments and sent with `pyJson`.
   */
  readonly callTool: (name: string, args: unknown) => Effect.Effect<ToolResult, BridgeError>
}

export interface PythonBridgeShape {
  readonly texts: Effect.Effect<BenchmarkTexts, BridgeError>
  /** borrow a bridge process for the duration of `use` */
  readonly withSession: <A, E, R>(use: (s: BridgeSession) => Effect.Effect<A, E, R>) => Effect.Effect<A, E | BridgeError, R>
  /**
   * For ShieldAgent's `env_info`: the case's environments each with `tool_information:
   * [{tool_name, tool_description}]` from `environments/<name>.json` ("" envs get []), as the
   * Python `json.dumps` text, plus every loaded tool spec (for the dialog lines).
   */
  readonly envInfo: (environments: ReadonlyArray<unknown>) => Effect.Effect<{ readonly json: string; readonly toolDescs: ReadonlyArray<Record<string, unknown>> }, BridgeError>
  /** `json.dumps(value)` with Python's defaults (the benchmark's serialisation), for prompts and messages */
  readonly pyJson: (value: unknown) => string
}

// ---------------------------------------------------------------------------------------------
// implementation

export const ASBENCH_REPO_URL = "https://github.com/thu-coai/Agent-SafetyBench"
/** benchmarks.md §1 */
export const ASBENCH_PINNED_COMMIT = "74feea8de601b3a1449a93fcf70017fe61556f73"
/** The command that creates the checkout `paths.asbench_dir` expects by default. */
export const ASBENCH_SETUP_COMMAND =
  `git clone ${ASBENCH_REPO_URL} third_party/Agent-SafetyBench && ` +
  `git -C third_party/Agent-SafetyBench checkout ${ASBENCH_PINNED_COMMIT}`

/** `src/adapters/agent-safetybench/bridge.py`, relative to this module (also right for the `dist/` bundle). */
export const defaultBridgeScript = (): string =>
  fileURLToPath(new URL("../src/adapters/agent-safetybench/bridge.py", import.meta.url))

export interface PythonBridgeOptions {
  /** the Agent-SafetyBench checkout (`paths.asbench_dir`) */
  readonly asbenchDir: string
  /** the interpreter; default `python3` (3.8+, standard library only) */
  readonly python?: string
  /** at most this many bridge processes (one per concurrent session); at least 1 */
  readonly workers: number
  /** per request; default 60 s. A request without an answer in time kills its process (`crashed`). */
  readonly requestTimeout?: Duration.DurationInput
  /** for a new process's hello line; default 30 s */
  readonly startTimeout?: Duration.DurationInput
  /** working directory of the processes (environments that write relative paths write there);
   *  default a fresh temporary directory, removed with the layer */
  readonly cwd?: string
  /** override the bridge script (tests) */
  readonly bridgeScript?: string
}

/** What `make` builds: the service plus a view of the live processes (for tests and diagnostics). */
export interface PythonBridgeService extends PythonBridgeShape {
  /** pids of the bridge processes currently alive */
  readonly pids: Effect.Effect<ReadonlyArray<number>>
}

const setupError = (message: string) => new BridgeError({ reason: "setup", message })
const protocolError = (message: string) => new BridgeError({ reason: "protocol", message })

/** The checkout must hold `environments/EnvManager.py`; one message naming the setting and the fix. */
export const checkCheckout = (asbenchDir: string): Effect.Effect<void, BridgeError> =>
  Effect.suspend(() => {
    const dir = path.resolve(asbenchDir)
    const envManager = path.join(dir, "environments", "EnvManager.py")
    if (fs.existsSync(envManager)) return Effect.void
    const what = fs.existsSync(dir) ? `${dir} has no environments/EnvManager.py` : `${dir} does not exist`
    return Effect.fail(
      setupError(
        `Agent-SafetyBench checkout not found: ${what} (paths.asbench_dir). ` +
          `Set paths.asbench_dir to a checkout of ${ASBENCH_REPO_URL}, or create the default one: ${ASBENCH_SETUP_COMMAND}`
      )
    )
  })

/** The session's process, so `texts`/`envInfo` called inside `withSession` reuse it (no second permit). */
const currentProcess = FiberRef.unsafeMake<Option.Option<{ readonly owner: object; readonly proc: BridgeProcess }>>(Option.none())

const toMillis = (d: Duration.DurationInput | undefined, fallback: number): number =>
  d === undefined ? fallback : Duration.toMillis(Duration.decode(d))

/** Build the bridge (scoped: every process is shut down, and the temporary cwd removed, when the scope closes). */
export const make = (options: PythonBridgeOptions): Effect.Effect<PythonBridgeService, BridgeError, Scope.Scope> =>
  Effect.gen(function*() {
    const owner = {}
    const python = options.python ?? "python3"
    const asbenchDir = path.resolve(options.asbenchDir)
    const workers = Math.max(1, Math.floor(options.workers))
    const requestTimeoutMs = toMillis(options.requestTimeout, 60_000)
    const startTimeoutMs = toMillis(options.startTimeout, 30_000)
    const script = options.bridgeScript ?? defaultBridgeScript()
    yield* checkCheckout(asbenchDir)
    if (!fs.existsSync(script)) return yield* Effect.fail(setupError(`vetobench's bridge script is missing: ${script}`))
    const cwd =
      options.cwd ??
      (yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-pybridge-"))),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      ))

    const procs = new Set<BridgeProcess>()
    const idle: Array<BridgeProcess> = []
    let closed = false
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        idle.length = 0
        return Effect.forEach([...procs], (p) => p.shutdown, { concurrency: "unbounded", discard: true })
      })
    )
    const permits = yield* Effect.makeSemaphore(workers)

    const spawnOne: Effect.Effect<BridgeProcess, BridgeError> = Effect.suspend(() =>
      closed
        ? Effect.fail(new BridgeError({ reason: "crashed", message: "the Python bridge is closed" }))
        : BridgeProcess.start({
            python,
            script,
            asbenchDir,
            cwd,
            requestTimeoutMs,
            startTimeoutMs,
            onSpawn: (p) => {
              procs.add(p)
            }
          })
    )

    const take: Effect.Effect<BridgeProcess, BridgeError> = Effect.suspend(() => {
      for (let p = idle.pop(); p !== undefined; p = idle.pop()) {
        if (p.alive) return Effect.succeed(p)
        procs.delete(p)
      }
      return spawnOne
    })

    const giveBack = (p: BridgeProcess): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (p.alive && !closed) {
          idle.push(p)
          return Effect.void
        }
        return p.shutdown.pipe(Effect.ensuring(Effect.sync(() => procs.delete(p))))
      })

    /** borrow a process exclusively for `use` (one of `workers` permits) */
    const withProcess = <A, E, R>(use: (p: BridgeProcess) => Effect.Effect<A, E, R>): Effect.Effect<A, E | BridgeError, R> =>
      permits.withPermits(1)(
        Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(restore(take), (p) => restore(use(p)).pipe(Effect.ensuring(giveBack(p))))
        )
      )

    /** the session's process when called inside `withSession`, else a borrowed one */
    const anyProcess = <A>(use: (p: BridgeProcess) => Effect.Effect<A, BridgeError>): Effect.Effect<A, BridgeError> =>
      Effect.flatMap(FiberRef.get(currentProcess), (current) =>
        Option.isSome(current) && current.value.owner === owner && current.value.proc.alive
          ? use(current.value.proc)
          : withProcess(use)
      )

    let cachedTexts: BenchmarkTexts | null = null
    const texts: Effect.Effect<BenchmarkTexts, BridgeError> = Effect.suspend(() =>
      cachedTexts !== null
        ? Effect.succeed(cachedTexts)
        : anyProcess((p) => p.request({ op: "texts" })).pipe(
            Effect.flatMap((a) =>
              typeof a.system_prompt === "string" && typeof a.shield_instruction === "string"
                ? Effect.succeed<BenchmarkTexts>({ systemPrompt: a.system_prompt, shieldInstruction: a.shield_instruction })
                : Effect.fail(protocolError("texts: answer without system_prompt/shield_instruction strings"))
            ),
            Effect.tap((t) => {
              cachedTexts = t
            })
          )
    )

    const envInfo = (environments: ReadonlyArray<unknown>) =>
      anyProcess((p) => p.request({ op: "env_info", environments })).pipe(
        Effect.flatMap((a) =>
          typeof a.json === "string" && Array.isArray(a.tool_descs)
            ? Effect.succeed({ json: a.json, toolDescs: a.tool_descs.filter(isObject) })
            : Effect.fail(protocolError("env_info: answer without json/tool_descs"))
        )
      )

    const sessionOn = (p: BridgeProcess) => {
      const state = { opened: false }
      const session: BridgeSession = {
        openCase: (environments) =>
          Effect.suspend(() => {
            state.opened = true
            return p.request({ op: "open_case", environments })
          }).pipe(
            Effect.flatMap((a) =>
              Array.isArray(a.tools) && a.tools.every(isObject)
                ? Effect.succeed(a.tools as ReadonlyArray<Record<string, unknown>>)
                : Effect.fail(protocolError("open_case: answer without a tools list"))
            )
          ),
        callTool: (name, args) => {
          const argumentsJson = typeof args === "string" ? args : args === null || args === undefined ? "" : pyJson(args)
          return p.request({ op: "call_tool", name, arguments_json: argumentsJson }).pipe(
            Effect.flatMap((a) =>
              typeof a.result_json === "string" && typeof a.arguments_json === "string"
                ? Effect.succeed<ToolResult>({
                    result: a.result,
                    resultJson: a.result_json,
                    argumentsJson: a.arguments_json,
                    ...(typeof a.result_not_json === "string" ? { resultNotJson: a.result_not_json } : {})
                  })
                : Effect.fail(protocolError("call_tool: answer without result_json/arguments_json"))
            )
          )
        }
      }
      /** forget the case's environments before the process serves another session */
      const closeCase = Effect.suspend(() =>
        state.opened && p.alive ? p.request({ op: "close_case" }).pipe(Effect.catchAll(() => p.shutdown)) : Effect.void
      )
      return { session, closeCase }
    }

    const withSession = <A, E, R>(use: (s: BridgeSession) => Effect.Effect<A, E, R>): Effect.Effect<A, E | BridgeError, R> =>
      withProcess((p) => {
        const { closeCase, session } = sessionOn(p)
        return use(session).pipe(
          Effect.locally(currentProcess, Option.some({ owner, proc: p })),
          Effect.ensuring(closeCase)
        )
      })

    const pids = Effect.sync(() =>
      [...procs].filter((p) => !p.isClosed && p.pid !== undefined).map((p) => p.pid as number)
    )

    // start one process now: a missing python3 or a broken checkout fails the layer at once
    const first = yield* spawnOne
    idle.push(first)

    return { texts, withSession, envInfo, pyJson, pids } satisfies PythonBridgeService
  })

export class PythonBridge extends Context.Tag("vetobench/PythonBridge")<PythonBridge, PythonBridgeShape>() {
  /** the scoped bridge (see `PythonBridgeOptions`); fails with BridgeError `setup` when python3 or the checkout is missing */
  static readonly layer = (options: PythonBridgeOptions): Layer.Layer<PythonBridge, BridgeError> =>
    Layer.scoped(PythonBridge, make(options))
  static readonly make = (options: PythonBridgeOptions) => make(options)
}

/** Parse JSON text as Python's `json.loads` does (keeps `1.0` apart from `1`); re-exported for the runner. */
export { parsePythonJson, PyFloat, pyJson }
