/**
 * One `python3 bridge.py <asbench_dir>` child process and its JSON-lines channel.
 *
 * - One request in flight at a time (a per-process semaphore); every request carries an `id` that the
 *   answer must echo.
 * - stdout is read line by line; stderr is drained into a ring buffer whose tail goes into error messages.
 * - A request that gets no answer within the timeout, a request interrupted while waiting, an
 *   unreadable answer, or a process that dies mid-request: the process is killed and marked dead; the
 *   caller sees `BridgeError` `crashed` (or `protocol`). A dead process is never reused.
 * - Timers are plain `setTimeout`s, so the channel works the same under a TestClock.
 */
import { Effect } from "effect"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { BridgeError } from "../PythonBridge.js"
import { parsePythonJson, pyJson } from "../../src/domain/python-json.js"
import { isObject } from "../../src/domain/is-object.js"

/** Keeps the last `capacity` characters written to it. */
export class RingBuffer {
  private text = ""
  constructor(private readonly capacity: number) {}
  push(chunk: string): void {
    this.text += chunk
    if (this.text.length > 2 * this.capacity) this.text = this.text.slice(-this.capacity)
  }
  /** the last `lines` lines (at most `capacity` characters), trimmed */
  tail(lines = 20): string {
    const recent = this.text.slice(-this.capacity)
    return recent.split("\n").filter((l) => l.trim() !== "").slice(-lines).join("\n")
  }
}

export interface ProcessOptions {
  readonly python: string
  readonly script: string
  readonly asbenchDir: string
  readonly cwd: string
  readonly requestTimeoutMs: number
  readonly startTimeoutMs: number
  /** called synchronously once the child exists (before the hello), so an owner can always kill it */
  readonly onSpawn: (p: BridgeProcess) => void
}

export interface Hello {
  readonly protocol: number
  readonly python: string
  readonly asbench_dir: string
}

type Outcome = { readonly _tag: "line"; readonly line: string } | { readonly _tag: "dead" }

const REASONS: ReadonlyArray<BridgeError["reason"]> = ["setup", "crashed", "protocol", "case", "bad_arguments"]

const withTail = (message: string, tail: string): string => (tail === "" ? message : `${message}\n--- bridge stderr (last lines) ---\n${tail}`)

