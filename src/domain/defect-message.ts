import { Cause, Option } from "effect"

/** One line for a defect or an interruption (never throws, whatever was thrown). */
export const defectMessage = (cause: Cause.Cause<unknown>): string => {
  try {
    const d = Cause.dieOption(cause)
    if (Option.isSome(d)) {
      const x = d.value
      const text = x instanceof Error ? `${x.name}: ${x.message}` : typeof x === "string" ? x : JSON.stringify(x) ?? String(x)
      return text.length > 300 ? `${text.slice(0, 300)}…` : text
    }
    if (Cause.isInterruptedOnly(cause)) return "interrupted"
    return Cause.pretty(cause).split("\n")[0] ?? "unknown failure"
  } catch {
    return "a value that cannot be shown was thrown"
  }
}
