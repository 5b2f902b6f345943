/**
 * OpenTelemetry traces as a collector sees them: with tracing configured, a server span per
 * request with a `chat` child per upstream call and an `execute_tool` child per judge ruling,
 * GenAI and vetobench attributes, never an argument or message text; an incoming `traceparent` is
 * continued; the upstream gets a `traceparent` only with `telemetry.propagate`. Without it
 * configured no span is made at all. `telemetry.otlp_endpoint` exports over OTLP/HTTP.
 */
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { SpanKind } from "@opentelemetry/api"
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base"
import { describe, expect, it, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Tracer } from "effect"
import { Telemetry } from "../../layers/Telemetry.js"
import { call, Harness, harnessLayer, post } from "../support/harness.js"
import { postStream } from "../support/sse.js"

const SECRET_ARG = "/home/alice/secret-plan.txt"
const SECRET_TEXT = "my password is hunter2"
const judges = { "deny-all": { kind: "static", decision: "deny" }, "allow-all": { kind: "static", decision: "allow" } }
const secretMessage = { messages: [{ role: "user", content: SECRET_TEXT }] }

/** the finished spans of one request (found by its request id), once its server span has ended */
const spansOf = (exporter: InMemorySpanExporter, requestId: string) =>
  Effect.gen(function* () {
    const find = () => exporter.getFinishedSpans().find((s) => s.attributes["vetobench.request_id"] === requestId)
    for (let i = 0; i < 100 && find() === undefined; i++) yield* Effect.sleep("10 millis")
    const root = find()
    if (root === undefined) throw new Error(`no span for request ${requestId}`)
    const trace = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === root.spanContext().traceId)
    const childrenOf = (parent: ReadableSpan) => trace.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId)
    return { root, trace, children: childrenOf(root) }
  })

/** everything a span carries as text: name, attributes, events, status */
const textOf = (spans: ReadonlyArray<ReadableSpan>) =>
  JSON.stringify(spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })))

const noSecrets = (spans: ReadonlyArray<ReadableSpan>) => {
  const text = textOf(spans)
  for (const secret of [SECRET_ARG, "secret-plan", SECRET_TEXT, "hunter2"]) expect(text).not.toContain(secret)
}

