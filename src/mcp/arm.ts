/**
 * The arm of an MCP gate: `baseline`, `shadow:J` or `enforce:J` — the part of the model-name
 * grammar (src/domain/route.ts) after the `@`, given as the last path segment of
 * `/mcp/<server>/<arm>` or as `--arm`.
 */
import { ARMS, RouteError } from "../domain/route.js"
import type { LoggedArm } from "../domain/audit-record.js"

export interface McpArm {
  readonly arm: LoggedArm
  readonly judge: string | null
}

export const ARM_USAGE = "baseline, shadow:<judge> or enforce:<judge>"

/** Parse an arm spec; every error names the spec and the accepted forms. */
export const parseArm = (spec: string): McpArm | RouteError => {
  const colon = spec.indexOf(":")
  const arm = colon < 0 ? spec : spec.slice(0, colon)
  const judge = colon < 0 ? "" : spec.slice(colon + 1)
  if (arm === "passthrough" || !(ARMS as ReadonlyArray<string>).includes(arm)) {
    return new RouteError({ message: `unknown arm '${spec}': use ${ARM_USAGE}` })
  }
  if ((arm === "shadow" || arm === "enforce") && judge === "") return new RouteError({ message: `arm '${arm}' needs a judge: use ${arm}:<judge>` })
  if (arm === "baseline" && judge !== "") return new RouteError({ message: `the baseline arm takes no judge (got '${spec}')` })
  return { arm: arm as LoggedArm, judge: judge === "" ? null : judge }
}
