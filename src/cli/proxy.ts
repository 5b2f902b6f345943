/** `vetobench proxy [--host] [--port] [--log-level]` — serve veto-proxy until interrupted. */
import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer, Logger, LogLevel, Option } from "effect"
import { defaultPlugins } from "../../judges/plugins.js"
import { proxyLayer } from "../proxy/live.js"
import { ProxyServer } from "../proxy/server.js"
import { CliFailure, configOption, settingsFrom } from "./options.js"

const host = Options.text("host").pipe(Options.optional, Options.withDescription("bind address (default proxy.host)"))
const port = Options.integer("port").pipe(Options.optional, Options.withDescription("port (default proxy.port)"))
export const logLevel = Options.choice("log-level", ["trace", "debug", "info", "warning", "error", "none"]).pipe(
  Options.withDefault("warning" as const),
  Options.withDescription("log level")
)

export const toLogLevel = (l: "trace" | "debug" | "info" | "warning" | "error" | "none") =>
  ({ trace: LogLevel.Trace, debug: LogLevel.Debug, info: LogLevel.Info, warning: LogLevel.Warning, error: LogLevel.Error, none: LogLevel.None })[l]

export const proxyCommand = Command.make(
  "proxy",
  { config: configOption, host, port, logLevel },
  ({ config, host, port, logLevel }) =>
    Effect.gen(function* () {
      const settings = yield* settingsFrom(config)
      const layer = proxyLayer({
        settings,
        plugins: defaultPlugins,
        host: Option.getOrElse(host, () => settings.proxy.host),
        port: Option.getOrElse(port, () => settings.proxy.port)
      })
      const announce = Layer.effectDiscard(
        Effect.flatMap(ProxyServer, (s) =>
          Console.log(
            `veto-proxy ${s.url}/v1 — upstreams: ${settings.upstreams.map((u) => u.name).join(", ")}; audit: ${settings.proxy.audit_dir}; fail_policy: ${settings.proxy.fail_policy}`
          )
        )
      )
      yield* Layer.launch(announce.pipe(Layer.provideMerge(layer))).pipe(
        Effect.catchTags({
          JudgeConfigError: (e) => Effect.fail(new CliFailure({ message: `${settings.file}: ${e.message}` })),
          AuditWriteError: (e) => Effect.fail(new CliFailure({ message: `audit: ${e.file}: ${e.reason}` })),
          ServeError: (e) => Effect.fail(new CliFailure({ message: `cannot serve: ${String(e.cause ?? e)}` }))
        })
      )
    }).pipe(Logger.withMinimumLogLevel(toLogLevel(logLevel)))
).pipe(Command.withDescription("serve veto-proxy: the gated OpenAI-compatible proxy"))
