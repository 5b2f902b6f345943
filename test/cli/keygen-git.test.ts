/**
 * `vetobench audit keygen` and git, as users run it: a private key written into a git work tree
 * that does not ignore it draws a warning on stderr (the key is still written, exit 0); an ignored
 * one, or one outside any work tree, does not. The printed verify command can be pasted. The
 * command runs in this process (test/support/cli.ts), with absolute paths.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { runCliInProcess } from "../support/cli.js"

const tmp = () => fs.mkdtempSync(path.join(tmpdir(), "vetobench-keygen-git-"))
const hasGit = spawnSync("git", ["--version"]).status === 0

describe("audit keygen in a git work tree", () => {
  it("warns when the private key would be committed, not when it is ignored or outside git", async (ctx) => {
    if (!hasGit) return ctx.skip("git is not installed")
    const repo = tmp()
    expect(spawnSync("git", ["init", "-q"], { cwd: repo }).status).toBe(0)

    const exposed = await runCliInProcess(["audit", "keygen", "--out", path.join(repo, "k")])
    expect(exposed.code).toBe(0)
    expect(fs.existsSync(path.join(repo, "k", "audit.key"))).toBe(true)
    expect(exposed.stderr).toMatch(/^warning: \S*k\/audit\.key is in a git work tree and not git-ignored: add it \(or its folder\) to \.gitignore before you commit\n$/)
    expect(exposed.stdout).toMatch(/give it to whoever verifies: (npx )?vetobench verify-audit FILE --pubkey \S*k\/audit\.pub\)/)

    fs.writeFileSync(path.join(repo, ".gitignore"), "k/\n")
    const ignored = await runCliInProcess(["audit", "keygen", "--out", path.join(repo, "k"), "--force"])
    expect(ignored.code).toBe(0)
    expect(ignored.stderr).toBe("")

    const outside = await runCliInProcess(["audit", "keygen", "--out", path.join(tmp(), "keys")])
    expect(outside.code).toBe(0)
    expect(outside.stderr).toBe("")
  })

  it("this repository ignores keys/ and *.key", (ctx) => {
    if (!hasGit || !fs.existsSync(path.resolve(".git"))) return ctx.skip("not a git checkout")
    const r = spawnSync("git", ["check-ignore", "keys/audit.key", "other/x.key", ".env.local"], { encoding: "utf8" })
    expect(r.stdout.split("\n").filter((l) => l !== "")).toEqual(["keys/audit.key", "other/x.key", ".env.local"])
  })
})
