/**
 * `--help` as vetobench prints it, and the usage errors a user most often makes (an unknown
 * subcommand or option, with "did you mean …?"), handled before @effect/cli parses the command line.
 *
 * @effect/cli's own help (pitfall 22) always carries ANSI escapes, never wraps, names a subcommand
 * without its parents (`$ keygen`) and starts every option with its type ("A user-defined piece of
 * text."). Here the same information — @effect/cli's help documents and usages, read through its
 * public `HelpDoc` and `Usage` types — is laid out again:
 * - the usage line names the whole command (`vetobench audit keygen [-c FILE] …`);
 * - every option and argument shows its description (the type line and "This setting is
 *   optional." are dropped: the usage line says both);
 * - options without a pseudo name get a placeholder (`N`, `TEXT`) instead of `integer`, `text`;
 *   a plain default is not in @effect/cli's help: give it with `withShownDefault` (options.ts);
 * - text wraps to the terminal's width (`COLUMNS`, else 80, when stdout is not a terminal);
 * - headings and option names are bold only when stdout is a terminal, `NO_COLOR` is not set and
 *   `TERM` is not `dumb`.
 *
 * Everything else on the command line (parsing, `--version`, validation of values) stays with
 * @effect/cli.
 */
import { HelpDoc, ValidationError } from "@effect/cli"
import * as CliConfig from "@effect/cli/CliConfig"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import type * as Span from "@effect/cli/HelpDoc/Span"
import type * as Usage from "@effect/cli/Usage"
import { Console, Effect, HashSet, Option } from "effect"
import { didYouMean } from "../domain/suggest.js"
import { cliCommand } from "../shell/hint.js"

// ---------------------------------------------------------------------------------------------
// the command tree

/** A command and its subcommands, in the order help lists them. */
export interface CliTree {
  readonly name: string
  readonly descriptor: Descriptor.Command<unknown>
  readonly children: ReadonlyArray<CliTree>
}

/** Anything with a command descriptor: every `Command` of @effect/cli. */
export interface HasDescriptor {
  readonly descriptor: Descriptor.Command<unknown>
}

/** A node of the tree: a `Command` and, for a group, its subcommands. */
export const cliTree = (command: HasDescriptor, children: ReadonlyArray<CliTree> = []): CliTree => {
  const [name] = HashSet.toValues(Descriptor.getNames(command.descriptor))
  return { name: name ?? "", descriptor: command.descriptor, children }
}

/** The configuration help is rendered with (built-ins hidden, as at the composition root). */
export const helpCliConfig = CliConfig.make({ showBuiltIns: false })

// ---------------------------------------------------------------------------------------------
// output style

export interface HelpStyle {
  /** columns to wrap at */
  readonly width: number
  /** bold headings and option names (ANSI) */
  readonly colour: boolean
}

/** Colour only on a terminal, without `NO_COLOR` (any non-empty value) and with a `TERM` other than `dumb`. */
export const wantsColour = (isTTY: boolean, env: Readonly<Record<string, string | undefined>>): boolean =>
  isTTY && (env.NO_COLOR ?? "") === "" && env.TERM !== "dumb"

/** The terminal's width; `COLUMNS`, else 80, when stdout is not a terminal; at least 40. */
export const terminalWidth = (columns: number | undefined, env: Readonly<Record<string, string | undefined>>): number => {
  const fromEnv = Number.parseInt(env.COLUMNS ?? "", 10)
  const width = columns !== undefined && columns > 0 ? columns : Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : 80
  return Math.max(40, width)
}

/** The style of this process's stdout. */
export const stdoutStyle = (): HelpStyle => ({
  width: terminalWidth(process.stdout.isTTY ? process.stdout.columns : undefined, process.env),
  colour: wantsColour(process.stdout.isTTY === true, process.env)
})

const bold = (style: HelpStyle, s: string) => (style.colour ? `\u001b[1m${s}\u001b[0m` : s)

