/**
 * `vetobench audit score FILE… [--rules N | --policy FILE] [--json]` — the five scores of
 * `shared/spec/toolgate.md` §3.2 per audit file (and `all` over every record when several files
 * are given), with the mean number of the nine fields present. A table by default; `--json`
 * prints the scores under the §3.2 keys.
 *
 * R (the number of policy rules in policy_checkability) comes from `--rules N`, or from
 * `--policy FILE` (an aex-toolgate policy, loaded and validated as the `rule` judge loads it: its
 * `rules` count; records of a native `rule` judge must name that file's version). Without either
 * R = 0, which is
 * refused when a file's records were ruled by a policy of rules (a `rule`/`toolgate` judge or
 * layer, or Go gate records with decisions): their score would silently be wrong.
 * A missing or unreadable file, or an invalid record, fails the command with one line (exit 1).
 */
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { type AuditFormat, type AuditScores, loadAuditFile, loadPolicy, SCORE_KEYS, scoreRecords } from "../audit/score.js"
import type { Integrity } from "../audit/nine-fields.js"
import { CliFailure, configOption } from "./options.js"

export interface FileScores {
  readonly file: string
  readonly format: AuditFormat
  readonly integrity: Integrity
  /** the chain check behind `integrity` */
  readonly chain: string
  readonly scores: AuditScores
}

export interface ScoreReport {
  /** R used for policy_checkability */
  readonly rules: number
  readonly rulesFrom: "--rules" | "--policy" | "default"
  readonly files: ReadonlyArray<FileScores>
  /** over the records of every file; only when several files were scored */
  readonly all: AuditScores | null
}

export interface AuditScoreOptions {
  readonly rules: Option.Option<number>
  readonly policy: Option.Option<string>
}

/** Score the files; every failure is a one-line `CliFailure`. */
export const scoreAuditFiles = (paths: ReadonlyArray<string>, opts: AuditScoreOptions): Effect.Effect<ScoreReport, CliFailure> =>
  Effect.gen(function* () {
    if (Option.isSome(opts.rules) && Option.isSome(opts.policy)) {
      return yield* new CliFailure({ message: "give --rules or --policy, not both" })
    }
    if (Option.isSome(opts.rules) && !(Number.isInteger(opts.rules.value) && opts.rules.value >= 0)) {
      return yield* new CliFailure({ message: `--rules must be an integer ≥ 0, got ${opts.rules.value}` })
    }
    const policy = Option.isSome(opts.policy) ? Option.some(yield* loadPolicy(opts.policy.value)) : Option.none()
    const fromPolicy = Option.map(policy, (p) => p.rules)
    const loaded = yield* Effect.forEach(paths, loadAuditFile)
    if (Option.isSome(policy)) {
      // native rule verdicts name the policy file's version: R from another policy would be wrong
      for (const f of loaded) {
        const other = f.policyVersions.find((v) => v !== policy.value.version)
        if (other !== undefined) {
          return yield* new CliFailure({
            message: `${f.file}: its records were ruled by policy version ${other}, but --policy is ${policy.value.version}`
          })
        }
      }
    }
    const rulesFrom: ScoreReport["rulesFrom"] = Option.isSome(opts.rules) ? "--rules" : Option.isSome(fromPolicy) ? "--policy" : "default"
    const rules = Option.getOrElse(Option.orElse(opts.rules, () => fromPolicy), () => 0)
    if (rulesFrom === "default") {
      const ruled = loaded.find((f) => f.needsRules)
      if (ruled !== undefined) {
        return yield* new CliFailure({
          message: `${ruled.file}: its records were ruled by a policy of rules (rule/toolgate judge or gate decisions); give --rules N (the policy's number of rules) or --policy FILE`
        })
      }
    }
    const files = loaded.map(
      (f): FileScores => ({ file: f.file, format: f.format, integrity: f.integrity, chain: f.chain, scores: scoreRecords(f.fields, { rules }) })
    )
    const all = loaded.length > 1 ? scoreRecords(loaded.flatMap((f) => f.fields), { rules }) : null
    return { rules, rulesFrom, files, all }
  }).pipe(Effect.catchTag("AuditScoreError", (e) => Effect.fail(new CliFailure({ message: e.message }))))

