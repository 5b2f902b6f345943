/**
 * The run-id grammar. A run id names a run's audit file (`<run>.jsonl`) and its side files
 * (`<run>.anchor.jsonl`, `<run>.jsonl.lock`, `<run>.jsonl.torn-<ms>`), so a client's
 * `x-vetobench-run` header picks a file name: only ids of this grammar are accepted.
 *
 * - 1 to 128 characters from `A-Z a-z 0-9 _ . -`;
 * - the first character is a letter or a digit (no dot files, no `..`, no leading `-`);
 * - no reserved suffix: `.anchor` (run `x.anchor` would write run `x`'s anchor file), and no
 *   `.jsonl`, `.lock` or `.torn-…` part (the names of the side files).
 *
 * The harness's own ids (`<experiment>.<bench>.<model>.<variant>`, `.shard-I-of-N`) are of this
 * grammar; a null run id is the `adhoc` run.
 */
export const RUN_ID_MAX_LENGTH = 128

const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/
const RESERVED = /\.(anchor|jsonl|lock)(\.|$)|\.torn-/i

/** One sentence describing the grammar, for error messages. */
export const RUN_ID_GRAMMAR = `1-${RUN_ID_MAX_LENGTH} characters of A-Z a-z 0-9 _ . -, starting with a letter or digit, without a .anchor, .jsonl, .lock or .torn- part`

/** Why `id` is not a run id, or null when it is one. */
export const runIdProblem = (id: string): string | null => {
  if (id.length === 0) return "the run id is empty"
  if (id.length > RUN_ID_MAX_LENGTH) return `the run id is ${id.length} characters long (at most ${RUN_ID_MAX_LENGTH})`
  if (!RUN_ID.test(id)) return `the run id ${JSON.stringify(id.slice(0, 40))} has characters outside the grammar (${RUN_ID_GRAMMAR})`
  const reserved = RESERVED.exec(id)
  if (reserved !== null) return `the run id ${JSON.stringify(id)} contains the reserved part '${reserved[0]}' (${RUN_ID_GRAMMAR})`
  return null
}

export const isRunId = (id: string): boolean => runIdProblem(id) === null

/**
 * `<name>.jsonl` of a run: a run id of the grammar (`isRunId`) unchanged, `adhoc` for null. Anything
 * else is mapped into the grammar, for callers that only name files (the file sink refuses such ids):
 * every run of characters outside `[A-Za-z0-9_.-]` becomes one `_`, the result is cut to
 * {@link RUN_ID_MAX_LENGTH}, characters before the first letter or digit and trailing `_` are stripped,
 * the dot of a reserved part (`.anchor`, `.jsonl`, `.lock`, `.torn-`) becomes `_`; `adhoc` when nothing
 * is left. Different invalid ids can share a name: never pick a file to write by this mapping.
 */
export const auditFileName = (runId: string | null): string => {
  if (runId === null || isRunId(runId)) return `${runId ?? "adhoc"}.jsonl`
  const name = runId
    .replace(/[^A-Za-z0-9_.-]+/g, "_")
    .slice(0, RUN_ID_MAX_LENGTH)
    .replace(/^[^A-Za-z0-9]+/, "")
    .replace(/\.(?=(?:anchor|jsonl|lock)(?:\.|$)|torn-)/gi, "_")
    .replace(/_+$/, "")
  return `${isRunId(name) ? name : "adhoc"}.jsonl`
}
