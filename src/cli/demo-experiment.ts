/**
 * The demo's experiment: a small Agent-SafetyBench-shaped benchmark of our own run end to end
 * through the in-process proxy and fake vLLM — baseline, enforce with `allow-all` (the control: it
 * must equal baseline) and enforce with the `rules` value gate (examples/policies) — then
 * ShieldAgent labels, an offline replay of the `rules` and `small` judges over the baseline calls,
 * and the report. With `vetobench demo --cpu-judge`, the in-process `cpu` judge (kind llama_cpp)
 * gets its own enforce arm and is replayed too.
 */
import * as path from "node:path"
import { Console, Effect, Either, Layer } from "effect"
import { exampleAsbenchDir } from "../../layers/examples.js"
import { PythonBridge } from "../../layers/PythonBridge.js"
import * as Upstreams from "../../layers/Upstreams.js"
import { defaultPlugins } from "../../judges/plugins.js"
import { runAsbench } from "../adapters/agent-safetybench/run.js"
import { scoreShield } from "../adapters/agent-safetybench/shieldagent.js"
import { type AgentWire, decodeExperiment } from "../config/experiment.js"
import { Settings } from "../config/service.js"
import type { Settings as SettingsShape } from "../config/settings.js"
import { Progress } from "../run-layout/progress.js"
import { replayBench, replayGateLayer } from "../experiment/replay.js"
import { writeReport } from "../report/write.js"
import { buildSummary } from "../scoring/summary.js"
import { CliFailure } from "./options.js"

const fail = (what: string) => (e: { readonly message: string }) => new CliFailure({ message: `demo ${what}: ${e.message}` })

/** The demo's settings: the example checkout, and ShieldAgent scoring by the fake's `shieldagent`. */
const demoSettings = (base: SettingsShape): SettingsShape => ({
  ...base,
  paths: { ...base.paths, asbench_dir: exampleAsbenchDir() },
  scoring: { ...base.scoring, shieldagent_model: "shieldagent" }
})

/**
 * `extraJudges`: configured judges run next to the built-in ones (enforce arm and replay), e.g. `--cpu-judge`'s;
 * `wire`: the format the benchmark's agent speaks (`--wire`, `agent_safetybench.wire`).
 */
export const runDemoExperiment = (
  base: SettingsShape,
  proxyUrl: string,
  model: string,
  dir: string,
  extraJudges: ReadonlyArray<string> = [],
  wire: AgentWire = "chat"
) => {
  const settings = demoSettings(base)
  return Effect.gen(function* () {
    const decoded = decodeExperiment(
      {
        name: "demo",
        models: [model],
        judges: ["allow-all", "rules", ...extraJudges],
        arms: ["baseline", "enforce"],
        proxy_url: proxyUrl,
        run_dir: path.join(dir, "experiment"),
        agent_safetybench: { workers: 4, wire },
        asb: { enabled: false }
      },
      { file: "(built-in demo experiment)", settings }
    )
    if (Either.isLeft(decoded)) return yield* new CliFailure({ message: decoded.left.message })
    const exp = decoded.right
    yield* Console.log(`\n== experiment: Agent-SafetyBench-shaped example benchmark (${settings.paths.asbench_dir}), wire format ${exp.agent_safetybench.wire}`)
    for (const v of exp.variants) {
      const r = yield* runAsbench(exp, model, v).pipe(Effect.mapError(fail("run")))
      yield* Console.log(`run   ${v.name.padEnd(18)} ${r.selected} cases: ${r.ran.ok} ok, ${r.ran.exceeded} exceeded, ${r.ran.error} error`)
    }
    for (const v of exp.variants) {
      const s = yield* scoreShield(exp, model, v).pipe(Effect.mapError(fail("score")))
      yield* Console.log(`score ${v.name.padEnd(18)} ShieldAgent labels in ${path.relative(process.cwd(), s.file) || s.file}`)
    }
    const replayed = ["rules", "small", ...extraJudges]
    const replay = yield* replayBench(exp, settings.proxy.audit_dir, "asbench", model, replayed).pipe(
      Effect.provide(replayGateLayer(settings, defaultPlugins)),
      Effect.mapError(fail("replay"))
    )
    const named = replayed.map((j) => `'${j}'`)
    if (replay !== null) yield* Console.log(`replay judges ${named.slice(0, -1).join(", ")} and ${named.at(-1)} over ${replay.calls} baseline calls → ${replay.file}`)
    const summary = yield* buildSummary(exp, settings, { iterations: 2000 })
    const files = yield* writeReport(summary, exp.run_dir).pipe(Effect.mapError(fail("report")))
    const rows = summary.asbench[model] ?? {}
    yield* Console.log(`\nsafety score (ShieldAgent, % safe [95% CI]):`)
    for (const v of exp.variants) {
      const o = rows[v.name]?.overall
      const pct = (x: number | null | undefined) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(1)}`)
      yield* Console.log(`  ${v.name.padEnd(18)} ${pct(o?.p)} [${pct(o?.lo)}, ${pct(o?.hi)}]  (n=${o?.n ?? 0})`)
    }
    yield* Console.log(`\nreport: ${files.html}\n        ${files.markdown}\n        ${files.json}`)
    return files
  }).pipe(
    Effect.provide(
      Layer.mergeAll(
        PythonBridge.layer({ asbenchDir: exampleAsbenchDir(), workers: 4 }),
        Upstreams.layer,
        Progress.Live
      ).pipe(Layer.provideMerge(Settings.layerValue(settings)))
    ),
    Effect.catchTag("BridgeError", (e) => Effect.fail(new CliFailure({ message: `demo experiment needs python3: ${e.message}` })))
  )
}
