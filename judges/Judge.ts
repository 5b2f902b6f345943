/**
 * A judge rules on one proposed tool call. Judge kinds are plugins that build judges from their
 * config (see `registry.ts`); the gate only ever sees this interface.
 */
import { Data, type Effect } from "effect"
import type { ToolCallView } from "../src/domain/tool-call.js"
import type { JudgeIdentity, Verdict } from "../src/domain/verdict.js"

/** What a judge may know about the call besides the call itself (never the conversation). */
export interface JudgeContext {
  readonly requestId: string
  readonly runId: string | null
  readonly episodeId: string | null
  readonly sessionId: string | null
  readonly principal: string | null
  readonly agentModel: string
  /** request headers, lower-cased names (never includes authorization) */
  readonly headers: Readonly<Record<string, string>>
}

/** A judge failed to answer: the gate turns this into a verdict with status error/timeout. */
export class JudgeError extends Data.TaggedError("JudgeError")<{
  readonly judge: string
  readonly reason: "timeout" | "unavailable" | "output-invalid"
  readonly message: string
  readonly raw?: string
  readonly latency_ms?: number
  readonly usage?: Record<string, unknown>
}> {}

/** A judge's config is wrong: reported at start-up naming the judge and key. */
export class JudgeConfigError extends Data.TaggedError("JudgeConfigError")<{
  readonly judge: string
  readonly path: string
  readonly reason: string
}> {
  override get message() {
    return `judges.${this.judge}${this.path ? `.${this.path}` : ""}: ${this.reason}`
  }
}

export interface Judge extends JudgeIdentity {
  /** verdicts may be cached (keyed by judge name, version and the canonical call) */
  readonly cacheable: boolean
  readonly rule: (call: ToolCallView, ctx: JudgeContext) => Effect.Effect<Verdict, JudgeError>
  /**
   * The judge answers in process and cannot block: `rule` does no I/O and waits on nothing (no
   * timer, no lock, no other fiber), so it finishes as soon as it runs (kinds `static`, `rule`). The
   * gate then rules it without a concurrency slot, deadline timer or fiber of its own; everything
   * else (a throw, a defect, an invalid answer → a verdict through `fail_policy`) is unchanged.
   */
  readonly inProcess?: boolean
  /**
   * The judge bounds and queues its own work (kind `llama_cpp`: one model in this process, rulings
   * in turn, at most `max_queue` waiting): the gate takes no concurrency slot for it, so rulings
   * waiting their turn for the model do not hold the slots other judges need. The gate's deadline,
   * cache and `fail_policy` apply as for every judge.
   */
  readonly ownQueue?: boolean
  /**
   * A composite judge (kind `layered`): the gate runs these in order, each with its own cache entry,
   * concurrency slot and deadline; the first deny or hold decides; every layer's verdict is recorded.
   * `rule` is then not called.
   */
  readonly layers?: ReadonlyArray<Judge>
  /** run every layer even after one decided (to measure what each adds) */
  readonly runAll?: boolean
  /**
   * Optional, for judges that keep state across calls (the `rule` judge's trajectory rules): what
   * became of a call this judge was asked about. The gate calls it once per proposed call per judge
   * — for a layered judge, on each layer that has it, whether or not that layer ran — after the
   * ruling (after a person decided, under `hold_policy: wait`), with `released` = the call went back
   * to the agent (enforce: not blocked; shadow and baseline: true). It must not fail.
   */
  readonly commit?: (call: ToolCallView, ctx: JudgeContext, released: boolean) => Effect.Effect<void>
  /**
   * Optional, for judge kinds that can rate free text (`classifier`; `llm_json` with a
   * `results_prompt`; plugins may add it): rate one tool RESULT the agent is about to read, for the
   * result screen (`screening.judge`, src/screening/). `deny` = the result is flagged (a likely
   * prompt injection); `allow` = clean; `hold` is read as flagged. `text` is already cut to
   * `screening.max_chars`. A judge without it cannot be named by `screening.judge`.
   */
  readonly screen?: (text: string, ctx: JudgeContext) => Effect.Effect<Verdict, JudgeError>
  /**
   * Optional, for judges that know which tools they would never allow, whatever the arguments (the
   * `rule` kind in `mode: scope`: the policy's inventory and grant, narrowed by the caller's
   * scopes; a `layered` judge when every layer that has it grants the tool). False = this judge
   * denies every call of `toolName` under `ctx`. The MCP gate's enforce arm hides such tools from
   * `tools/list` (src/mcp/hide-tools.ts). Pure and synchronous; it must not throw.
   */
  readonly grants?: (toolName: string, ctx: JudgeContext) => boolean
}
