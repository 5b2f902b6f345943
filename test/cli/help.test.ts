/**
 * `--help` as users meet it. For every command (the root, each group, each subcommand), rendered in
 * process exactly as the bundle renders it (the bundle is checked to print the same text for a
 * sample): a snapshot free of ANSI escapes, the full usage line (`vetobench audit keygen …`), a
 * real description for every option and argument (none of @effect/cli's "A user-defined piece of
 * text."), defaults. From the bundle: lines wrapped to `COLUMNS`; colour only on a terminal
 * without `NO_COLOR` (through `script`, when installed). In process (test/support/cli.ts): unknown
 * subcommands, options, settings keys and judge names: one line with "did you mean", exit 2 (1
 * for settings and judges).
 */
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { tree } from "../../src/cli/commands.js"
import { type CliTree, dispatch, renderHelp, terminalWidth, wantsColour } from "../../src/cli/help.js"
import { VERSION } from "../../src/domain/version.js"
import { CLI, runCliInProcess } from "../support/cli.js"

interface Raw {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The bundle with stdout and stderr on pipes (not a terminal); NO_COLOR and COLUMNS as given. */
const exec = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}): Promise<Raw> =>
  new Promise((resolve, reject) => {
    const base = { ...process.env }
    delete base.NO_COLOR
    delete base.COLUMNS
    delete base.VETOBENCH_CONFIG
    const p = spawn(process.execPath, [CLI, ...args], { env: { ...base, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    p.stdout.on("data", (b: Buffer) => (stdout += b.toString()))
    p.stderr.on("data", (b: Buffer) => (stderr += b.toString()))
    p.once("error", reject)
    p.once("close", (code) => resolve({ code, stdout, stderr }))
  })

/** `f` over `items`, at most `n` at once, results in order. */
const pool = async <A, B>(items: ReadonlyArray<A>, n: number, f: (a: A) => Promise<B>): Promise<Array<B>> => {
  const out: Array<B> = new Array(items.length)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++
        out[i] = await f(items[i]!)
      }
    })
  )
  return out
}

const ESC = "\u001b"
const GENERIC = ["A user-defined piece of text", "An integer.", "A true or false value.", "One of the following", "This setting is optional", "This option may be repeated"]

/** The lines of one section (`OPTIONS`, `COMMANDS`, …) of a help text. */
const section = (help: string, title: string): Array<string> => {
  const lines = help.split("\n")
  const start = lines.indexOf(title)
  if (start < 0) return []
  const end = lines.findIndex((l, i) => i > start && l === "")
  return lines.slice(start + 1, end < 0 ? undefined : end)
}

/** The commands a help text lists (the first column of its COMMANDS). */
const commandNames = (help: string): Array<string> =>
  section(help, "COMMANDS").filter((l) => /^ {2}\S/.test(l)).map((l) => l.trim().split(/ {2,}/)[0]!)

/** Option or argument entries: a term line (2 spaces) and its description lines (6 spaces). */
const entries = (lines: ReadonlyArray<string>): Array<{ readonly term: string; readonly description: ReadonlyArray<string> }> => {
  const out: Array<{ term: string; description: Array<string> }> = []
  for (const l of lines) {
    if (/^ {2}\S/.test(l)) out.push({ term: l.trim(), description: [] })
    else if (/^ {6}\S/.test(l)) out[out.length - 1]?.description.push(l.trim())
  }
  return out
}

/** Every command of the tree with its path from the root (the root, the groups, their subcommands). */
const paths = (node: CliTree, above: ReadonlyArray<CliTree> = []): Array<ReadonlyArray<CliTree>> => {
  const here = [...above, node]
  return [here, ...node.children.flatMap((c) => paths(c, here))]
}
const nameOf = (path: ReadonlyArray<CliTree>) => path.slice(1).map((n) => n.name).join(" ")
const PLAIN = { width: 80, colour: false } as const

/** `vetobench <command> --help` for every command, rendered in process as the bundle renders it. */
const helps = new Map(paths(tree).map((p) => [nameOf(p), renderHelp(p, { version: VERSION }, PLAIN)] as const))
const commands = commandNames(helps.get("")!)

