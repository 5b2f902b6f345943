/**
 * "Did you mean …?" for names a user typed: subcommands, options, config keys, judge names.
 *
 * A candidate is suggested when it is close to the input: the same name in another case, an edit
 * distance (insertions, deletions, substitutions and swaps of two neighbouring characters,
 * case-insensitive) of at most a third of the longer name (at least 1, at most 3), or a name the
 * input (three characters or more, leading dashes aside) begins, or, for four characters or more,
 * a name that contains the input or is contained in it. The closest
 * candidates win, at most three, in the order given.
 *
 * This module imports nothing, so layers/, judges/ and src/ may all use it.
 */

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions). */
export const editDistance = (a: string, b: string): number => {
  if (a === b) return 0
  if (a.length === 0) return b.length
  if (b.length === 0) return a.length
  const rows: Array<Array<number>> = []
  for (let i = 0; i <= a.length; i++) {
    const row: Array<number> = [i]
    for (let j = 1; j <= b.length; j++) row.push(i === 0 ? j : 0)
    rows.push(row)
  }
  const at = (i: number, j: number): number => rows[i]![j]!
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, at(i - 2, j - 2) + 1)
      rows[i]![j] = d
    }
  }
  return at(a.length, b.length)
}

/** How far apart `input` and `candidate` are, or `undefined` when too far to suggest. */
const closeness = (input: string, candidate: string): number | undefined => {
  const a = input.toLowerCase()
  const b = candidate.toLowerCase()
  if (a === b) return 0
  const stem = (s: string) => s.replace(/^-+/, "")
  const [sa, sb] = [stem(a), stem(b)]
  const d = editDistance(a, b)
  const limit = Math.min(3, Math.max(1, Math.floor(Math.max(a.length, b.length) / 3)))
  // an edit that replaces the whole name (`-x` for `-c`) is no resemblance
  if (d <= limit && d < Math.max(sa.length, sb.length)) return d
  if (sa.length >= 3 && sb.startsWith(sa)) return limit + 1
  if (sa.length >= 4 && sb.length >= 4 && (sb.includes(sa) || sa.includes(sb))) return limit + 1
  return undefined
}

/** The candidates closest to `input` (at most three, in the order given); empty when none is close. */
export const suggest = (input: string, candidates: Iterable<string>): ReadonlyArray<string> => {
  const scored: Array<{ readonly name: string; readonly d: number }> = []
  const seen = new Set<string>()
  for (const name of candidates) {
    if (name === input || seen.has(name)) continue
    seen.add(name)
    const d = closeness(input, name)
    if (d !== undefined) scored.push({ name, d })
  }
  if (scored.length === 0) return []
  const best = Math.min(...scored.map((s) => s.d))
  return scored.filter((s) => s.d === best).slice(0, 3).map((s) => s.name)
}

/**
 * `did you mean 'small'?` (several equally close candidates: `'a' or 'b'`), or `""` when no
 * candidate is close: for messages that go on after it (`unknown key; did you mean 'port'? (allowed: …)`).
 */
export const didYouMeanClause = (input: string, candidates: Iterable<string>): string => {
  const names = suggest(input, candidates).map((n) => `'${n}'`)
  if (names.length === 0) return ""
  const list = names.length === 1 ? names[0]! : `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]!}`
  return `did you mean ${list}?`
}

/**
 * `" (did you mean 'small'?)"`, to append to the name of an unknown `input`
 * (`unknown judge 'smal' (did you mean 'small'?); configured: …`), or `""` when no candidate is close.
 */
export const didYouMean = (input: string, candidates: Iterable<string>): string => {
  const clause = didYouMeanClause(input, candidates)
  return clause === "" ? "" : ` (${clause})`
}
