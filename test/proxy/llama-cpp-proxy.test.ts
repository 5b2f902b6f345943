/**
 * The `llama_cpp` judge through the HTTP proxy with a real model (SmolLM2-135M from .venv-test): the
 * agent's calls are ruled in-process and recorded (one record per call, the raw answer kept), the
 * proxy keeps answering (/healthz, /metrics) while the model runs and calls queue for it, and
 * shutting the proxy down releases the model. The proxy is started once for the file; the last test
 * shuts it down.
 */
import { existsSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Schedule, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { smolLM2 } from "../judges/llama-cpp-model.js"
import { call, Harness, harnessLayer, type HarnessShape, post } from "../support/harness.js"

const model = smolLM2()
if (model.skip !== null) console.warn(`llama_cpp proxy tests skipped: ${model.skip}`)

const mapped = (file: string): boolean | null => (existsSync("/proc/self/maps") ? readFileSync("/proc/self/maps", "utf8").includes(file) : null)

describe.skipIf(model.skip !== null)("llama_cpp judge through the proxy", () => {
  const file = model.file ?? ""
  let scope: Scope.CloseableScope
  let h: HarnessShape

  beforeAll(async () => {
    await Effect.runPromise(
      Effect.gen(function* () {
        scope = yield* Scope.make()
        const ctx = yield* Layer.buildWithScope(
          harnessLayer({
            settings: () => ({
              judges: { cpu: { kind: "llama_cpp", model_path: file, threads: 1, max_tokens: 32 } },
              proxy: { fail_policy: "closed", judge_timeout_s: 120 }
            })
          }),
          scope
        )
        h = Context.get(ctx, Harness)
      })
    )
  })
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  const agentTurn = (run: string) => post(h, { model: "agent@enforce:cpu" }, { run, episode: `${run}:1` })
  const get = (p: string) =>
    Effect.promise(async () => {
      const res = await fetch(`${h.url.replace(/\/v1$/, "")}${p}`)
      return { status: res.status, text: await res.text() }
    })

  it.live("every proposed call is ruled by the in-process model: one record per call, raw answer kept, blocking as decided", () =>
    Effect.gen(function* () {
      h.fake.reset()
      h.fake.knobs.nextCalls = [call("delete_file", { path: "/var/backups" }), call("list_dir", { path: "/home/alice" })]
      const res = yield* agentTurn("llama-one")
      expect(res.status).toBe(200)
      const records = h.records("llama-one")
      expect(records.map((r) => r.tool.name)).toEqual(["delete_file", "list_dir"])
      for (const r of records) {
        expect(r.verdict).toMatchObject({ judge: "cpu", kind: "llama_cpp", model: path.basename(file), status: "ok" })
        expect(r.verdict?.raw).toMatch(/^\{\s*"decision"\s*:\s*"(allow|deny)"/)
        expect(r.blocked).toBe(r.verdict?.decision === "deny")
      }
      const returned = (res.json.choices[0]?.message.tool_calls ?? []).map((c) => c.function.name)
      expect(returned).toEqual(records.filter((r) => !r.blocked).map((r) => r.tool.name))
    }))

  it.live("the proxy answers /healthz and /metrics while the model runs and calls wait for it", () =>
    Effect.gen(function* () {
      h.fake.reset()
      h.fake.knobs.nextCalls = [call("delete_file", { path: "/etc" })]
      const turns = yield* Effect.fork(Effect.all([agentTurn("llama-busy-1"), agentTurn("llama-busy-2"), agentTurn("llama-busy-3")], { concurrency: "unbounded" }))
      // /metrics answers while one ruling holds the model and another waits for it
      yield* get("/metrics").pipe(
        Effect.repeat({ until: (m) => /^vetobench_judge_queue_length\{judge="cpu"\} [1-9]/m.test(m.text), schedule: Schedule.spaced("20 millis") })
      )
      const health = yield* get("/healthz")
      expect(health.status).toBe(200)
      const results = yield* Fiber.join(turns)
      expect(results.map((r) => r.status)).toEqual([200, 200, 200])
      for (const run of ["llama-busy-1", "llama-busy-2", "llama-busy-3"]) {
        expect(h.records(run).map((r) => r.verdict?.status)).toEqual(["ok"])
      }
      const after = yield* get("/metrics")
      expect(after.text).toMatch(/^vetobench_judge_queue_length\{judge="cpu"\} 0$/m)
    }))

  it.live("shutting the proxy down releases the model (last: it closes the file's proxy)", () =>
    Effect.gen(function* () {
      expect(mapped(file)).not.toBe(false)
      yield* Scope.close(scope, Exit.void)
      expect(mapped(file)).not.toBe(true)
    }))
})
