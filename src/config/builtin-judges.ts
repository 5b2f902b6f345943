/**
 * Judges that exist without configuration: the `static` controls (judges/static.ts). A configured
 * judge of the same name wins. Here in config, so the experiment decoder can accept their names
 * without importing the judges.
 */
import type { JudgeSpec } from "./settings.js"

/** Judges that exist without configuration (a configured judge of the same name wins). */
export const BUILTIN_JUDGES: Readonly<Record<string, JudgeSpec>> = {
  "allow-all": { kind: "static", decision: "allow" },
  "deny-all": { kind: "static", decision: "deny" }
}
