/**
 * The five scores of `shared/spec/toolgate.md` §3.2 over audit records, and the reading of audit
 * files into `NineFields` (see `nine-fields.ts` for the field mapping).
 *
 * Files: JSONL (one record a line; a final line without its newline that does not parse is an
 * interrupted write and is skipped) or one JSON array of records (the Go gate's `GET /v1/records`).
 * All records of a file are of one kind:
 *
 * - `vetobench/v2` (every record has `schema: "vetobench/v2"`): records of `type: "call"` are
 *   scored; a later record of `type: "outcome"` whose `ref` names a call by `ref.seq` or
 *   `ref.hash` (both, when given, must name the same call) supplies that call's outcome; other
 *   record types are not scored. Integrity: `hash-chained` when the file's hash chain verifies
 *   (`verifyChainText`, the chain check of `verify-audit`; anchors and signatures are beyond the
 *   ordinal's top value and are not checked here), else `append-only` when every record has an
 *   integer `seq`, else `plain-log`.
 * - `toolgate` (no `schema` key): Go gate records and plain log lines. Integrity: `hash-chained`
 *   when every record has `prev_hash` and `hash` and the Go chain of §3.3 verifies (hashes
 *   recomputed: 16 hex of SHA-256 over prev_hash + the record's Go JSON with numbers kept as
 *   written); else `append-only` when every record has `prev_hash`/`hash` or declares
 *   `integrity` `append-only`/`hash-chained` (a broken or redacted chain still records order);
 *   else `plain-log`. A record's own `integrity` claim never earns `hash-chained`.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import { Data, Effect, Either } from "effect"
import { formatIssue, loadPolicyFile } from "../../judges/rule/policy.js"
import { verifyChainText } from "../domain/chain-verify.js"
import { AUDIT_SCHEMA } from "../domain/audit-record.js"
import { isObject } from "../domain/is-object.js"
import { readFailure } from "../../layers/file-errors.js"
import {
  countFieldsPresent,
  fieldsPresent,
  fromGateRecord,
  fromV2Record,
  hasDecision,
  hasText,
  INTEGRITY_ORDINAL,
  type Integrity,
  type NineFields,
  policyVerdicts,
  ruledByPolicy
} from "./nine-fields.js"

// ---------------------------------------------------------------------------------------------
// Scores

/** The §3.2 report for a record set; keys and order as the Go scorer's JSON. */
export interface AuditScores {
  readonly records: number
  readonly action_recoverability: number
  readonly lifecycle_coverage: number
  readonly policy_checkability: number
  readonly responsibility_attribution: number
  readonly evidence_integrity_ordinal: number
  readonly schema_fields_recoverable_of_9: number
}

export const SCORE_KEYS = [
  "records",
  "action_recoverability",
  "lifecycle_coverage",
  "policy_checkability",
  "responsibility_attribution",
  "evidence_integrity_ordinal",
  "schema_fields_recoverable_of_9"
] as const satisfies ReadonlyArray<keyof AuditScores>

/** §3.2 rounding to 2 decimals: add 0.005 and truncate (0.125 → 0.13, 0.124 → 0.12). */
export const round2 = (x: number): number => Math.trunc((x + 0.005) * 100) / 100

export interface ScoreOptions {
  /** R: the number of policy rules (≥ 0) */
  readonly rules: number
}

/**
 * The five scores (each the mean over records of a per-record value, rounded by `round2`) and the
 * mean number of the nine fields present. An empty set scores 0 everywhere.
 * @throws RangeError when `rules` is negative or not finite.
 */
export const scoreRecords = (fields: ReadonlyArray<NineFields>, opts: ScoreOptions): AuditScores => {
  const R = opts.rules
  if (!Number.isFinite(R) || R < 0) throw new RangeError(`rules must be a finite number ≥ 0, got ${R}`)
  const n = fields.length
  const mean = (per: (f: NineFields) => number): number =>
    n === 0 ? 0 : round2(fields.reduce((sum, f) => sum + per(f), 0) / n)
  const one = (b: boolean): number => (b ? 1 : 0)
  return {
    records: n,
    action_recoverability: mean((f) => {
      const p = fieldsPresent(f)
      return one(p.tool_name && p.argument_values && p.outcome)
    }),
    lifecycle_coverage: mean((f) => {
      const p = fieldsPresent(f)
      // request (tool) + decision + execution (the record exists) + outcome
      return (one(p.tool_name) + one(p.decision) + 1 + one(p.outcome)) / 4
    }),
    policy_checkability: mean((f) => (one(hasText(f.scope)) + R * one(fieldsPresent(f).argument_values)) / (R + 1)),
    responsibility_attribution: mean(
      (f) => (one(hasText(f.principal)) + one(hasText(f.agent_id)) + one(hasText(f.session_id)) + one(hasText(f.approval))) / 4
    ),
    evidence_integrity_ordinal: mean((f) => INTEGRITY_ORDINAL[f.integrity]),
    schema_fields_recoverable_of_9: mean(countFieldsPresent)
  }
}

