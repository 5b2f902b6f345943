/** Build the CLI bundle once so CLI tests exercise the current source as users run it. */
import { execFileSync } from "node:child_process"

export default function setup() {
  execFileSync("npm", ["run", "--silent", "build"], { stdio: "inherit" })
}