describe("vetobench … --help", () => {
  it("the root lists every command, subcommands with their group", () => {
    expect(commands).toEqual([
      "proxy", "smoke", "demo", "verify-audit", "verify-results", "audit keygen", "audit manifest", "audit outcomes", "audit prove",
      "audit verify-receipt", "audit score", "fake-vllm", "split",
      "scenarios run", "scenarios replay", "scenarios approve", "scenarios verify", "run", "merge", "score", "replay", "report", "view",
      "policy skeleton", "policy lint", "mcp stdio"
    ])
    expect([...helps.keys()].filter((c) => !c.includes(" ") && c !== "" && !commands.includes(c))).toEqual(["audit", "scenarios", "policy", "mcp"])
  })

  it("the bundle prints the same help on a pipe: plain text, exit 0, nothing on stderr", async () => {
    const asked: ReadonlyArray<ReadonlyArray<string>> = [["--help"], [], ["audit", "keygen", "--help"], ["audit"], ["run", "-e", "x.yaml", "-h"], ["scenarios", "--help"]]
    const results = await pool(asked, 3, (args) => exec(args, { COLUMNS: "80" }))
    asked.forEach((args, i) => {
      const r = results[i]!
      const name = args.filter((a) => !a.startsWith("-") && a !== "x.yaml").join(" ")
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: "" })
      expect(r.stdout.includes(ESC), `vetobench ${args.join(" ")} has ANSI escapes`).toBe(false)
      expect(r.stdout).toBe(`${helps.get(name)!}\n`)
    })
  })

  it("the usage line names the whole command", () => {
    for (const [c, help] of helps) {
      const [usage] = section(help, "USAGE")
      expect(usage, c).toMatch(new RegExp(`^ {2}vetobench${c === "" ? "" : ` ${c}`}( |$)`))
    }
    expect(section(helps.get("audit keygen")!, "USAGE")[0]).toBe("  vetobench audit keygen [-c FILE] [--out DIR] [--name NAME] [--force]")
    expect(section(helps.get("audit")!, "USAGE")[0]).toBe("  vetobench audit <command> [options]")
  })

  it("every option and argument has a description of its own, and the default where there is one", () => {
    for (const c of commands) {
      const help = helps.get(c)!
      for (const word of GENERIC) expect(help, `vetobench ${c} --help`).not.toContain(word)
      const list = [...entries(section(help, "OPTIONS")), ...entries(section(help, "ARGUMENTS"))]
      expect(list.length, c).toBeGreaterThan(0)
      for (const e of list) {
        expect(e.description.length, `vetobench ${c}: ${e.term} has no description`).toBeGreaterThan(0)
        // placeholders name what to give (FILE, N, …), not @effect/cli's types
        expect(e.term, c).not.toMatch(/ (text|integer)(\.\.\.)?$/)
      }
    }
    const option = (c: string, term: string) => entries(section(helps.get(c)!, "OPTIONS")).find((e) => e.term === term)?.description ?? []
    expect(option("split", "--n-test N")).toContain("default: 300")
    expect(option("audit keygen", "--out DIR")).toContain("default: keys")
    expect(option("fake-vllm", "--port N")).toContain("default: 18000")
    expect(option("proxy", "-c, --config FILE").join(" ")).toContain("default: $VETOBENCH_CONFIG when set, else configs/vetobench.yaml")
    expect(option("proxy", "--port N").join(" ")).toContain("default: proxy.port")
  })

  it("the commands a group lists are its own", () => {
    expect(commandNames(helps.get("audit")!)).toEqual(["keygen", "manifest", "outcomes", "prove", "verify-receipt", "score"])
    expect(commandNames(helps.get("scenarios")!)).toEqual(["run", "replay", "approve", "verify"])
    expect(commandNames(helps.get("policy")!)).toEqual(["skeleton", "lint"])
  })

  // after changing a command's options or descriptions: npx vitest run test/cli/help.test.ts -u, and review the diff
  it("matches the snapshots", () => {
    for (const [c, help] of helps) expect(help).toMatchSnapshot(`vetobench ${c} --help`.replace(/ +/g, " "))
  })
})

