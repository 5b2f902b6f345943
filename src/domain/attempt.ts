/**
 * Attempts: which start of a unit of work a request belongs to. A benchmark runner starts a unit
 * (an Agent-SafetyBench case, an ASB shard) again after a kill, a crash or an error, and the proxy's
 * audit log keeps every start's calls; the runner numbers its starts (1, 2, …) and sends
 * `x-vetobench-attempt: <n>` with every agent request of start n, and the gate records it as the
 * call record's `attempt`. Counts then take each episode's calls from its final attempt only.
 *
 * Records written before attempts were recorded have no `attempt`; a header that is not a positive
 * decimal integer (at most 9 digits) is ignored (no `attempt` field).
 */

export const ATTEMPT_HEADER = "x-vetobench-attempt"

/** The attempt number of a request's (lower-cased) headers, or null when there is none. */
export const attemptOf = (headers: Readonly<Record<string, string | undefined>>): number | null => {
  const v = headers[ATTEMPT_HEADER]?.trim() ?? ""
  if (!/^[1-9]\d{0,8}$/.test(v)) return null
  return Number(v)
}
