/**
 * Progress: how long loops (benchmark cases, scorer requests) report where they are.
 *
 * On a TTY: one line, redrawn in place — `<label>  done/total  rate  ETA  errors`. Not on a TTY
 * (CI logs, pipes): a plain line every `everyItems` items or every `everyMs` when something
 * changed, and a final line. Notes (one-off messages such as a retried request) are printed on
 * their own line without breaking the progress line.
 *
 * A tracker lives in a scope: closing the scope prints the final state. The Test layer records
 * events in memory.
 */
import { Clock, Context, Effect, Layer, Schedule, type Scope } from "effect"

export type Outcome = "ok" | "error"

export interface ProgressTracker {
  /** one item finished */
  readonly advance: (outcome: Outcome) => Effect.Effect<void>
  /** a message on its own line (the progress line is redrawn after it on a TTY) */
  readonly note: (line: string) => Effect.Effect<void>
}

export interface ProgressShape {
  /** track `total` items under `label` until the scope closes */
  readonly track: (label: string, total: number) => Effect.Effect<ProgressTracker, never, Scope.Scope>
}

export class Progress extends Context.Tag("vetobench/Progress")<Progress, ProgressShape>() {
  /** write to `process.stderr`; TTY-aware */
  static get Live(): Layer.Layer<Progress> {
    return layer()
  }
  /** record events into `events` (nothing is printed) */
  static Test(events: Array<ProgressEvent>): Layer.Layer<Progress> {
    return layerTest(events)
  }
}

export type ProgressEvent =
  | { readonly type: "start"; readonly label: string; readonly total: number }
  | { readonly type: "advance"; readonly label: string; readonly outcome: Outcome }
  | { readonly type: "note"; readonly label: string; readonly line: string }
  | { readonly type: "end"; readonly label: string; readonly done: number; readonly errors: number }

/** Where the live layer writes. */
export interface ProgressSink {
  readonly write: (text: string) => void
  readonly isTTY: boolean
  /** terminal width (TTY only); lines are cut to fit */
  readonly columns?: number
}

export interface ProgressOptions {
  /** default: the `ProgressOutput` of the context (process.stderr unless a program provides another) */
  readonly sink?: ProgressSink
  /** not a TTY: print after this many items (default 25) */
  readonly everyItems?: number
  /** not a TTY: print at most this often when something changed (default 10 s); TTY: redraw interval (1 s) */
  readonly everyMs?: number
}

// ---------------------------------------------------------------------------------------------
// formatting (pure)

const pad2 = (n: number) => String(n).padStart(2, "0")

/** `m:ss` or `h:mm:ss`. */
export const formatDuration = (ms: number): string => {
  const s = Math.max(0, Math.round(ms / 1000))
  const h = Math.floor(s / 3600)
  const m = Math.floor((s % 3600) / 60)
  return h > 0 ? `${h}:${pad2(m)}:${pad2(s % 60)}` : `${m}:${pad2(s % 60)}`
}

/** items per second as `1.2/s`, or per minute when slower than one a second (`12/min`). */
export const formatRate = (perSecond: number): string =>
  !Number.isFinite(perSecond) || perSecond <= 0
    ? "–/s"
    : perSecond >= 1
    ? `${perSecond.toFixed(perSecond >= 10 ? 0 : 1)}/s`
    : `${(perSecond * 60).toFixed(perSecond * 60 >= 10 ? 0 : 1)}/min`

export interface ProgressState {
  readonly label: string
  readonly total: number
  readonly done: number
  readonly errors: number
  readonly elapsedMs: number
}

/** `<label>  12/40  1.5/s  ETA 0:19  errors 1` */
export const formatProgress = (s: ProgressState): string => {
  const rate = s.elapsedMs > 0 ? s.done / (s.elapsedMs / 1000) : 0
  const eta = s.done >= s.total ? `done in ${formatDuration(s.elapsedMs)}` : rate > 0 ? `ETA ${formatDuration(((s.total - s.done) / rate) * 1000)}` : "ETA –"
  return `${s.label}  ${s.done}/${s.total}  ${formatRate(rate)}  ${eta}  errors ${s.errors}`
}

// ---------------------------------------------------------------------------------------------
// live