describe("dispatch: what the command line asks for, before @effect/cli parses it", () => {
  const route = (args: ReadonlyArray<string>) => {
    const d = dispatch(tree, args)
    return d._tag === "Help" ? `help ${nameOf(d.path)}`.trim() : d._tag === "Run" ? "run" : `error ${d.message}`
  }

  it("help for the command named, wherever --help / -h stands (before --)", () => {
    expect(route([])).toBe("help")
    expect(route(["--help"])).toBe("help")
    expect(route(["audit"])).toBe("help audit")
    expect(route(["--log-level", "debug", "proxy", "--help"])).toBe("help proxy")
    expect(route(["run", "-e", "x.yaml", "--model", "m", "-h"])).toBe("help run")
    expect(route(["scenarios", "run", "--help", "f.yaml"])).toBe("help scenarios run")
    expect(route(["policy", "lint", "--", "--help"])).toBe("run")
  })

  it("everything else goes to @effect/cli: values, built-ins, --opt=value, arguments after --", () => {
    expect(route(["--version"])).toBe("run")
    expect(route(["run", "-e", "x.yaml", "--model=m", "--variant", "--weird"])).toBe("run")
    expect(route(["split", "--seed", "-1"])).toBe("run")
    expect(route(["verify-audit", "--", "-strange-file.jsonl"])).toBe("run")
    expect(route(["--log-level", "warning", "proxy", "--PORT", "1"])).toBe("run")
  })

  it("unknown commands and options, with the closest names", () => {
    expect(route(["reprot"])).toMatch(/^error vetobench: unknown command 'reprot' \(did you mean 'report'\?\); the commands: (npx )?vetobench --help$/)
    expect(route(["policy", "lnt", "f.json"])).toMatch(/^error vetobench policy: unknown command 'lnt' \(did you mean 'lint'\?\)/)
    expect(route(["verify-audit", "--pubky", "k.pub", "a.jsonl"])).toMatch(/^error vetobench verify-audit: unknown option '--pubky' \(did you mean '--pubkey'\?\)/)
    expect(route(["run", "-x"])).toMatch(/^error vetobench run: unknown option '-x'; the options: /)
    expect(route(["--prot", "proxy"])).toMatch(/^error vetobench: unknown option '--prot'/)
  })
})

describe("terminal", () => {
  it("colour only on a terminal, without NO_COLOR, with a TERM other than dumb", () => {
    expect(wantsColour(true, {})).toBe(true)
    expect(wantsColour(false, {})).toBe(false)
    expect(wantsColour(true, { NO_COLOR: "1" })).toBe(false)
    expect(wantsColour(true, { NO_COLOR: "" })).toBe(true)
    expect(wantsColour(true, { TERM: "dumb" })).toBe(false)
  })

  it("the terminal's columns, else COLUMNS, else 80; at least 40", () => {
    expect(terminalWidth(132, { COLUMNS: "60" })).toBe(132)
    expect(terminalWidth(undefined, { COLUMNS: "60" })).toBe(60)
    expect(terminalWidth(undefined, {})).toBe(80)
    expect(terminalWidth(undefined, { COLUMNS: "x" })).toBe(80)
    expect(terminalWidth(20, {})).toBe(40)
  })
})

describe("help wraps to the terminal width", () => {
  it("COLUMNS=60: no line longer than 60; COLUMNS=150: lines run past 80", async () => {
    const narrow = await pool(["", "proxy", "run", "audit keygen", "scenarios run", "split"], 3, (c) => exec([...(c === "" ? [] : c.split(" ")), "--help"], { COLUMNS: "60" }))
    for (const r of narrow) {
      for (const line of r.stdout.split("\n")) expect(line.length, line).toBeLessThanOrEqual(60)
    }
    const wide = await exec(["--help"], { COLUMNS: "150" })
    expect(Math.max(...wide.stdout.split("\n").map((l) => l.length))).toBeGreaterThan(80)
    expect(Math.max(...helps.get("")!.split("\n").map((l) => l.length))).toBeLessThanOrEqual(80)
  })
})

/** The bundle on a pseudo-terminal (util-linux `script`), or null when `script` is not installed. */
const onTerminal = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>>): string | null => {
  const has = spawnSync("script", ["--version"], { encoding: "utf8" })
  if (has.error !== undefined || has.status !== 0) return null
  const base = { ...process.env }
  delete base.NO_COLOR
  const command = [process.execPath, CLI, ...args].map((a) => `'${a}'`).join(" ")
  const r = spawnSync("script", ["-qec", command, "/dev/null"], { env: { ...base, TERM: "xterm", ...env }, encoding: "utf8", timeout: 100_000 })
  return r.stdout
}

