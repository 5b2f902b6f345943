/**
 * Several proxies over one audit directory: concurrent writers on different runs keep exact,
 * verifiable chains; a torn last line left by a crashed writer is moved aside by the next proxy,
 * which continues the chain after the last complete record.
 */
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { verifyChainText } from "../../src/domain/chain-verify.js"
import { call, Harness, harnessLayer, type HarnessOptions, type HarnessShape, post } from "../support/harness.js"

const shared = mkdtempSync(path.join(tmpdir(), "vetobench-shared-audit-"))
afterAll(() => rmSync(shared, { recursive: true, force: true }))
const onShared: HarnessOptions = { settings: () => ({ proxy: { audit_dir: shared } }) }

class ProxyA extends Context.Tag("test/ProxyA")<ProxyA, HarnessShape>() {}
class ProxyB extends Context.Tag("test/ProxyB")<ProxyB, HarnessShape>() {}

const twoProxies = Layer.merge(
  Layer.effect(ProxyA, Harness).pipe(Layer.provide(harnessLayer(onShared))),
  Layer.effect(ProxyB, Harness).pipe(Layer.provide(harnessLayer(onShared)))
)

/** run `f` against a proxy started for the duration of the call */
const withProxy = <A>(opts: HarnessOptions, f: (h: HarnessShape) => Effect.Effect<A>) =>
  Effect.scoped(Effect.flatMap(Layer.build(harnessLayer(opts)), (ctx) => f(Context.get(ctx, Harness))))

const fileText = (h: HarnessShape, run: string) => readFileSync(h.auditFile(run), "utf8")

const seqs = (n: number) => Array.from({ length: n }, (_, i) => i + 1)

describe("two proxies sharing one audit directory", () => {
  layer(twoProxies, { excludeTestServices: true })((it) => {
    it.effect("concurrent requests on different runs: both chains verify with exact counts", () =>
      Effect.gen(function* () {
        const a = yield* ProxyA
        const b = yield* ProxyB
        expect(a.settings.proxy.audit_dir).toBe(shared)
        expect(b.settings.proxy.audit_dir).toBe(shared)
        expect(a.url).not.toBe(b.url)
        a.fake.reset()
        b.fake.reset()
        a.fake.knobs.nextCalls = [call("list_dir", { path: "/a" })]
        b.fake.knobs.nextCalls = [call("list_dir", { path: "/b" }), call("delete_file", { path: "/" })]
        const N = 20
        const requests = Array.from({ length: N }, (_, i) => [
          post(a, { model: "agent@enforce:slm" }, { run: "multi-a", headers: { "x-request-id": `a-${i}` } }),
          post(b, { model: i % 2 === 0 ? "agent@shadow:guard" : "agent@baseline" }, { run: "multi-b", headers: { "x-request-id": `b-${i}` } })
        ]).flat()
        const results = yield* Effect.all(requests, { concurrency: 10 })
        expect(results.map((r) => r.status)).toEqual(results.map(() => 200))

        const recA = a.records("multi-a")
        const recB = b.records("multi-b")
        expect(verifyChainText(fileText(a, "multi-a"))).toMatchObject({ ok: true, records: N, torn: false })
        expect(verifyChainText(fileText(b, "multi-b"))).toMatchObject({ ok: true, records: 2 * N, torn: false })
        expect(recA.map((r) => r.seq)).toEqual(seqs(N))
        expect(recB.map((r) => r.seq)).toEqual(seqs(2 * N))
        // every request of each proxy landed in its own run's file, once per proposed call
        expect(recA.map((r) => r.request_id).sort()).toEqual(Array.from({ length: N }, (_, i) => `a-${i}`).sort())
        expect(recB.map((r) => `${r.request_id}#${r.call_index}`).sort()).toEqual(
          Array.from({ length: N }, (_, i) => [`b-${i}#0`, `b-${i}#1`]).flat().sort()
        )
        expect(recA.every((r) => r.run_id === "multi-a")).toBe(true)
        expect(recB.every((r) => r.run_id === "multi-b")).toBe(true)
      }))
  })
})

