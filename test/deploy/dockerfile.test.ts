/**
 * Dockerfile vs deploy/openshift/vetobench-run-job.yaml: the image the Job runs is the one the
 * Dockerfile builds. Static, no Docker: the Dockerfile is read with a small parser of our own (known
 * instructions, continuations, flags, ARG substitution in FROM, COPY --from naming an earlier stage),
 * the bundle's inputs and imports come from esbuild's metafile (the package.json build's entry points,
 * not written to disk), and every file is followed from the build context through the stages to its
 * place in the final image. Checked: Node 20 and python3, the CLI bundle only (no node_modules, no
 * npm in the runtime stage) plus every file the bundle opens relative to itself, `vetobench` on PATH,
 * a numeric non-root user in group 0 owning a group-writable WORKDIR, and the Job's image name,
 * workingDir, mounts, config files and settings paths landing on the image or the Job's volumes.
 */
import { Either } from "effect"
import * as esbuild from "esbuild"
import { existsSync, readFileSync, statSync } from "node:fs"
import { builtinModules } from "node:module"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as YAML from "yaml"
import { decodeExperiment } from "../../src/config/experiment.js"
import { decodeSettings } from "../../src/config/settings.js"
import { repoRootFor } from "../../src/config/yaml-file.js"

import { arr, at, obj, type Obj, objs, str } from "../support/k8s.js"

const posix = path.posix

// ------------------------------------------------------------------------------------------------
// A Dockerfile parser: enough of the reference (docs.docker.com/reference/dockerfile) to check ours

const INSTRUCTIONS = new Set([
  "ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK", "LABEL", "ONBUILD",
  "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME", "WORKDIR"
])
const FLAGS: Readonly<Record<string, ReadonlySet<string>>> = {
  FROM: new Set(["platform"]),
  RUN: new Set(["mount", "network", "security"]),
  COPY: new Set(["from", "chown", "chmod", "link", "parents", "exclude"]),
  ADD: new Set(["chown", "chmod", "link", "checksum", "keep-git-dir", "exclude"])
}

interface Instruction {
  /** 1-based line of the instruction's first physical line */
  readonly line: number
  /** upper case */
  readonly keyword: string
  readonly flags: ReadonlyMap<string, string>
  /** the text after the keyword and its flags */
  readonly args: string
  /** the stage's WORKDIR when the instruction runs */
  readonly workdir: string
}

interface Stage {
  readonly index: number
  readonly name: string | undefined
  /** the base after ARG substitution: an image reference or an earlier stage's name */
  readonly base: string
  readonly instructions: ReadonlyArray<Instruction>
  /** final WORKDIR */
  readonly workdir: string
  /** ARG values in scope at the end of the stage */
  readonly args: ReadonlyMap<string, string>
}

interface Dockerfile {
  /** ARGs declared before the first FROM, with their defaults */
  readonly globalArgs: ReadonlyMap<string, string | undefined>
  readonly stages: ReadonlyArray<Stage>
}

class DockerfileError extends Error {}

/** Logical lines: comments dropped (also inside a continuation), `\` continuations joined. */
const logicalLines = (text: string): ReadonlyArray<{ readonly line: number; readonly text: string }> => {
  const out: Array<{ line: number; text: string }> = []
  let buf: string | undefined
  let start = 0
  text.split("\n").forEach((raw, i) => {
    const line = raw.replace(/\r$/, "")
    const trimmed = line.trim()
    if (trimmed.startsWith("#")) return
    if (buf === undefined) {
      if (trimmed === "") return
      start = i + 1
      buf = ""
    } else if (trimmed === "") return
    if (/\\$/.test(line.trimEnd())) {
      buf += `${line.trimEnd().slice(0, -1)} `
      return
    }
    out.push({ line: start, text: `${buf}${line}`.trim() })
    buf = undefined
  })
  if (buf !== undefined) throw new DockerfileError(`line ${start}: the file ends inside a continued line`)
  return out
}

/** `${NAME}`, `${NAME:-default}`, `$NAME`; an unknown name without a default is an error. */
const substitute = (s: string, vars: ReadonlyMap<string, string | undefined>, line: number): string =>
  s.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (_m, braced: string | undefined, dflt: string | undefined, bare: string | undefined) => {
    const name = braced ?? bare ?? ""
    const v = vars.get(name)
    if (v !== undefined && v !== "") return v
    if (dflt !== undefined) return dflt
    throw new DockerfileError(`line ${line}: $${name} has no value`)
  })

