/**
 * Metrics: the proxy's counters and histograms, exposed as Prometheus text on `GET /metrics`.
 *
 * - `Metrics.layer`: prom-client with a Registry of its own (never the global default one), so two
 *   proxies in one process keep separate figures.
 * - `Metrics.layerNoop`: records nothing (`proxy.metrics: false`, embedders, unit tests of the gate).
 *
 * Every label value is bounded: routes are the proxy's fixed paths, judges and upstreams are the
 * configured ones (an unknown judge is a 400 before anything is counted), arms and decisions are
 * enumerations. No model name, message text, tool argument or credential is ever a label.
 *
 * The recording functions are plain synchronous calls (the gate calls them on its hot path): a
 * no-op when metrics are off, a prom-client increment or observation otherwise.
 */
import { Context, Effect, Layer } from "effect"
import { Counter, Gauge, Histogram, Registry } from "prom-client"

/** what a judge ruling records (one handle per judge, made once) */
export interface JudgeMetrics {
  /** a ruling that returned (ok or error), cached verdicts excluded: its duration */
  readonly ruled: (seconds: number) => void
  /** a ruling that failed: the verdict's status */
  readonly failed: (status: "error" | "timeout") => void
  /** an in-process judge's ruling started (+1) or stopped (-1) waiting for its model (kind llama_cpp) */
  readonly queued: (delta: number) => void
}

export interface Exposition {
  readonly contentType: string
  readonly text: string
}

export interface MetricsShape {
  readonly enabled: boolean
  /** one finished client request: route label, arm (`none` off the chat route), HTTP status */
  readonly request: (route: string, arm: string, status: number) => void
  /** one ruled tool call: its arm, judge (`none` for baseline), effective decision (`none` without a judge), released or not */
  readonly toolCall: (arm: string, judge: string, decision: string, blocked: boolean) => void
  /** the handle for one judge's rulings */
  readonly judge: (judge: string) => JudgeMetrics
  /** a held call parked for a person (+1) or decided, expired or abandoned (-1) */
  readonly holdsPending: (delta: number) => void
  /** one audit append: written or failed */
  readonly auditAppend: (ok: boolean) => void
  /** one upstream call of a client request, until its body ended: HTTP status or `timeout` / `unavailable` */
  readonly upstream: (upstream: string, status: string, seconds: number) => void
  /** the Prometheus text exposition */
  readonly exposition: Effect.Effect<Exposition>
}

export class Metrics extends Context.Tag("vetobench/Metrics")<Metrics, MetricsShape>() {
  static layer: Layer.Layer<Metrics> = Layer.sync(Metrics, () => make())
  static layerNoop: Layer.Layer<Metrics> = Layer.sync(Metrics, () => noop)
}

/** judge rulings run from well under a millisecond (rule, static) to tens of seconds (LLM judges) */
const JUDGE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
/** upstream calls: a short completion to a long streamed generation */
const UPSTREAM_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]

const noopJudge: JudgeMetrics = { ruled: () => {}, failed: () => {}, queued: () => {} }

const noop: MetricsShape = {
  enabled: false,
  request: () => {},
  toolCall: () => {},
  judge: () => noopJudge,
  holdsPending: () => {},
  auditAppend: () => {},
  upstream: () => {},
  exposition: Effect.succeed({ contentType: "text/plain; version=0.0.4; charset=utf-8", text: "" })
}

/** A prom-client registry of its own with the proxy's metrics. */
export const make = (): MetricsShape => {
  const registry = new Registry()
  const registers = [registry]
  const requests = new Counter({
    name: "vetobench_requests_total",
    help: "Client requests answered, by route, arm and HTTP status (499: the client went away)",
    labelNames: ["route", "arm", "status"] as const,
    registers
  })
  const toolCalls = new Counter({
    name: "vetobench_tool_calls_total",
    help: "Proposed tool calls ruled by the gate, by arm, judge, effective decision and whether the call was withheld",
    labelNames: ["arm", "judge", "decision", "blocked"] as const,
    registers
  })
  const judgeSeconds = new Histogram({
    name: "vetobench_judge_duration_seconds",
    help: "Time a judge took to rule on one call (rulings that returned; cached verdicts and timeouts excluded)",
    labelNames: ["judge"] as const,
    buckets: JUDGE_BUCKETS,
    registers
  })
  const judgeErrors = new Counter({
    name: "vetobench_judge_errors_total",
    help: "Judge rulings that failed, by judge and verdict status (error or timeout); fail_policy decided these calls",
    labelNames: ["judge", "status"] as const,
    registers
  })
  const holds = new Gauge({
    name: "vetobench_holds_pending",
    help: "Held calls waiting for a person (hold_policy wait)",
    registers
  })
  const queueLength = new Gauge({
    name: "vetobench_judge_queue_length",
    help: "Rulings of an in-process model judge (kind llama_cpp) waiting for its model, by judge (the ruling the model is running not counted)",
    labelNames: ["judge"] as const,
    registers
  })
  const appends = new Counter({ name: "vetobench_audit_appends_total", help: "Audit records appended", registers })
  const appendFailures = new Counter({
    name: "vetobench_audit_append_failures_total",
    help: "Audit appends that failed (the proxy answered 503 and released nothing)",
    registers
  })
  const upstreamSeconds = new Histogram({
    name: "vetobench_upstream_duration_seconds",
    help: "Upstream calls of client requests, from sending until the body ended, by upstream and status (HTTP status, timeout or unavailable)",
    labelNames: ["upstream", "status"] as const,
    buckets: UPSTREAM_BUCKETS,
    registers
  })

  // one handle per judge name: the gate's hot path looks it up, it never builds label sets
  const judges = new Map<string, JudgeMetrics>()
  const judge = (name: string): JudgeMetrics => {
    const known = judges.get(name)
    if (known !== undefined) return known
    const seconds = judgeSeconds.labels(name)
    const error = judgeErrors.labels(name, "error")
    const timeout = judgeErrors.labels(name, "timeout")
    // the queue gauge only for judges that queue (in-process models), not a zero line for every judge
    let queue: ReturnType<typeof queueLength.labels> | null = null
    const made: JudgeMetrics = {
      ruled: (s) => seconds.observe(s),
      failed: (status) => (status === "timeout" ? timeout : error).inc(),
      queued: (delta) => {
        queue ??= queueLength.labels(name)
        if (delta >= 0) queue.inc(delta)
        else queue.dec(-delta)
      }
    }
    judges.set(name, made)
    return made
  }

  return {
    enabled: true,
    request: (route, arm, status) => requests.labels(route, arm, String(status)).inc(),
    toolCall: (arm, judgeName, decision, blocked) => toolCalls.labels(arm, judgeName, decision, blocked ? "true" : "false").inc(),
    judge,
    holdsPending: (delta) => (delta >= 0 ? holds.inc(delta) : holds.dec(-delta)),
    auditAppend: (ok) => (ok ? appends : appendFailures).inc(),
    upstream: (upstream, status, seconds) => upstreamSeconds.labels(upstream, status).observe(seconds),
    exposition: Effect.map(
      Effect.promise(() => registry.metrics()),
      (text): Exposition => ({ contentType: registry.contentType, text })
    )
  }
}
