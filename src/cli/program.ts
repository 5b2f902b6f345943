/**
 * The `vetobench` program: a command line in, an exit code out. main.ts runs it with Node's
 * layers as the executable; tests run the same program in their own process
 * (test/support/cli.ts: `runCliInProcess`) with a Console that captures what it prints.
 *
 * Exit codes: 0 ok; 1 a command failed (one line on stderr, `vetobench: …`); 2 usage error (the
 * line is printed by help.ts or @effect/cli); 3 verify-audit: nothing failed, but a file was only
 * partially verified. Defects are not caught here: the runner reports them (main.ts: `runMain`'s
 * report, exit 1).
 */
import { CliConfig, Command, ValidationError } from "@effect/cli"
import { Console, Effect } from "effect"
import { VERSION } from "../domain/version.js"
import { root, tree } from "./commands.js"
import { helpCliConfig, withHelp } from "./help.js"
import { PARTIAL_EXIT_CODE } from "./verify-audit.js"

/** What `vetobench` exits with. */
export type ExitCode = 0 | 1 | 2 | typeof PARTIAL_EXIT_CODE

const cli = Command.run(root, { name: "vetobench", version: VERSION })

/**
 * Run `vetobench` on `argv` (as `process.argv`: the runtime and the script first, then the
 * arguments) and return its exit code. Everything it prints goes through Effect's `Console` (log
 * lines too, through the default logger) and the progress output (`ProgressOutput`); settings
 * files are named by `-c`, else the `ConfigProvider`'s `VETOBENCH_CONFIG`.
 */
export const runVetobench = (argv: ReadonlyArray<string>) =>
  withHelp(tree, { version: VERSION }, argv, cli(argv)).pipe(
    Effect.as<ExitCode>(0),
    Effect.catchIf(ValidationError.isValidationError, () => Effect.succeed<ExitCode>(2)),
    Effect.catchTags({
      CliFailure: (e) => Console.error(`vetobench: ${e.message}`).pipe(Effect.as<ExitCode>(1)),
      PartiallyVerified: () => Effect.succeed<ExitCode>(PARTIAL_EXIT_CODE)
    }),
    Effect.provideService(CliConfig.CliConfig, helpCliConfig)
  )
