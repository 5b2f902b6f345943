/**
 * No folder cycles (issue 20 §4, docs/architecture.md "Folders and their layers"): the folders of
 * src/* (files directly in src/ count as `src`), judges and layers, with an edge a → b when a file
 * in a imports a file in b (static `import`/`export … from`, side-effect `import "…"` and dynamic
 * `import("…")`, relative specifiers only). A cycle fails the test, naming one import per edge.
 *
 * `ALLOWED` lists the edges of the cycles not removed yet, each with why; they are taken out of
 * the graph before the check, so any other cycle (a new one) still fails, and an entry whose edge
 * no longer exists fails too (the list only shrinks).
 *
 * Also: src/run-layout, the one home of the run layout, imports only src/domain (and packages).
 */
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"

const ROOTS = ["src", "judges", "layers"] as const

interface Allowed {
  readonly from: string
  readonly to: string
  readonly why: string
}

/** Edges of cycles still to remove. Empty is the goal. */
const ALLOWED: ReadonlyArray<Allowed> = [
  // (kept empty: add an entry only with the reason the edge cannot go yet)
]

/** `src/<dir>` for src/<dir>/…, `src` for a file directly in src/, else the top folder (judges, layers). */
export const folderOf = (rel: string): string => {
  const parts = rel.split("/")
  if (parts[0] === "src") return parts.length > 2 ? `src/${parts[1]}` : "src"
  return parts[0]!
}

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g

const tsFiles = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name)
    if (statSync(p).isDirectory()) return name === "node_modules" ? [] : tsFiles(p)
    return /\.m?ts$/.test(name) && !name.endsWith(".d.ts") ? [p] : []
  })

/** `"a -> b"` → one import that makes the edge (`file -> specifier`). */
export const folderEdges = (root: string, roots: ReadonlyArray<string>): Map<string, string> => {
  const edges = new Map<string, string>()
  for (const r of roots) {
    for (const file of tsFiles(path.join(root, r))) {
      const rel = path.relative(root, file).split(path.sep).join("/")
      const from = folderOf(rel)
      for (const m of readFileSync(file, "utf8").matchAll(SPECIFIER)) {
        const target = path.relative(root, path.resolve(path.dirname(file), m[1]!)).split(path.sep).join("/")
        if (target.startsWith("..") || !roots.includes(target.split("/")[0]!)) continue
        const to = folderOf(target)
        const key = `${from} -> ${to}`
        if (from !== to && !edges.has(key)) edges.set(key, `${rel} -> ${m[1]}`)
      }
    }
  }
  return edges
}

/** The strongly connected components with more than one folder (Tarjan), each sorted. */
export const cycles = (edgeKeys: Iterable<string>): Array<Array<string>> => {
  const next = new Map<string, Array<string>>()
  for (const k of edgeKeys) {
    const [a, b] = k.split(" -> ") as [string, string]
    next.set(a, [...(next.get(a) ?? []), b])
    if (!next.has(b)) next.set(b, [])
  }
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const out: Array<Array<string>> = []
  const visit = (v: string) => {
    index.set(v, index.size)
    low.set(v, index.get(v)!)
    stack.push(v)
    onStack.add(v)
    for (const w of next.get(v)!) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const c: Array<string> = []
      for (;;) {
        const w = stack.pop()!
        onStack.delete(w)
        c.push(w)
        if (w === v) break
      }
      if (c.length > 1) out.push(c.sort())
    }
  }
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v)
  return out
}

/** One line per edge inside each cycle: `a -> b (file -> specifier)`. */
export const describeCycles = (edges: ReadonlyMap<string, string>): Array<string> =>
  cycles(edges.keys()).map((c) => {
    const inside = [...edges].filter(([k]) => {
      const [a, b] = k.split(" -> ") as [string, string]
      return c.includes(a) && c.includes(b)
    })
    return [`cycle ${c.join(", ")}:`, ...inside.map(([k, example]) => `  ${k} (${example})`)].join("\n")
  })

const withoutAllowed = (edges: ReadonlyMap<string, string>): Map<string, string> =>
  new Map([...edges].filter(([k]) => !ALLOWED.some((a) => k === `${a.from} -> ${a.to}`)))

describe("folder import graph", () => {
  const edges = folderEdges(process.cwd(), ROOTS)

  it("has no cycles among src/*, judges and layers (apart from the allow-list)", () => {
    expect(edges.size).toBeGreaterThan(50)
    expect(describeCycles(withoutAllowed(edges)).join("\n")).toBe("")
  })

  it("lists in ALLOWED only edges that still exist", () => {
    expect(ALLOWED.filter((a) => !edges.has(`${a.from} -> ${a.to}`)).map((a) => `${a.from} -> ${a.to}`)).toEqual([])
  })

  it("src/run-layout imports only src/domain", () => {
    const out = [...edges].filter(([k]) => k.startsWith("src/run-layout -> ") && k !== "src/run-layout -> src/domain")
    expect(out.map(([k, example]) => `${k} (${example})`)).toEqual([])
  })

  it("src/domain imports no other folder", () => {
    expect([...edges].filter(([k]) => k.startsWith("src/domain -> ")).map(([k, example]) => `${k} (${example})`)).toEqual([])
  })

  it("finds a cycle made by a static and a dynamic import, and names both imports", () => {
    const root = mkdtempSync(path.join(tmpdir(), "folder-cycles-"))
    try {
      mkdirSync(path.join(root, "src", "a"), { recursive: true })
      mkdirSync(path.join(root, "src", "b"), { recursive: true })
      mkdirSync(path.join(root, "layers"), { recursive: true })
      mkdirSync(path.join(root, "judges"), { recursive: true })
      writeFileSync(path.join(root, "src", "a", "x.ts"), `import { y } from "../b/y.js"\nexport const x = y\n`)
      writeFileSync(path.join(root, "src", "b", "y.ts"), `export const y = 1\nexport const later = () => import("../a/x.js")\n`)
      writeFileSync(path.join(root, "layers", "z.ts"), `export * from "../src/a/x.js"\nimport "./side.js"\n`)
      writeFileSync(path.join(root, "src", "index.ts"), `export { x } from "./a/x.js"\n`)
      const found = folderEdges(root, ROOTS)
      expect([...found.keys()].sort()).toEqual(["layers -> src/a", "src -> src/a", "src/a -> src/b", "src/b -> src/a"])
      expect(describeCycles(found)).toEqual([
        ["cycle src/a, src/b:", "  src/a -> src/b (src/a/x.ts -> ../b/y.js)", "  src/b -> src/a (src/b/y.ts -> ../a/x.js)"].join("\n")
      ])
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})
