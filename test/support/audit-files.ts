/** Helpers for file audit sink tests: temp directories, a sink over a directory, reading files, captured logs. */
import { Effect, Logger } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { AuditSink, type AuditSinkShape, type FileSinkOptions } from "../../layers/AuditSink.js"

/** A fresh directory under the OS temp dir, removed when the scope closes. */
export const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), prefix))),
    (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  )

/** Use a fresh file sink over `dir`; its scope (files, locks, final checkpoints) closes when `f` ends. */
export const withSink = <A, E>(dir: string, options: FileSinkOptions, f: (sink: AuditSinkShape) => Effect.Effect<A, E>) =>
  Effect.flatMap(AuditSink, f).pipe(Effect.provide(AuditSink.layerFile(dir, options)))

export const readText = (file: string) => Effect.promise(() => fs.readFile(file, "utf8"))

/** The file's text, or null when it does not exist. */
export const readOrNull = (file: string) =>
  Effect.promise(() => fs.readFile(file, "utf8").catch((e: unknown) => ((e as { code?: unknown }).code === "ENOENT" ? null : Promise.reject(e))))

export interface LogLine {
  readonly level: string
  readonly message: string
}

/** Run `f` with its log lines captured (level label and message text). */
export const captureLogs = <A, E, R>(f: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const logs: Array<LogLine> = []
    const capture = Logger.make(({ logLevel, message }) => {
      logs.push({ level: logLevel.label, message: Array.isArray(message) ? message.join(" ") : String(message) })
    })
    const result = yield* f.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)))
    return { result, logs }
  })