// ---------------------------------------------------------------------------------------------
// JSON with number literals kept (the Go chain hashes numbers exactly as received)

/** A JSON number as written (`1250.0` stays `1250.0`). */
export class RawNumber {
  constructor(readonly literal: string) {}
}
export type RawJson = null | boolean | string | RawNumber | ReadonlyArray<RawJson> | { readonly [key: string]: RawJson }
export type RawObject = { readonly [key: string]: RawJson }

export const isRawObject = (v: RawJson | undefined): v is RawObject =>
  typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof RawNumber)

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y

/**
 * Strict JSON (RFC 8259) parse that keeps number literals as `RawNumber`; a duplicate key keeps its
 * last value. @throws SyntaxError.
 */
export const parseRawJson = (text: string): RawJson => {
  let i = 0
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at position ${i}`)
  }
  const ws = () => {
    while (i < text.length) {
      const c = text.charCodeAt(i)
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++
      else break
    }
  }
  const str = (): string => {
    const start = i++
    for (;;) {
      if (i >= text.length) fail("unterminated string")
      const c = text.charCodeAt(i)
      if (c === 0x22) break
      if (c < 0x20) fail("control character in string")
      i += c === 0x5c ? 2 : 1
    }
    i++
    return JSON.parse(text.slice(start, i)) as string // decodes and validates the escapes
  }
  const value = (depth: number): RawJson => {
    if (depth > 512) fail("nesting too deep")
    ws()
    const c = text[i]
    if (c === "{") {
      i++
      const entries = new Map<string, RawJson>()
      ws()
      if (text[i] === "}") {
        i++
        return {}
      }
      for (;;) {
        ws()
        if (text[i] !== '"') fail("expected a key")
        const key = str()
        ws()
        if (text[i] !== ":") fail("expected ':'")
        i++
        entries.set(key, value(depth + 1))
        ws()
        if (text[i] === ",") i++
        else if (text[i] === "}") {
          i++
          // fromEntries defines own properties, so a key such as "__proto__" stays data
          return Object.fromEntries(entries) as RawObject
        } else fail("expected ',' or '}'")
      }
    }
    if (c === "[") {
      i++
      const items: Array<RawJson> = []
      ws()
      if (text[i] === "]") {
        i++
        return items
      }
      for (;;) {
        items.push(value(depth + 1))
        ws()
        if (text[i] === ",") i++
        else if (text[i] === "]") {
          i++
          return items
        } else fail("expected ',' or ']'")
      }
    }
    if (c === '"') return str()
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length
        return v
      }
    }
    NUMBER.lastIndex = i
    const m = NUMBER.exec(text)
    if (m === null) return fail("unexpected character")
    i += m[0].length
    return new RawNumber(m[0])
  }
  const v = value(0)
  ws()
  if (i !== text.length) fail("unexpected data after the JSON value")
  return v
}

/** The value as ordinary JavaScript (numbers parsed). */
export const toPlain = (v: RawJson): unknown => {
  if (v instanceof RawNumber) return Number(v.literal)
  if (Array.isArray(v)) return v.map(toPlain)
  if (isRawObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toPlain(x)]))
  return v
}

// ---------------------------------------------------------------------------------------------
// The Go gate's chain (§3.3)

export const GO_GENESIS_HASH = "0".repeat(16)

/** §3.1 field order; `ALWAYS` are emitted even when empty. */
const GO_FIELDS = [
  "ts", "agent_id", "tool", "args", "decision", "rule", "scope", "approval", "outcome", "integrity", "principal",
  "session_id", "tenant_id", "contract_id", "cert_id", "trace_id", "call_id", "provider", "approver", "prev_hash"
] as const
const GO_ALWAYS: ReadonlySet<string> = new Set(["ts", "agent_id", "tool", "decision", "integrity", "provider"])

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/** Go `encoding/json` string: JSON.stringify but `<` `>` `&` U+2028 U+2029 escaped, invalid UTF-16 → U+FFFD. */
const goString = (s: string): string =>
  JSON.stringify(s.replace(LONE_SURROGATE, "\uFFFD")).replace(
    /[<>&\u2028\u2029]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`
  )

