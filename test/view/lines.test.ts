/** Streamed JSONL: byte offsets that read each line back, a partial last line left for later, long lines skipped. */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { forEachLine, type Line, readLineAt } from "../../src/view/lines.js"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-view-lines-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

const lines = async (file: string, opts: Parameters<typeof forEachLine>[2] = {}) => {
  const out: Array<Line> = []
  const end = await Effect.runPromise(forEachLine(file, (l) => out.push(l), opts))
  return { out, end }
}

describe("forEachLine / readLineAt", () => {
  it("offsets and lengths are bytes (multi-byte text), blank lines skipped, each line read back by offset", async () => {
    const file = path.join(dir, "a.jsonl")
    const rows = ['{"t":"µs – 温度 🌡"}', "", '{"t":"<script>"}', "   ", '{"t":"end"}']
    fs.writeFileSync(file, rows.join("\n") + "\n")
    const { end, out } = await lines(file)
    expect(out.map((l) => l.text)).toEqual([rows[0], rows[2], rows[4]])
    expect(end).toBe(fs.statSync(file).size)
    for (const l of out) expect(await Effect.runPromise(readLineAt(file, l.offset, l.bytes))).toBe(l.text)
  })

  it("a last line without its newline: handed on by default, left for the next read when the writer may still be writing", async () => {
    const file = path.join(dir, "b.jsonl")
    fs.writeFileSync(file, '{"n":1}\n{"n":2')
    expect((await lines(file)).out.map((l) => l.text)).toEqual(['{"n":1}', '{"n":2'])
    const first = await lines(file, { unterminated: false })
    expect(first.out.map((l) => l.text)).toEqual(['{"n":1}'])
    expect(first.end).toBe(8)
    fs.appendFileSync(file, '}\n{"n":3}\n')
    const next = await lines(file, { from: first.end, unterminated: false })
    expect(next.out.map((l) => l.text)).toEqual(['{"n":2}', '{"n":3}'])
    expect(next.out[0]!.offset).toBe(8)
  })

  it("lines across read chunks come whole; an absent file is no lines", async () => {
    const file = path.join(dir, "c.jsonl")
    const big = "x".repeat(3 * 1024 * 1024)
    fs.writeFileSync(file, `{"a":"${big}"}\n{"b":1}\n`)
    const { out } = await lines(file)
    expect(out.map((l) => l.text.length)).toEqual([big.length + 8, 7])
    expect((await lines(path.join(dir, "none.jsonl"))).out).toEqual([])
  })
})
