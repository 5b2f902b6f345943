/**
 * System prompts of the `llm_json` judge: packaged prompts (embedded, so the bundled CLI needs no
 * files next to it) or a prompt file named in the judge's config.
 */
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { Either } from "effect"
import callOnlyV1 from "./prompts/call_only_v1.js"

/** Packaged prompts by name (the `prompt` value without an extension). */
export const PACKAGED_PROMPTS: Readonly<Record<string, string>> = {
  call_only_v1: callOnlyV1
}

export const DEFAULT_PROMPT = "call_only_v1"

export interface LoadedPrompt {
  readonly text: string
  /** `packaged:<name>` or the absolute file path */
  readonly source: string
  /** `sha256:` + 16 hex chars of the text's sha256 */
  readonly version: string
}

/** `sha256:` + the first 16 hex chars of the sha256 of `text`. */
export const shortHash = (text: string): string => createHash("sha256").update(text).digest("hex").slice(0, 16)

export const promptVersion = (text: string): string => `sha256:${shortHash(text)}`

const loaded = (text: string, source: string): LoadedPrompt => ({ text, source, version: promptVersion(text) })

/**
 * Load a prompt: a value with a file extension is a file path resolved against `root` (the repo
 * root, not the working directory); anything else names one of the `packaged` prompts (`what` they
 * are, for the message). Left = why not.
 */
export const loadPrompt = (
  value: string,
  root: string,
  packaged: Readonly<Record<string, string>> = PACKAGED_PROMPTS,
  what = "prompt"
): Either.Either<LoadedPrompt, string> => {
  if (path.extname(value) === "") {
    const text = packaged[value]
    return text !== undefined
      ? Either.right(loaded(text, `packaged:${value}`))
      : Either.left(
          `unknown packaged ${what} '${value}' (packaged: ${Object.keys(packaged).sort().join(", ")}); ` +
            "a prompt file path needs a file extension"
        )
  }
  const file = path.resolve(root, value)
  let text: string
  try {
    text = readFileSync(file, "utf8")
  } catch (e) {
    const code = typeof e === "object" && e !== null && "code" in e ? String(e.code) : "error"
    return Either.left(`cannot read prompt file ${file} (${code})`)
  }
  return text.trim() === "" ? Either.left(`prompt file ${file} is empty`) : Either.right(loaded(text, file))
}
