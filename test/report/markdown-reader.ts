/** Reading `report.md` in tests: a section's lines, a table row's cells. */
import { expect } from "vitest"

/** The non-empty lines under `heading` up to the next heading (the heading must be there). */
export const section = (md: string, heading: string): Array<string> => {
  const lines = md.split("\n")
  const at = lines.indexOf(heading)
  expect(at, heading).toBeGreaterThanOrEqual(0)
  const end = lines.findIndex((l, i) => i > at && /^#{1,3} /.test(l))
  return lines.slice(at + 1, end < 0 ? undefined : end).filter((l) => l !== "")
}

/** The cells of a Markdown table row, trimmed. */
export const cells = (row: string | undefined) => (row ?? "").slice(1, -1).split(" | ").map((c) => c.trim())
