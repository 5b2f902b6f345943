/**
 * How far a shard got: the rows of its result CSV (`main_attacker.py` writes the header when it
 * starts, then appends one row per finished episode, `\r\n`-terminated, with the whole transcript
 * in the quoted `messages` field).
 *
 * A row counts when it is complete: it has every column of the header and the text after it ends
 * with a line break (a row torn by a killed process is not counted). Parsing is the RFC 4180
 * reader below (`parseCsv`, also scoring's), which copies large quoted fields in one slice.
 *
 * Resume rule (reference §7.8, made exact): a shard is done when, for every attacker tool of its
 * tool file, the CSV has at least as many rows for that tool as main_attacker runs for it
 * (min(task_num, tasks of its agent)); otherwise the whole shard runs again. Counting per tool
 * (not just rows ≥ tools × task_num) means a CSV left by a different selection never passes.
 */
import * as fs from "node:fs"

/** One ASB CSV row, as read (`src/scoring/asb-results.ts` `asbRowsOf`). */
export interface AsbRow {
  readonly agent: string
  readonly tool: string
  /** Attack Successful */
  readonly attack: 0 | 1 | null
  /** Original Task Successful */
  readonly ots: 0 | 1 | null
  /** Refuse Result */
  readonly refuse: 0 | 1 | null
  readonly aggressive: boolean
  readonly messages: string
}

/** The records of a CSV text (header row first), each a list of fields. */
export const parseCsv = (text: string): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let field = ""
  let i = 0
  let quoted = false
  let started = false // the current record has content (so a trailing newline adds no empty record)
  const n = text.length
  const endField = () => {
    row.push(field)
    field = ""
  }
  const endRow = () => {
    endField()
    rows.push(row)
    row = []
    started = false
  }
  if (text.charCodeAt(0) === 0xfeff) i = 1 // BOM
  while (i < n) {
    const c = text[i]!
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"'
          i += 2
          continue
        }
        quoted = false
        i += 1
        continue
      }
      // copy a plain run at once (fields with whole transcripts are large)
      const next = text.indexOf('"', i)
      const end = next < 0 ? n : next
      field += text.slice(i, end)
      i = end
      continue
    }
    if (c === '"') {
      quoted = true
      started = true
      i += 1
    } else if (c === ",") {
      endField()
      started = true
      i += 1
    } else if (c === "\r" || c === "\n") {
      if (started || field !== "") endRow()
      i += c === "\r" && text[i + 1] === "\n" ? 2 : 1
    } else {
      field += c
      started = true
      i += 1
    }
  }
  if (started || field !== "") endRow()
  return rows
}

export interface CsvTally {
  /** complete rows */
  readonly rows: number
  /** complete rows per `Attack Tool` */
  readonly byTool: ReadonlyMap<string, number>
}

export const EMPTY_TALLY: CsvTally = { rows: 0, byTool: new Map() }

/** The complete rows of a result CSV text. */
export const tallyCsv = (text: string): CsvTally => {
  const records = parseCsv(text)
  const header = records[0]
  if (header === undefined) return EMPTY_TALLY
  const toolCol = header.findIndex((h) => h.trim() === "Attack Tool")
  let body = records.slice(1)
  if (!text.endsWith("\n")) body = body.slice(0, -1)
  const byTool = new Map<string, number>()
  let rows = 0
  for (const r of body) {
    if (r.length < header.length) continue
    rows += 1
    const tool = toolCol < 0 ? "" : r[toolCol] ?? ""
    byTool.set(tool, (byTool.get(tool) ?? 0) + 1)
  }
  return { rows, byTool }
}

/** The tally of a CSV file; empty when it does not exist or cannot be read. */
export const readTally = (file: string): CsvTally => {
  try {
    return tallyCsv(fs.readFileSync(file, "utf8"))
  } catch {
    return EMPTY_TALLY
  }
}

/** Every tool has its rows: `expected(tool)` each. */
export const shardDone = <T extends { readonly name: string }>(tally: CsvTally, tools: ReadonlyArray<T>, expected: (tool: T) => number): boolean =>
  tools.every((t) => (tally.byTool.get(t.name) ?? 0) >= expected(t))
