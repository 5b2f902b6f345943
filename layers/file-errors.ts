/** Reading files: why a read failed, in the words every audit command prints. */
import { errorCode } from "./http-errors.js"

/** "file not found", "is a directory", or "cannot read: <message>". */
export const readFailure = (cause: unknown): string => {
  const code = errorCode(cause)
  if (code === "ENOENT") return "file not found"
  if (code === "EISDIR") return "is a directory"
  return `cannot read: ${cause instanceof Error ? cause.message : String(cause)}`
}
