/**
 * `vetobench split [-c FILE] [--data FILE] [--n-test 300] [--n-dev 48] [--seed 0] [--out FILE]` —
 * a stratified dev/test split of Agent-SafetyBench's cases (reference §7.3, our own PRNG).
 *
 * The data file is `--data`, else `<paths.asbench_dir>/data/released_data.json` from the
 * settings file when it exists. `--out` is relative to the working directory; parent
 * directories are created. When the split has fewer cases than asked (a risk category with fewer
 * cases than its share), a second line says so and why.
 */
import { Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
import { groupByCategory, makeSplit, readCases, shortfallLine, splitShortfall, writeSplit } from "../adapters/agent-safetybench/split.js"
import { isValidSeed, MAX_SEED } from "../domain/prng.js"
import { asbenchDataFile, asbenchDataOption, CliFailure, configOption, withShownDefault } from "./options.js"

export const DEFAULT_SPLIT_OUT = "runs/splits/asbench-pilot.json"

const nTest = Options.integer("n-test").pipe(Options.withPseudoName("N"), Options.withDescription("test cases, spread evenly over risk categories"), withShownDefault(300))
const nDev = Options.integer("n-dev").pipe(Options.withPseudoName("N"), Options.withDescription("dev cases (judge prompt development only)"), withShownDefault(48))
const seed = Options.integer("seed").pipe(Options.withPseudoName("N"), Options.withDescription(`PRNG seed, 0..${MAX_SEED}`), withShownDefault(0))
const out = Options.text("out").pipe(Options.withPseudoName("FILE"), Options.withDescription("split JSON to write (parent directories are created)"), withShownDefault(DEFAULT_SPLIT_OUT))

const fail = (message: string) => new CliFailure({ message })

export const splitCommand = Command.make(
  "split",
  { config: configOption, data: asbenchDataOption, nTest, nDev, seed, out },
  ({ config, data, nDev, nTest, out, seed }) =>
    Effect.gen(function*() {
      if (nTest < 0) return yield* fail(`--n-test must be 0 or more, got ${nTest}`)
      if (nDev < 0) return yield* fail(`--n-dev must be 0 or more, got ${nDev}`)
      if (!isValidSeed(seed)) return yield* fail(`--seed must be an integer from 0 to ${MAX_SEED}, got ${seed}`)
      const file = yield* asbenchDataFile(config, data)
      const cases = yield* readCases(file).pipe(Effect.mapError((e) => fail(e.message)))
      if (cases.length === 0) return yield* fail(`${file}: no cases`)
      const split = makeSplit(cases, { nTest, nDev, seed })
      yield* writeSplit(out, split).pipe(Effect.mapError((e) => fail(e.message)))
      const k = groupByCategory(cases).length
      yield* Console.log(`wrote ${out}: ${split.test.length} test, ${split.dev.length} dev cases (${k} categories, seed ${seed})`)
      // fewer than asked: say so, and why (the split is written all the same)
      const short = splitShortfall(cases, { nTest, nDev, seed }, split)
      if (short !== null) yield* Console.log(shortfallLine(short, { nTest, nDev, seed }, cases.length, k))
    })
).pipe(Command.withDescription("make the Agent-SafetyBench dev/test split (stratified by risk category, seeded)"))
