/**
 * `vetobench proxy [--host] [--port] [--log-level] [--log-format]` — serve veto-proxy until interrupted.
 * One access line per request at level info (`--log-format text|json`, `proxy.log_format`).
 *
 * Once it serves, it checks that every configured judge's model is served (one GET /models per
 * upstream involved, `preflight.ts`) and logs a warning per missing model (and per upstream that
 * does not answer); it serves all the same. `--port` outside 0–65535 is a usage error (exit 2); a
 * port in use is one line naming `--port` and `proxy.port` (exit 1).
 */
import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Console, Effect, Layer, Logger, LogLevel, Option } from "effect"
import { defaultPlugins } from "../../judges/plugins.js"
import { keepServingWithoutStdout, withProxyLogger } from "../proxy/access-log.js"
import { proxyLayer } from "../proxy/live.js"
import { ProxyServer } from "../proxy/server.js"
import { CliFailure, configOption, settingsFrom, withShownDefault } from "./options.js"
import { judgeModelWarnings } from "./preflight.js"

const host = Options.text("host").pipe(Options.withPseudoName("HOST"), Options.optional, Options.withDescription("bind address (default: proxy.host of the settings, else 127.0.0.1)"))
const port = Options.integer("port").pipe(Options.withPseudoName("N"), Options.optional, Options.withDescription("port, 0 for any free one (default: proxy.port of the settings, else 8080)"))
export const logLevel = Options.choice("log-level", ["trace", "debug", "info", "warning", "error", "none"]).pipe(
  Options.withDescription("how much to log (info: one access line per request, and warnings and errors; warning: without the access log)"),
  withShownDefault("info")
)
const logFormat = Options.choice("log-format", ["text", "json"]).pipe(
  Options.optional,
  Options.withDescription("access log and log line format: text (key=value) or json (one object per line) (default: proxy.log_format of the settings, else text)")
)

/** `--port` outside 0–65535 is a usage error (exit 2, one line), not a failure to listen. */
const portInRange = <A extends Option.Option<number>>(o: Options.Options<A>): Options.Options<A> =>
  o.pipe(
    Options.mapEffect((p) =>
      Option.isSome(p) && !(Number.isInteger(p.value) && p.value >= 0 && p.value <= 65535)
        ? Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--port must be a port number from 0 to 65535, got ${p.value}`)))
        : Effect.succeed(p)
    )
  )

/** Why the server could not listen, naming the option or setting that fixes it. */
const serveFailure = (cause: unknown, where: { host: string; port: number; file: string }): string => {
  const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : ""
  const addr = `${where.host}:${where.port}`
  switch (code) {
    case "EADDRINUSE":
      return `cannot serve: ${addr} is already in use (EADDRINUSE); choose another port with --port N or proxy.port in ${where.file}`
    case "EACCES":
      return `cannot serve: no permission to listen on ${addr} (EACCES); choose a port above 1023 with --port N or proxy.port in ${where.file}`
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
      return `cannot serve: cannot bind ${where.host} (${code}); choose an address of this machine with --host H or proxy.host in ${where.file}`
    default:
      return `cannot serve on ${addr}: ${cause instanceof Error ? cause.message : String(cause)}`
  }
}

export const toLogLevel = (l: "trace" | "debug" | "info" | "warning" | "error" | "none") =>
  ({ trace: LogLevel.Trace, debug: LogLevel.Debug, info: LogLevel.Info, warning: LogLevel.Warning, error: LogLevel.Error, none: LogLevel.None })[l]

export const proxyCommand = Command.make(
  "proxy",
  { config: configOption, host, port: portInRange(port), logLevel, logFormat },
  ({ config, host, port, logLevel, logFormat }) =>
    Effect.gen(function* () {
      const settings = yield* settingsFrom(config)
      const bind = { host: Option.getOrElse(host, () => settings.proxy.host), port: Option.getOrElse(port, () => settings.proxy.port), file: settings.file }
      const layer = proxyLayer({
        settings,
        plugins: defaultPlugins,
        host: bind.host,
        port: bind.port,
        accessLog: true
      })
      const announce = Layer.effectDiscard(
        Effect.flatMap(ProxyServer, (s) =>
          Console.log(
            `veto-proxy ${s.url}/v1 — upstreams: ${settings.upstreams.map((u) => u.name).join(", ")}; audit: ${settings.proxy.audit_dir}; fail_policy: ${settings.proxy.fail_policy}`
          )
        )
      )
      // once serving: are the judges' models served? A warning per missing one; the proxy keeps serving
      const checkJudgeModels = Layer.scopedDiscard(
        Effect.zipRight(
          ProxyServer,
          Effect.forkScoped(Effect.flatMap(judgeModelWarnings(settings), (lines) => Effect.forEach(lines, (l) => Effect.logWarning(l), { discard: true })))
        )
      )
      yield* Effect.scoped(Effect.zipRight(keepServingWithoutStdout, Layer.launch(Layer.merge(announce, checkJudgeModels).pipe(Layer.provideMerge(layer))))).pipe(
        Effect.catchTags({
          JudgeConfigError: (e) => Effect.fail(new CliFailure({ message: `${settings.file}: ${e.message}` })),
          AuditWriteError: (e) => Effect.fail(new CliFailure({ message: `audit: ${e.file}: ${e.reason}` })),
          ServeError: (e) => Effect.fail(new CliFailure({ message: serveFailure(e.cause ?? e, bind) }))
        }),
        withProxyLogger(Option.getOrElse(logFormat, () => settings.proxy.log_format))
      )
    }).pipe(Logger.withMinimumLogLevel(toLogLevel(logLevel)))
).pipe(Command.withDescription("serve veto-proxy: the gated OpenAI-compatible proxy"))
