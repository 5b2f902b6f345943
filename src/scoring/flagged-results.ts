/**
 * Result screening in scoring: how many tool results the result screen rated and flagged, and in
 * how many episodes (src/screening/). Counted from the `type: "result"` records of each episode's
 * final attempt (as the calls are), never mixed into the call figures. A resent result rated again
 * (`resent`: src/screening/Screening.ts) is the same result: it counts once, at its first rating.
 */
import type { FlaggedResults } from "./summary-types.js"
import type { ScreenedResult } from "./files.js"

export const flaggedResults = (records: ReadonlyArray<ScreenedResult>): FlaggedResults => {
  const episodes = new Set<string>()
  let flagged = 0
  let replaced = 0
  let screened = 0
  for (const r of records) {
    if (r.resent === true) continue
    screened++
    if (!r.flagged) continue
    flagged++
    if (r.replaced) replaced++
    // a result outside any episode counts as its own
    episodes.add(r.episode_id === null ? `\u0001${flagged}` : `${r.session_id ?? ""}\u0000${r.episode_id}`)
  }
  return { screened, flagged, replaced, episodes_with_flagged: episodes.size }
}
