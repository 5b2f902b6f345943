/**
 * The manifest reader's shortcut (src/audit/manifest-records.ts: only lines containing `manifest`
 * or a `\u` escape are parsed) equals parsing every line, on generated logs: call records whose
 * strings mention "manifest", hold backslashes, quotes, non-ASCII and escapes; manifest records
 * written plainly, with letters of `type`/`manifest` spelled as `\u` escapes, with extra spaces; torn
 * last lines; blank and broken lines.
 */
import { describe, expect, it } from "vitest"
import { manifestRecordsIn, manifestRecordsSlow } from "../../src/audit/manifest-records.js"
import { makePrng, type Prng } from "../../src/domain/prng.js"

const ALPHABET = ['a', 'm', 'n', 'i', 'f', 'e', 's', 't', '"', "\\", "/", " ", "é", "中", "\n", "\t", "{", "}", "u", "0"]
const word = (p: Prng, max = 12): string => Array.from({ length: p.int(max) }, () => ALPHABET[p.int(ALPHABET.length)]!).join("")

/** JSON text of `value` with some ASCII letters of the text spelled as `\u00xx` (a valid JSON spelling of the same value). */
const escapeSome = (p: Prng, json: string): string => {
  let out = ""
  let inString = false
  for (let i = 0; i < json.length; i++) {
    const c = json[i]!
    if (c === '"' && (i === 0 || json[i - 1] !== "\\")) inString = !inString
    if (inString && /[a-z]/.test(c) && json[i - 1] !== "\\" && p.int(4) === 0) out += `\\u00${c.charCodeAt(0).toString(16)}`
    else out += c
  }
  return out
}

const line = (p: Prng, seq: number): string => {
  switch (p.int(6)) {
    case 0:
    case 1: {
      const call = { schema: "vetobench/v2", seq, type: "call", tool: { name: word(p), arguments: { note: `${word(p)} manifest ${word(p)}`, raw: JSON.stringify({ q: word(p) }) } } }
      return p.int(3) === 0 ? escapeSome(p, JSON.stringify(call)) : JSON.stringify(call)
    }
    case 2:
    case 3: {
      const manifest = {
        seq,
        type: "manifest",
        command: p.int(2) === 0 ? `vetobench ${word(p)}` : undefined,
        files: Array.from({ length: p.int(4) }, () => (p.int(5) === 0 ? { path: 1 } : { path: `/runs/${word(p)}`, sha256: "ab".repeat(32) })),
        logs: p.int(2) === 0 ? [{ path: `/audit/${word(p)}.jsonl`, records: p.int(100), root: "cd".repeat(32) }] : undefined
      }
      const text = JSON.stringify(manifest)
      return p.int(2) === 0 ? escapeSome(p, text) : p.int(2) === 0 ? text.replace(/,/g, ", ") : text
    }
    case 4:
      return p.int(2) === 0 ? "" : `{"type":"manifest","seq":${seq},"files":[` // broken
    default:
      return JSON.stringify({ type: word(p), seq })
  }
}

describe("manifest records: the shortcut equals parsing every line", () => {
  it("on 400 generated logs, complete lines only and with a torn last line", () => {
    let manifestsSeen = 0
    let escapedSeen = 0
    for (let seed = 1; seed <= 400; seed++) {
      const p = makePrng(seed)
      const lines = Array.from({ length: 1 + p.int(30) }, (_, i) => line(p, i + 1))
      const text = lines.join("\n") + (p.int(3) === 0 ? "" : "\n")
      for (const completeLinesOnly of [false, true]) {
        const fast = manifestRecordsIn(text, { completeLinesOnly })
        expect(fast, `seed ${seed}`).toEqual(manifestRecordsSlow(text, { completeLinesOnly }))
        expect(manifestRecordsIn(Buffer.from(text), { completeLinesOnly })).toEqual(fast)
        manifestsSeen += fast.length
      }
      escapedSeen += lines.filter((l) => l.includes("\\u") && !l.includes("manifest") && JSON.parse(l === "" ? "null" : tryJson(l))?.type === "manifest").length
    }
    // the generator did make manifest records, and some spelled only with escapes
    expect(manifestsSeen).toBeGreaterThan(200)
    expect(escapedSeen).toBeGreaterThan(5)
  })

  it("a bound log's record count must be a whole number of records and its root 64 hex digits (a -1 or 2.5 made verify-results crash)", () => {
    const root = "ab".repeat(32)
    const line = (records: unknown, r: unknown) => JSON.stringify({ seq: 1, type: "manifest", files: [], logs: [{ path: "/a.jsonl", records, root: r }] })
    expect(manifestRecordsIn([line(3, root), line(-1, root), line(2.5, root), line(3, "zz")].join("\n") + "\n").map((m) => m.logs.length)).toEqual([1, 0, 0, 0])
  })

  it("a record spelled with escapes is found; a torn last line only when asked for", () => {
    const escaped = '{"seq":7,"type":"\\u006danifest","files":[{"path":"/r/a","sha256":"00"}]}'
    expect(manifestRecordsIn(escaped + "\n")).toEqual([{ seq: 7, command: null, files: [{ path: "/r/a", sha256: "00" }], listed: 1, logs: [] }])
    expect(manifestRecordsIn(escaped, { completeLinesOnly: true })).toEqual([])
    expect(manifestRecordsIn(escaped)).toHaveLength(1)
  })
})

function tryJson(l: string): string {
  try {
    JSON.parse(l)
    return l
  } catch {
    return "null"
  }
}

describe("the files a results manifest binds", () => {
  it("a symlinked file is bound; a symlink to a directory (a parent: a loop) is not followed", async () => {
    const fs = await import("node:fs")
    const os = await import("node:os")
    const path = await import("node:path")
    const { filesUnder } = await import("../../src/audit/results.js")
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-bind-"))
    fs.mkdirSync(path.join(dir, "sub"))
    fs.writeFileSync(path.join(dir, "sub", "a.json"), "{}")
    fs.writeFileSync(path.join(dir, "elsewhere.txt"), "x")
    fs.symlinkSync(path.join(dir, "elsewhere.txt"), path.join(dir, "sub", "b.txt"))
    fs.symlinkSync(dir, path.join(dir, "sub", "loop"))
    expect(filesUnder(dir).map((f) => path.relative(dir, f))).toEqual(["elsewhere.txt", "sub/a.json", "sub/b.txt"])
    fs.rmSync(dir, { recursive: true, force: true })
  })
})