const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))

/** A value inside `args` as Go re-encodes it: maps with keys in byte order, numbers as written. */
const goValue = (v: RawJson): string => {
  if (v === null) return "null"
  if (typeof v === "boolean") return v ? "true" : "false"
  if (typeof v === "string") return goString(v)
  if (v instanceof RawNumber) return v.literal
  if (Array.isArray(v)) return `[${v.map(goValue).join(",")}]`
  const obj = v as RawObject
  const keys = Object.keys(obj).sort(byteOrder)
  return `{${keys.map((k) => `${goString(k)}:${goValue(obj[k]!)}`).join(",")}}`
}

/** The bytes the gate hashes for a record (with `prev_hash`, without `hash`); null when it cannot be a gate record. */
export const goCanonicalRecord = (rec: RawObject): string | null => {
  const parts: Array<string> = []
  for (const key of GO_FIELDS) {
    const v = rec[key]
    if (key === "args") {
      if (v === undefined || v === null) continue
      if (!isRawObject(v)) return null
      if (Object.keys(v).length > 0) parts.push(`"args":${goValue(v)}`)
      continue
    }
    if (v !== undefined && v !== null && typeof v !== "string") return null
    const s = v ?? ""
    if (s !== "" || GO_ALWAYS.has(key)) parts.push(`${goString(key)}:${goString(s)}`)
  }
  return `{${parts.join(",")}}`
}

/** §3.3: first 16 hex of SHA-256(prev_hash + canonical record); null when the record cannot be hashed. */
export const goRecordHash = (rec: RawObject): string | null => {
  const body = goCanonicalRecord(rec)
  const prev = rec.prev_hash
  if (body === null || typeof prev !== "string") return null
  return createHash("sha256").update(prev + body, "utf8").digest("hex").slice(0, 16)
}

export interface ChainCheck {
  readonly ok: boolean
  /** "ok" or "record n: …" */
  readonly message: string
}

/** Walk a Go chain from genesis; report the first failing record (1-based). */
export const verifyGoChain = (records: ReadonlyArray<RawObject>): ChainCheck => {
  let prev = GO_GENESIS_HASH
  for (const [i, rec] of records.entries()) {
    if (rec.prev_hash !== prev) return { ok: false, message: `record ${i + 1}: prev_hash does not match the previous record's hash` }
    const hash = goRecordHash(rec)
    if (hash === null || rec.hash !== hash) return { ok: false, message: `record ${i + 1}: hash mismatch (record was modified)` }
    prev = hash
  }
  return { ok: true, message: "ok" }
}

// ---------------------------------------------------------------------------------------------
// Reading a file's records

export type AuditFormat = "vetobench/v2" | "toolgate" | "empty"

export interface AuditAnalysis {
  readonly format: AuditFormat
  /** the file's integrity, shared by all its records */
  readonly integrity: Integrity
  /** the chain check behind `integrity` ("ok", "record n: …", or why there is no chain) */
  readonly chain: string
  /** one entry per scored (call) record */
  readonly fields: ReadonlyArray<NineFields>
  /** some records were ruled by a policy of rules (rule/toolgate judge, Go gate decision): R is needed */
  readonly needsRules: boolean
  /** the policy versions named by native `rule` verdicts (`sha256:…` of the policy file) */
  readonly policyVersions: ReadonlyArray<string>
}

type PlainRecord = Readonly<Record<string, unknown>>

/**
 * A file's records, plain (what every check reads), and the same records with their number literals
 * kept (what re-hashing the Go gate's chain needs; parsed on demand, `Left` when the strict parser
 * refuses a line `JSON.parse` took: nesting deeper than 512). JSONL lines go through `JSON.parse`; a
 * line it refuses is parsed strictly again for the message. (A `vetobench/v2` record nested deeper
 * than 512 is read, and its chain then fails: no record the sink writes is that deep.)
 */
