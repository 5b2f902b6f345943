/**
 * LlamaModels: the GGUF models this process runs in-process (node-llama-cpp, CPU only) for the
 * `llama_cpp` judge kind.
 *
 * - **Loaded once, shared.** A model file is loaded on the first `runner` call naming it (at
 *   start-up, when the judges are built) and shared by every judge naming the same file (the path
 *   as resolved). A judge's context settings (`context_size`, `threads`) get a context of their
 *   own on that model; judges with the same settings share it (and its cached prompt prefix).
 * - **One ruling at a time per model.** Rulings queue for their model (every context of it) and
 *   run one after the other. A ruling that would wait behind more than its judge's `max_queue`
 *   rulings fails at once (`queue-full`). A ruling whose caller leaves (the gate's deadline) stops
 *   waiting at once; one that is already generating is aborted, and the model takes the next
 *   ruling when the native work has actually stopped (a timeout never wedges the queue, and two
 *   generations never overlap). The rulings waiting per judge are the gauge
 *   `vetobench_judge_queue_length`.
 * - **Released on shutdown.** The layer is scoped: closing it aborts what is generating, waits
 *   for it to stop, then disposes every context, model and the llama.cpp instance. Nothing is
 *   loaded until a judge asks, so the layer costs nothing in a process without such a judge.
 */
import { Context, Data, Effect, Layer } from "effect"
import type { Llama, LlamaChat, LlamaContext, LlamaContextSequence, LlamaGrammar, LlamaModel } from "node-llama-cpp"
import { importNodeLlamaCpp, type NodeLlamaCpp, startLlama } from "./llama-binding.js"
import { Metrics } from "./Metrics.js"

/** A model cannot be used: `key` is the judge setting at fault (`kind` when the library or platform is). */
export class LlamaLoadError extends Data.TaggedError("LlamaLoadError")<{
  readonly key: "kind" | "model_path" | "context_size"
  readonly reason: string
}> {}

/** A ruling did not produce an answer. */
export class LlamaRunError extends Data.TaggedError("LlamaRunError")<{
  readonly reason: "queue-full" | "too-long" | "failed"
  readonly message: string
}> {}

export interface RunnerOptions {
  /** absolute path of the GGUF file */
  readonly file: string
  readonly contextSize: number
  /** CPU threads; null: the machine's math cores minus one (at least one) */
  readonly threads: number | null
  /** what every answer is constrained to: a grammar, built once per `key` */
  readonly grammar: GrammarSpec
}

export interface GrammarSpec {
  readonly key: string
  readonly make: (llama: Llama) => Promise<LlamaGrammar>
}

export interface RunRequest {
  /** the judge asking (the queue gauge's label) */
  readonly judge: string
  readonly system: string
  readonly user: string
  readonly maxTokens: number
  readonly temperature: number
  /** how many rulings may wait for the model ahead of this one */
  readonly maxQueue: number
}

export interface Generation {
  /** the model's answer as generated */
  readonly text: string
  /** node-llama-cpp's stop reason: `eogToken`, `stopGenerationTrigger`, `maxTokens`, … */
  readonly stopReason: string
  /** prompt tokens evaluated for this ruling (a prefix kept from the previous ruling is not re-evaluated) */
  readonly promptTokens: number
  readonly completionTokens: number
  /** waiting for the model */
  readonly queueMs: number
  /** holding the model (evaluating the prompt and generating) */
  readonly runMs: number
}

export interface LlamaRunner {
  readonly file: string
  readonly contextSize: number
  readonly threads: number
  /** one ruling through the model's queue */
  readonly generate: (req: RunRequest) => Effect.Effect<Generation, LlamaRunError>
  /** the model has been disposed (the layer was closed) */
  readonly released: () => boolean
}

export interface LlamaModelsShape {
  /** the runner for a model file and context settings: loaded on first use, shared after */
  readonly runner: (options: RunnerOptions) => Effect.Effect<LlamaRunner, LlamaLoadError>
  /** the files loaded now */
  readonly loaded: () => ReadonlyArray<string>
}

export class LlamaModels extends Context.Tag("vetobench/LlamaModels")<LlamaModels, LlamaModelsShape>() {
  static layer: Layer.Layer<LlamaModels, never, Metrics> = Layer.scoped(
    LlamaModels,
    Effect.gen(function* () {
      return yield* make(yield* Metrics)
    })
  )
}

// ---------------------------------------------------------------------------------------------

interface Slot {
  readonly context: LlamaContext
  readonly sequence: LlamaContextSequence
  readonly chat: LlamaChat
  readonly threads: number
}

interface Running {
  readonly controller: AbortController
  readonly settled: Promise<unknown>
}

