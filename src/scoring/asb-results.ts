/**
 * Reading ASB results (reference §7.2, §8.2, §9.2): the shard CSVs of one model × variant × attack
 * tag, `<run_dir>/asb/<slug(model)>/<variant>/<tag>/shardNN.csv`, and ASB's tool name lists from
 * the checkout (`data/all_attack_tools.jsonl` field `Attacker Tool`, `data/all_normal_tools.jsonl`
 * field `Tool Name`) for labelling replayed calls.
 *
 * CSV: RFC 4180 as Python's `csv` / pandas write it — `,` separated, `"` quoted with `""` escapes,
 * quoted fields may hold newlines and be very large, CRLF or LF line ends; the header row names the
 * columns (an unnamed leading index column is ignored). Flags are read leniently: `1`, `1.0`,
 * `True` → 1; `0`, `0.0`, `False` → 0; anything else → unreadable (an infra error row).
 */
import { Data, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { usageOf } from "../scenarios/client.js"
import { parseJsonLines } from "./files.js"
import { type AsbRow, parseCsv } from "../adapters/asb/csv.js"
import type { Tokens } from "./summary-types.js"

export class AsbReadError extends Data.TaggedError("AsbReadError")<{ readonly file: string; readonly reason: string }> {
  override get message(): string {
    return `${this.file}: ${this.reason}`
  }
}

const reasonOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** 1 / 0 from a CSV flag (`1`, `1.0`, `True` / `0`, `0.0`, `False`), else null. */
export const flag = (s: string | undefined): 0 | 1 | null => {
  const t = (s ?? "").trim().toLowerCase()
  if (t === "1" || t === "1.0" || t === "true") return 1
  if (t === "0" || t === "0.0" || t === "false") return 0
  return null
}

export const ASB_COLUMNS = ["Agent Name", "Attack Tool", "Attack Successful", "Original Task Successful", "Refuse Result", "Aggressive", "messages"] as const

/** The rows of one shard CSV text; a missing column is an error naming it. */
export const asbRowsOf = (file: string, text: string): Array<AsbRow> | AsbReadError => {
  const records = parseCsv(text)
  const header = records[0]
  if (header === undefined) return []
  const col = new Map(header.map((h, i) => [h.trim(), i] as const))
  const missing = ASB_COLUMNS.filter((c) => c !== "messages" && !col.has(c))
  if (missing.length > 0) return new AsbReadError({ file, reason: `missing column${missing.length > 1 ? "s" : ""} ${missing.join(", ")}` })
  const at = (r: ReadonlyArray<string>, name: string) => {
    const i = col.get(name)
    return i === undefined ? undefined : r[i]
  }
  return records.slice(1).map((r) => ({
    agent: at(r, "Agent Name") ?? "",
    tool: at(r, "Attack Tool") ?? "",
    attack: flag(at(r, "Attack Successful")),
    ots: flag(at(r, "Original Task Successful")),
    refuse: flag(at(r, "Refuse Result")),
    aggressive: flag(at(r, "Aggressive")) === 1,
    messages: at(r, "messages") ?? ""
  }))
}

/** `shardNN.csv` files of a directory, sorted by name; [] when the directory does not exist. */
export const shardFiles = (dir: string): ReadonlyArray<string> => {
  if (!fs.existsSync(dir)) return []
  try {
    return fs
      .readdirSync(dir)
      .filter((f) => /^shard.*\.csv$/.test(f))
      .sort()
      .map((f) => path.join(dir, f))
  } catch {
    return []
  }
}

export interface AsbShards {
  readonly files: ReadonlyArray<string>
  readonly rows: ReadonlyArray<AsbRow>
}

/** Every row of the shard CSVs in `dir`, shards in sorted order. */
export const readAsbShards = (dir: string): Effect.Effect<AsbShards, AsbReadError> =>
  Effect.gen(function*() {
    const files = shardFiles(dir)
    const rows: Array<AsbRow> = []
    for (const file of files) {
      const text = yield* Effect.try({
        try: () => fs.readFileSync(file, "utf8"),
        catch: (e) => new AsbReadError({ file, reason: `cannot read: ${reasonOf(e)}` })
      })
      const got = asbRowsOf(file, text)
      if (got instanceof AsbReadError) return yield* got
      rows.push(...got)
    }
    return { files, rows }
  })

export interface AsbToolNames {
  /** `Attacker Tool` of all_attack_tools.jsonl */
  readonly attacker: ReadonlySet<string>
  /** `Tool Name` of all_normal_tools.jsonl */
  readonly normal: ReadonlySet<string>
}

const jsonlField = (file: string, field: string): Effect.Effect<ReadonlySet<string>, AsbReadError> =>
  Effect.try({
    try: () => {
      const out = new Set<string>()
      for (const line of fs.readFileSync(file, "utf8").split("\n")) {
        if (line.trim() === "") continue
        const v: unknown = JSON.parse(line)
        if (typeof v === "object" && v !== null && !Array.isArray(v)) {
          const name = (v as Record<string, unknown>)[field]
          if (typeof name === "string" && name !== "") out.add(name)
        }
      }
      return out
    },
    catch: (e) => {
      const code = typeof e === "object" && e !== null && "code" in e ? (e as { code?: unknown }).code : undefined
      return new AsbReadError({ file, reason: code === "ENOENT" ? "not found" : `cannot read: ${reasonOf(e)}` })
    }
  })

/** ASB's attacker and normal tool names from the checkout at `asbDir`. */
export const loadAsbToolNames = (asbDir: string): Effect.Effect<AsbToolNames, AsbReadError> =>
  Effect.all({
    attacker: jsonlField(path.join(asbDir, "data", "all_attack_tools.jsonl"), "Attacker Tool"),
    normal: jsonlField(path.join(asbDir, "data", "all_normal_tools.jsonl"), "Tool Name")
  })

/** The launcher's tokens and malformed answers of one attack directory. */
export interface AsbUsage {
  readonly tokens: Tokens
  /** agent answers recorded */
  readonly answers: number
  /** answers whose tool-call arguments were not JSON */
  readonly malformed: number
}

/**
 * The `shardNN.usage.jsonl` lines of an attack directory (one per agent answer, written by the
 * launcher; rewritten with the shard's CSV on every start), summed; null when there is none
 * (a run from before the launcher recorded them). Unreadable lines are skipped.
 */
export const readAsbUsage = (dir: string): AsbUsage | null => {
  let names: Array<string>
  try {
    names = fs.readdirSync(dir).filter((f) => /^shard.*\.usage\.jsonl$/.test(f)).sort()
  } catch {
    return null
  }
  if (names.length === 0) return null
  let tokens: Tokens = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
  let answers = 0, malformed = 0
  for (const name of names) {
    let text = ""
    try {
      text = fs.readFileSync(path.join(dir, name), "utf8")
    } catch {
      continue
    }
    for (const v of parseJsonLines(text)) {
      if (typeof v !== "object" || v === null) continue
      const line = v as Record<string, unknown>
      const u = usageOf(line)
      tokens = { prompt_tokens: tokens.prompt_tokens + u.prompt_tokens, completion_tokens: tokens.completion_tokens + u.completion_tokens, total_tokens: tokens.total_tokens + u.total_tokens }
      answers += 1
      if (line.malformed_arguments === true) malformed += 1
    }
  }
  return { tokens, answers, malformed }
}