interface ParsedRecords {
  readonly records: ReadonlyArray<PlainRecord>
  readonly raw: () => Either.Either<ReadonlyArray<RawObject>, string>
  readonly jsonl: boolean
}

const parseRecords = (text: string): Either.Either<ParsedRecords, string> => {
  const trimmed = text.trimStart()
  if (trimmed.startsWith("[")) {
    let all: RawJson
    try {
      all = parseRawJson(text)
    } catch (e) {
      return Either.left(`not valid JSON (${(e as Error).message})`)
    }
    const list = all as ReadonlyArray<RawJson>
    const bad = list.findIndex((r) => !isRawObject(r))
    if (bad >= 0) return Either.left(`record ${bad + 1}: not a JSON object`)
    const raw = list as ReadonlyArray<RawObject>
    return Either.right({ records: raw.map((r) => toPlain(r) as PlainRecord), raw: () => Either.right(raw), jsonl: false })
  }
  const lines = text.split("\n")
  const records: Array<PlainRecord> = []
  const at: Array<number> = []
  for (const [i, line] of lines.entries()) {
    if (line.trim() === "") continue
    let rec: unknown
    try {
      rec = JSON.parse(line)
    } catch {
      // a last line without its newline is an interrupted write: skip it
      if (i === lines.length - 1) break
      try {
        parseRawJson(line)
      } catch (e) {
        return Either.left(`line ${i + 1}: not valid JSON (${(e as Error).message})`)
      }
      return Either.left(`line ${i + 1}: not valid JSON`)
    }
    if (!isObject(rec)) return Either.left(`line ${i + 1}: not a JSON object`)
    records.push(rec)
    at.push(i)
  }
  const raw = (): Either.Either<ReadonlyArray<RawObject>, string> => {
    const out: Array<RawObject> = []
    for (const i of at) {
      try {
        out.push(parseRawJson(lines[i]!) as RawObject)
      } catch (e) {
        return Either.left(`line ${i + 1}: not valid JSON (${(e as Error).message})`)
      }
    }
    return Either.right(out)
  }
  return Either.right({ records, raw, jsonl: true })
}

const analyseV2 = (text: string, records: ReadonlyArray<PlainRecord>, jsonl: boolean): AuditAnalysis => {
  const check = verifyChainText(jsonl ? text : records.map((r) => JSON.stringify(r) + "\n").join(""))
  const integrity: Integrity = check.ok
    ? "hash-chained"
    : records.every((r) => Number.isInteger(r.seq))
      ? "append-only"
      : "plain-log"
  const calls: Array<Readonly<Record<string, unknown>>> = []
  const joined: Array<string | null> = []
  const bySeq = new Map<number, number>()
  const byHash = new Map<string, number>()
  for (const rec of records) {
    if (rec.type === "call" || rec.type === undefined) {
      const at = calls.length
      calls.push(rec)
      joined.push(null)
      if (typeof rec.seq === "number") bySeq.set(rec.seq, at)
      if (typeof rec.hash === "string") byHash.set(rec.hash, at)
    } else if (rec.type === "outcome" && typeof rec.outcome === "string" && rec.outcome !== "") {
      const ref = typeof rec.ref === "object" && rec.ref !== null ? (rec.ref as Readonly<Record<string, unknown>>) : {}
      const viaSeq = typeof ref.seq === "number" ? bySeq.get(ref.seq) : undefined
      const viaHash = typeof ref.hash === "string" ? byHash.get(ref.hash) : undefined
      const named = typeof ref.seq === "number" && typeof ref.hash === "string" ? (viaSeq === viaHash ? viaSeq : undefined) : (viaSeq ?? viaHash)
      if (named !== undefined) joined[named] = rec.outcome
    }
  }
  return {
    format: "vetobench/v2",
    integrity,
    chain: check.message,
    fields: calls.map((rec, i) => fromV2Record(rec, { integrity, outcome: joined[i] ?? null })),
    needsRules: calls.some(ruledByPolicy),
    policyVersions: [
      ...new Set(calls.flatMap((rec) => policyVerdicts(rec).flatMap((v) => (v.kind === "rule" && v.version !== null ? [v.version] : []))))
    ]
  }
}

