/**
 * The proxy's layer graph: settings → upstreams, audit, cache, judge kinds → judges → gate →
 * HTTP server. Judge-kind plugins are passed in, so embedders and tests choose them.
 */
import { readFileSync } from "node:fs"
import { Effect, Layer } from "effect"
import { AuditSink, AuditWriteError } from "../../layers/AuditSink.js"
import { signerFromPem } from "../domain/checkpoint.js"
import { JudgeCache } from "../../layers/JudgeCache.js"
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
}

/** Everything the gate needs, without the HTTP server (for embedding the gate elsewhere). */
export const gateLayer = <R>(opts: ProxyLayerOptions<R>) => {
  const settings = Settings.layerValue(opts.settings)
  const upstreams = Upstreams.layer.pipe(Layer.provide(settings))
  const kinds = JudgeKinds.layer(opts.plugins)
  const judges = Judges.layer.pipe(Layer.provide(kinds), Layer.provide(settings))
  const cache =
    opts.cache ??
    (opts.settings.proxy.judge_cache ? JudgeCache.layerMemory(opts.settings.proxy.judge_cache_size) : JudgeCache.layerNoop)
  const audit = opts.audit ?? auditLayer(opts.settings)
  const holds = Holds.layer
  const gate = Gate.layer.pipe(Layer.provide(Layer.mergeAll(judges, cache, audit, settings, holds)))
  return Layer.mergeAll(gate, judges, settings, holds).pipe(Layer.provideMerge(upstreams))
}

export const proxyLayer = <R>(opts: ProxyLayerOptions<R>) =>
  ProxyServer.layer({
    host: opts.host ?? opts.settings.proxy.host,
    port: opts.port ?? opts.settings.proxy.port,
    graceSeconds: opts.settings.proxy.shutdown_grace_s
  }).pipe(Layer.provide(gateLayer(opts)))
