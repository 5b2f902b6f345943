/**
 * How far a shard got: the rows of its result CSV (`main_attacker.py` writes the header when it
 * starts, then appends one row per finished episode, `\r\n`-terminated, with the whole transcript
 * in the quoted `messages` field).
 *
 * A row counts when it is complete: it has every column of the header and the text after it ends
 * with a line break (a row torn by a killed process is not counted). Parsing is the scoring
 * module's RFC 4180 reader (`parseCsv`), which copies large quoted fields in one slice.
 *
 * Resume rule (reference §7.8, made exact): a shard is done when, for every attacker tool of its
 * tool file, the CSV has at least as many rows for that tool as main_attacker runs for it
 * (min(task_num, tasks of its agent)); otherwise the whole shard runs again. Counting per tool
 * (not just rows ≥ tools × task_num) means a CSV left by a different selection never passes.
 */
import * as fs from "node:fs"
import { parseCsv } from "../../scoring/asb-results.js"

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