/** Words with double or single quotes kept together (quotes removed). */
const words = (s: string): ReadonlyArray<string> =>
  [...s.matchAll(/(?:[^\s"']+|"(?:[^"\\]|\\.)*"|'[^']*')+/g)].map((m) => m[0].replace(/"((?:[^"\\]|\\.)*)"|'([^']*)'/g, (_x, d: string | undefined, q: string | undefined) => d ?? q ?? ""))

/** `K=V K2="V 2"` (or the legacy `K V`) as pairs. */
const keyValues = (s: string, line: number): ReadonlyArray<readonly [string, string]> => {
  const ws = words(s)
  if (ws.length >= 2 && !ws[0]!.includes("=")) return [[ws[0]!, ws.slice(1).join(" ")]]
  return ws.map((w) => {
    const eq = w.indexOf("=")
    if (eq <= 0) throw new DockerfileError(`line ${line}: expected KEY=VALUE, got ${w}`)
    return [w.slice(0, eq), w.slice(eq + 1)] as const
  })
}

/** The exec form (`["a", "b"]`) as a list; undefined for the shell form. */
const execForm = (ins: Instruction): ReadonlyArray<string> | undefined => {
  if (!ins.args.startsWith("[")) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(ins.args)
  } catch {
    throw new DockerfileError(`line ${ins.line}: ${ins.keyword} is not a JSON array of strings: ${ins.args}`)
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((x): x is string => typeof x === "string")) {
    throw new DockerfileError(`line ${ins.line}: ${ins.keyword} is not a non-empty JSON array of strings`)
  }
  return parsed
}

/** COPY/ADD sources and destination (after substitution). */
const copyArgs = (ins: Instruction): { readonly sources: ReadonlyArray<string>; readonly dest: string } => {
  const list = execForm(ins) ?? ins.args.split(/\s+/)
  if (list.length < 2) throw new DockerfileError(`line ${ins.line}: ${ins.keyword} needs a source and a destination`)
  const dest = list.at(-1)!
  if (list.length > 2 && !dest.endsWith("/")) throw new DockerfileError(`line ${ins.line}: ${ins.keyword} with several sources needs a destination ending in /`)
  return { sources: list.slice(0, -1), dest }
}

const SUBSTITUTED = new Set(["ADD", "COPY", "ENV", "EXPOSE", "LABEL", "STOPSIGNAL", "USER", "VOLUME", "WORKDIR"])

const parseDockerfile = (text: string): Dockerfile => {
  const globalArgs = new Map<string, string | undefined>()
  const stages: Array<Stage> = []
  let current: { index: number; name: string | undefined; base: string; instructions: Array<Instruction>; workdir: string; vars: Map<string, string | undefined> } | undefined
  const close = () => {
    if (current === undefined) return
    const args = new Map<string, string>()
    for (const [k, v] of current.vars) if (v !== undefined) args.set(k, v)
    stages.push({ index: current.index, name: current.name, base: current.base, instructions: current.instructions, workdir: current.workdir, args })
  }
  for (const { line, text: l } of logicalLines(text)) {
    const m = /^(\S+)\s*(.*)$/.exec(l)!
    const keyword = m[1]!.toUpperCase()
    if (!INSTRUCTIONS.has(keyword)) throw new DockerfileError(`line ${line}: unknown instruction ${m[1]}`)
    if (/<<-?["']?[A-Za-z]/.test(m[2]!) && (keyword === "RUN" || keyword === "COPY")) throw new DockerfileError(`line ${line}: heredocs are not supported here`)
    let rest = m[2]!
    const flags = new Map<string, string>()
    for (let f = /^--([a-z-]+)(?:=(\S*))?\s*/.exec(rest); f !== null && keyword in FLAGS; f = /^--([a-z-]+)(?:=(\S*))?\s*/.exec(rest)) {
      if (!FLAGS[keyword]!.has(f[1]!)) throw new DockerfileError(`line ${line}: ${keyword} has no flag --${f[1]}`)
      flags.set(f[1]!, f[2] ?? "true")
      rest = rest.slice(f[0].length)
    }
    if (current === undefined && keyword !== "FROM" && keyword !== "ARG") throw new DockerfileError(`line ${line}: ${keyword} before the first FROM`)
    if (keyword === "ARG") {
      for (const w of words(rest)) {
        const eq = w.indexOf("=")
        const name = eq < 0 ? w : w.slice(0, eq)
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new DockerfileError(`line ${line}: bad ARG name ${name}`)
        if (current === undefined) globalArgs.set(name, eq < 0 ? undefined : w.slice(eq + 1))
        else current.vars.set(name, eq < 0 ? globalArgs.get(name) : substitute(w.slice(eq + 1), current.vars, line))
      }
    }
    if (keyword === "FROM") {
      close()
      const fm = /^(\S+)(?:\s+[Aa][Ss]\s+([a-z][a-z0-9_.-]*))?$/.exec(rest)
      if (fm === null) throw new DockerfileError(`line ${line}: FROM <image> [AS <name>], got ${rest}`)
      const base = substitute(fm[1]!, globalArgs, line)
      const name = fm[2]
      if (name !== undefined && stages.some((s) => s.name === name)) throw new DockerfileError(`line ${line}: stage ${name} named twice`)
      const parent = stages.find((s) => s.name === base)
      current = { index: stages.length, name, base, instructions: [], workdir: parent?.workdir ?? "/", vars: new Map() }
    }
    if (current === undefined) continue
    const args = SUBSTITUTED.has(keyword) ? substitute(rest, current.vars, line) : rest
    if (keyword === "ENV") for (const [k, v] of keyValues(args, line)) current.vars.set(k, v)
    if (keyword === "WORKDIR") current.workdir = posix.resolve(current.workdir, args)
    const ins: Instruction = { line, keyword, flags, args, workdir: current.workdir }
    if (keyword === "CMD" || keyword === "ENTRYPOINT" || keyword === "SHELL") execForm(ins)
    if (keyword === "SHELL" && execForm(ins) === undefined) throw new DockerfileError(`line ${line}: SHELL takes the exec form`)
    if (keyword === "COPY" || keyword === "ADD") {
      copyArgs(ins)
      const from = flags.get("from")
      if (from !== undefined) {
        const earlier = stages.find((s) => s.name === from || String(s.index) === from)
        if (earlier === undefined) throw new DockerfileError(`line ${line}: COPY --from=${from} names no earlier stage`)
      }
    }
    if (keyword !== "FROM") current.instructions.push(ins)
  }
  close()
  if (stages.length === 0) throw new DockerfileError("no FROM")
  return { globalArgs, stages }
}

// ------------------------------------------------------------------------------------------------
// Following files through the stages

interface Landing {
  /** where the copy puts the source in the stage */
  readonly at: string
  /** a directory: its contents land at `at` */
  readonly dir: boolean
  /** the stage copied from; undefined = the build context */
  readonly from: Stage | undefined
  readonly source: string
}

const stageOf = (df: Dockerfile, ref: string): Stage | undefined => df.stages.find((s) => s.name === ref || String(s.index) === ref)

/** A COPY source that is a directory: in the context, the repo says; in a stage, its context origin (or no file extension). */
const isDirSource = (df: Dockerfile, from: Stage | undefined, source: string): boolean => {
  if (from === undefined) return statSync(source).isDirectory()
  const origin = contextPathOf(df, from, source)
  return origin !== undefined ? statSync(origin).isDirectory() : posix.extname(source) === ""
}

const landings = (df: Dockerfile, stage: Stage): ReadonlyArray<Landing> =>
  stage.instructions.filter((i) => i.keyword === "COPY").flatMap((ins) => {
    const { sources, dest } = copyArgs(ins)
    const fromRef = ins.flags.get("from")
    const from = fromRef === undefined ? undefined : stageOf(df, fromRef)
    const d = posix.resolve(ins.workdir, dest)
    const intoDir = dest.endsWith("/") || sources.length > 1
    return sources.map((s) => {
      const source = from === undefined ? posix.normalize(s).replace(/\/$/, "") : posix.resolve(from.workdir, s)
      const dir = isDirSource(df, from, source)
      return { at: dir || !intoDir ? d : posix.join(d, posix.basename(source)), dir, from, source }
    })
  })

/** Where `file` in `stage` comes from: the last COPY that put it there (with the path inside the source). */
const originOf = (df: Dockerfile, stage: Stage, file: string): { readonly from: Stage | undefined; readonly source: string } | undefined => {
  const hit = [...landings(df, stage)].reverse().find((l) => l.at === file || (l.dir && file.startsWith(`${l.at}/`)))
  if (hit === undefined) return undefined
  return { from: hit.from, source: hit.at === file ? hit.source : posix.join(hit.source, posix.relative(hit.at, file)) }
}

/** The build-context (repo) path `file` in `stage` was copied from, through any stages; undefined when made in a stage. */
function contextPathOf(df: Dockerfile, stage: Stage, file: string): string | undefined {
  const o = originOf(df, stage, file)
  if (o === undefined) return undefined
  return o.from === undefined ? o.source : contextPathOf(df, o.from, o.source)
}

const runs = (stage: Stage): ReadonlyArray<Instruction> => stage.instructions.filter((i) => i.keyword === "RUN")
/** The shell commands of a stage's RUNs, split at `&&`, `;` and `|`, as word lists. */
const commands = (stage: Stage): ReadonlyArray<ReadonlyArray<string>> =>
  runs(stage).flatMap((r) => r.args.split(/&&|;|\|\|?/).map((c) => words(c.trim())).filter((c) => c.length > 0))
const last = (stage: Stage, keyword: string): Instruction | undefined => stage.instructions.filter((i) => i.keyword === keyword).at(-1)
const labels = (stage: Stage): ReadonlyMap<string, string> =>
  new Map(stage.instructions.filter((i) => i.keyword === "LABEL").flatMap((i) => keyValues(i.args, i.line)))

// ------------------------------------------------------------------------------------------------
// The inputs: Dockerfile, .dockerignore, package.json, the Job

const DF = parseDockerfile(readFileSync("Dockerfile", "utf8"))
const runtime = DF.stages.at(-1)!
const pkg = obj(JSON.parse(readFileSync("package.json", "utf8")), "package.json")
const buildScript = str(at(pkg, "scripts.build"), "scripts.build")
/** `cli=src/cli/main.ts chain-worker=layers/chain-worker.ts` in the build script */
const ENTRY_POINTS = Object.fromEntries([...buildScript.matchAll(/(?<=\s)([\w-]+)=([\w./-]+\.ts)(?=\s)/g)].map((m) => [m[1]!, m[2]!]))
const OUTDIR = /--outdir=(\S+)/.exec(buildScript)?.[1] ?? "(none)"
const OUT_EXT = /--out-extension:\.js=(\S+)/.exec(buildScript)?.[1] ?? ".js"
/** the packages the build script keeps out of the bundle (`--external:node-llama-cpp`) */
const EXTERNAL = [...buildScript.matchAll(/--external:(\S+)/g)].map((m) => m[1]!)

/** The stage that runs `npm run build`, and the WORKDIR it runs in. */
const buildStage = DF.stages.find((s) => commands(s).some((c) => c.join(" ") === "npm run build"))
const buildRun = buildStage === undefined ? undefined : runs(buildStage).find((r) => r.args.includes("npm run build"))

const bundle = await esbuild.build({
  entryPoints: ENTRY_POINTS,
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  outdir: OUTDIR,
  outExtension: { ".js": OUT_EXT },
  external: EXTERNAL,
  write: false,
  metafile: true,
  logLevel: "silent"
})
const outputText = (name: string): string => {
  const f = bundle.outputFiles.find((o) => o.path === path.resolve(OUTDIR, `${name}${OUT_EXT}`))
  if (f === undefined) throw new Error(`esbuild produced no ${name}${OUT_EXT}`)
  return f.text
}

const jobDocs = YAML.parseAllDocuments(readFileSync("deploy/openshift/vetobench-run-job.yaml", "utf8")).flatMap((d, i): Array<Obj> => {
  if (d.errors.length > 0) throw new Error(`vetobench-run-job.yaml document ${i}: ${d.errors.map((e) => e.message).join("; ")}`)
  const js: unknown = d.toJS()
  return js === null ? [] : [obj(js, `document ${i}`)]
})
const job = jobDocs.find((d) => d.kind === "Job")!
const configMap = jobDocs.find((d) => d.kind === "ConfigMap")!
const container = objs(at(job, "spec.template.spec.containers"), "containers")[0]!
const workingDir = str(container.workingDir, "workingDir")
const mounts = objs(container.volumeMounts, "volumeMounts")
const mountOf = (file: string) => mounts.find((m) => file === m.mountPath || file.startsWith(`${str(m.mountPath, "mountPath")}/`))
const script = [...arr(container.command ?? [], "command"), ...arr(container.args ?? [], "args")].map((x) => str(x, "command")).join("\n")
const cmData = obj(configMap.data, "ConfigMap data")

/** Where the runtime image has the CLI bundle: `<app>/dist/cli.mjs`. */
const bundleInImage = (name: string): string | undefined =>
  landings(DF, runtime).find((l) => l.from === buildStage && buildRun !== undefined && l.source === posix.join(buildRun.workdir, OUTDIR, `${name}${OUT_EXT}`))?.at
const cliInImage = bundleInImage("cli")
const APP = cliInImage === undefined ? "(no bundle in the image)" : posix.dirname(posix.dirname(cliInImage))
const DEBIAN_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]

/** The image has `file`: copied from the context (possibly through stages), or made by the final stage (mkdir). */
const imageHas = (file: string): boolean => originOf(DF, runtime, file) !== undefined

// ------------------------------------------------------------------------------------------------

describe("the Dockerfile parser", () => {
  const bad = (text: string) => () => parseDockerfile(text)
  it("accepts continuations, comments inside them, ARG substitution in FROM and COPY --from an earlier stage", () => {
    const df = parseDockerfile("# syntax=docker/dockerfile:1\nARG V=20\nFROM node:${V}-slim AS a\nWORKDIR /x\nRUN echo 1 \\\n# a comment\n && echo 2\nFROM node:${V:-18}\nCOPY --from=a /x/y ./\n")
    expect(df.stages.map((s) => [s.name, s.base])).toEqual([["a", "node:20-slim"], [undefined, "node:20"]])
    expect(commands(df.stages[0]!)).toEqual([["echo", "1"], ["echo", "2"]])
  })
  it("rejects unknown instructions, a COPY --from a later or missing stage, unknown flags, bad exec forms, a missing FROM", () => {
    expect(bad("FROM a\nCOPYY x y")).toThrow(/unknown instruction COPYY/)
    expect(bad("FROM a AS one\nCOPY --from=two /x /y\nFROM b AS two")).toThrow(/--from=two names no earlier stage/)
    expect(bad("FROM a\nCOPY --form=b /x /y")).toThrow(/no flag --form/)
    expect(bad('FROM a\nENTRYPOINT ["vetobench"')).toThrow(/not a JSON array/)
    expect(bad("RUN true")).toThrow(/before the first FROM/)
    expect(bad("FROM node:${NOPE}")).toThrow(/\$NOPE has no value/)
    expect(bad("FROM a AS x\nFROM b AS x")).toThrow(/named twice/)
    expect(bad("FROM a\nCOPY a b c")).toThrow(/ending in \//)
    expect(bad("FROM a\nRUN echo \\")).toThrow(/ends inside a continued line/)
  })
})

describe("Dockerfile", () => {
  it("parses: multi-stage, every COPY --from names an earlier stage, the last stage is the runtime", () => {
    expect(DF.stages.length).toBeGreaterThanOrEqual(2)
    expect(buildStage, "a stage running `npm run build`").toBeDefined()
    expect(buildStage).not.toBe(runtime)
  })

  it("every stage is on Node 20 (package.json engines allow it); the runtime stage is a Debian Node image", () => {
    const engines = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(str(at(pkg, "engines.node"), "engines.node"))!
    const minimum = [Number(engines[1]), Number(engines[2]), Number(engines[3])]
    const images = DF.stages.filter((s) => stageOf(DF, s.base) === undefined)
    for (const s of images) {
      const m = /^(?:docker\.io\/(?:library\/)?)?node:(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([a-z0-9.-]+))?(?:@sha256:[0-9a-f]{64})?$/.exec(s.base)
      expect(m, `stage ${s.name ?? s.index}: ${s.base} is an official node image`).not.toBeNull()
      const version = [Number(m![1]), m![2] === undefined ? Infinity : Number(m![2]), m![3] === undefined ? Infinity : Number(m![3])]
      expect(version[0], s.base).toBe(20)
      expect(version[0]).toBe(minimum[0])
      // a pinned minor/patch must still satisfy engines (a floating tag is the newest 20.x)
      expect(version[1]! > minimum[1]! || (version[1] === minimum[1] && version[2]! >= minimum[2]!), `${s.base} vs engines ${String(at(pkg, "engines.node"))}`).toBe(true)
    }
    expect(runtime.base).toMatch(/^node:20(\.\d+)*-(bookworm|bullseye)(-slim)?$/)
  })

  it("build stage: package.json and package-lock.json, then npm ci, then every source the bundle is built from, then npm run build", () => {
    const stage = buildStage!
    const ins = stage.instructions
    const ci = ins.findIndex((i) => i.keyword === "RUN" && /\bnpm ci\b/.test(i.args))
    expect(ci, "npm ci").toBeGreaterThanOrEqual(0)
    const wd = buildRun!.workdir
    for (const f of ["package.json", "package-lock.json"]) {
      expect(contextPathOf(DF, stage, posix.join(ins[ci]!.workdir, f)), `${f} before npm ci`).toBe(f)
    }
    expect(ins.indexOf(buildRun!)).toBeGreaterThan(ci)
    const inputs = Object.keys(bundle.metafile.inputs).filter((f) => !f.startsWith("node_modules/"))
    expect(inputs).toContain(ENTRY_POINTS.cli)
    for (const f of [...inputs, "tsconfig.json"]) expect(contextPathOf(DF, stage, posix.join(wd, f)), `${f} in the build stage at ${wd}/${f}`).toBe(f)
    // the sources come after npm ci, so editing them does not re-run it
    const sourceCopies = ins.filter((i) => i.keyword === "COPY" && copyArgs(i).sources.some((s) => inputs.some((f) => f.startsWith(posix.normalize(s).replace(/\/$/, "")))))
    for (const c of sourceCopies) expect(ins.indexOf(c), `line ${c.line}`).toBeGreaterThan(ci)
  })

  it("the CLI bundle only: no node_modules and no npm in the runtime stage; the bundle imports nothing but Node built-ins", () => {
    for (const l of landings(DF, runtime)) {
      expect(l.at, `line: COPY ${l.source}`).not.toMatch(/(^|\/)node_modules(\/|$)/)
      expect(l.source).not.toMatch(/(^|\/)node_modules(\/|$)/)
    }
    for (const c of commands(runtime)) expect(c[0], c.join(" ")).not.toMatch(/^(npm|npx|yarn|pnpm)$/)
    // left external by esbuild: Node built-ins, and ws's optional native accelerators (required in a try/catch);
    // node-llama-cpp (native binaries beside its files) is imported only when a llama_cpp judge is built, and
    // that kind is not available in the image (docs/judges.md)
    const OPTIONAL = new Set(["bufferutil", "utf-8-validate", "node-llama-cpp"])
    const externals = Object.values(bundle.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path))
    const packages = [...new Set(externals.filter((p) => !p.startsWith("node:") && !builtinModules.includes(p)))]
    expect(packages.filter((p) => !OPTIONAL.has(p))).toEqual([])
  })

  it("the runtime stage holds every bundle output beside cli.mjs, and every file the bundle opens relative to itself", () => {
    expect(cliInImage, "COPY of the build stage's cli bundle").toBeDefined()
    expect(posix.basename(posix.dirname(cliInImage!))).toBe(OUTDIR)
    for (const name of Object.keys(ENTRY_POINTS)) expect(bundleInImage(name), `${name}${OUT_EXT}`).toBe(posix.join(APP, OUTDIR, `${name}${OUT_EXT}`))
    // new URL("<relative>", import.meta.url) in the bundle: bridge.py, launch.py, examples/ …
    const relative = [...outputText("cli").matchAll(/new URL\(\s*"([^"]+)"\s*,\s*import\.meta\.url\s*\)/g)].map((m) => m[1]!)
    const wanted = relative.map((r) => posix.join(OUTDIR, r)).filter((f) => existsSync(f))
    expect(wanted).toContain("src/adapters/agent-safetybench/bridge.py")
    expect(wanted).toContain("src/adapters/asb/launch.py")
    for (const f of wanted) expect(contextPathOf(DF, runtime, posix.join(APP, f)), `${APP}/${f}`).toBe(f)
    // judge prompts are embedded (judges/prompts.ts): nothing under judges/ is needed at run time
    expect(landings(DF, runtime).map((l) => l.at).filter((a) => a.includes("/judges"))).toEqual([])
  })

  it("python3 is installed in the runtime stage (the Agent-SafetyBench bridge and the ASB launcher run in it)", () => {
    const install = commands(runtime).find((c) => c[0] === "apt-get" && c.includes("install"))
    expect(install).toBeDefined()
    expect(install).toContain("python3")
    expect(install).toContain("--no-install-recommends")
  })

  it("`vetobench` is on PATH (a link to the bundle, executable, with a node shebang) and is the ENTRYPOINT", () => {
    const link = commands(runtime).find((c) => c[0] === "ln" && c.includes("-s") && posix.basename(c.at(-1)!) === "vetobench")
    expect(link, "ln -s <bundle> <dir on PATH>/vetobench").toBeDefined()
    expect(link!.at(-2)).toBe(cliInImage)
    const envPath = runtime.args.get("PATH")
    expect((envPath?.split(":") ?? DEBIAN_PATH)).toContain(posix.dirname(link!.at(-1)!))
    expect(commands(runtime).some((c) => c[0] === "chmod" && /^0?7[57][57]$|^\+x$|^a\+x$/.test(c[1] ?? "") && c.includes(cliInImage!))).toBe(true)
    expect(outputText("cli").startsWith("#!/usr/bin/env node\n")).toBe(true)
    const entrypoint = execForm(last(runtime, "ENTRYPOINT")!)
    expect(entrypoint).toEqual(["vetobench"])
    expect(execForm(last(runtime, "CMD")!)).toBeDefined()
  })

  it("runs as a fixed numeric non-root UID in group 0, owning a group-writable WORKDIR (OpenShift's arbitrary UIDs)", () => {
    const user = last(runtime, "USER")
    expect(user, "USER").toBeDefined()
    const m = /^(\d+)(?::(\d+))?$/.exec(user!.args)
    expect(m, `USER ${user!.args} is numeric`).not.toBeNull()
    const uid = Number(m![1])
    expect(uid).toBeGreaterThan(0)
    expect(m![2] ?? "0").toBe("0")
    // no instruction after USER runs as root again
    expect(runtime.instructions.slice(runtime.instructions.indexOf(user!)).filter((i) => i.keyword === "RUN")).toEqual([])
    const useradd = commands(runtime).find((c) => c[0] === "useradd")
    if (useradd !== undefined) {
      expect(useradd[useradd.indexOf("--uid") + 1]).toBe(String(uid))
      expect(useradd[useradd.indexOf("--gid") + 1]).toBe("0")
    }
    const wd = runtime.workdir
    expect(wd).not.toBe("/")
    const cs = commands(runtime)
    expect(cs.some((c) => c[0] === "chown" && c.includes("-R") && c.includes(`${uid}:0`) && c.includes(wd)), `chown -R ${uid}:0 ${wd}`).toBe(true)
    expect(cs.some((c) => c[0] === "chmod" && c.includes("-R") && c.includes("g=u") && c.includes(wd)), `chmod -R g=u ${wd}`).toBe(true)
  })

  it("fetches Agent-SafetyBench at the commit the README pins, without its git history", () => {
    const readme = readFileSync("README.md", "utf8")
    const pinned = /git -C \S+ checkout ([0-9a-f]{40})/.exec(readme)?.[1]
    const cloned = /git clone (https:\/\/github\.com\/\S+)/.exec(readme)?.[1]
    expect(pinned).toBeDefined()
    expect(DF.globalArgs.get("ASBENCH_COMMIT")).toBe(pinned)
    expect(DF.globalArgs.get("ASBENCH_REPO")).toBe(cloned)
    const stage = DF.stages.find((s) => runs(s).some((r) => r.args.includes("${ASBENCH_COMMIT}")))
    expect(stage, "a stage fetching ${ASBENCH_COMMIT}").toBeDefined()
    expect(stage!.args.get("ASBENCH_COMMIT")).toBe(pinned)
    expect(commands(stage!).some((c) => c[0] === "rm" && c.some((w) => w.endsWith("/.git")))).toBe(true)
  })

  it(".dockerignore keeps secrets, runs, dependencies and build output out of the context, and none of the COPY sources", () => {
    const patterns = readFileSync(".dockerignore", "utf8").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"))
    expect(patterns.filter((p) => p.startsWith("!")), "no exceptions: the simple matcher below would be wrong").toEqual([])
    const norm = (p: string) => posix.normalize(p.replace(/^\/+/, "")).replace(/\/$/, "")
    const toRe = (p: string) => new RegExp(`^${norm(p).split("**").map((part) => part.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]")).join(".*")}(/.*)?$`)
    const ignored = (f: string) => patterns.some((p) => toRe(p).test(f))
    for (const must of ["node_modules", "runs", "keys", ".venv", ".venv-test", "dist", ".git", "configs/vetobench.yaml", ".env"]) {
      expect(ignored(must), `.dockerignore covers ${must}`).toBe(true)
    }
    const contextSources = DF.stages.flatMap((s) => landings(DF, s)).filter((l) => l.from === undefined).map((l) => l.source)
    expect(contextSources.length).toBeGreaterThan(0)
    for (const s of contextSources) expect(ignored(s), `COPY ${s} is not ignored`).toBe(false)
  })
})

describe("Dockerfile and deploy/openshift/vetobench-run-job.yaml agree", () => {
  it("the Job's image is vetobench (package name, image title), pushed to an image stream in the Job's namespace", () => {
    const image = str(container.image, "image")
    const m = /^(?:(?<registry>[^/]+\.[^/]+(?::\d+)?|[^/]+:\d+)\/)?(?<repo>[a-z0-9._/-]+?)(?::(?<tag>[\w.-]+))?(?:@sha256:[0-9a-f]{64})?$/.exec(image)
    expect(m, image).not.toBeNull()
    const repo = m!.groups!.repo!
    expect(posix.basename(repo)).toBe(str(pkg.name, "package name"))
    expect(labels(runtime).get("org.opencontainers.image.title")).toBe(pkg.name)
    expect(m!.groups!.registry).toBe("image-registry.openshift-image-registry.svc:5000")
    expect(repo).toBe(`${str(at(job, "metadata.namespace"), "namespace")}/${str(pkg.name, "name")}`)
  })

  it("the Job's command runs in the image: /bin/sh from the Debian base, then `vetobench` and `node` on PATH", () => {
    expect(arr(container.command, "command")[0]).toBe("/bin/sh")
    expect(runtime.base).toMatch(/-(bookworm|bullseye)/)
    const invoked = new Set(script.split("\n").map((l) => /^\s*(?:until\s+|if\s+!?\s*)?([a-z][\w-]*)\s/.exec(l)?.[1]).filter((w): w is string => w !== undefined))
    expect(invoked).toContain("vetobench")
    expect(invoked).toContain("node")
    const link = commands(runtime).find((c) => c[0] === "ln" && posix.basename(c.at(-1)!) === "vetobench")
    expect(link).toBeDefined()
    // node: the official image's /usr/local/bin/node (checked: every stage is node:20)
  })

  it("workingDir is the image's WORKDIR; the runs PVC and the ConfigMap mount below it, on directories the image makes group-writable", () => {
    expect(workingDir).toBe(runtime.workdir)
    for (const mnt of mounts) expect(str(mnt.mountPath, "mountPath").startsWith(`${workingDir}/`), String(mnt.mountPath)).toBe(true)
    const made = commands(runtime).filter((c) => c[0] === "mkdir").flatMap((c) => c.slice(1))
    expect(made).toContain(`${workingDir}/runs`)
    expect(mountOf(`${workingDir}/runs`)?.name).toBe("runs")
  })

  it("the files the Job names (-c, -e) are ConfigMap keys under the configs mount", () => {
    const cli = script.split("\n").filter((l) => /^\s*vetobench\s/.test(l)).join("\n")
    const files = [...cli.matchAll(/\s-[ce]\s+(\S+)/g)].map((m) => posix.resolve(workingDir, m[1]!))
    expect(files.length).toBeGreaterThanOrEqual(2)
    for (const f of files) {
      const mnt = mountOf(f)
      expect(mnt?.readOnly, f).toBe(true)
      expect(Object.keys(cmData)).toContain(posix.relative(str(mnt!.mountPath, "mountPath"), f))
    }
  })

  it("the ConfigMap's paths resolve (repo root = workingDir) into the runs PVC or into the image", () => {
    const file = posix.join(workingDir, "configs", "vetobench.yaml")
    const env = { VLLM_API_KEY: "secret" }
    const settings = Either.getOrThrowWith(decodeSettings(YAML.parse(str(cmData["vetobench.yaml"], "vetobench.yaml")), { file, root: repoRootFor(file), env }), (e) => new Error(`${e.file} ${e.path}: ${e.reason}`))
    expect(settings.root).toBe(workingDir)
    const experiment = Either.getOrThrowWith(
      decodeExperiment(YAML.parse(str(cmData["experiment.yaml"], "experiment.yaml")), { file: posix.join(workingDir, "configs", "experiment.yaml"), settings, env }),
      (e) => new Error(`${e.file} ${e.path}: ${e.reason}`)
    )
    const onPvc = (p: string) => mountOf(p)?.name === "runs"
    expect(onPvc(settings.proxy.audit_dir), settings.proxy.audit_dir).toBe(true)
    expect(onPvc(settings.paths.runs_dir), settings.paths.runs_dir).toBe(true)
    expect(onPvc(experiment.run_dir), experiment.run_dir).toBe(true)
    if (experiment.agent_safetybench.split !== null) expect(onPvc(experiment.agent_safetybench.split)).toBe(true)
    // the benchmark checkout is in the image, copied from the stage that fetched it
    expect(experiment.agent_safetybench.enabled).toBe(true)
    expect(imageHas(settings.paths.asbench_dir), settings.paths.asbench_dir).toBe(true)
    const origin = originOf(DF, runtime, settings.paths.asbench_dir)
    expect(origin?.from === undefined ? undefined : runs(origin.from).some((r) => r.args.includes("${ASBENCH_COMMIT}"))).toBe(true)
  })

  it("docs/scale-out.md says how to build and push the image the Job pulls", () => {
    const doc = readFileSync("docs/scale-out.md", "utf8")
    const image = str(container.image, "image").replace(/:[\w.-]+$/, "")
    for (const needle of ["docker build -t", "podman build", "oc registry login", image]) expect(doc.includes(needle), needle).toBe(true)
  })
})
