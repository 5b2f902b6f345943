/**
 * PythonBridge: the Agent-SafetyBench environments run in `python3` processes (standard library
 * only, `src/adapters/agent-safetybench/bridge.py`) with the user's checkout on `sys.path`; we talk
 * JSON lines over stdio. The benchmark's own texts (system prompt, ShieldAgent instruction) are read
 * from the checkout at run time and never stored in our code.
 *
 * One process per worker: `withSession` borrows a process for one case (its environments live in
 * that process until the next `openCase`). Processes are owned by the layer's scope (killed on
 * interrupt); a crashed process is replaced, and the caller sees `BridgeError` with reason
 * `crashed` (the runner retries the case once).
 */
import { Context, Data, type Effect } from "effect"

export class BridgeError extends Data.TaggedError("BridgeError")<{
  /** `setup`: no python3 / no checkout / bad checkout (one clear message naming what to install);
   *  `crashed`: the process died; `protocol`: an unreadable answer; `case`: the benchmark refused the case */
  readonly reason: "setup" | "crashed" | "protocol" | "case"
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

export class PythonBridge extends Context.Tag("vetobench/PythonBridge")<PythonBridge, PythonBridgeShape>() {}