/** The §3.2 keys in §3.2 order (and nothing else). */
const ordered = (s: AuditScores): AuditScores => {
  const out: Record<string, number> = {}
  for (const k of SCORE_KEYS) out[k] = s[k]
  return out as unknown as AuditScores
}

const COLUMNS = [
  ["records", "records"],
  ["recover", "action_recoverability"],
  ["lifecycle", "lifecycle_coverage"],
  ["checkable", "policy_checkability"],
  ["attribution", "responsibility_attribution"],
  ["integrity", "evidence_integrity_ordinal"],
  ["fields of 9", "schema_fields_recoverable_of_9"]
] as const satisfies ReadonlyArray<readonly [string, keyof AuditScores]>

/**
 * The report as printed: a table (one row per file, `all` when several; numbers to 2 decimals,
 * then the file's chain) or, with `json`, one JSON object
 * `{ rules, files: [{ file, format, integrity, chain, scores }], all? }` whose `scores` / `all`
 * carry exactly the §3.2 keys.
 */
export const renderScores = (report: ScoreReport, opts: { readonly json: boolean }): string => {
  if (opts.json) {
    return JSON.stringify(
      {
        rules: report.rules,
        files: report.files.map((f) => ({ file: f.file, format: f.format, integrity: f.integrity, chain: f.chain, scores: ordered(f.scores) })),
        ...(report.all !== null ? { all: ordered(report.all) } : {})
      },
      null,
      2
    )
  }
  const rows: Array<ReadonlyArray<string>> = [["file", ...COLUMNS.map(([h]) => h), "chain"]]
  const cells = (name: string, s: AuditScores, chain: string) => [
    name,
    ...COLUMNS.map(([, k]) => (k === "records" ? String(s[k]) : s[k].toFixed(2))),
    chain
  ]
  for (const f of report.files) rows.push(cells(f.file, f.scores, f.chain === "ok" ? f.integrity : `${f.integrity} (${f.chain})`))
  if (report.all !== null) rows.push(cells("all", report.all, ""))
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)))
  const last = widths.length - 1
  const line = (r: ReadonlyArray<string>) =>
    r
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : c === last ? cell : cell.padStart(widths[c]!)))
      .join("  ")
      .trimEnd()
  const source = report.rulesFrom === "default" ? "default" : `from ${report.rulesFrom}`
  return [`R = ${report.rules} policy rules (${source})`, ...rows.map(line)].join("\n")
}

/** What the command prints, as text; failures are one-line `CliFailure`s. */
export const auditScore = (paths: ReadonlyArray<string>, opts: AuditScoreOptions & { readonly json: boolean }) =>
  Effect.map(scoreAuditFiles(paths, opts), (report) => renderScores(report, { json: opts.json }))

const files = Args.text({ name: "FILE" }).pipe(Args.atLeast(1), Args.withDescription("audit files (vetobench/v2 JSONL, aex-toolgate records, plain logs)"))
const rules = Options.integer("rules").pipe(
  Options.withPseudoName("N"),
  Options.optional,
  Options.withDescription("R, the number of policy rules (policy_checkability); required for records ruled by a policy")
)
const policyFile = Options.text("policy").pipe(Options.withPseudoName("FILE"), Options.optional, Options.withDescription("aex-toolgate policy file (JSON/YAML): R = the number of its rules"))
const json = Options.boolean("json").pipe(Options.withDescription("print JSON with the keys of the scoring rules"))

export const auditScoreCommand = Command.make("score", { config: configOption, files, rules, policy: policyFile, json }, ({ files, rules, policy, json }) =>
  auditScore(files, { rules, policy, json }).pipe(Effect.flatMap(Console.log))
).pipe(Command.withDescription("score audit records: the five scores of the nine-field authorisation record"))
