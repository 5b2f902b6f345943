/**
 * The README's command table says what `--help` says: one row per command, and each row lists the
 * options that command's usage line (from `vetobench <command> --help`) has — no more, no fewer.
 * `-c/--config` is stated once above the table for every command but `policy lint`; that
 * sentence is checked against the help too.
 */
import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { tree } from "../../src/cli/commands.js"
import { type CliTree, renderHelp } from "../../src/cli/help.js"
import { VERSION } from "../../src/domain/version.js"

const README = fs.readFileSync(new URL("../../README.md", import.meta.url), "utf8")

/** Every command that runs something, with its path from the root. */
const leaves = (node: CliTree, above: ReadonlyArray<CliTree> = []): Array<ReadonlyArray<CliTree>> => {
  const here = [...above, node]
  return node.children.length === 0 ? [here] : node.children.flatMap((c) => leaves(c, here))
}

/** The lines of one section of a help text. */
const section = (help: string, title: string): Array<string> => {
  const lines = help.split("\n")
  const start = lines.indexOf(title)
  if (start < 0) return []
  const end = lines.findIndex((l, i) => i > start && l === "")
  return lines.slice(start + 1, end < 0 ? undefined : end)
}

/** The option names of a help text's usage line, each as its long name (`-e` → `--experiment`). */
const usageOptions = (help: string): Set<string> => {
  const long = new Map<string, string>()
  for (const term of section(help, "OPTIONS").filter((l) => /^ {2}-/.test(l))) {
    const names = term.trim().split(" ")[0]!.replace(/,$/, "")
    const [short, full] = term.trim().startsWith("-") && term.includes(", ") ? term.trim().split(/,? /) : [names, names]
    long.set(short!, full!)
    long.set(full!, full!)
  }
  const usage = section(help, "USAGE").join(" ")
  return new Set([...usage.matchAll(/(?<=[\s[(])(--?[a-z][a-z-]*)/g)].map((m) => long.get(m[1]!) ?? m[1]!))
}

interface Row {
  readonly command: string
  readonly options: ReadonlySet<string>
  readonly line: string
}

/** The rows of the README's command table (`| \`vetobench …\` | … |`). */
const readmeRows = (): Array<Row> => {
  const cli = README.slice(README.indexOf("\n## CLI\n"))
  const table = cli.slice(0, cli.indexOf("\n## ", 1))
  return table
    .split("\n")
    .filter((l) => l.startsWith("| `vetobench "))
    .map((line) => {
      const cell = line.slice(3, line.indexOf("` |"))
      const words = cell.split(/\s+/).slice(1)
      const command: Array<string> = []
      for (const w of words) {
        if (!/^[a-z][a-z-]*$/.test(w)) break
        command.push(w)
      }
      const rest = words.slice(command.length).join(" ")
      return { command: command.join(" "), options: new Set([...rest.matchAll(/(?<=^|[\s[(])(--?[a-z][a-z-]*)/g)].map((m) => m[1]!)), line }
    })
}

const shortToLong = (help: string): ReadonlyMap<string, string> => {
  const out = new Map<string, string>()
  for (const l of section(help, "OPTIONS")) {
    const m = /^ {2}(-[a-z]), (--[a-z][a-z-]*)/.exec(l)
    if (m !== null) out.set(m[1]!, m[2]!)
  }
  return out
}

describe("README command table ↔ --help", () => {
  const commands = leaves(tree).map((p) => ({ name: p.slice(1).map((n) => n.name).join(" "), help: renderHelp(p, { version: VERSION }, { width: 200, colour: false }) }))
  const rows = readmeRows()

  it("has one row per command, and no row for a command that does not exist", () => {
    expect(rows.map((r) => r.command).sort()).toEqual(commands.map((c) => c.name).sort())
  })

  it("each row lists the options of the command's usage line (-c/--config: the sentence above the table)", () => {
    const mismatches: Array<string> = []
    for (const c of commands) {
      const row = rows.find((r) => r.command === c.name)
      if (row === undefined) continue
      const toLong = shortToLong(c.help)
      const inReadme = new Set([...row.options].map((o) => toLong.get(o) ?? o))
      const inHelp = usageOptions(c.help)
      inHelp.delete("--config")
      inReadme.delete("--config")
      const missing = [...inHelp].filter((o) => !inReadme.has(o))
      const extra = [...inReadme].filter((o) => !inHelp.has(o))
      if (missing.length > 0 || extra.length > 0) {
        mismatches.push(`vetobench ${c.name}: README lacks [${missing.join(", ")}], has unknown [${extra.join(", ")}]`)
      }
    }
    expect(mismatches).toEqual([])
  })

  it("-c/--config: every command but policy lint has it, as the README says", () => {
    expect(README).toContain("Every subcommand but `policy lint` accepts `-c/--config FILE`")
    const without = commands.filter((c) => !usageOptions(c.help).has("--config")).map((c) => c.name)
    expect(without).toEqual(["policy lint"])
  })
})
