/**
 * The proxy's layer graph: the gate's (src/gate/live.ts: settings → outbound HTTP → upstreams,
 * audit, cache, judge kinds → judges → gate) with the HTTP server on top. Judge-kind plugins are
 * passed in, so embedders and tests choose them. Metrics (one prom-client registry per proxy) and
 * Telemetry (OpenTelemetry, off unless configured) are made here once and shared by the gate, the
 * audit sink's counters and the server.
 */
import { Layer } from "effect"
import { Metrics } from "../../layers/Metrics.js"
import { Telemetry } from "../../layers/Telemetry.js"
import { gateLayer, type GateLayerOptions } from "../gate/live.js"
import { McpSessions } from "./mcp-route.js"
import * as ProxyServer from "./server.js"

export { auditLayer, gateLayer, type GateLayerOptions } from "../gate/live.js"

export interface ProxyLayerOptions<R> extends GateLayerOptions<R> {
  readonly host?: string
  readonly port?: number
  /** metrics (default: `proxy.metrics`) */
  readonly metrics?: Layer.Layer<Metrics>
  /** tracing (default: `telemetry.*` and the OTEL_* variables) */
  readonly telemetry?: Layer.Layer<Telemetry>
  /** one access log line per request through the logger (the `proxy` command; default off) */
  readonly accessLog?: boolean
}

export const proxyLayer = <R>(opts: ProxyLayerOptions<R>) => {
  const metrics = opts.metrics ?? (opts.settings.proxy.metrics ? Metrics.layer : Metrics.layerNoop)
  const telemetry = opts.telemetry ?? Telemetry.layerConfig(opts.settings.telemetry)
  return ProxyServer.layer({
    host: opts.host ?? opts.settings.proxy.host,
    port: opts.port ?? opts.settings.proxy.port,
    graceSeconds: opts.settings.proxy.shutdown_grace_s,
    recordSeconds: opts.settings.proxy.judge_timeout_s,
    accessLog: opts.accessLog ?? false
  }).pipe(Layer.provide(Layer.merge(gateLayer({ ...opts, metrics, telemetry }), McpSessions.layer)))
}
