/**
 * Telemetry: OpenTelemetry traces of the proxy, through `@effect/opentelemetry`.
 *
 * Off unless an OTLP endpoint is configured (`telemetry.otlp_endpoint`, or the standard
 * `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `OTEL_SDK_DISABLED=true`
 * switches it off). When off, `tracer` is null and the proxy makes no span at all: no tracer call,
 * no span object, no header.
 *
 * When on, the proxy makes its spans explicitly with this tracer (a request span, a `chat` span per
 * upstream call, an `execute_tool` span per judge ruling); the tracer is not installed as the
 * process's default and no OpenTelemetry global is registered, so two proxies in one process (tests)
 * keep their spans apart. `propagate` (`telemetry.propagate`, default false) decides whether the
 * upstream request carries a W3C `traceparent` header.
 *
 * The exporter is OTLP/HTTP (protobuf-free JSON); its other options (`OTEL_EXPORTER_OTLP_HEADERS`,
 * timeouts) and the resource (`OTEL_SERVICE_NAME`, default `vetobench`; `OTEL_RESOURCE_ATTRIBUTES`)
 * come from the standard environment variables.
 *
 * The OpenTelemetry SDK is imported only when tracing is configured: a proxy without it never
 * loads those modules.
 */
import type { SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Config, Context, Effect, Layer, Option, Tracer } from "effect"
import type { TelemetrySettings } from "../src/config/settings.js"
import { VERSION } from "../src/domain/version.js"

export interface TelemetryShape {
  /** the tracer the proxy's spans go to; null = tracing off */
  readonly tracer: Tracer.Tracer | null
  /** send `traceparent` to upstreams */
  readonly propagate: boolean
}

export interface TelemetryOptions {
  readonly propagate?: boolean
}

/** the SDK modules, loaded on first use */
const sdk = Effect.promise(() =>
  Promise.all([
    import("@effect/opentelemetry/NodeSdk"),
    import("@effect/opentelemetry/Resource"),
    import("@effect/opentelemetry/Tracer"),
    import("@opentelemetry/sdk-trace-base")
  ])
)

export class Telemetry extends Context.Tag("vetobench/Telemetry")<Telemetry, TelemetryShape>() {
  /** no tracing */
  static layerOff: Layer.Layer<Telemetry> = Layer.succeed(Telemetry, { tracer: null, propagate: false })

  /** spans through a span processor made when the layer is built (flushed and shut down on release) */
  static layerProcessor = (processor: () => Effect.Effect<SpanProcessor>, opts: TelemetryOptions = {}): Layer.Layer<Telemetry> =>
    Layer.unwrapEffect(
      Effect.gen(function* () {
        const [NodeSdk, Resource, OtelTracer] = yield* sdk
        const name = yield* Effect.orDie(Config.option(Config.nonEmptyString("OTEL_SERVICE_NAME")))
        // service.name `vetobench` unless OTEL_SERVICE_NAME says otherwise; OTEL_RESOURCE_ATTRIBUTES is honoured
        const resource = Resource.layerFromEnv(
          Option.isSome(name) ? { "service.version": VERSION } : { "service.name": "vetobench", "service.version": VERSION }
        )
        const provider = NodeSdk.layerTracerProvider(yield* processor()).pipe(Layer.provideMerge(resource))
        return Layer.effect(
          Telemetry,
          Effect.map(OtelTracer.make, (otel): TelemetryShape => ({ tracer: spansOnly(otel), propagate: opts.propagate ?? false }))
        ).pipe(Layer.provide(OtelTracer.layerTracer), Layer.provide(provider))
      })
    )

  /** every span handed to `exporter` as it ends (tests: `InMemorySpanExporter`) */
  static layerExporter = (exporter: SpanExporter, opts: TelemetryOptions = {}): Layer.Layer<Telemetry> =>
    Telemetry.layerProcessor(() => Effect.map(sdk, ([, , , base]) => new base.SimpleSpanProcessor(exporter)), opts)

  /** OTLP/HTTP: `url` is the traces URL; undefined = the exporter reads the OTEL_EXPORTER_OTLP_* variables */
  static layerOtlp = (url: string | undefined, opts: TelemetryOptions = {}): Layer.Layer<Telemetry> =>
    Telemetry.layerProcessor(
      () =>
        Effect.zipWith(sdk, Effect.promise(() => import("@opentelemetry/exporter-trace-otlp-http")), ([, , , base], otlp) =>
          new base.BatchSpanProcessor(new otlp.OTLPTraceExporter(url !== undefined ? { url } : {}))
        ),
      opts
    )

  /**
   * What the settings and the environment ask for: `telemetry.otlp_endpoint` (traces to
   * `<endpoint>/v1/traces`), else the OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variables, else off.
   */
  static layerConfig = (settings: TelemetrySettings): Layer.Layer<Telemetry> =>
    Layer.unwrapEffect(
      Effect.gen(function* () {
        const env = (name: string) => Effect.orDie(Config.option(Config.nonEmptyString(name)))
        const disabled = yield* env("OTEL_SDK_DISABLED")
        if (Option.isSome(disabled) && disabled.value.trim().toLowerCase() === "true") return Telemetry.layerOff
        const opts = { propagate: settings.propagate }
        if (settings.otlp_endpoint !== null) return Telemetry.layerOtlp(`${settings.otlp_endpoint}/v1/traces`, opts)
        const traces = yield* env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        const base = yield* env("OTEL_EXPORTER_OTLP_ENDPOINT")
        return Option.isSome(traces) || Option.isSome(base) ? Telemetry.layerOtlp(undefined, opts) : Telemetry.layerOff
      })
    )
}

/**
 * The OpenTelemetry tracer's spans without its `context` hook, which enters the span's OpenTelemetry
 * context around every step of every fiber (for libraries instrumented with OpenTelemetry; the proxy
 * has none, and it cost ~1 ms CPU per streamed request). Parents come from Effect's own span context.
 */
const spansOnly = (otel: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => otel.span(name, parent, context, links, startTime, kind, options),
    context: (f) => f()
  })

/** The W3C `traceparent` of a span (version 00). */
export const traceparentOf = (span: Tracer.Span): string => `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`
