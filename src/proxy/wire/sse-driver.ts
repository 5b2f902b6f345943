/**
 * The loop every streamed wire format's gate runs in: upstream bytes are decoded, split into SSE
 * events (WHATWG rules: comments, `retry:` and `id:` lines dropped; each event's `data` and name
 * count), and handed one by one to the format's state machine, whose texts go to the client.
 * An event larger than the proxy accepts ends the stream (the parser is bounded by the same limit,
 * so it never drops part of an event and reads on); so does the machine's `stop`. If the
 * upstream fails or the client leaves first, the calls held so far are still ruled and recorded
 * (none is released).
 *
 * It is a plain loop over the upstream's chunks, not a chain of stream stages: one chunk is decoded,
 * parsed and gated in one step, the machine's texts are written to the client's response as one
 * write, and a step the machine answers at once (a text delta) runs no fiber work of its own.
 */
import * as Sse from "@effect/experimental/Sse"
import { Effect, Exit, Stream } from "effect"
import type { AuditWriteError } from "../../../layers/AuditSink.js"

/** What the gate sends next; `stop` once the stream is over for the client. */
export interface SseStep {
  readonly out: ReadonlyArray<string>
  readonly stop: boolean
}

/** A format's per-stream gate, as the loop drives it. */
export interface SseMachine {
  /** one event's data (what an SSE client dispatches) and its name (`message` when none was given) */
  readonly onData: (data: string, name: string) => Effect.Effect<SseStep, AuditWriteError>
  /** an event larger than `limit`: the stream ends here */
  readonly overflow: (limit: number) => Effect.Effect<SseStep, AuditWriteError>
  /** the upstream stream ended: what to send last (an error when it ended too early) */
  readonly end: Effect.Effect<ReadonlyArray<string>, AuditWriteError>
  /** the stream ends early (the upstream failed, the client left): record what is held, release nothing */
  readonly abandon: Effect.Effect<void, AuditWriteError>
  /** false once the stream ended for the client */
  readonly open: () => boolean
}

/** What a machine tells {@link streamEndings} about itself. */
export interface MachineState {
  /** the stream already ended for the client (its last event or an error event was written) */
  readonly over: () => boolean
  /** mark it ended without writing anything (the client is gone) */
  readonly stop: () => void
  /** end it with an error event, recording what is held first */
  readonly fail: (message: string) => Effect.Effect<SseStep, AuditWriteError>
  /** rule and record the calls held now, releasing none */
  readonly recordHeld: Effect.Effect<unknown, AuditWriteError>
  /** the event a complete stream ends with (`[DONE]`, `response.completed`, `message_stop`) */
  readonly last: string
}

/** The three ways a stream ends other than by its last event, the same for every format. */
export const streamEndings = (m: MachineState): Pick<SseMachine, "end" | "abandon" | "overflow"> => ({
  // the upstream stream ended before its last event: an error, never a made-up finish
  end: Effect.suspend(() => (m.over() ? Effect.succeed([]) : Effect.map(m.fail(`the upstream stream ended before ${m.last}`), (s) => s.out))),
  abandon: Effect.suspend(() => {
    if (m.over()) return Effect.void
    m.stop()
    return Effect.asVoid(m.recordHeld)
  }),
  overflow: (limit) =>
    m.over() ? Effect.succeed({ out: [], stop: false }) : m.fail(`an event of the upstream stream is larger than ${limit} bytes (proxy.max_answer_bytes)`)
})

export interface DriveOptions {
  /** one event larger than this (`proxy.max_answer_bytes`, counted in UTF-16 units) ends the stream */
  readonly maxEventSize?: number
  /** the request id, for the log line of a record lost when the client left */
  readonly requestId?: string
}

/** Where a gated stream's texts go: the client's response. */
export interface SseOut {
  /** write text; false when the response's buffer is full (then wait for `drain` before writing more) */
  readonly write: (text: string) => boolean
  /** resumes once the response can take more (or is gone) */
  readonly drain: Effect.Effect<void>
}

