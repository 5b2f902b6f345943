/** Property-test input: a JSON line with one to three small edits (insert, delete or replace a few characters). */
import { FastCheck as fc } from "effect"

/** Texts a mangled line may gain: JSON punctuation, digits, letters of keywords, escapes, whitespace. */
export const JSON_PIECES: ReadonlyArray<string> = ['"', "\\", "{", "}", "[", "]", ",", ":", " ", "0", "1", "-", ".", "e", "a", "u", "n", "t", "\\u0041", '\\"', "\t"]

/** `line` with 1–3 edits: at a position, drop 0–2 characters and insert one of `pieces`. */
export const mangledLine = (line: string, pieces: ReadonlyArray<string> = JSON_PIECES): fc.Arbitrary<string> =>
  fc.array(fc.tuple(fc.nat(line.length), fc.nat(3), fc.constantFrom(...pieces)), { minLength: 1, maxLength: 3 }).map((edits) => {
    let s = line
    for (const [at, len, insert] of edits) {
      const i = at % (s.length + 1)
      s = s.slice(0, i) + insert + s.slice(i + (len % 3))
    }
    return s
  })
