/**
 * The Agent-SafetyBench dev/test split (reference §7.3), with our own PRNG (`domain/prng.ts`)
 * instead of CPython's Mersenne Twister: same procedure, different (but deterministic) ids.
 *
 * - Group case ids by the first entry of `risks` (`(none)` when missing or empty); sort the
 *   category names.
 * - One generator for the whole split, used across categories in sorted order: for category
 *   `i` of `k`, sort its ids ascending, then shuffle them.
 * - Quotas `nd = nDev // k + (i < nDev % k ? 1 : 0)` and `nt` likewise; dev takes the first `nd`
 *   shuffled ids, test the next `nt`. A short category yields fewer (no redistribution).
 * - Output: `{ seed, dev: sorted ids, test: sorted ids, note }`, written as JSON with indent 1.
 */
import { Data, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { isValidSeed, makePrng, MAX_SEED } from "../../domain/prng.js"
import { isObject } from "../../domain/is-object.js"

export const NO_CATEGORY = "(none)"
export const SPLIT_NOTE = "dev is for judge prompt development only; report numbers on test"

/** The part of a released_data.json case the split needs. */
export interface SplitCase {
  readonly id: number
  /** the case's risk categories; the first one groups the case */
  readonly risks: ReadonlyArray<string>
}

export interface Split {
  readonly seed: number
  readonly dev: ReadonlyArray<number>
  readonly test: ReadonlyArray<number>
  readonly note: string
}

export interface SplitOptions {
  readonly nTest: number
  readonly nDev: number
  readonly seed: number
}

/** Reading or writing a data or split file failed; `file` as given. */
export class SplitError extends Data.TaggedError("SplitError")<{ readonly file: string; readonly reason: string }> {
  override get message(): string {
    return `${this.file}: ${this.reason}`
  }
}

export const categoryOf = (c: SplitCase): string => c.risks[0] ?? NO_CATEGORY

/** Case ids grouped by category, categories sorted (code-unit order, like Python's `sorted`), ids ascending. */
export const groupByCategory = (cases: ReadonlyArray<SplitCase>): ReadonlyArray<readonly [string, ReadonlyArray<number>]> => {
  const groups = new Map<string, Array<number>>()
  for (const c of cases) {
    const key = categoryOf(c)
    const ids = groups.get(key)
    if (ids === undefined) groups.set(key, [c.id])
    else ids.push(c.id)
  }
  return [...groups.keys()]
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((key) => [key, [...(groups.get(key) ?? [])].sort((a, b) => a - b)] as const)
}

const quota = (n: number, k: number, i: number): number => Math.floor(n / k) + (i < n % k ? 1 : 0)

const isCount = (n: number): boolean => Number.isSafeInteger(n) && n >= 0

/**
 * Makes a split. `nTest`, `nDev` must be non-negative integers and `seed` an integer in
 * [0, 2^32) (a RangeError otherwise: callers validate user input first).
 */
export const makeSplit = (cases: ReadonlyArray<SplitCase>, opts: SplitOptions): Split => {
  if (!isCount(opts.nTest) || !isCount(opts.nDev)) throw new RangeError(`split sizes must be non-negative integers, got ${opts.nTest}/${opts.nDev}`)
  if (!isValidSeed(opts.seed)) throw new RangeError(`split seed must be an integer in [0, ${MAX_SEED}], got ${opts.seed}`)
  const prng = makePrng(opts.seed)
  const groups = groupByCategory(cases)
  const k = groups.length
  const dev: Array<number> = []
  const test: Array<number> = []
  for (const [i, [, sortedIds]] of groups.entries()) {
    const ids = prng.shuffle([...sortedIds])
    const nd = quota(opts.nDev, k, i)
    const nt = quota(opts.nTest, k, i)
    dev.push(...ids.slice(0, nd))
    test.push(...ids.slice(nd, nd + nt))
  }
  return {
    seed: opts.seed,
    dev: dev.sort((a, b) => a - b),
    test: test.sort((a, b) => a - b),
    note: SPLIT_NOTE
  }
}

/** A risk category that cannot fill its share of the split. */
export interface ShortCategory {
  readonly category: string
  /** its cases */
  readonly cases: number
  /** its dev + test quota */
  readonly share: number
}

export interface SplitShortfall {
  readonly test: number
  readonly dev: number
  readonly short: ReadonlyArray<ShortCategory>
}

/**
 * Why `makeSplit` returned fewer cases than asked, or null when it did not: the categories whose
 * cases are fewer than their quota (the others are not drawn on to make up the difference).
 */
export const splitShortfall = (cases: ReadonlyArray<SplitCase>, opts: SplitOptions, split: Split): SplitShortfall | null => {
  if (split.test.length >= opts.nTest && split.dev.length >= opts.nDev) return null
  const groups = groupByCategory(cases)
  const k = groups.length
  const short = groups.flatMap(([category, ids], i) => {
    const share = quota(opts.nDev, k, i) + quota(opts.nTest, k, i)
    return ids.length < share ? [{ category, cases: ids.length, share }] : []
  })
  return { test: split.test.length, dev: split.dev.length, short }
}

/** One line: what was asked, what was returned and why. */
export const shortfallLine = (f: SplitShortfall, opts: SplitOptions, total: number, categories: number): string => {
  const shown = f.short.slice(0, 4).map((c) => `${c.category}: ${c.cases} case${c.cases === 1 ? "" : "s"} for a share of ${c.share}`)
  const more = f.short.length > shown.length ? `, and ${f.short.length - shown.length} more` : ""
  const data = total < opts.nTest + opts.nDev ? ` the data has only ${total} cases;` : ""
  return `fewer cases than asked: ${f.test} test of ${opts.nTest}, ${f.dev} dev of ${opts.nDev}:${data} ` +
    `${f.short.length} of ${categories} risk categories have fewer cases than their share (${shown.join("; ")}${more}), ` +
    `and a short category is not made up from the others`
}

// ---------------------------------------------------------------------------------------------
// files

const errorText = (e: unknown): string => {
  const code = typeof e === "object" && e !== null && "code" in e ? e.code : undefined
  if (code === "ENOENT") return "not found"
  return e instanceof Error ? e.message : String(e)
}

const readJson = (file: string, what: string): Effect.Effect<unknown, SplitError> =>
  Effect.try({
    try: () => fs.readFileSync(file, "utf8"),
    catch: (e) => new SplitError({ file, reason: `cannot read ${what}: ${errorText(e)}` })
  }).pipe(
    Effect.flatMap((text) =>
      Effect.try({
        try: (): unknown => JSON.parse(text),
        catch: (e) => new SplitError({ file, reason: `${what} is not valid JSON: ${e instanceof Error ? e.message : String(e)}` })
      })
    )
  )

const stringList = (v: unknown): v is ReadonlyArray<string> => Array.isArray(v) && v.every((x) => typeof x === "string")

/** Validates a parsed released_data.json: a list of objects with unique integer `id`s. */
export const decodeCases = (raw: unknown, file: string): Effect.Effect<ReadonlyArray<SplitCase>, SplitError> =>
  Effect.suspend(() => {
    const fail = (reason: string) => Effect.fail(new SplitError({ file, reason }))
    if (!Array.isArray(raw)) return fail("expected a JSON list of cases")
    const out: Array<SplitCase> = []
    const seen = new Set<number>()
    for (const [i, item] of raw.entries()) {
      if (!isObject(item)) return fail(`case [${i}] is not an object`)
      const id = item["id"]
      if (typeof id !== "number" || !Number.isSafeInteger(id)) return fail(`case [${i}]: id must be an integer, got ${JSON.stringify(id) ?? "nothing"}`)
      if (seen.has(id)) return fail(`case [${i}]: duplicate id ${id}`)
      seen.add(id)
      const risks = item["risks"]
      if (risks !== undefined && risks !== null && !stringList(risks)) return fail(`case ${id}: risks must be a list of strings`)
      out.push({ id, risks: risks ?? [] })
    }
    return Effect.succeed(out)
  })

/** Reads Agent-SafetyBench's `data/released_data.json` (or any file of that shape). */
export const readCases = (file: string): Effect.Effect<ReadonlyArray<SplitCase>, SplitError> =>
  readJson(file, "data file").pipe(Effect.flatMap((raw) => decodeCases(raw, file)))

const idList = (v: unknown): v is ReadonlyArray<number> => Array.isArray(v) && v.every((x) => typeof x === "number" && Number.isSafeInteger(x))

/** Reads a split file written by `writeSplit` (or the Python reference). */
export const readSplit = (file: string): Effect.Effect<Split, SplitError> =>
  readJson(file, "split file").pipe(
    Effect.flatMap((raw) => {
      if (!isObject(raw)) return Effect.fail(new SplitError({ file, reason: "expected a JSON object {seed, dev, test, note}" }))
      const { dev, note, seed, test } = raw
      if (!idList(dev) || !idList(test)) return Effect.fail(new SplitError({ file, reason: "`dev` and `test` must be lists of integer case ids" }))
      if (typeof seed !== "number") return Effect.fail(new SplitError({ file, reason: "`seed` must be a number" }))
      return Effect.succeed<Split>({
        seed,
        dev,
        test,
        note: typeof note === "string" ? note : ""
      })
    })
  )

/** The split as written: JSON with indent 1 and a final newline. */
export const splitJson = (split: Split): string =>
  `${JSON.stringify({ seed: split.seed, dev: split.dev, test: split.test, note: split.note }, null, 1)}\n`

/** Writes a split file, creating parent directories. */
export const writeSplit = (file: string, split: Split): Effect.Effect<void, SplitError> =>
  Effect.try({
    try: () => {
      fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
      fs.writeFileSync(file, splitJson(split))
    },
    catch: (e) => new SplitError({ file, reason: `cannot write split file: ${errorText(e)}` })
  })