const GO_ON: Effect.Effect<boolean> = Effect.succeed(true)

/** the machine's step: at once when the machine answered with a value, else by running it */
const now = <A, E>(effect: Effect.Effect<A, E>): Exit.Exit<A, E> | null => (Exit.isExit(effect) ? (effect as Exit.Exit<A, E>) : null)

/**
 * Upstream SSE bytes → the texts the machine writes, in order, written to `out`. Fails with the
 * upstream's failure (after recording what is held) or an audit failure; the caller writes the error
 * event then.
 */
export const pumpSse = <E>(
  upstream: Stream.Stream<Uint8Array, E>,
  machine: SseMachine,
  opts: DriveOptions,
  out: SseOut
): Effect.Effect<void, E | AuditWriteError> =>
  Effect.suspend(() => {
    const events: Array<{ readonly data: string; readonly name: string }> = []
    const limit = opts.maxEventSize ?? Number.MAX_SAFE_INTEGER
    // the parser reports an event (with the line it is reading) that grows past the limit
    const parser = Sse.makeParser(
      (ev) => {
        if (ev._tag === "Event") events.push({ data: ev.data, name: ev.event })
      },
      { maxEventSize: limit }
    )
    const decoder = new TextDecoder()
    let pending = ""
    const send = (texts: ReadonlyArray<string>) => {
      for (const t of texts) pending += t
    }
    /** what the machine wrote for this chunk goes out in one write; the loop waits when the client is slower */
    const flush = (): Effect.Effect<boolean> => {
      if (pending === "") return GO_ON
      const room = out.write(pending)
      pending = ""
      return room ? GO_ON : Effect.as(out.drain, true)
    }
    /** one upstream chunk; false once the stream is over for the client */
    const onChunk = (bytes: Uint8Array): Effect.Effect<boolean, AuditWriteError> => {
      const tooLarge = parser.feed(decoder.decode(bytes, { stream: true })) !== undefined
      let k = 0
      const next = (): Effect.Effect<boolean, AuditWriteError> => {
        while (k < events.length) {
          const ev = events[k++]!
          const step = ev.data.length > limit ? machine.overflow(limit) : machine.onData(ev.data, ev.name)
          const done = now(step)
          if (done === null) return Effect.flatMap(step, (r) => (after(r) ? stopped() : next()))
          if (Exit.isFailure(done)) return Effect.failCause(done.cause)
          if (after(done.value)) return stopped()
        }
        events.length = 0
        if (tooLarge) return Effect.flatMap(machine.overflow(limit), (r) => (send(r.out), stopped()))
        return flush()
      }
      return next()
    }
    const after = (r: SseStep): boolean => {
      send(r.out)
      return r.stop
    }
    const stopped = () => {
      events.length = 0
      return Effect.as(flush(), false)
    }
    const body = Stream.runForEachWhile(upstream, onChunk).pipe(
      // an upstream failure: what is held is recorded, then the failure (the route writes its error event)
      Effect.catchAll((e) => Effect.zipRight(machine.abandon, Effect.fail(e))),
      Effect.zipRight(Effect.flatMap(machine.end, (texts) => (send(texts), flush()))),
      Effect.asVoid
    )
    // the client left (or the server cut the stream at shutdown): the held calls are recorded all the
    // same, in this finalizer, which the interruption does not reach; the request ends once they are
    // (so a shutdown waiting for its requests, server.ts, waits for these records too)
    return Effect.ensuring(
      body,
      Effect.suspend(() =>
        machine.open()
          ? machine.abandon.pipe(
              Effect.catchAll((e) =>
                Effect.logError(`audit: the client left; its held calls could not be recorded: ${e.file}: ${e.reason}`).pipe(
                  Effect.annotateLogs({ request_id: opts.requestId ?? "" })
                )
              )
            )
          : Effect.void
      )
    )
  })
