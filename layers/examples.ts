/**
 * Paths of what ships with vetobench itself: the small Agent-SafetyBench-shaped checkout of our own
 * (`examples/agent-safetybench-mini`) that `vetobench demo` runs. Resolved from this module's
 * location, which is one level below the repository root both in the sources (`layers/`) and in
 * the bundle (`dist/`).
 */
import { fileURLToPath } from "node:url"

export const exampleAsbenchDir = (): string => fileURLToPath(new URL("../examples/agent-safetybench-mini", import.meta.url))

/** The example value-gate policy (aex-toolgate format) for the example checkout's tools. */
export const exampleRulePolicy = (): string => fileURLToPath(new URL("../examples/policies/mini-assistant.json", import.meta.url))