describe("colour", () => {
  it("bold headings on a terminal; none with NO_COLOR or TERM=dumb", (ctx) => {
    const tty = onTerminal(["proxy", "--help"], {})
    if (tty === null) return ctx.skip("util-linux `script` is not installed: the terminal case cannot be run")
    expect(tty).toContain(`${ESC}[1mUSAGE${ESC}[0m`)
    expect(onTerminal(["proxy", "--help"], { NO_COLOR: "1" })).not.toContain(ESC)
    expect(onTerminal(["proxy", "--help"], { TERM: "dumb" })).not.toContain(ESC)
    expect(onTerminal(["proxy", "--help"], { NO_COLOR: "1" })).toContain("vetobench proxy [-c FILE]")
  })

  it("none on a pipe even without NO_COLOR, for errors too", async () => {
    const r = await exec(["proxy", "--port", "x"])
    expect(r.code).toBe(2)
    expect(r.stdout + r.stderr).not.toContain(ESC)
  })
})

describe("did you mean", () => {
  /** `vetobench args…` in this process, without a settings file from the environment */
  const inProcess = (args: ReadonlyArray<string>) => runCliInProcess(args, { env: { VETOBENCH_CONFIG: undefined } })

  it("an unknown subcommand: one line naming the closest one, exit 2", async () => {
    const r = await inProcess(["prxy"])
    expect(r).toEqual({ code: 2, stdout: "", stderr: expect.stringMatching(/^vetobench: unknown command 'prxy' \(did you mean 'proxy'\?\); the commands: (npx )?vetobench --help\n$/) })
    const nested = await inProcess(["audit", "keygn", "--out", "x"])
    expect(nested.code).toBe(2)
    expect(nested.stderr).toMatch(/^vetobench audit: unknown command 'keygn' \(did you mean 'keygen'\?\); the commands: (npx )?vetobench audit --help\n$/)
    const far = await inProcess(["frobnicate"])
    expect(far.code).toBe(2)
    expect(far.stderr).toMatch(/^vetobench: unknown command 'frobnicate'; the commands: (npx )?vetobench --help\n$/)
  })

  it("an unknown option: one line naming the closest ones, exit 2, before anything runs", async () => {
    const r = await inProcess(["proxy", "--prot", "9"])
    expect(r).toEqual({ code: 2, stdout: "", stderr: expect.stringMatching(/^vetobench proxy: unknown option '--prot' \(did you mean '--port'\?\); the options: (npx )?vetobench proxy --help\n$/) })
    const run = await inProcess(["run", "-e", "x.yaml", "--modle=m"])
    expect(run.stderr).toMatch(/^vetobench run: unknown option '--modle' \(did you mean '--model'\?\)/)
    const nested = await inProcess(["scenarios", "run", "--trails", "3", "f.yaml"])
    expect(nested.stderr).toMatch(/^vetobench scenarios run: unknown option '--trails' \(did you mean '--trials'\?\)/)
    // option values are not options: a value starting with - is taken as the value
    const value = await inProcess(["split", "--seed", "-1", "--data", "/nonexistent.json"])
    expect(value.stderr).not.toContain("unknown option")
  })

  it("an unknown settings key names the closest allowed key", async () => {
    const dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-help-"))
    const file = path.join(dir, "settings.yaml")
    fs.writeFileSync(file, "upstreams:\n  - name: a\n    base_url: http://127.0.0.1:9/v1\nproxy:\n  prot: 1\n")
    const r = await inProcess(["proxy", "-c", file])
    expect(r.code).toBe(1)
    expect(r.stderr).toBe(`vetobench: ${file}: proxy.prot: unknown key; did you mean 'port'? (allowed: ${r.stderr.split("(allowed: ")[1]!.replace(/\n$/, "")}\n`)
    expect(r.stderr).toMatch(/\(allowed: host, port, /)
  })

  it("an unknown judge name (smoke --judges) names the closest configured one", async () => {
    const dir = fs.mkdtempSync(path.join(tmpdir(), "vetobench-help-"))
    const file = path.join(dir, "settings.yaml")
    fs.writeFileSync(file, "upstreams:\n  - name: a\n    base_url: http://127.0.0.1:9/v1\njudges:\n  small: { kind: static, decision: allow }\n")
    const r = await inProcess(["smoke", "-c", file, "--judges", "smal"])
    expect(r).toEqual({ code: 1, stdout: "", stderr: "vetobench: unknown judge 'smal'; did you mean 'small'? (configured: small, allow-all, deny-all)\n" })
  })
})
