/**
 * Write the three report files into the run directory: `report.md`, `summary.json` (strict JSON,
 * indent 1) and `report.html`. Each file is written to a temporary name and renamed, so a reader
 * never sees half a report; the run directory is created if needed. The summary's notes (which
 * may quote an error message) are written with URL credentials redacted.
 */
import { Data, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { redactUrlsIn } from "../domain/redact-url.js"
import type { Summary } from "../scoring/summary-types.js"
import { renderHtml } from "./html.js"
import { strictJson } from "./json.js"
import { renderMarkdown } from "./markdown.js"

export class ReportWriteError extends Data.TaggedError("ReportWriteError")<{ readonly file: string; readonly cause: unknown }> {
  override get message(): string {
    const why = this.cause instanceof Error ? this.cause.message : String(this.cause)
    return `cannot write ${this.file}: ${why}`
  }
}

export interface ReportFiles {
  readonly markdown: string
  readonly json: string
  readonly html: string
}

export const reportFiles = (runDir: string): ReportFiles => ({
  markdown: path.join(runDir, "report.md"),
  json: path.join(runDir, "summary.json"),
  html: path.join(runDir, "report.html")
})

const writeAtomic = (file: string, text: string): Effect.Effect<void, ReportWriteError> =>
  Effect.try({
    try: () => {
      fs.mkdirSync(path.dirname(file), { recursive: true })
      const tmp = `${file}.${process.pid}.tmp`
      try {
        fs.writeFileSync(tmp, text)
        fs.renameSync(tmp, file)
      } finally {
        fs.rmSync(tmp, { force: true })
      }
    },
    catch: (cause) => new ReportWriteError({ file, cause })
  })

/** Render and write the report of `summary` into `runDir`; returns the three paths. */
export const writeReport = (summary: Summary, runDir: string): Effect.Effect<ReportFiles, ReportWriteError> =>
  Effect.gen(function*() {
    const files = reportFiles(runDir)
    const shown: Summary = { ...summary, notes: summary.notes.map((n) => redactUrlsIn(n)) }
    yield* writeAtomic(files.markdown, renderMarkdown(shown))
    yield* writeAtomic(files.json, strictJson(shown))
    yield* writeAtomic(files.html, renderHtml(shown))
    return files
  })
