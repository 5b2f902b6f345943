/**
 * The model-name grammar: `M` (passthrough), `M@baseline`, `M@shadow:J`, `M@enforce:J`.
 * Split at the last `@` (a model may contain `@`), then the spec at the first `:`.
 */
import { Data } from "effect"

export const ARMS = ["passthrough", "baseline", "shadow", "enforce"] as const
export type Arm = (typeof ARMS)[number]

export interface Route {
  readonly model: string
  readonly arm: Arm
  readonly judge: string | null
}

export class RouteError extends Data.TaggedError("RouteError")<{ readonly message: string }> {}

export const isJudged = (r: Route): boolean => r.arm === "shadow" || r.arm === "enforce"
export const isLogged = (r: Route): boolean => r.arm !== "passthrough"

export const makeRoute = (model: string, arm: Arm = "passthrough", judge: string | null = null): Route => ({
  model,
  arm,
  judge
})

/** Parse a client model string; the empty string is a passthrough route with an empty model. */
export const parseRoute = (name: string): Route | RouteError => {
  const at = name.lastIndexOf("@")
  if (at < 0) return makeRoute(name)
  const model = name.slice(0, at)
  const spec = name.slice(at + 1)
  const colon = spec.indexOf(":")
  const arm = colon < 0 ? spec : spec.slice(0, colon)
  const judge = colon < 0 ? "" : spec.slice(colon + 1)
  if (arm === "passthrough" || !(ARMS as ReadonlyArray<string>).includes(arm)) {
    return new RouteError({
      message: `unknown arm '${arm}' in model '${name}': use <model>, <model>@baseline, <model>@shadow:<judge> or <model>@enforce:<judge>`
    })
  }
  if ((arm === "shadow" || arm === "enforce") && judge === "") {
    return new RouteError({ message: `arm '${arm}' needs a judge: use ${model || "<model>"}@${arm}:<judge>` })
  }
  if (arm === "baseline" && judge !== "") {
    return new RouteError({ message: `the baseline arm takes no judge (got '${name}')` })
  }
  if (model === "") return new RouteError({ message: `empty model in '${name}'` })
  return makeRoute(model, arm as Arm, judge === "" ? null : judge)
}

/** Format a route; unlike the Python reference, a judge given to passthrough/baseline is an error. */
export const formatRoute = (r: Route): string | RouteError => {
  switch (r.arm) {
    case "passthrough":
    case "baseline":
      if (r.judge !== null) return new RouteError({ message: `the ${r.arm} arm takes no judge` })
      return r.arm === "passthrough" ? r.model : `${r.model}@baseline`
    case "shadow":
    case "enforce":
      if (!r.judge) return new RouteError({ message: `arm '${r.arm}' needs a judge` })
      return `${r.model}@${r.arm}:${r.judge}`
  }
}