/** Words of `text` on lines of at most `width` columns, each starting with `indent` spaces (a longer word gets a line of its own). */
export const wrap = (text: string, width: number, indent: number, firstIndent = indent): Array<string> => {
  const words = text.split(/\s+/).filter((w) => w !== "")
  const lines: Array<string> = []
  let line = ""
  let lead = firstIndent
  for (const word of words) {
    if (line !== "" && lead + line.length + 1 + word.length > width) {
      lines.push(" ".repeat(lead) + line)
      line = word
      lead = indent
    } else {
      line = line === "" ? word : `${line} ${word}`
    }
  }
  if (line !== "") lines.push(" ".repeat(lead) + line)
  return lines
}

/** Atoms (kept whole) on lines of at most `width` columns: the first after `indent` spaces, the rest after `hang`. */
const wrapAtoms = (atoms: ReadonlyArray<string>, width: number, indent: number, hang: number): Array<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const atom of atoms) {
    const lead = lines.length === 0 ? indent : hang
    if (line !== "" && lead + line.length + 1 + atom.length > width) {
      lines.push(" ".repeat(lead) + line)
      line = atom
    } else {
      line = line === "" ? atom : `${line} ${atom}`
    }
  }
  if (line !== "") lines.push(" ".repeat(lines.length === 0 ? indent : hang) + line)
  return lines
}

// ---------------------------------------------------------------------------------------------
// reading @effect/cli's help documents and usages

const spanText = (span: Span.Span): string => {
  switch (span._tag) {
    case "Text":
    case "URI":
      return span.value
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
    case "Highlight":
    case "Strong":
    case "Weak":
      return spanText(span.value)
  }
}

interface Entry {
  /** `-c, --config FILE`, `<FILE>...` */
  readonly term: string
  readonly paragraphs: ReadonlyArray<string>
}

type Block =
  | { readonly _tag: "Header"; readonly text: string }
  | { readonly _tag: "Paragraph"; readonly text: string }
  | { readonly _tag: "Entries"; readonly entries: ReadonlyArray<Entry> }

/** Paragraph texts of a document, in order (enumerations and nested lists included). */
const paragraphs = (doc: HelpDoc.HelpDoc): Array<string> => {
  switch (doc._tag) {
    case "Empty":
      return []
    case "Header":
    case "Paragraph":
      return [spanText(doc.value)]
    case "Sequence":
      return [...paragraphs(doc.left), ...paragraphs(doc.right)]
    case "Enumeration":
      return doc.elements.flatMap(paragraphs)
    case "DescriptionList":
      return doc.definitions.flatMap(([span, d]) => [spanText(span), ...paragraphs(d)])
  }
}

/** Texts @effect/cli adds to every option that the usage line already says. */
const GENERIC = [
  /^This setting is optional\.$/,
  /^This option can be set from environment variables\.$/,
  /^This (option|argument) (may|must) be repeated\b/
]

/**
 * An option's or argument's own description: @effect/cli puts the type first ("A user-defined
 * piece of text.", "An integer.", "One of the following: …"), then the descriptions given, then
 * "This setting is optional." and the like.
 */
const ownParagraphs = (doc: HelpDoc.HelpDoc): Array<string> =>
  paragraphs(doc)
    .slice(1)
    .map((p) => p.replace(/^This setting is optional\. Defaults to: (.*)$/, "default: $1"))
    .filter((p) => !GENERIC.some((re) => re.test(p)))

/** Placeholders for options given no pseudo name (`--stop-after integer` → `--stop-after N`). */
const PLACEHOLDERS: ReadonlyMap<string, string> = new Map([["integer", "N"], ["text", "TEXT"], ["float", "NUMBER"], ["date", "DATE"], ["path", "PATH"]])

const placeholder = (value: string): string => PLACEHOLDERS.get(value) ?? value.replace(/ \| /g, "|")

const normaliseTerm = (term: string): string =>
  term
    .replace(/^\((.*)\)(\.\.\.)?$/, "$1$2")
    .replace(/ 1\+$/, "...")
    .replace(/ (integer|text|float|date|path)(?=$|\.\.\.)/, (_, t: string) => ` ${placeholder(t)}`)
    .replace(/ \| /g, "|")

