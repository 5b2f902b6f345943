/**
 * The proxy's layer graph: settings → upstreams, audit, cache, judge kinds → judges → gate →
 * HTTP server. Judge-kind plugins are passed in, so embedders and tests choose them. Metrics (one
 * prom-client registry per proxy) and Telemetry (OpenTelemetry, off unless configured) are made
 * here once and shared by the gate, the audit sink's counters and the server.
 */
import { readFileSync } from "node:fs"
import { Effect, Layer } from "effect"
import { AuditSink, AuditWriteError } from "../../layers/AuditSink.js"
import { signerFromPem } from "../domain/checkpoint.js"
import { JudgeCache } from "../../layers/JudgeCache.js"
import { Metrics } from "../../layers/Metrics.js"
import { Telemetry } from "../../layers/Telemetry.js"
import * as Upstreams from "../../layers/Upstreams.js"
import { Judges } from "../../judges/Judges.js"
import { JudgeKinds, type JudgeKindPlugin } from "../../judges/registry.js"
import { Settings } from "../config/service.js"
import type { Settings as SettingsShape } from "../config/settings.js"
import * as Gate from "../gate/Gate.js"
import { Holds } from "../gate/Holds.js"
import * as ProxyServer from "./server.js"

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

export interface ProxyLayerOptions<R> {
  readonly settings: SettingsShape
  readonly plugins: ReadonlyArray<JudgeKindPlugin<R>>
  readonly host?: string
  readonly port?: number
  /** replace the file audit sink (tests) */
  readonly audit?: Layer.Layer<AuditSink, AuditWriteError>
  /** replace the verdict cache the settings describe (tests: one cache shared by two gates) */
  readonly cache?: Layer.Layer<JudgeCache>
  /** metrics (default: `proxyLayer` follows `proxy.metrics`; `gateLayer` records nothing) */
  readonly metrics?: Layer.Layer<Metrics>
  /** tracing (default: `proxyLayer` follows `telemetry.*` and the OTEL_* variables; `gateLayer` is off) */
  readonly telemetry?: Layer.Layer<Telemetry>
  /** one access log line per request through the logger (the `proxy` command; default off) */
  readonly accessLog?: boolean
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

/** Everything the gate needs, without the HTTP server (for embedding the gate elsewhere). */
export const gateLayer = <R>(opts: ProxyLayerOptions<R>) => {
  const settings = Settings.layerValue(opts.settings)
  const upstreams = Upstreams.layer.pipe(Layer.provide(settings))
  const kinds = JudgeKinds.layer(opts.plugins)
  const judges = Judges.layer.pipe(Layer.provide(kinds), Layer.provide(settings))
  const cache =
    opts.cache ??
    (opts.settings.proxy.judge_cache ? JudgeCache.layerMemory(opts.settings.proxy.judge_cache_size) : JudgeCache.layerNoop)
  const metrics = opts.metrics ?? Metrics.layerNoop
  const telemetry = opts.telemetry ?? Telemetry.layerOff
  const audit = countedAudit(opts.audit ?? auditLayer(opts.settings)).pipe(Layer.provide(metrics))
  const holds = Holds.layer
  const gate = Gate.layer.pipe(Layer.provide(Layer.mergeAll(judges, cache, audit, settings, holds, metrics, telemetry)))
  return Layer.mergeAll(gate, judges, settings, holds, metrics, telemetry).pipe(Layer.provideMerge(upstreams))
}

export const proxyLayer = <R>(opts: ProxyLayerOptions<R>) => {
  const metrics = opts.metrics ?? (opts.settings.proxy.metrics ? Metrics.layer : Metrics.layerNoop)
  const telemetry = opts.telemetry ?? Telemetry.layerConfig(opts.settings.telemetry)
  return ProxyServer.layer({
    host: opts.host ?? opts.settings.proxy.host,
    port: opts.port ?? opts.settings.proxy.port,
    graceSeconds: opts.settings.proxy.shutdown_grace_s,
    accessLog: opts.accessLog ?? false
  }).pipe(Layer.provide(gateLayer({ ...opts, metrics, telemetry })))
}