const stderrSink = (): ProgressSink => ({
  write: (text) => {
    process.stderr.write(text)
  },
  isTTY: process.stderr.isTTY === true,
  ...(process.stderr.isTTY === true && typeof process.stderr.columns === "number" ? { columns: process.stderr.columns } : {})
})

/**
 * Where the live layer writes unless given a sink: `process.stderr` by default; a program run in
 * another's process (the CLI in tests) provides its own.
 */
export class ProgressOutput extends Context.Reference<ProgressOutput>()("vetobench/ProgressOutput", { defaultValue: stderrSink }) {}

const CLEAR = "\r\u001b[2K"

export const layer = (opts: ProgressOptions = {}): Layer.Layer<Progress> =>
  Layer.effect(Progress, Effect.map(ProgressOutput, (output) => {
    const sink = opts.sink ?? output
    const everyItems = Math.max(1, opts.everyItems ?? 25)
    const everyMs = Math.max(1, opts.everyMs ?? (sink.isTTY ? 1000 : 10_000))
    const fit = (line: string) => (sink.columns !== undefined && line.length >= sink.columns ? line.slice(0, Math.max(10, sink.columns - 1)) : line)

    const track = (label: string, total: number) =>
      Effect.gen(function*() {
        const started = yield* Clock.currentTimeMillis
        let done = 0
        let errors = 0
        let printedDone = -1
        let printedErrors = -1
        let printedAt = started
        let drawn = false

        const state = (now: number): ProgressState => ({ label, total, done, errors, elapsedMs: now - started })
        const render = (now: number) => {
          const line = formatProgress(state(now))
          if (sink.isTTY) {
            sink.write(CLEAR + fit(line))
            drawn = true
          } else {
            sink.write(`${line}\n`)
          }
          printedDone = done
          printedErrors = errors
          printedAt = now
        }
        const changed = () => done !== printedDone || errors !== printedErrors
        /** not a TTY: print on every `everyItems`-th item, when `everyMs` passed, and at the end */
        const maybePrint = (now: number) => {
          if (sink.isTTY) return render(now)
          if (!changed()) return
          if (done - Math.max(printedDone, 0) >= everyItems || now - printedAt >= everyMs || done === total) render(now)
        }

        if (total > 0 && sink.isTTY) render(started)

        // periodic: redraw on a TTY (rate/ETA move), print a changed state otherwise
        yield* Clock.currentTimeMillis.pipe(
          Effect.flatMap((now) => Effect.sync(() => (sink.isTTY ? render(now) : changed() && now - printedAt >= everyMs ? render(now) : undefined))),
          Effect.repeat(Schedule.spaced(everyMs)),
          Effect.when(() => total > 0),
          Effect.forkScoped
        )

        yield* Effect.addFinalizer(() =>
          Clock.currentTimeMillis.pipe(
            Effect.flatMap((now) =>
              Effect.sync(() => {
                if (total === 0) return
                if (sink.isTTY) {
                  render(now)
                  sink.write("\n")
                } else if (changed()) {
                  render(now)
                }
              })
            )
          )
        )

        const tracker: ProgressTracker = {
          advance: (outcome) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.sync(() => {
                done += 1
                if (outcome === "error") errors += 1
                maybePrint(now)
              })
            ),
          note: (line) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.sync(() => {
                if (sink.isTTY && drawn) {
                  sink.write(`${CLEAR}${line}\n`)
                  render(now)
                } else {
                  sink.write(`${line}\n`)
                }
              })
            )
        }
        return tracker
      })

    return { track }
  }))

// ---------------------------------------------------------------------------------------------
// test

export const layerTest = (events: Array<ProgressEvent>): Layer.Layer<Progress> =>
  Layer.succeed(Progress, {
    track: (label, total) =>
      Effect.gen(function*() {
        let done = 0
        let errors = 0
        events.push({ type: "start", label, total })
        yield* Effect.addFinalizer(() => Effect.sync(() => events.push({ type: "end", label, done, errors })))
        return {
          advance: (outcome) =>
            Effect.sync(() => {
              done += 1
              if (outcome === "error") errors += 1
              events.push({ type: "advance", label, outcome })
            }),
          note: (line) => Effect.sync(() => void events.push({ type: "note", label, line }))
        }
      })
  })
