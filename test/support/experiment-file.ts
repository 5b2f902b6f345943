/**
 * An experiment file for the runner tests, written in the harness's temp root (its own directory
 * per call) and loaded: `name`, `run_dir` (below that directory), `proxy_url` (the harness's proxy),
 * `models`, then the test's own lines.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { loadExperiment } from "../../src/config/experiment.js"
import type { HarnessShape } from "./harness.js"

export const harnessExperiment = (h: HarnessShape, name: string, models: ReadonlyArray<string>, lines: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(h.settings.root, `${name}-`))
    const file = path.join(dir, "exp.yaml")
    fs.writeFileSync(file, [`name: ${name}`, `run_dir: ${path.join(dir, "run")}`, `proxy_url: ${h.url}`, `models: [${models.join(", ")}]`, ...lines].join("\n"))
    return yield* loadExperiment(file, h.settings)
  }).pipe(Effect.orDie)
