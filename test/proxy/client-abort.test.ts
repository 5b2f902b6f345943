/**
 * A client that goes away at any stage of a gated call: before its body arrived, while the judge
 * rules, mid-stream. Whatever the stage, every proposed call gets exactly one record (a ruling through
 * the gate, even when nobody waits for it), the access line and `vetobench_requests_total` say 499,
 * and the proxy serves the next request.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Deferred, Effect, Layer, Logger, Schedule } from "effect"
import * as net from "node:net"
import { defaultPlugins } from "../../judges/plugins.js"
import type { JudgeKindPlugin } from "../../judges/registry.js"
import { decided } from "../../src/index.js"
import { proxyLogger } from "../../src/proxy/access-log.js"
import { call, Harness, type HarnessShape, harnessLayer, post, proxyRequest } from "../support/harness.js"

/** a judge that rules allow once the test lets it, and says when it started */
let started = Deferred.unsafeMake<void>(undefined as never)
let letGo = Deferred.unsafeMake<void>(undefined as never)
const waiting: JudgeKindPlugin = Effect.succeed({
  kind: "waiting",
  make: (name) => {
    const id = { judge: name, kind: "waiting", model: null, version: "v1" }
    return Effect.succeed({
      ...id,
      cacheable: false,
      rule: () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.as(Deferred.await(letGo), decided(id, "allow")))
    })
  }
})

const lines: Array<string> = []
const text = proxyLogger("text")
const capture = Logger.make<unknown, void>((entry) => void lines.push(text.log(entry)))
const lineOf = (requestId: string) => lines.filter((l) => l.includes(` request_id=${requestId} `))

const guard = Schedule.spaced("20 millis").pipe(Schedule.upTo("100 seconds"))
const eventually = <A>(f: () => A, ok: (a: A) => boolean) =>
  Effect.sync(f).pipe(
    Effect.filterOrFail(ok, () => "not yet"),
    Effect.retry(guard),
    Effect.orDie
  )

/** a request over a raw socket, cut after `send` bytes once `when` resolves */
const cutAfter = (h: HarnessShape, bytes: string, when: Effect.Effect<void>) =>
  Effect.gen(function* () {
    const { port } = new URL(h.url)
    const socket = net.connect(Number(port), "127.0.0.1")
    socket.on("error", () => undefined)
    yield* Effect.async<void>((resume) => void socket.once("connect", () => resume(Effect.void)))
    socket.write(bytes)
    yield* when
    socket.destroy()
  })

const requestText = (h: HarnessShape, body: Record<string, unknown>, requestId: string, run: string, path = "chat/completions") => {
  const [url, init] = proxyRequest(h, body, { run, path, headers: { "x-request-id": requestId } })
  const payload = String(init.body)
  const headers = Object.entries(init.headers as Record<string, string>).map(([k, v]) => `${k}: ${v}\r\n`)
  return `POST ${new URL(url).pathname} HTTP/1.1\r\nhost: x\r\n${headers.join("")}content-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`
}

const TOOL_SCHEMA = { type: "object", properties: { path: { type: "string" } } }
/** a request of the route's format that offers the two tools */
const bodyFor = (path: string): Record<string, unknown> =>
  path === "messages"
    ? { model: "agent@enforce:waiting", max_tokens: 50, tools: ["delete_file", "list_dir"].map((name) => ({ name, input_schema: TOOL_SCHEMA })) }
    : path === "responses"
      ? { model: "agent@enforce:waiting", input: "clean up", tools: ["delete_file", "list_dir"].map((name) => ({ type: "function", name, parameters: TOOL_SCHEMA })) }
      : { model: "agent@enforce:waiting" }

const metric = (h: HarnessShape, route: string, status: number) =>
  Effect.promise(async () => {
    const text = await fetch(h.url.replace(/\/v1$/, "/metrics")).then((r) => r.text())
    const line = text.split("\n").find((l) => l.startsWith(`vetobench_requests_total{route="${route}",arm="enforce",status="${status}"}`))
    return line === undefined ? 0 : Number(line.split(" ").pop())
  })

describe("a client that goes away", () => {
  layer(
    harnessLayer({
      accessLog: true,
      plugins: [...defaultPlugins, waiting],
      settings: () => ({ judges: { waiting: { kind: "waiting" } } })
    }).pipe(Layer.provide(Logger.replace(Logger.defaultLogger, capture))),
    { excludeTestServices: true }
  )((it) => {
    for (const [stream, path] of [
      [false, "chat/completions"],
      [true, "chat/completions"],
      [true, "chat/completions/"],
      [false, "messages"],
      [true, "messages"],
      [false, "responses"],
      [true, "responses"]
    ] as const) {
      it.effect(`while the judge rules (${stream ? "streamed" : "JSON"}, ${path}): one record per call, the line and the metric say 499`, () =>
        Effect.gen(function* () {
          const h = yield* Harness
          h.fake.reset()
          h.fake.knobs.nextCalls = [call("delete_file", { path: "/" }), call("list_dir", { path: "." })]
          started = yield* Deferred.make<void>()
          letGo = yield* Deferred.make<void>()
          const run = `left-judging-${stream}-${path.replace(/\W/g, "_")}`
          const id = `${run}-id`
          // a trailing-slash spelling is labelled as the route it matched
          const route = `/v1/${path.replace(/\/$/, "")}`
          const before = yield* metric(h, route, 499)
          yield* cutAfter(h, requestText(h, { ...bodyFor(path), stream }, id, run, path), Deferred.await(started))
          // the client is gone; the judge answers afterwards, and the request ends once its calls are recorded
          yield* Deferred.succeed(letGo, undefined)
          yield* eventually(() => lineOf(id), (l) => l.length > 0)
          const records = h.records(run)
          expect(records.map((r) => r.tool.name).sort()).toEqual(["delete_file", "list_dir"])
          expect(lineOf(id)).toHaveLength(1)
          expect(lineOf(id)[0]).toContain(" status=499 ")
          expect(yield* metric(h, route, 499)).toBe(before + 1)
          // still exactly two, and the proxy serves the next call
          const next = yield* post(h, { model: "agent" }, { run: `${run}-next` })
          expect(next.status).toBe(200)
          expect(h.records(run)).toHaveLength(2)
        }))
    }

    it.effect("before its body arrived: no record, the line says 499", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const id = "left-mid-body-id"
        const whole = requestText(h, { model: "agent@enforce:waiting" }, id, "left-mid-body")
        yield* cutAfter(h, whole.slice(0, whole.length - 20), Effect.sleep("50 millis"))
        yield* eventually(() => lineOf(id), (l) => l.length > 0)
        expect(lineOf(id)[0]).toContain(" status=499 ")
        expect(h.records("left-mid-body")).toHaveLength(0)
      }))
  })
})