export class BridgeProcess {
  readonly pid: number | undefined
  readonly stderr = new RingBuffer(16 * 1024)
  private readonly lock = Effect.unsafeMakeSemaphore(1)
  private buffer = ""
  private readonly queued: Array<string> = []
  private waiter: ((o: Outcome) => void) | null = null
  private seq = 0
  /** why the process is unusable (set once) */
  private deadWhy: string | null = null
  private spawnError: NodeJS.ErrnoException | null = null
  private exitInfo: { readonly code: number | null; readonly signal: NodeJS.Signals | null } | null = null
  private closed = false
  private readonly closeListeners: Array<() => void> = []

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly opts: ProcessOptions
  ) {
    this.pid = child.pid
    child.stdout.setEncoding("utf8")
    child.stderr.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => this.onStdout(chunk))
    child.stderr.on("data", (chunk: string) => this.stderr.push(chunk))
    child.stdin.on("error", () => {}) // EPIPE after a crash: the close handler reports it
    child.on("error", (err: NodeJS.ErrnoException) => {
      if (this.pid === undefined || err.code === "ENOENT" || err.code === "EACCES") this.spawnError ??= err
      this.markDead(`process error: ${err.message}`)
      if (this.pid === undefined) this.onClosed()
    })
    child.on("exit", (code, signal) => {
      this.exitInfo = { code, signal }
      // 'close' follows once stdout and stderr are drained (so a last answer line is still read);
      // do not wait forever if a grandchild holds a pipe open
      setTimeout(() => this.onClosed(), 1000).unref()
    })
    child.on("close", () => this.onClosed())
  }

  /** Spawn the child (synchronously) and wait for its hello line. */
  static start(opts: ProcessOptions): Effect.Effect<BridgeProcess, BridgeError> {
    return Effect.suspend(() => {
      let child: ChildProcessWithoutNullStreams
      try {
        child = spawn(opts.python, [opts.script, opts.asbenchDir], {
          cwd: opts.cwd,
          stdio: ["pipe", "pipe", "pipe"],
          env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", PYTHONUNBUFFERED: "1", PYTHONIOENCODING: "utf-8" }
        })
      } catch (e) {
        return Effect.fail(new BridgeError({ reason: "setup", message: `cannot start ${opts.python}: ${String(e)}` }))
      }
      const proc = new BridgeProcess(child, opts)
      opts.onSpawn(proc)
      return proc.awaitHello().pipe(
        Effect.onExit((exit) => (exit._tag === "Success" ? Effect.void : proc.shutdown)),
        Effect.as(proc)
      )
    })
  }

  get alive(): boolean {
    return this.deadWhy === null
  }

  get isClosed(): boolean {
    return this.closed
  }

  /** the last lines the process wrote to stderr */
  stderrTail(lines = 20): string {
    return this.stderr.tail(lines)
  }

  /** Send one request; the answer object, or its `error` as a BridgeError. */
  request(body: Record<string, unknown>): Effect.Effect<Record<string, unknown>, BridgeError> {
    const op = String(body.op)
    return this.lock.withPermits(1)(
      Effect.suspend(() => {
        if (this.deadWhy !== null) return Effect.fail(this.crashed(`cannot send ${op}: ${this.deadWhy}`))
        const id = ++this.seq
        let line: string
        try {
          line = pyJson({ ...body, id }) + "\n"
        } catch (e) {
          return Effect.fail(new BridgeError({ reason: "protocol", message: `cannot encode the ${op} request: ${e instanceof Error ? e.message : String(e)}` }))
        }
        return this.nextLine(this.opts.requestTimeoutMs, `an answer to ${op}`, () => this.child.stdin.write(line)).pipe(
          Effect.flatMap((text) => this.decodeAnswer(text, id, op))
        )
      })
    )
  }

  /** Close stdin, SIGTERM, then SIGKILL after 2 s; completes when the process has exited (or at once if it never started). */
  get shutdown(): Effect.Effect<void> {
    return Effect.async<void>((resume) => {
      this.markDead("the bridge was shut down")
      if (this.closed || this.pid === undefined) {
        resume(Effect.void)
        return
      }
      let done = false
      const finish = () => {
        if (done) return
        done = true
        clearTimeout(hard)
        clearTimeout(giveUp)
        resume(Effect.void)
      }
      this.closeListeners.push(finish)
      this.child.stdin.end()
      if (this.exitInfo === null) this.child.kill("SIGTERM")
      const hard = setTimeout(() => {
        if (this.exitInfo === null) this.child.kill("SIGKILL")
      }, 2000)
      const giveUp = setTimeout(finish, 6000)
    })
  }

  // -- internals -------------------------------------------------------------------------------

  private crashed(message: string): BridgeError {
    return new BridgeError({ reason: "crashed", message: withTail(message, this.stderr.tail()) })
  }

  private markDead(why: string): void {
    if (this.deadWhy !== null) return
    this.deadWhy = why
    const w = this.waiter
    this.waiter = null
    w?.({ _tag: "dead" })
  }

  /** kill now (the state of the child is unknown); the exit is awaited by `shutdown` */
  private kill(why: string): void {
    this.markDead(why)
    if (this.exitInfo === null && this.pid !== undefined) this.child.kill("SIGKILL")
  }

  private onClosed(): void {
    if (this.closed) return
    this.closed = true
    this.markDead("the bridge process exited")
    for (const l of this.closeListeners.splice(0)) l()
  }

  private onStdout(chunk: string): void {
    this.buffer += chunk
    let nl = this.buffer.indexOf("\n")
    while (nl >= 0) {
      const line = this.buffer.slice(0, nl).replace(/\r$/, "")
      this.buffer = this.buffer.slice(nl + 1)
      if (line.trim() !== "") {
        const w = this.waiter
        if (w !== null) {
          this.waiter = null
          w({ _tag: "line", line })
        } else this.queued.push(line)
      }
      nl = this.buffer.indexOf("\n")
    }
  }

  /** Wait for the next stdout line (after running `send`), killing the process on timeout or interruption. */
  private nextLine(timeoutMs: number, what: string, send: () => void): Effect.Effect<string, BridgeError> {
    return Effect.async<string, BridgeError>((resume) => {
      const early = this.queued.shift()
      if (early !== undefined) {
        this.kill("unexpected output")
        resume(Effect.fail(new BridgeError({ reason: "protocol", message: withTail(`unexpected line from the bridge before ${what}: ${early.slice(0, 200)}`, this.stderr.tail()) })))
        return
      }
      let settled = false
      const timer = setTimeout(() => {
        if (settled) return
        settled = true
        this.waiter = null
        this.kill("timed out")
        resume(Effect.fail(this.crashed(`no ${what} within ${timeoutMs} ms; the bridge process was killed`)))
      }, timeoutMs)
      const waiter = (o: Outcome) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        if (o._tag === "line") resume(Effect.succeed(o.line))
        else resume(Effect.fail(this.deathError(what)))
      }
      this.waiter = waiter
      send()
      return Effect.sync(() => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        if (this.waiter === waiter) this.waiter = null
        this.kill("interrupted while waiting for an answer")
      })
    })
  }

  private deathError(what: string): BridgeError {
    if (this.spawnError !== null) return this.spawnFailure(this.spawnError)
    const how =
      this.exitInfo === null
        ? (this.deadWhy ?? "the bridge process died")
        : `the bridge process exited (${this.exitInfo.signal !== null ? `signal ${this.exitInfo.signal}` : `exit code ${this.exitInfo.code}`})`
    return this.crashed(`${how} while waiting for ${what}`)
  }

  private spawnFailure(err: NodeJS.ErrnoException): BridgeError {
    const python = this.opts.python
    const message =
      err.code === "ENOENT"
        ? `python3 not found${python === "python3" ? "" : ` (tried ${python})`}: install Python 3 (3.8+)`
        : `cannot run ${python}: ${err.message}; install Python 3 (3.8+)`
    return new BridgeError({ reason: "setup", message })
  }

  private awaitHello(): Effect.Effect<Hello, BridgeError> {
    return this.nextLine(this.opts.startTimeoutMs, "the bridge's hello", () => {}).pipe(
      Effect.catchAll((e) =>
        Effect.fail(
          e.reason === "setup"
            ? e
            : new BridgeError({ reason: "setup", message: `the Agent-SafetyBench bridge did not start (${this.opts.python} ${this.opts.script}): ${e.message}` })
        )
      ),
      Effect.flatMap((line) => {
        let parsed: unknown
        try {
          parsed = parsePythonJson(line)
        } catch {
          parsed = undefined
        }
        if (isObject(parsed) && isObject(parsed.hello)) return Effect.succeed(parsed.hello as unknown as Hello)
        if (isObject(parsed) && isObject(parsed.error) && typeof parsed.error.message === "string") {
          return Effect.fail(new BridgeError({ reason: "setup", message: parsed.error.message }))
        }
        return Effect.fail(new BridgeError({ reason: "setup", message: withTail(`the bridge started with an unreadable line: ${line.slice(0, 200)}`, this.stderr.tail()) }))
      })
    )
  }

  private decodeAnswer(text: string, id: number, op: string): Effect.Effect<Record<string, unknown>, BridgeError> {
    let parsed: unknown
    try {
      parsed = parsePythonJson(text)
    } catch (e) {
      this.kill("unreadable answer")
      return Effect.fail(new BridgeError({ reason: "protocol", message: `unreadable answer to ${op}: ${e instanceof Error ? e.message : String(e)}` }))
    }
    if (!isObject(parsed) || parsed.id !== id) {
      this.kill("answer out of step")
      return Effect.fail(new BridgeError({ reason: "protocol", message: `answer to ${op} out of step (expected id ${id}): ${text.slice(0, 200)}` }))
    }
    if (parsed.error !== undefined) {
      const err = isObject(parsed.error) ? parsed.error : {}
      const reason = REASONS.find((r) => r === err.reason) ?? "protocol"
      const message = typeof err.message === "string" ? err.message : `bridge error in ${op}`
      return Effect.fail(new BridgeError({ reason, message }))
    }
    return Effect.succeed(parsed)
  }
}
