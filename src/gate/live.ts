/**
 * The gate's layer graph, without any HTTP server: settings → outbound HTTP → upstreams, audit,
 * cache, judge kinds → judges → gate. An Effect service embeds the gate with `gateLayer` and calls
 * `Gate.ruleChoice`; the proxy (src/proxy/live.ts) puts its server on top of the same graph.
 *
 * Every part can be swapped: judge kinds are the `plugins` passed in; `audit`, `cache`, `metrics`,
 * `telemetry`, `transport` (outbound HTTP of the upstreams and of the judges that call out) and
 * `upstreams` replace the ones the settings describe. The defaults: the file audit sink of
 * `proxy.audit_dir`, the verdict cache of `proxy.judge_cache`, no metrics, no tracing, undici.
 */
import { readFileSync } from "node:fs"
import { Effect, Layer } from "effect"
import { AuditSink, AuditWriteError } from "../../layers/AuditSink.js"
import type { HttpTransport } from "../../layers/HttpTransport.js"
import { JudgeCache } from "../../layers/JudgeCache.js"
import { LlamaModels } from "../../layers/LlamaModels.js"
import { Metrics } from "../../layers/Metrics.js"
import { Telemetry } from "../../layers/Telemetry.js"
import * as Upstreams from "../../layers/Upstreams.js"
import { Judges } from "../../judges/Judges.js"
import { JudgeKinds, type JudgeKindPlugin } from "../../judges/registry.js"
import { Settings } from "../config/service.js"
import type { Settings as SettingsShape } from "../config/settings.js"
import { signerFromPem } from "../domain/checkpoint.js"
import * as Gate from "./Gate.js"
import { Holds } from "./Holds.js"
import { Screening } from "../screening/Screening.js"

/** The file audit sink the settings describe (signing key loaded once, at start-up). */
export const auditLayer = (settings: SettingsShape): Layer.Layer<AuditSink, AuditWriteError> =>
  Layer.unwrapEffect(
    Effect.try({
      try: () => (settings.audit.signing_key === null ? null : signerFromPem(readFileSync(settings.audit.signing_key, "utf8"))),
      catch: (e) =>
        new AuditWriteError({ file: settings.audit.signing_key ?? "", reason: `cannot load the signing key: ${e instanceof Error ? e.message : String(e)}` })
    }).pipe(
      Effect.map((signer) =>
        AuditSink.layerFile(settings.proxy.audit_dir, { fsync: settings.audit.fsync, checkpointEvery: settings.audit.checkpoint_every, maxOpenFiles: settings.audit.max_open_files, signer })
      )
    )
  )

/** What the gate is built from. `R` is what the plugins need beyond `Settings`, `Upstreams` and `LlamaModels` (which the graph provides). */
export interface GateLayerOptions<R> {
  readonly settings: SettingsShape
  readonly plugins: ReadonlyArray<JudgeKindPlugin<R>>
  /**
   * replace the file audit sink; to read what an `AuditSink.layerMemory` recorded, provide the same
   * layer value beside the gate too (`Layer.provideMerge(gateLayer({ audit: memory, … }), memory)`:
   * one layer value is built once per composition, so both are the same sink)
   */
  readonly audit?: Layer.Layer<AuditSink, AuditWriteError>
  /** replace the verdict cache the settings describe (tests: one cache shared by two gates) */
  readonly cache?: Layer.Layer<JudgeCache>
  /** metrics (default: none recorded) */
  readonly metrics?: Layer.Layer<Metrics>
  /** tracing (default: off) */
  readonly telemetry?: Layer.Layer<Telemetry>
  /** outbound HTTP for the upstreams and the judge kinds that call out (default: undici) */
  readonly transport?: Layer.Layer<HttpTransport>
  /** replace the upstreams the settings describe (their pools then come from that layer, not `transport`) */
  readonly upstreams?: Layer.Layer<Upstreams.Upstreams>
}

/** Count every audit append and append failure (metrics on). */
const countedAudit = (audit: Layer.Layer<AuditSink, AuditWriteError>): Layer.Layer<AuditSink, AuditWriteError, Metrics> =>
  Layer.effect(
    AuditSink,
    Effect.gen(function* () {
      const sink = yield* AuditSink
      const metrics = yield* Metrics
      if (!metrics.enabled) return sink
      return {
        ...sink,
        append: (runId, entry) =>
          sink.append(runId, entry).pipe(
            // an interrupted append is neither: only completed ones count
            Effect.tapBoth({ onFailure: () => Effect.sync(() => metrics.auditAppend(false)), onSuccess: () => Effect.sync(() => metrics.auditAppend(true)) })
          )
      }
    })
  ).pipe(Layer.provide(audit))

/**
 * Everything the gate needs, without the HTTP server: provides `Gate`, `Judges`, `Settings`,
 * `Holds`, `Screening`, `Metrics`, `Telemetry`, `Upstreams` and the `AuditSink` the gate writes to (counted when
 * metrics are on).
 */
export const gateLayer = <R>(opts: GateLayerOptions<R>) => {
  const settings = Settings.layerValue(opts.settings)
  const transport = opts.transport ?? Layer.empty
  const upstreams = opts.upstreams ?? Upstreams.layer.pipe(Layer.provide(Layer.merge(settings, transport)))
  const metrics = opts.metrics ?? Metrics.layerNoop
  // in-process GGUF models (kind llama_cpp): loaded by the judges that name them, released with the gate
  const llamaModels = LlamaModels.layer.pipe(Layer.provide(metrics))
  const kinds = JudgeKinds.layer(opts.plugins).pipe(Layer.provide(transport), Layer.provide(llamaModels))
  const judges = Judges.layer.pipe(Layer.provide(kinds), Layer.provide(settings))
  const cache =
    opts.cache ??
    (opts.settings.proxy.judge_cache ? JudgeCache.layerMemory(opts.settings.proxy.judge_cache_size) : JudgeCache.layerNoop)
  const telemetry = opts.telemetry ?? Telemetry.layerOff
  const audit = countedAudit(opts.audit ?? auditLayer(opts.settings)).pipe(Layer.provide(metrics))
  const holds = Holds.layer
  const gate = Gate.layer.pipe(Layer.provide(Layer.mergeAll(judges, cache, audit, settings, holds, metrics, telemetry)))
  // the result screen (src/screening/): the same judges and audit sink as the gate
  const screening = Screening.layer.pipe(Layer.provide(Layer.mergeAll(judges, audit, settings)))
  return Layer.mergeAll(gate, judges, audit, settings, holds, metrics, telemetry, screening).pipe(Layer.provideMerge(upstreams))
}