describe("tracing configured (in-memory exporter)", () => {
  const exporter = new InMemorySpanExporter()
  layer(harnessLayer({ telemetry: Telemetry.layerExporter(exporter), settings: () => ({ judges }) }), { excludeTestServices: true })((it) => {
    it.effect("a JSON request: server span → chat span and one execute_tool span per call, with GenAI attributes", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("delete_file", { path: SECRET_ARG }), call("list_dir", { path: SECRET_ARG })]
        const r = yield* post(h, { model: "agent@enforce:deny-all", ...secretMessage }, { run: "tr-run", headers: { "x-request-id": "tr-json" } })
        expect(r.status).toBe(200)
        const { root, children, trace } = yield* spansOf(exporter, "tr-json")

        expect(root.name).toBe("POST /v1/chat/completions")
        expect(root.kind).toBe(SpanKind.SERVER)
        expect(root.parentSpanContext).toBeUndefined()
        expect(root.attributes).toMatchObject({
          "http.request.method": "POST",
          "http.route": "/v1/chat/completions",
          "http.response.status_code": 200,
          "vetobench.arm": "enforce",
          "vetobench.judge": "deny-all",
          "vetobench.model": "agent",
          "vetobench.run_id": "tr-run",
          "vetobench.calls.proposed": 2,
          "vetobench.calls.blocked": 2,
          "vetobench.calls.held": 0
        })
        expect(root.resource.attributes["service.name"]).toBe("vetobench")

        const chat = children.filter((s) => s.name === "chat agent")
        expect(chat).toHaveLength(1)
        expect(chat[0]!.kind).toBe(SpanKind.CLIENT)
        expect(chat[0]!.attributes).toMatchObject({
          "gen_ai.operation.name": "chat",
          "gen_ai.request.model": "agent",
          "vetobench.upstream": "cluster",
          "vetobench.stream": false,
          "http.response.status_code": 200,
          "server.address": "127.0.0.1"
        })

        const tools = children.filter((s) => s.attributes["gen_ai.operation.name"] === "execute_tool")
        expect(tools.map((s) => s.name).sort()).toEqual(["execute_tool delete_file", "execute_tool list_dir"])
        expect(tools.map((s) => s.attributes["gen_ai.tool.call.id"]).sort()).toEqual(["call_0", "call_1"])
        for (const t of tools) {
          expect(t.kind).toBe(SpanKind.INTERNAL)
          expect(t.attributes).toMatchObject({
            "vetobench.judge": "deny-all",
            "vetobench.judge.kind": "static",
            "vetobench.arm": "enforce",
            "vetobench.verdict.status": "ok",
            "vetobench.decision": "deny",
            "vetobench.blocked": true,
            "vetobench.cached": false
          })
        }
        // the request span covers its children
        for (const c of children) expect(c.spanContext().traceId).toBe(root.spanContext().traceId)
        expect(trace).toHaveLength(4)
        noSecrets(trace)
        // tracing on, propagation off (the default): the upstream saw no trace header
        expect(h.fake.requests.filter((q) => q.path === "/v1/chat/completions").every((q) => q.headers["traceparent"] === undefined)).toBe(true)
      }))

    it.effect("a streamed request: the chat span lasts until the stream ended; the judge span is the request's child", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: SECRET_ARG })]
        h.fake.knobs.content = SECRET_TEXT
        h.fake.knobs.chunkDelayMs = 20
        const s = yield* postStream(h, { model: "agent@enforce:allow-all", ...secretMessage }, { headers: { "x-request-id": "tr-sse" } })
        expect(s.done).toBe(true)
        const { root, children, trace } = yield* spansOf(exporter, "tr-sse")
        const chat = children.find((c) => c.name === "chat agent")!
        expect(chat.attributes["vetobench.stream"]).toBe(true)
        const tool = children.find((c) => c.name === "execute_tool list_dir")!
        expect(tool.attributes).toMatchObject({ "vetobench.decision": "allow", "vetobench.blocked": false, "gen_ai.tool.call.id": "call_0" })
        const ms = (t: readonly [number, number]) => t[0] * 1000 + t[1] / 1e6
        // the upstream streamed for a while (chunks 20 ms apart): the chat span holds all of it
        expect(ms(chat.duration)).toBeGreaterThan(40)
        expect(ms(root.endTime)).toBeGreaterThanOrEqual(ms(chat.endTime))
        expect(root.attributes["vetobench.calls.proposed"]).toBe(1)
        noSecrets(trace)
      }))

    it.effect("an incoming traceparent is continued", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = []
        const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
        const parent = "00f067aa0ba902b7"
        yield* post(h, { model: "agent@enforce:allow-all" }, { headers: { "x-request-id": "tr-parent", traceparent: `00-${traceId}-${parent}-01` } })
        const { root } = yield* spansOf(exporter, "tr-parent")
        expect(root.spanContext().traceId).toBe(traceId)
        expect(root.parentSpanContext?.spanId).toBe(parent)
      }))
  })
})

describe("tracing with telemetry.propagate", () => {
  const exporter = new InMemorySpanExporter()
  layer(harnessLayer({ telemetry: Telemetry.layerExporter(exporter, { propagate: true }), settings: () => ({ judges }) }), { excludeTestServices: true })(
    (it) => {
      it.effect("the upstream request carries the chat span's traceparent", () =>
        Effect.gen(function* () {
          const h = yield* Harness
          h.fake.reset()
          h.fake.knobs.nextCalls = []
          yield* post(h, { model: "agent@enforce:allow-all" }, { headers: { "x-request-id": "tr-prop" } })
          const { children } = yield* spansOf(exporter, "tr-prop")
          const chat = children.find((c) => c.name === "chat agent")!
          const sent = h.fake.requests.find((q) => q.path === "/v1/chat/completions")!
          expect(sent.headers["traceparent"]).toBe(`00-${chat.spanContext().traceId}-${chat.spanContext().spanId}-01`)
        }))
    }
  )
})

