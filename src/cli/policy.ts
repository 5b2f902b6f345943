/**
 * `vetobench policy …` — tooling for the `rule` judge's policy files (docs/policy.md).
 *
 * - `policy skeleton --benchmark agent-safetybench [--data FILE] [--environments DIR] [--split FILE]
 *   [--out FILE] [--catalogue FILE]`: a skeleton policy (every tool granted, no rules) and a tool
 *   catalogue (environment, tool, description, schema; keyed `<Env>.<tool>`). The data file is
 *   `--data`, else `<paths.asbench_dir>/data/released_data.json` from the settings; the schema files
 *   are in `--environments`, else `environments/` beside the data file or one level up. With
 *   `--split`, only the split's dev and test cases count. Output paths are relative to the working
 *   directory; parent directories are created; `.yaml`/`.yml` writes YAML.
 * - `policy lint FILE`: load the policy as the judge would; errors (the policy is refused) exit 1,
 *   warnings are printed and exit 0.
 */
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as YAML from "yaml"
import { formatWarning, lintPolicy } from "../../judges/rule/lint.js"
import { formatIssue, loadPolicyFile } from "../../judges/rule/policy.js"
import { asbenchSkeleton, environmentsDirFor } from "../adapters/agent-safetybench/skeleton.js"
import { asbenchDataFile, asbenchDataOption, CliFailure, configOption, withShownDefault } from "./options.js"

export const DEFAULT_SKELETON_OUT = "runs/policies/agent-safetybench.json"

const fail = (message: string) => new CliFailure({ message })

const benchmark = Options.choice("benchmark", ["agent-safetybench"]).pipe(Options.withDescription("the benchmark whose tools the skeleton lists"))
const environments = Options.text("environments").pipe(
  Options.withPseudoName("DIR"),
  Options.optional,
  Options.withDescription("directory of the environments' tool schemas <Name>.json (default: environments/ beside the data file, or one level up)")
)
const split = Options.text("split").pipe(Options.withPseudoName("FILE"), Options.optional, Options.withDescription("a split file (from vetobench split): only its dev and test cases (default: every case)"))
const out = Options.text("out").pipe(Options.withPseudoName("FILE"), Options.withDescription("the skeleton policy to write (JSON; YAML for .yaml/.yml)"), withShownDefault(DEFAULT_SKELETON_OUT))
const catalogue = Options.text("catalogue").pipe(Options.withPseudoName("FILE"), Options.optional, Options.withDescription("the tool catalogue to write (default: <out>.catalogue.json beside the policy)"))

const catalogueFor = (policyFile: string) => `${policyFile.replace(/\.(json|ya?ml)$/i, "")}.catalogue.json`

const write = (file: string, value: unknown) =>
  Effect.try({
    try: () => {
      fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
      fs.writeFileSync(file, /\.ya?ml$/i.test(file) ? YAML.stringify(value) : `${JSON.stringify(value, null, 2)}\n`)
    },
    catch: (e) => fail(`${file}: cannot write: ${e instanceof Error ? e.message : String(e)}`)
  })

export const skeletonCommand = Command.make(
  "skeleton",
  { config: configOption, benchmark, data: asbenchDataOption, environments, split, out, catalogue },
  ({ catalogue, config, data, environments, out, split }) =>
    Effect.gen(function* () {
      const dataPath = yield* asbenchDataFile(config, data)
      const envDir = Option.getOrElse(environments, () => environmentsDirFor(dataPath))
      const sk = yield* asbenchSkeleton({ data: dataPath, environments: envDir, split: Option.getOrNull(split) }).pipe(Effect.mapError((e) => fail(e.message)))
      const catalogueFile = Option.getOrElse(catalogue, () => catalogueFor(out))
      yield* write(out, sk.policy)
      yield* write(catalogueFile, sk.catalogue)
      const c = sk.catalogue
      yield* Console.log(`wrote ${out}: skeleton policy with ${sk.entries} tool entries (${c.tool_names} tool names, plus <Env>.<tool> for each environment of a shared name), every scope granted, no rules`)
      yield* Console.log(`wrote ${catalogueFile}: ${c.tools} tools of ${c.environments} environments offered by ${c.cases} cases, keyed <Env>.<tool>`)
      yield* Console.log(`${c.shared_names} tool names occur in more than one environment (e.g. ${sk.shared.slice(0, 3).join(", ")}): a policy addresses one environment's tool as <Env>.<tool>, the shared name otherwise (docs/policy.md)`)
    })
).pipe(Command.withDescription("write a skeleton policy (every tool granted, no rules) and a tool catalogue for a benchmark"))

const policyFile = Args.text({ name: "FILE" }).pipe(Args.withDescription("the policy file (JSON, or YAML for .yaml/.yml)"))

export const lintCommand = Command.make("lint", { file: policyFile }, ({ file }) =>
  Effect.gen(function* () {
    const loaded = yield* Effect.either(loadPolicyFile(file, process.cwd()))
    if (loaded._tag === "Left") {
      const issues = loaded.left.issues
      for (const i of issues) yield* Console.error(`error: ${formatIssue(i)}`)
      return yield* fail(`${file}: refused, ${issues.length} error${issues.length === 1 ? "" : "s"}`)
    }
    const p = loaded.right
    const warnings = lintPolicy(p)
    for (const w of warnings) yield* Console.log(`warning: ${formatWarning(w)}`)
    const ext = p.extension.spec
    const roles = [...ext.tools.values()].reduce((a, r) => a + r.length, 0)
    yield* Console.log(
      `${file}: ok (${p.version}): provider ${p.compiled.provider}, ${p.compiled.tools.size} tools, ${p.decoded.spec.rules.length} rules` +
        (ext.sections.size > 0 ? `; vetobench: ${roles} tool roles, ${ext.requires.length} requires, ${ext.trajectory.length} trajectory rules` : "") +
        `; ${warnings.length} warning${warnings.length === 1 ? "" : "s"}`
    )
  })
).pipe(Command.withDescription("check a policy file: errors (exit 1) and warnings (exit 0)"))

/** The subcommands, in the order help lists them. */
export const policySubcommands = [skeletonCommand, lintCommand] as const

export const policyCommand = Command.make("policy").pipe(
  Command.withDescription("policy files of the rule judge: lint, benchmark skeletons"),
  Command.withSubcommands(policySubcommands)
)
