/**
 * The attempt log of a run directory (`attempts.jsonl`): one line per start of a unit of work,
 * written (one write + fsync) before the unit sends its first request, so a start cut short by a
 * kill is still numbered. A unit is an Agent-SafetyBench case (key: its id) or an ASB shard (key:
 * `shardNN`, with the attacker tools it ran). Its starts are numbered 1, 2, … per key; the runner
 * sends the number as `x-vetobench-attempt` (src/domain/attempt.ts) and the gate records it.
 *
 * Line: `{"key": "<unit>", "attempt": <n>, …}` plus what the unit's kind records (ASB: `tools`,
 * `malformed_arguments`). The last line per key is the unit's latest start.
 */
import { Effect, type Scope } from "effect"
import * as path from "node:path"
import { openAppender, readJsonl, type StoreError } from "./store.js"

export const ATTEMPTS_JSONL = "attempts.jsonl"

/** `<dir>/attempts.jsonl` */
export const attemptsFile = (dir: string): string => path.join(dir, ATTEMPTS_JSONL)

export interface AttemptLine {
  readonly key: string
  readonly attempt: number
  readonly [extra: string]: unknown
}

const lineOf = (v: Readonly<Record<string, unknown>>): AttemptLine | null =>
  typeof v.key === "string" && typeof v.attempt === "number" && Number.isSafeInteger(v.attempt) && v.attempt > 0
    ? { ...v, key: v.key, attempt: v.attempt }
    : null

/** The last line per key (a torn or foreign line is skipped); empty when the file does not exist. */
export const readAttempts = (dir: string): Effect.Effect<ReadonlyMap<string, AttemptLine>, StoreError> =>
  Effect.map(readJsonl(attemptsFile(dir)), (values) => {
    const out = new Map<string, AttemptLine>()
    for (const v of values) {
      const l = lineOf(v)
      if (l !== null) out.set(l.key, l)
    }
    return out
  })

export interface AttemptLog {
  /** number and record the next start of `key` (what `extra` holds goes into its line) */
  readonly start: (key: string, extra?: Readonly<Record<string, unknown>>) => Effect.Effect<number, StoreError>
}

/** The attempt log of `dir`, open for the life of the scope (directories created). */
export const openAttemptLog = (dir: string): Effect.Effect<AttemptLog, StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const last = new Map([...(yield* readAttempts(dir))].map(([k, l]) => [k, l.attempt] as const))
    const appender = yield* openAppender(attemptsFile(dir), (l: AttemptLine) => `${JSON.stringify(l)}\n`)
    return {
      start: (key, extra = {}) =>
        Effect.suspend(() => {
          // numbered before the write, so concurrent starts of one key never share a number
          const attempt = (last.get(key) ?? 0) + 1
          last.set(key, attempt)
          return Effect.as(appender.append({ ...extra, key, attempt }), attempt)
        })
    }
  })
