/**
 * Commands that finish with some work failed (`run`, `score`, `replay`, `report`): one summary
 * line saying what failed and where the details are, and exit 1 — unless the user accepts up to
 * N failures with `--allow-errors N` (exit 0; the summary line is still printed, on stderr).
 */
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { Console, Effect } from "effect"
import { CliFailure, withShownDefault } from "./options.js"

/** `--allow-errors N` (default 0); `what` says what is counted, e.g. "cases in error". */
export const allowErrorsOption = (what: string) =>
  Options.integer("allow-errors").pipe(
    Options.withPseudoName("N"),
    Options.withDescription(`exit 0 while at most N ${what} (the summary line is still printed)`),
    withShownDefault(0),
    Options.mapEffect((n) =>
      n >= 0 ? Effect.succeed(n) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--allow-errors must be 0 or more, got ${n}`)))
    )
  )

/**
 * Nothing failed: nothing printed. More than `allowed` failed: the line is the command's failure
 * (exit 1). Otherwise: the line on stderr, marked as allowed, and the command succeeds.
 */
export const settleFailures = (failed: number, line: string, allowed: number): Effect.Effect<void, CliFailure> =>
  failed === 0
    ? Effect.void
    : failed > allowed
    ? Effect.fail(new CliFailure({ message: line }))
    : Console.error(`vetobench: ${line} (allowed by --allow-errors ${allowed})`)

/** `1 case`, `3 cases` */
export const count = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`

export { oneLine } from "../domain/one-line.js"