const analyseGate = (raw: ReadonlyArray<RawObject>, records: ReadonlyArray<PlainRecord>): AuditAnalysis => {
  const chained = raw.every((r) => typeof r.prev_hash === "string" && typeof r.hash === "string")
  const check: ChainCheck = chained ? verifyGoChain(raw) : { ok: false, message: "no hash chain: records lack prev_hash/hash" }
  const integrity: Integrity = check.ok
    ? "hash-chained"
    : raw.every((r) => chained || r.integrity === "append-only" || r.integrity === "hash-chained")
      ? "append-only"
      : "plain-log"
  return {
    format: "toolgate",
    integrity,
    chain: check.message,
    fields: records.map((rec) => fromGateRecord(rec, { integrity })),
    needsRules: records.some((r) => hasDecision(typeof r.decision === "string" ? r.decision : null)),
    policyVersions: []
  }
}

/** Read a file's text into its scored records; `Left` is a one-line reason. */
export const analyseAuditText = (text: string): Either.Either<AuditAnalysis, string> =>
  Either.flatMap(parseRecords(text), ({ records, raw, jsonl }) => {
    if (records.length === 0) {
      return Either.right({ format: "empty", integrity: "plain-log", chain: "no records", fields: [], needsRules: false, policyVersions: [] })
    }
    const kinds = records.map((r, i): Either.Either<"v2" | "gate", string> =>
      r.schema === undefined ? Either.right("gate") : r.schema === AUDIT_SCHEMA ? Either.right("v2") : Either.left(`record ${i + 1}: unsupported schema ${JSON.stringify(r.schema)}`)
    )
    const bad = kinds.find(Either.isLeft)
    if (bad !== undefined) return Either.left(bad.left)
    const v2 = kinds.filter((k) => Either.isRight(k) && k.right === "v2").length
    if (v2 !== 0 && v2 !== records.length) return Either.left(`mixes ${AUDIT_SCHEMA} records with records without a schema`)
    return v2 > 0 ? Either.right(analyseV2(text, records, jsonl)) : Either.map(raw(), (r) => analyseGate(r, records))
  })

// ---------------------------------------------------------------------------------------------
// Files

export type AuditScoreReason = "not-found" | "unreadable" | "invalid" | "rules-required"

/** Scoring could not read or score a file (or a policy file); `message` is `<file>: <detail>`. */
export class AuditScoreError extends Data.TaggedError("AuditScoreError")<{
  readonly file: string
  readonly reason: AuditScoreReason
  readonly detail: string
}> {
  constructor(fields: { readonly file: string; readonly reason: AuditScoreReason; readonly detail: string }) {
    super(fields)
    this.message = `${fields.file}: ${fields.detail}`
  }
}

const codeOf = (cause: unknown): unknown =>
  typeof cause === "object" && cause !== null ? (cause as { code?: unknown }).code : undefined

/** A file's text; a missing or unreadable file is an `AuditScoreError`. */
export const readText = (file: string): Effect.Effect<string, AuditScoreError> =>
  Effect.tryPromise({
    try: () => fs.readFile(file, "utf8"),
    catch: (cause) => new AuditScoreError({ file, reason: codeOf(cause) === "ENOENT" ? "not-found" : "unreadable", detail: readFailure(cause) })
  })

/** Read and analyse one audit file. */
export const loadAuditFile = (file: string): Effect.Effect<AuditAnalysis & { readonly file: string }, AuditScoreError> =>
  readText(file).pipe(
    Effect.flatMap((text) =>
      Either.match(analyseAuditText(text), {
        onLeft: (detail) => Effect.fail(new AuditScoreError({ file, reason: "invalid", detail })),
        onRight: (a) => Effect.succeed({ ...a, file })
      })
    )
  )

/**
 * R and the version of an aex-toolgate policy file (§1.1; JSON, or YAML by extension), loaded and
 * validated as the `rule` judge loads it: R = the number of its `rules`. `file` is resolved
 * against the working directory.
 */
export const loadPolicy = (file: string): Effect.Effect<{ readonly rules: number; readonly version: string }, AuditScoreError> =>
  loadPolicyFile(file, process.cwd()).pipe(
    Effect.map((p) => ({ rules: p.decoded.spec.rules.length, version: p.version })),
    Effect.mapError(
      (e) =>
        new AuditScoreError({
          file,
          reason: e.issues.some((i) => i.message.startsWith("policy file not found")) ? "not-found" : "invalid",
          detail: e.issues.map(formatIssue).join("; ")
        })
    )
  )
