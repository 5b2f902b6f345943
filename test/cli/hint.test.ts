/** Printed follow-up commands: `vetobench …` only when that name on PATH is this bundle, else `npx vetobench …`; shell quoting. */
import * as fs from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { invocationPrefix, shellQuote } from "../../src/shell/hint.js"

const tmp = () => fs.realpathSync(fs.mkdtempSync(path.join(tmpdir(), "vetobench-hint-")))

/** A bundle file and a `bin` folder whose `vetobench` links to it (as npm links a package's bin). */
const install = () => {
  const dir = tmp()
  const bundle = path.join(dir, "pkg", "dist", "cli.mjs")
  fs.mkdirSync(path.dirname(bundle), { recursive: true })
  fs.writeFileSync(bundle, "#!/usr/bin/env node\n", { mode: 0o755 })
  const bin = path.join(dir, "bin")
  fs.mkdirSync(bin)
  fs.symlinkSync(bundle, path.join(bin, "vetobench"))
  const npmBin = path.join(dir, "proj", "node_modules", ".bin")
  fs.mkdirSync(npmBin, { recursive: true })
  fs.symlinkSync(bundle, path.join(npmBin, "vetobench"))
  return { dir, bundle, bin, npmBin }
}

describe("invocationPrefix", () => {
  it("vetobench when the first vetobench on PATH is the running bundle", () => {
    const { bin, bundle } = install()
    expect(invocationPrefix({ path: ["/nonexistent", bin].join(path.delimiter), script: bundle, npmCommand: undefined })).toBe("vetobench")
  })

  it("npx vetobench when none is on PATH, or another install is first", () => {
    const { bin, bundle, dir } = install()
    expect(invocationPrefix({ path: "/nonexistent", script: bundle, npmCommand: undefined })).toBe("npx vetobench")
    expect(invocationPrefix({ path: bin, script: path.join(dir, "other.mjs"), npmCommand: undefined })).toBe("npx vetobench")
    expect(invocationPrefix({ path: undefined, script: bundle, npmCommand: undefined })).toBe("npx vetobench")
  })

  it("under npm (npx, npm run) the node_modules/.bin folders npm put on PATH do not count", () => {
    const { bundle, npmBin, bin } = install()
    expect(invocationPrefix({ path: npmBin, script: bundle, npmCommand: undefined })).toBe("vetobench")
    expect(invocationPrefix({ path: npmBin, script: bundle, npmCommand: "exec" })).toBe("npx vetobench")
    expect(invocationPrefix({ path: [npmBin, bin].join(path.delimiter), script: bundle, npmCommand: "run-script" })).toBe("vetobench")
  })
})

describe("shellQuote", () => {
  it("leaves plain words and paths alone, single-quotes the rest", () => {
    expect(shellQuote("runs/audit/r1.jsonl")).toBe("runs/audit/r1.jsonl")
    expect(shellQuote("0/4")).toBe("0/4")
    expect(shellQuote("qwen3.8-27b@enforce:small")).toBe("qwen3.8-27b@enforce:small")
    expect(shellQuote("my runs/a b.jsonl")).toBe("'my runs/a b.jsonl'")
    expect(shellQuote("it's")).toBe("'it'\\''s'")
    expect(shellQuote("")).toBe("''")
  })
})
