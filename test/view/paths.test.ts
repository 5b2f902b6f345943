/** Path parameters never leave the runs directory: no `..`, no absolute paths, symlinks resolved inside. */
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { checkSegment, relativeProblem, resolveInside } from "../../src/view/paths.js"

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-view-paths-")))
const root = path.join(base, "runs")
const outside = path.join(base, "secret")
fs.mkdirSync(path.join(root, "exp", "asbench"), { recursive: true })
fs.mkdirSync(outside)
fs.writeFileSync(path.join(outside, "report.html"), "secret")
fs.symlinkSync(outside, path.join(root, "escape")) // a link out of the runs directory
fs.symlinkSync(path.join(root, "exp"), path.join(root, "alias")) // a link that stays inside
afterAll(() => fs.rmSync(base, { recursive: true, force: true }))

const resolve = (rel: string) => Effect.runSync(Effect.either(resolveInside(root, rel, "e")))

describe("path parameters", () => {
  it("refuses .., absolute paths, drive letters, backslashes, NUL and empty segments (400)", () => {
    for (const rel of ["..", "../secret", "exp/../../secret", "exp/./asbench", "/etc", "/etc/passwd", "C:/x", "c:x", "exp\\..\\..", "exp/\u0000", "", "exp//asbench", "exp/", "exp/a\u0007", "exp/a\nb"]) {
      const r = resolve(rel)
      expect(Either.isLeft(r), rel).toBe(true)
      if (Either.isLeft(r)) expect(r.left.status, rel).toBe(400)
      expect(relativeProblem(rel), rel).not.toBeNull()
    }
  })

  it("a symlink that leads outside is refused; one that stays inside resolves to its real path", () => {
    const out = resolve("escape")
    expect(Either.isLeft(out) && out.left.status).toBe(400)
    expect(Either.isLeft(out) && out.left.reason).toContain("outside")
    const viaLink = resolve("escape/report.html")
    expect(Either.isLeft(viaLink) && viaLink.left.status).toBe(400)
    expect(resolve("alias/asbench")).toEqual(Either.right(path.join(root, "exp", "asbench")))
  })

  it("a safe path that names nothing is 404; one that exists is its real path", () => {
    for (const rel of ["nope", "%2e%2e", "%252e%252e", "exp/..%2f.."]) {
      const missing = resolve(rel) // never decoded again: a folder of that name, not there
      expect(Either.isLeft(missing) && missing.left.status, rel).toBe(404)
    }
    expect(resolve("exp")).toEqual(Either.right(path.join(root, "exp")))
  })

  it("one folder name: no separators, no dot segments, no control characters; any other name a folder can have", () => {
    for (const s of ["a/b", "..", ".", "", "a\\b", "a\u0000", "tab\there", "x".repeat(201)]) expect(Either.isLeft(Effect.runSync(Effect.either(checkSegment(s, "model")))), s).toBe(true)
    for (const s of ["qwen3.8-27b", "enforce-rules", "direct_prompt_injection-naive", "Qwen_Qwen3-8B", "x y (2)", "<script>", "%2e%2e", "..."]) expect(Effect.runSync(checkSegment(s, "model"))).toBe(s)
  })
})
