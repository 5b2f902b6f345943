/**
 * `vetobench view [RUNS_DIR] [--port N] [--host H] [--proxy URL]` — a local web app over a runs
 * directory (src/view/): the experiments and runs, each report, the episodes of a run with filters
 * (variant, category, outcome, changed by the gate) and one episode's trajectory beside its audit
 * rulings and the paired arm's; with `--proxy`, the proxy's pending holds to approve or reject.
 *
 * RUNS_DIR defaults to `runs/` under the repo root (as experiments' `run_dir` default: the root of
 * the settings file, `-c`, `$VETOBENCH_CONFIG` or configs/vetobench.yaml; the file need not exist).
 * Binds 127.0.0.1 unless `--host` says otherwise (a non-loopback address gets a warning: the view
 * has no login). `--port 0` (the default) takes a free port. Prints the URL, then serves until
 * SIGINT/SIGTERM (exit 0). The operator token for `--proxy` comes from `$VETOBENCH_OPERATOR_TOKEN`,
 * never from the command line, and is never printed. Bad arguments: one line, exit 2.
 */
import { Args, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Config, Console, Effect, Option, Redacted } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { repoRootFor } from "../config/yaml-file.js"
import { OPERATOR_TOKEN_ENV, proxyBase, type ProxyTarget } from "../view/holds.js"
import { isLoopback, serveView } from "../view/server.js"
import { CliFailure, configOption } from "./options.js"

const runsDir = Args.text({ name: "RUNS_DIR" }).pipe(
  Args.optional,
  Args.withDescription("the folder of experiments to show (default: runs/ under the repo root, where experiments' run_dir defaults live)")
)
const port = Options.integer("port").pipe(Options.withPseudoName("N"), Options.withDefault(0), Options.withDescription("port; 0 (the default) for any free one"))
const host = Options.text("host").pipe(
  Options.withPseudoName("HOST"),
  Options.optional,
  Options.withDescription("bind address (default: 127.0.0.1); an address other than loopback shows the runs (and the holds) to the network, without a login")
)
const proxy = Options.text("proxy").pipe(
  Options.withPseudoName("URL"),
  Options.optional,
  Options.withDescription(`veto-proxy to show pending holds of and decide them (its URL, e.g. http://127.0.0.1:8080/v1); the operator token from $${OPERATOR_TOKEN_ENV}`)
)

/** A usage error: one line on stderr, exit 2 (program.ts). */
const usage = (message: string) =>
  Console.error(`vetobench view: ${message}`).pipe(Effect.zipRight(Effect.fail(ValidationError.invalidArgument(HelpDoc.p(message)))))

const isDir = (p: string) => {
  try {
    return fs.statSync(p).isDirectory()
  } catch {
    return false
  }
}

export const viewCommand = Command.make("view", { config: configOption, runsDir, port, host, proxy }, ({ config, host, port, proxy, runsDir }) =>
  Effect.gen(function*() {
    if (!(Number.isInteger(port) && port >= 0 && port <= 65535)) return yield* usage(`--port must be a port number from 0 to 65535, got ${port}`)
    const bind = Option.getOrElse(host, () => "127.0.0.1")
    if (bind.trim() === "") return yield* usage("--host must not be empty")
    const root = Option.match(runsDir, { onNone: () => path.join(repoRootFor(config), "runs"), onSome: (d) => path.resolve(d) })
    if (!isDir(root)) return yield* usage(`runs directory ${root} does not exist or is not a folder`)
    let target: ProxyTarget | null = null
    if (Option.isSome(proxy)) {
      const parsed = proxyBase(proxy.value)
      if ("problem" in parsed) return yield* usage(parsed.problem)
      const token = yield* Config.option(Config.redacted(OPERATOR_TOKEN_ENV)).pipe(Effect.orElseSucceed(() => Option.none<Redacted.Redacted<string>>()))
      if (Option.isNone(token) || Redacted.value(token.value).trim() === "") return yield* usage(`--proxy needs the proxy's operator token in $${OPERATOR_TOKEN_ENV}`)
      target = { base: parsed.base, token: Redacted.make(Redacted.value(token.value).trim()) }
    }
    if (!isLoopback(bind)) yield* Console.error(`vetobench view: warning: serving on ${bind}, not loopback: anyone who can reach it sees the runs${target === null ? "" : " and can decide holds"} (no login)`)
    yield* Effect.scoped(
      Effect.gen(function*() {
        const server = yield* serveView({ root, host: bind, port, proxy: target }).pipe(
          Effect.mapError((e) => new CliFailure({ message: `view: cannot serve on ${bind}:${port}: ${e.cause instanceof Error ? e.cause.message : String(e.cause ?? e)}` }))
        )
        yield* Console.log(`vetobench view: ${server.root}${target === null ? "" : ` · holds of ${target.base}`}`)
        yield* Console.log(`open ${server.url}   (Ctrl-C to stop)`)
        return yield* Effect.never
      })
    )
  })
).pipe(Command.withDescription("browse experiments, reports, episodes and rulings in a local web app; with --proxy, decide pending holds"))