describe("a torn last line in a shared audit directory", () => {
  layer(Layer.empty, { excludeTestServices: true })((it) => {
    it.effect("the next proxy saves the torn bytes aside and continues the chain after the last complete record", () =>
      Effect.gen(function* () {
        const run = "torn-run"
        // a first proxy writes two records, then "crashes" mid-write of a third
        const first = yield* withProxy(onShared, (h) =>
          Effect.gen(function* () {
            h.fake.reset()
            h.fake.knobs.nextCalls = [call("list_dir", { path: "/one" })]
            for (let i = 0; i < 2; i++) expect((yield* post(h, { model: "agent@baseline" }, { run })).status).toBe(200)
            return { file: h.auditFile(run), records: h.records(run) }
          })
        )
        expect(first.records.map((r) => r.seq)).toEqual([1, 2])
        const fullLine = JSON.stringify({ ...first.records[1]!, seq: 3, prev_hash: first.records[1]!.hash })
        const torn = fullLine.slice(0, Math.floor(fullLine.length / 2))
        appendFileSync(first.file, torn)
        expect(verifyChainText(readFileSync(first.file, "utf8"))).toMatchObject({ ok: false, torn: true, records: 2 })

        // a new proxy on the same directory appends to that run
        const second = yield* withProxy(onShared, (h) =>
          Effect.gen(function* () {
            h.fake.reset()
            h.fake.knobs.nextCalls = [call("list_dir", { path: "/two" })]
            const r = yield* post(h, { model: "agent@baseline" }, { run, headers: { "x-request-id": "after-torn" } })
            expect(r.status).toBe(200)
            return { file: h.auditFile(run), records: h.records(run) }
          })
        )
        expect(second.file).toBe(first.file)
        const text = readFileSync(second.file, "utf8")
        expect(verifyChainText(text)).toMatchObject({ ok: true, records: 3, torn: false })
        expect(text).not.toContain(torn)
        const recs = second.records
        expect(recs.map((r) => r.seq)).toEqual([1, 2, 3])
        expect(recs[2]!.request_id).toBe("after-torn")
        expect(recs[2]!.prev_hash).toBe(recs[1]!.hash)
        expect(recs.slice(0, 2)).toEqual(first.records)
        // the torn bytes were kept, byte for byte, in exactly one side file
        const side = readdirSync(shared).filter((f) => f.startsWith(`${path.basename(second.file)}.torn-`))
        expect(side).toHaveLength(1)
        expect(readFileSync(path.join(shared, side[0]!), "utf8")).toBe(torn)
      }))

    it.effect("a file holding only a torn line: the torn bytes are saved and the chain starts at seq 1", () =>
      Effect.gen(function* () {
        const run = "torn-only"
        const file = path.join(shared, "torn-only.jsonl")
        expect(existsSync(file)).toBe(false)
        appendFileSync(file, '{"schema":"vetobench/v2","seq":1,"ts":"2026-')
        const recs = yield* withProxy(onShared, (h) =>
          Effect.gen(function* () {
            h.fake.reset()
            h.fake.knobs.nextCalls = [call("list_dir", { path: "/x" })]
            expect((yield* post(h, { model: "agent@baseline" }, { run })).status).toBe(200)
            expect(h.auditFile(run)).toBe(file)
            return h.records(run)
          })
        )
        expect(verifyChainText(readFileSync(file, "utf8"))).toMatchObject({ ok: true, records: 1 })
        expect(recs.map((r) => r.seq)).toEqual([1])
        const side = readdirSync(shared).filter((f) => f.startsWith("torn-only.jsonl.torn-"))
        expect(side).toHaveLength(1)
        expect(readFileSync(path.join(shared, side[0]!), "utf8")).toBe('{"schema":"vetobench/v2","seq":1,"ts":"2026-')
      }))
  })
})