/** a tracer that counts every span anything asks the default tracer for */
const spanNames: Array<string> = []
const countingTracer = Layer.unwrapEffect(
  Effect.map(Effect.tracer, (base) =>
    Layer.setTracer(
      Tracer.make({
        span: (name, parent, context, links, startTime, kind, options) => {
          spanNames.push(name)
          return base.span(name, parent, context, links, startTime, kind, options)
        },
        context: (f, fiber) => base.context(f, fiber)
      })
    )
  )
)

describe("tracing not configured", () => {
  layer(
    harnessLayer({ settings: () => ({ judges }) }).pipe(
      Layer.provide(countingTracer),
      // no OTEL_* variable, whatever the test machine has
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map())))
    ),
    { excludeTestServices: true }
  )((it) => {
    it.effect("no span is made (JSON and streamed, with judged calls) and the upstream sees no trace header", () =>
      Effect.gen(function* () {
        const h = yield* Harness
        h.fake.reset()
        h.fake.knobs.nextCalls = [call("list_dir", { path: "/srv/no-trace" })]
        expect((yield* post(h, { model: "agent@enforce:deny-all" })).status).toBe(200)
        expect((yield* postStream(h, { model: "agent@enforce:allow-all" })).done).toBe(true)
        expect(spanNames).toEqual([])
        expect(h.fake.requests.some((q) => q.headers["traceparent"] !== undefined)).toBe(false)
        // the counting tracer is live here: a span anyone made would have been counted
        yield* Effect.withSpan(Effect.void, "probe")
        expect(spanNames).toEqual(["probe"])
      }))
  })
})

describe("Telemetry.layerConfig", () => {
  const tracerWith = (env: Record<string, string>, otlp_endpoint: string | null = null) =>
    Effect.scoped(
      Effect.map(Layer.build(Telemetry.layerConfig({ otlp_endpoint, propagate: false })), (ctx) => Context.get(ctx, Telemetry).tracer !== null)
    ).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))

  it.effect("is off unless an endpoint is configured; OTEL_SDK_DISABLED switches it off", () =>
    Effect.gen(function* () {
      expect(yield* tracerWith({})).toBe(false)
      expect(yield* tracerWith({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toBe(true)
      expect(yield* tracerWith({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" })).toBe(true)
      expect(yield* tracerWith({}, "http://127.0.0.1:4318")).toBe(true)
      expect(yield* tracerWith({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "true" })).toBe(false)
    }))
})

describe("telemetry.otlp_endpoint", () => {
  it.live("spans reach an OTLP/HTTP collector at <endpoint>/v1/traces (flushed when the proxy stops)", () =>
    Effect.gen(function* () {
      const received: Array<{ path: string; body: string }> = []
      const collector = createServer((req: IncomingMessage, res) => {
        let body = ""
        req.on("data", (c: Buffer) => (body += c.toString("utf8")))
        req.on("end", () => {
          received.push({ path: req.url ?? "", body })
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
      })
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void collector.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.sync(() => collector.close())
      )
      const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`
      yield* Effect.scoped(
        Effect.gen(function* () {
          const h = Context.get(yield* Layer.build(harnessLayer({ settings: () => ({ judges, telemetry: { otlp_endpoint: endpoint } }) })), Harness)
          h.fake.knobs.nextCalls = [call("list_dir", { path: SECRET_ARG })]
          expect((yield* post(h, { model: "agent@enforce:deny-all", ...secretMessage })).status).toBe(200)
        })
      )
      const traces = received.filter((r) => r.path === "/v1/traces")
      expect(traces.length).toBeGreaterThan(0)
      const all = traces.map((t) => t.body).join("\n")
      expect(all).toContain("execute_tool list_dir")
      expect(all).toContain("chat agent")
      expect(all).toContain("POST /v1/chat/completions")
      expect(all).not.toContain(SECRET_ARG)
      expect(all).not.toContain("hunter2")
    }).pipe(Effect.scoped))
})