const blocks = (doc: HelpDoc.HelpDoc): Array<Block> => {
  switch (doc._tag) {
    case "Empty":
      return []
    case "Header":
      return [{ _tag: "Header", text: spanText(doc.value) }]
    case "Paragraph":
      return [{ _tag: "Paragraph", text: spanText(doc.value) }]
    case "Sequence":
      return [...blocks(doc.left), ...blocks(doc.right)]
    case "Enumeration":
      return doc.elements.flatMap(blocks)
    case "DescriptionList":
      return [{
        _tag: "Entries",
        entries: doc.definitions.map(([span, d]) => ({ term: normaliseTerm(spanText(span)), paragraphs: ownParagraphs(d) }))
      }]
  }
}

/** The blocks of each section of a command's help, by heading (`DESCRIPTION`, `ARGUMENTS`, `OPTIONS`). */
const sections = (descriptor: Descriptor.Command<unknown>): ReadonlyMap<string, ReadonlyArray<Block>> => {
  const out = new Map<string, Array<Block>>()
  let current: Array<Block> | undefined
  for (const b of blocks(Descriptor.getHelp(descriptor, helpCliConfig))) {
    if (b._tag === "Header") {
      current = []
      out.set(b.text, current)
    } else current?.push(b)
  }
  return out
}

/** A command's description (its first paragraph: the one line the command lists show). */
export const commandSummary = (descriptor: Descriptor.Command<unknown>): string => {
  const first = (sections(descriptor).get("DESCRIPTION") ?? []).find((b) => b._tag === "Paragraph")
  return first?._tag === "Paragraph" ? first.text : ""
}

const isOptionName = (name: string) => name.startsWith("-")

const isOptionUsage = (u: Usage.Usage): boolean =>
  u._tag === "Named" ? u.names.some(isOptionName) : u._tag === "Optional" || u._tag === "Repeated" ? isOptionUsage(u.usage) : false

/** A usage as words kept whole when wrapping: `[-c FILE]`, `-e FILE`, `[--model MODEL]...`, `<FILE>...`. */
const usageAtoms = (u: Usage.Usage): Array<string> => {
  switch (u._tag) {
    case "Empty":
      return []
    case "Mixed":
      return ["<command>"]
    case "Named": {
      if (!isOptionName(u.names[0] ?? "")) return [u.names.join(", ")]
      const value = Option.match(u.acceptedValues, { onNone: () => "", onSome: (v) => ` ${placeholder(v)}` })
      return [`${u.names[0]}${value}`]
    }
    case "Optional": {
      const inner = usageAtoms(u.usage)
      return inner.length === 0 ? [] : [`[${inner.join(" ")}]`]
    }
    case "Repeated": {
      const inner = usageAtoms(u.usage)
      if (inner.length === 0) return []
      // a repeated option may be left out (Options.repeated): `[--model M]...`
      return u.usage._tag === "Named" && isOptionUsage(u.usage) ? [`[${inner.join(" ")}]...`] : [`${inner.join(" ")}...`]
    }
    case "Alternation":
      return [`(${[...usageAtoms(u.left), "|", ...usageAtoms(u.right)].join(" ")})`]
    case "Concat":
      return [...usageAtoms(u.left), ...usageAtoms(u.right)]
  }
}

