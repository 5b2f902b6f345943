/**
 * A scratch copy of `test/fixtures/results` (the two-variant experiment `fixture`) with a settings
 * file and an experiment file pointing at it, so `vetobench report` can write its files without
 * touching the fixture. `arms` lists `enforce` before `baseline` on purpose (paired Δs must not
 * depend on the order).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

export const FIXTURE = path.resolve(import.meta.dirname, "../fixtures/results")

export interface Workspace {
  readonly root: string
  readonly settings: string
  readonly experiment: string
  readonly runDir: string
  readonly cleanup: () => void
}

export interface WorkspaceOptions {
  /** paths (relative to the copy) to delete before the report runs, e.g. `run/asbench` */
  readonly remove?: ReadonlyArray<string>
  /** the ASB checkout; default the fixture's copy */
  readonly asbDir?: string
}

export const makeWorkspace = (opts: WorkspaceOptions = {}): Workspace => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-report-"))
  fs.cpSync(FIXTURE, root, { recursive: true })
  for (const p of opts.remove ?? []) fs.rmSync(path.join(root, p), { recursive: true, force: true })
  const configs = path.join(root, "configs")
  fs.mkdirSync(configs, { recursive: true })
  const settings = path.join(configs, "vetobench.yaml")
  const experiment = path.join(configs, "fixture.yaml")
  const q = (s: string) => JSON.stringify(s)
  fs.writeFileSync(
    settings,
    [
      "upstreams:",
      "  - name: local",
      "    base_url: http://127.0.0.1:9/v1",
      "    models: []",
      "judges:",
      "  guard: {kind: static, decision: deny}",
      "proxy:",
      `  audit_dir: ${q(path.join(root, "audit"))}`,
      "paths:",
      `  asb_dir: ${q(opts.asbDir ?? path.join(root, "asb-checkout"))}`,
      ""
    ].join("\n")
  )
  fs.writeFileSync(
    experiment,
    [
      "name: fixture",
      `run_dir: ${q(path.join(root, "run"))}`,
      "models: [agent]",
      "judges: [guard]",
      "arms: [enforce, baseline]",
      "asb:",
      "  attacks:",
      "    - {method: direct_prompt_injection}",
      "    - {method: clean}",
      ""
    ].join("\n")
  )
  return { root, settings, experiment, runDir: path.join(root, "run"), cleanup: () => fs.rmSync(root, { recursive: true, force: true }) }
}
