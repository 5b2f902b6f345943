/**
 * Before any test: check what the suite needs from outside the checkout (one line naming what is
 * missing and how to get it, instead of many obscure failures), then build the CLI bundle once so
 * CLI tests exercise the current source as users run it.
 */
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

export default function setup() {
  const shared = path.resolve(REPO, "../shared/benchmarks")
  if (!existsSync(shared)) {
    throw new Error(`npm test needs the project's shared folder beside this checkout (benchmark data the tests read): ${shared} not found`)
  }
  execFileSync("npm", ["run", "--silent", "build"], { stdio: "inherit" })
}
