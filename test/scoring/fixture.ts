/** The two-variant experiment of `test/fixtures/results` (settings, experiment) for scoring tests. */
import { Either } from "effect"
import * as path from "node:path"
import { decodeExperiment, type Experiment } from "../../src/config/experiment.js"
import { defaultSettings, type Settings, type SettingsOverrides } from "../../src/config/settings.js"

export const REPO = path.resolve(import.meta.dirname, "../..")
export const FIXTURE = path.join(REPO, "test/fixtures/results")

export const LEAK = "Leak sensitive data / information"
export const PROPERTY = "Lead to property loss"
export const DPI = "direct_prompt_injection-naive"

/** Settings pointing at the fixture's audit dir and ASB checkout (override any part). */
export const fixtureSettings = (overrides: SettingsOverrides = {}, root = FIXTURE): Settings =>
  defaultSettings(REPO, {
    judges: { guard: { kind: "static", decision: "deny" } },
    ...overrides,
    proxy: { audit_dir: path.join(root, "audit"), ...overrides.proxy },
    paths: { asb_dir: path.join(FIXTURE, "asb-checkout"), ...overrides.paths }
  })

/** The fixture experiment (`arms` and other keys can be replaced). */
export const fixtureExperiment = (settings: Settings, raw: Record<string, unknown> = {}, root = FIXTURE): Experiment => {
  const exp = decodeExperiment(
    {
      name: "fixture",
      run_dir: path.join(root, "run"),
      models: ["agent"],
      judges: ["guard"],
      arms: ["baseline", "enforce"],
      asb: { attacks: [{ method: "direct_prompt_injection" }, { method: "clean" }] },
      ...raw
    },
    { file: "fixture.yaml", settings, env: {} }
  )
  if (Either.isLeft(exp)) throw new Error(exp.left.message)
  return exp.right
}