/** Option names (`--port`, `-c`) a command accepts, with whether each takes a value. */
const optionNames = (u: Usage.Usage, out: Map<string, boolean> = new Map()): Map<string, boolean> => {
  switch (u._tag) {
    case "Named":
      if (u.names.some(isOptionName)) for (const n of u.names) out.set(n.toLowerCase(), Option.isSome(u.acceptedValues))
      break
    case "Optional":
    case "Repeated":
      optionNames(u.usage, out)
      break
    case "Alternation":
    case "Concat":
      optionNames(u.left, out)
      optionNames(u.right, out)
      break
    case "Empty":
    case "Mixed":
      break
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// rendering

/** Leaves under `node`, with their names relative to it (`keygen`, or `audit keygen` from the root). */
const leaves = (node: CliTree, prefix: ReadonlyArray<string> = []): Array<{ readonly name: string; readonly node: CliTree }> =>
  node.children.flatMap((c) => (c.children.length > 0 ? leaves(c, [...prefix, c.name]) : [{ name: [...prefix, c.name].join(" "), node: c }]))

const heading = (style: HelpStyle, title: string) => ["", bold(style, title)]

const entryLines = (style: HelpStyle, entries: ReadonlyArray<Entry>): Array<string> =>
  entries.flatMap((e) => [`  ${bold(style, e.term)}`, ...e.paragraphs.flatMap((p) => wrap(p, style.width, 6))])

/** `  name    description` (wrapped under the description), or the description under the name when the names are too wide. */
const commandList = (style: HelpStyle, items: ReadonlyArray<{ readonly name: string; readonly node: CliTree }>): Array<string> => {
  const column = 2 + Math.max(...items.map((i) => i.name.length)) + 3
  const twoColumns = column <= Math.floor(style.width / 2)
  return items.flatMap(({ name, node }) => {
    const summary = commandSummary(node.descriptor)
    if (!twoColumns) return [`  ${bold(style, name)}`, ...wrap(summary, style.width, 6)]
    const [first = "", ...rest] = wrap(summary, style.width, column)
    return [`  ${bold(style, name)}${first.slice(2 + name.length)}`, ...rest]
  })
}

/** The help of the command at `path` (names from the root), as printed by `vetobench … --help`. */
export const renderHelp = (path: ReadonlyArray<CliTree>, app: { readonly version: string }, style: HelpStyle): string => {
  const node = path[path.length - 1]!
  const names = path.map((n) => n.name).join(" ")
  const sec = sections(node.descriptor)
  const usageAtomsOf = usageAtoms(Descriptor.getUsage(node.descriptor)).slice(1)
  const lines: Array<string> = []
  if (path.length === 1) lines.push(...wrap(`${names} ${app.version}: ${commandSummary(node.descriptor)}`, style.width, 0))
  lines.push(...(path.length === 1 ? heading(style, "USAGE") : [bold(style, "USAGE")]))
  const usage = path.length === 1
    ? [names, "[--log-level LEVEL]", "<command>", "[options]"]
    : node.children.length > 0
    ? [names, "<command>", "[options]"]
    : [names, ...usageAtomsOf]
  // continuation lines start under the first option, unless an option would not fit there
  const widest = Math.max(...usage.map((a) => a.length))
  const hang = names.length + 3 + widest <= style.width ? names.length + 3 : 6
  lines.push(...wrapAtoms(usage, style.width, 2, hang))
  const description = (sec.get("DESCRIPTION") ?? []).flatMap((b) => (b._tag === "Paragraph" ? [b.text] : []))
  if (description.length > 0 && path.length > 1) {
    lines.push(...heading(style, "DESCRIPTION"))
    for (const p of description) lines.push(...wrap(p, style.width, 2))
  }
  if (node.children.length > 0) {
    lines.push(...heading(style, "COMMANDS"))
    lines.push(...commandList(style, path.length === 1 ? leaves(node) : node.children.map((c) => ({ name: c.name, node: c }))))
  }
  for (const title of ["ARGUMENTS", "OPTIONS"]) {
    const entries = (sec.get(title) ?? []).flatMap((b) => (b._tag === "Entries" ? b.entries : []))
    if (entries.length === 0) continue
    lines.push(...heading(style, title))
    lines.push(...entryLines(style, entries))
  }
  if (path.length === 1) {
    lines.push(...heading(style, "OPTIONS"))
    lines.push(...entryLines(style, [
      { term: "-h, --help", paragraphs: [`this help; after a command, that command's help (${names} audit keygen --help)`] },
      { term: "--version", paragraphs: ["print the version"] },
      {
        term: "--log-level trace|debug|info|warning|error|none",
        paragraphs: [`how much the command logs; give it before the command (${names} --log-level debug run ...)`]
      }
    ]))
    lines.push("")
    lines.push(...wrap(
      "Settings: -c FILE, else the file named by VETOBENCH_CONFIG, else configs/vetobench.yaml. " +
        "Exit codes: 0 ok; 1 a command failed (one line on stderr); 2 usage error; 3 verify-audit, verify-results: partly verified.",
      style.width,
      0
    ))
  } else if (node.children.length > 0) {
    lines.push("")
    lines.push(...wrap(`A command's options: ${names} <command> --help`, style.width, 0))
  }
  return lines.join("\n")
}

// ---------------------------------------------------------------------------------------------
// the command line, before @effect/cli sees it

/** Options @effect/cli accepts everywhere (hidden from help with `showBuiltIns: false`); `true` = takes a value. */
const BUILT_INS: ReadonlyMap<string, boolean> = new Map([
  ["--help", false],
  ["-h", false],
  ["--version", false],
  ["--wizard", false],
  ["--completions", true],
  ["--log-level", true]
])

/** What to do with a command line. */
export type Dispatch =
  | { readonly _tag: "Help"; readonly path: ReadonlyArray<CliTree> }
  | { readonly _tag: "UsageError"; readonly message: string }
  | { readonly _tag: "Run" }

const HELP = new Set(["--help", "-h"])

/**
 * Reads `args` (the command line after the executable and script) against `root`: help for the
 * command named (`--help`/`-h` anywhere before `--`, or a command group given without a
 * subcommand), a usage error for an unknown subcommand or option (naming the closest ones), else
 * `Run` (@effect/cli parses it).
 */
export const dispatch = (root: CliTree, args: ReadonlyArray<string>): Dispatch => {
  const path: Array<CliTree> = [root]
  let node = root
  let help = false
  let builtIn = false
  let unknownOption: { readonly token: string; readonly path: ReadonlyArray<CliTree> } | undefined
  for (let i = 0; i < args.length; i++) {
    const token = args[i]!
    if (token === "--") break
    if (token.startsWith("-") && token !== "-" && !/^-\d/.test(token)) {
      const eq = token.indexOf("=")
      const name = (eq > 0 ? token.slice(0, eq) : token).toLowerCase()
      if (HELP.has(name)) {
        help = true
        continue
      }
      const known = node.children.length > 0 ? BUILT_INS : new Map([...BUILT_INS, ...optionNames(Descriptor.getUsage(node.descriptor))])
      const takesValue = known.get(name)
      if (takesValue === undefined) {
        unknownOption ??= { token: eq > 0 ? token.slice(0, eq) : token, path: [...path] }
        continue
      }
      if (BUILT_INS.has(name) && name !== "--log-level") builtIn = true
      if (takesValue && eq < 0) i++
      continue
    }
    if (node.children.length === 0) continue // an argument of the command
    const child = node.children.find((c) => c.name.toLowerCase() === token.toLowerCase())
    const names = path.map((n) => n.name).join(" ")
    if (child === undefined) {
      return {
        _tag: "UsageError",
        message: `${names}: unknown command '${token}'${didYouMean(token, node.children.map((c) => c.name))}; the commands: ${cliCommand(...path.slice(1).map((n) => n.name), "--help")}`
      }
    }
    node = child
    path.push(child)
  }
  if (help) return { _tag: "Help", path }
  if (unknownOption !== undefined) {
    const at = unknownOption.path
    const where = at[at.length - 1]!
    const candidates = [...(where.children.length > 0 ? [] : optionNames(Descriptor.getUsage(where.descriptor)).keys()), "--help"]
    return {
      _tag: "UsageError",
      message: `${at.map((n) => n.name).join(" ")}: unknown option '${unknownOption.token}'${didYouMean(unknownOption.token, candidates)}; the options: ${
        cliCommand(...at.slice(1).map((n) => n.name), "--help")
      }`
    }
  }
  if (node.children.length > 0 && !builtIn) return { _tag: "Help", path }
  return { _tag: "Run" }
}

/**
 * Runs `run` (the @effect/cli app) unless `argv` asks for help or holds an unknown subcommand or
 * option: help is printed (exit 0); a usage error is one line on stderr and fails with a
 * `ValidationError` (exit 2 at the composition root).
 */
export const withHelp = <E, R>(
  root: CliTree,
  app: { readonly version: string },
  argv: ReadonlyArray<string>,
  run: Effect.Effect<void, E, R>
): Effect.Effect<void, E | ValidationError.ValidationError, R> =>
  Effect.suspend((): Effect.Effect<void, E | ValidationError.ValidationError, R> => {
    const d = dispatch(root, argv.slice(2))
    switch (d._tag) {
      case "Help":
        return Console.log(renderHelp(d.path, app, stdoutStyle()))
      case "UsageError":
        return Console.error(`${d.message}`).pipe(
          Effect.zipRight(Effect.fail(ValidationError.invalidArgument(HelpDoc.p(d.message))))
        )
      case "Run":
        return run
    }
  })