interface Loaded {
  readonly file: string
  readonly model: LlamaModel
  /** one permit: the ruling that holds the model */
  readonly turn: Effect.Semaphore
  /** rulings waiting for the turn */
  waiting: number
  readonly slots: Map<string, Slot>
  readonly running: Set<Running>
}

type Outcome =
  | { readonly ok: true; readonly text: string; readonly stopReason: string; readonly promptTokens: number; readonly completionTokens: number }
  | { readonly ok: false; readonly message: string }

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** Chat-template tokens around the two messages (ChatML and its kin use fewer). */
const TEMPLATE_ALLOWANCE = 32

const make = (metrics: Context.Tag.Service<Metrics>) =>
  Effect.gen(function* () {
    const lock = yield* Effect.makeSemaphore(1)
    let lib: NodeLlamaCpp | null = null
    let llama: Llama | null = null
    let closed = false
    const models = new Map<string, Loaded>()
    const grammars = new Map<string, LlamaGrammar>()

    const attempt = <A>(key: LlamaLoadError["key"], what: string, f: () => Promise<A>) =>
      Effect.tryPromise({ try: f, catch: (e) => new LlamaLoadError({ key, reason: `${what}: ${message(e)}` }) })

    const ensureLlama = Effect.gen(function* () {
      if (lib !== null && llama !== null) return { lib, llama }
      const imported = yield* Effect.promise(importNodeLlamaCpp)
      if (!imported.ok) return yield* new LlamaLoadError({ key: "kind", reason: imported.reason })
      const started = yield* Effect.promise(() => startLlama(imported.lib))
      if (!started.ok) return yield* new LlamaLoadError({ key: "kind", reason: started.reason })
      lib = imported.lib
      llama = started.llama
      return { lib, llama }
    })

    const ensureModel = (l: Llama, file: string) =>
      Effect.gen(function* () {
        const known = models.get(file)
        if (known !== undefined) return known
        const model = yield* attempt("model_path", `cannot load ${file}`, () => l.loadModel({ modelPath: file }))
        const loaded: Loaded = { file, model, turn: yield* Effect.makeSemaphore(1), waiting: 0, slots: new Map(), running: new Set() }
        models.set(file, loaded)
        return loaded
      })

    const ensureSlot = (nl: NodeLlamaCpp, l: Llama, m: Loaded, contextSize: number, threads: number | null) =>
      Effect.gen(function* () {
        // by default one core is left to the proxy: llama.cpp's threads wait for each other, so one
        // stalled by a busy core stalls them all (docs/performance.md, bench/cpu-judge)
        const n = threads ?? Math.max(1, l.cpuMathCores - 1)
        const key = `${contextSize}/${n}`
        const known = m.slots.get(key)
        if (known !== undefined) return known
        const context = yield* attempt("context_size", `cannot create a context of ${contextSize} tokens on ${m.file}`, () =>
          m.model.createContext({ contextSize, threads: n, sequences: 1 })
        )
        const sequence = context.getSequence()
        const slot: Slot = { context, sequence, chat: new nl.LlamaChat({ contextSequence: sequence }), threads: n }
        m.slots.set(key, slot)
        return slot
      })

    const ensureGrammar = (l: Llama, spec: GrammarSpec) =>
      Effect.gen(function* () {
        const known = grammars.get(spec.key)
        if (known !== undefined) return known
        const grammar = yield* attempt("kind", "cannot build the answer grammar", () => spec.make(l))
        grammars.set(spec.key, grammar)
        return grammar
      })

    /** The native generation; it never rejects (a failure or an abort is an outcome). */
    const generateNative = async (slot: Slot, grammar: LlamaGrammar, req: RunRequest, signal: AbortSignal): Promise<Outcome> => {
      const before = slot.sequence.tokenMeter.getState()
      try {
        const r = await slot.chat.generateResponse(
          [
            { type: "system", text: req.system },
            { type: "user", text: req.user },
            { type: "model", response: [] }
          ],
          { grammar, maxTokens: req.maxTokens, temperature: req.temperature, signal }
        )
        const used = slot.sequence.tokenMeter.diff(before)
        return { ok: true, text: r.response, stopReason: r.metadata.stopReason, promptTokens: used.usedInputTokens, completionTokens: used.usedOutputTokens }
      } catch (e) {
        return { ok: false, message: signal.aborted ? "aborted: the ruling was abandoned (deadline)" : message(e) }
      }
    }

    const makeRunner = (m: Loaded, slot: Slot, grammar: LlamaGrammar, contextSize: number): LlamaRunner => {
      const tooLong = (req: RunRequest): string | null => {
        const prompt = m.model.tokenize(req.system).length + m.model.tokenize(req.user).length + TEMPLATE_ALLOWANCE
        return prompt + req.maxTokens > contextSize
          ? `the call needs about ${prompt} prompt tokens + ${req.maxTokens} max_tokens, more than the context holds (context_size ${contextSize})`
          : null
      }

      const generate = (req: RunRequest): Effect.Effect<Generation, LlamaRunError> =>
        Effect.suspend(() => {
          if (closed) return Effect.fail(new LlamaRunError({ reason: "failed", message: "the model was released (shutting down)" }))
          const long = tooLong(req)
          if (long !== null) return Effect.fail(new LlamaRunError({ reason: "too-long", message: long }))
          if (m.waiting >= req.maxQueue) {
            return Effect.fail(
              new LlamaRunError({ reason: "queue-full", message: `${m.waiting} rulings are already waiting for ${m.file} (max_queue ${req.maxQueue})` })
            )
          }
          const gauge = metrics.judge(req.judge)
          return Effect.uninterruptibleMask((restore) =>
            Effect.gen(function* () {
              const enqueued = performance.now()
              m.waiting++
              gauge.queued(1)
              let waiting = true
              const leave = Effect.sync(() => {
                if (!waiting) return
                waiting = false
                m.waiting--
                gauge.queued(-1)
              })
              // leaving while waiting (the deadline) just leaves the queue
              yield* restore(m.turn.take(1)).pipe(Effect.ensuring(leave))
              const started = performance.now()
              const controller = new AbortController()
              const settled = closed
                ? Promise.resolve<Outcome>({ ok: false, message: "the model was released (shutting down)" })
                : generateNative(slot, grammar, req, controller.signal)
              const running: Running = { controller, settled }
              m.running.add(running)
              // the turn passes on when the native work has stopped, whether or not the caller still waits
              yield* Effect.forkDaemon(
                Effect.promise(() => settled).pipe(
                  Effect.ensuring(Effect.sync(() => m.running.delete(running))),
                  Effect.ensuring(m.turn.release(1))
                )
              )
              const outcome = yield* restore(Effect.promise(() => settled)).pipe(
                Effect.onInterrupt(() => Effect.sync(() => controller.abort(new Error("the ruling was abandoned"))))
              )
              if (!outcome.ok) return yield* new LlamaRunError({ reason: "failed", message: outcome.message })
              const done = performance.now()
              return {
                text: outcome.text,
                stopReason: outcome.stopReason,
                promptTokens: outcome.promptTokens,
                completionTokens: outcome.completionTokens,
                queueMs: started - enqueued,
                runMs: done - started
              } satisfies Generation
            })
          )
        })

      return { file: m.file, contextSize, threads: slot.threads, generate, released: () => m.model.disposed }
    }

    const runner = (options: RunnerOptions): Effect.Effect<LlamaRunner, LlamaLoadError> =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          if (closed) return yield* new LlamaLoadError({ key: "kind", reason: "the in-process models were already released (shutting down)" })
          const { lib: nl, llama: l } = yield* ensureLlama
          const m = yield* ensureModel(l, options.file)
          const slot = yield* ensureSlot(nl, l, m, options.contextSize, options.threads)
          const grammar = yield* ensureGrammar(l, options.grammar)
          return makeRunner(m, slot, grammar, options.contextSize)
        })
      )

    const dispose = (what: string, f: () => Promise<void> | void) =>
      Effect.tryPromise(async () => f()).pipe(Effect.catchAll((e) => Effect.logWarning(`llama_cpp: releasing ${what} failed: ${message(e.error)}`)))

    /** abort what runs, wait until it stopped, then dispose everything (contexts, models, llama.cpp) */
    const release = lock.withPermits(1)(
      Effect.gen(function* () {
        closed = true
        const running = [...models.values()].flatMap((m) => [...m.running])
        for (const r of running) r.controller.abort(new Error("shutting down"))
        yield* Effect.promise(() => Promise.allSettled(running.map((r) => r.settled)))
        for (const m of models.values()) {
          for (const slot of m.slots.values()) {
            yield* dispose(`a context of ${m.file}`, async () => {
              slot.chat.dispose({ disposeSequence: true })
              await slot.context.dispose()
            })
          }
          yield* dispose(m.file, () => m.model.dispose())
        }
        models.clear()
        grammars.clear()
        const l = llama
        llama = null
        if (l !== null) yield* dispose("llama.cpp", () => l.dispose())
      })
    )
    yield* Effect.addFinalizer(() => release)

    return {
      runner,
      loaded: () => [...models.keys()]
    } satisfies LlamaModelsShape
  })
