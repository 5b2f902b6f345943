import { describe, expect, it, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import {
  ASBENCH_PINNED_COMMIT,
  BridgeError,
  type CaseEnvironment,
  defaultBridgeScript,
  make,
  PythonBridge,
  type PythonBridgeOptions
} from "../../layers/PythonBridge.js"
import { shieldPrompt } from "../../src/adapters/agent-safetybench/shieldagent.js"
import { parsePythonJson, PyFloat, pyJson } from "../../src/domain/python-json.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const FIXTURE = path.join(ROOT, "examples/agent-safetybench-mini")
const REAL = path.join(ROOT, "third_party/Agent-SafetyBench")

interface FixtureCase {
  readonly id: number
  readonly environments: ReadonlyArray<CaseEnvironment>
}
/** the fixture's cases, read as Python reads them (21.0 stays a float) */
const CASES = parsePythonJson(fs.readFileSync(path.join(FIXTURE, "data/released_data.json"), "utf8")) as ReadonlyArray<FixtureCase>
const envsOf = (id: number): ReadonlyArray<CaseEnvironment> => CASES.find((c) => c.id === id)!.environments
const specsOf = (env: string): ReadonlyArray<Record<string, unknown>> =>
  JSON.parse(fs.readFileSync(path.join(FIXTURE, "environments", `${env}.json`), "utf8")) as ReadonlyArray<Record<string, unknown>>
const spec = (env: string, tool: string) => specsOf(env).find((s) => s.name === tool)!

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const errorOf = <A>(e: Effect.Effect<A, BridgeError>) =>
  Effect.flip(e).pipe(Effect.tap((err) => Effect.sync(() => expect(err).toBeInstanceOf(BridgeError))))

/** a scoped bridge of our own (for tests that kill processes or need other options) */
const withBridge = <A, E>(
  options: Partial<PythonBridgeOptions>,
  use: (b: Effect.Effect.Success<ReturnType<typeof make>>) => Effect.Effect<A, E>
) => Effect.scoped(Effect.flatMap(make({ asbenchDir: FIXTURE, workers: 2, ...options }), use))

/** run a Python snippet; its stdout parsed as JSON */
const python = (code: string, input: unknown): unknown =>
  JSON.parse(execFileSync("python3", ["-W", "ignore", "-c", code], { input: JSON.stringify(input), encoding: "utf8" }))

/** what the checkout's own `create_ipt(dialog, env_info, "qwen")` returns (compiled alone: its module imports torch) */
const createIpt = (checkout: string, dialog: string, envInfo: string): string =>
  python(
    `import ast, json, sys
args = json.load(sys.stdin)
path = args["path"]
tree = ast.parse(open(path, encoding="utf-8").read())
fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "create_ipt")
ns = {}
exec(compile(ast.Module(body=[fn], type_ignores=[]), path, "exec"), ns)
print(json.dumps(ns["create_ipt"](args["dialog"], args["env_info"], "qwen")))`,
    { path: path.join(checkout, "score/eval_with_shield.py"), dialog, env_info: envInfo }
  ) as string

layer(PythonBridge.layer({ asbenchDir: FIXTURE, workers: 4 }), { excludeTestServices: true })("PythonBridge on the fixture checkout", (it) => {
  it.effect("texts: the system prompt and the ShieldAgent template come from the checkout", () =>
    Effect.gen(function*() {
      const bridge = yield* PythonBridge
      const texts = yield* bridge.texts
      const base = python(
        `import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("b", json.load(sys.stdin))
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
print(json.dumps(m.BaseAPI().without_strict_jsonformat_sys_prompt))`,
        path.join(FIXTURE, "evaluation/model_api/BaseAPI.py")
      )
      expect(texts.systemPrompt).toBe(base)
      expect(texts.systemPrompt.startsWith("You are the fixture agent of vetobench's tests")).toBe(true)
      expect(texts.systemPrompt.endsWith("\n")).toBe(true)
      const t = texts.shieldInstruction
      expect(t).toContain("\n\\[Answer] 'safe' or 'unsafe', nothing else.\n\\[Analysis] ")
      expect(t).toContain("<Fixture environment and its tools>: {env_info}\n")
      expect(t.endsWith("The conversation, tool calls included:\n{dialog_content}")).toBe(true)
      // the prompt production sends equals what the script itself builds (also with awkward values)
      const dialog = "<User>: costs $& and {env_info} stay literal"
      const env = `[{"name": "X", "note": "{dialog_content} $1"}]`
      expect(shieldPrompt(t, env, dialog)).toBe(createIpt(FIXTURE, dialog, env))
      // cached after the first read
      expect(yield* bridge.texts).toBe(texts)
    }))

  it.effect("openCase: no tools for [] and for a first env named \"\"; specs in case order otherwise", () =>
    Effect.gen(function*() {
      const bridge = yield* PythonBridge
      const [none, blank, three] = yield* bridge.withSession((s) =>
        Effect.all([s.openCase(envsOf(0)), s.openCase(envsOf(1)), s.openCase(envsOf(3))])
      )
      expect(none).toEqual([])
      expect(blank).toEqual([])
      expect(three.map((s) => s.name)).toEqual(["send_email", "list_files", "read_file", "get_status", "set_temperature"])
      expect(three).toEqual([
        spec("Mailer", "send_email"),
        spec("FileCabinet", "list_files"),
        spec("FileCabinet", "read_file"),
        spec("Thermostat", "get_status"),
        spec("Thermostat", "set_temperature")
      ])
      for (const s of three) expect(s).not.toHaveProperty("type")
      // a non-standard top-level "required" is passed through as the schema file has it
      const attach = yield* bridge.withSession((s) => s.openCase(envsOf(5)))
      expect(attach[0]).toEqual(spec("Mailer", "attach_file"))
    }))

  it.effect("openCase: an unknown environment or tool is a case error; the process goes on", () =>
    Effect.gen(function*() {
      const bridge = yield* PythonBridge
      yield* bridge.withSession((s) =>
        Effect.gen(function*() {
          const missing = yield* errorOf(s.openCase([{ name: "Nowhere", tools: ["x"] }]))
          expect(missing.reason).toBe("case")
          expect(missing.message).toBe("Environment Nowhere not found.")
          const badTool = yield* errorOf(s.openCase([{ name: "Mailer", tools: ["send_email", "fax"] }]))
          expect(badTool.reason).toBe("case")
          expect(badTool.message).toContain("Tool fax not found in Environment Mailer.")
          // nothing of the failed case stays open
          const after = yield* s.callTool("send_email", `{"to": "a", "body": "b"}`)
          expect(after.result).toEqual({ success: false, message: "Tool send_email doesn't exist." })
          expect(yield* s.openCase(envsOf(2))).toHaveLength(3)
        })
      )
    }))

  it.effect("callTool: coercion, required and unknown arguments as BaseEnv.call_tool does them", () =>
    Effect.gen(function*() {
      const bridge = yield* PythonBridge
      yield* bridge.withSession((s) =>
        Effect.gen(function*() {
          yield* s.openCase([
            { name: "Thermostat", tools: ["set_temperature", "set_fan", "set_eco", "set_schedule", "get_status"], parameters: { room: "Küche" } }
          ])
          const temp = yield* s.callTool("set_temperature", `{"celsius": "22", "window": "open"}`)
          expect(temp.resultJson).toBe(`{"success": true, "data": {"room": "K\\u00fcche", "celsius": 22.0}}`)
          // eval.py stores the arguments as the model gave them (the dropped key included)
          expect(temp.argumentsJson).toBe(`{"celsius": "22", "window": "open"}`)
          expect((yield* s.callTool("set_fan", `{"speed": "3"}`)).resultJson).toBe(
            `{"success": true, "data": {"speed": 3, "kind": "int"}}`
          )
          expect((yield* s.callTool("set_fan", `{"speed": 2.9}`)).resultJson).toBe(
            `{"success": true, "data": {"speed": 2, "kind": "int"}}`
          )
          expect((yield* s.callTool("set_fan", `{"speed": "fast"}`)).result).toEqual({
            success: false,
            message: "Parameter speed should have type integer."
          })
          expect((yield* s.callTool("set_eco", `{"enabled": "false"}`)).resultJson).toBe(
            `{"success": true, "data": {"eco": true}}`
          )
          const schedule = yield* s.callTool("set_schedule", `{"program": "{\\"07:00\\": 21.5}", "days": "[\\"Mon\\"]"}`)
          expect(schedule.resultJson).toBe(`{"success": true, "data": {"program": {"07:00": 21.5}, "days": ["Mon"]}}`)
          expect((yield* s.callTool("set_schedule", `{"program": "not json"}`)).result).toEqual({
            success: false,
            message: "Parameter program should have type object."
          })
          expect((yield* s.callTool("set_temperature", `{"room": "Bad"}`)).result).toEqual({
            success: false,
            message: "Missing required parameter celsius for tool set_temperature."
          })
          const status = yield* s.callTool("get_status", "")
          expect(status.argumentsJson).toBe("{}")
          expect(status.resultJson).toBe(
            `{"success": true, "data": {"room": "K\\u00fcche", "celsius": 22.0, "eco": true, "label": "K\\u00fcche \\u2603 \\ud83c\\udf21"}}`
          )
          // the TS serialiser agrees with Python on what Python sent (floats kept as PyFloat)
          expect(pyJson(status.result)).toBe(status.resultJson)
          expect((status.result as { data: { celsius: unknown } }).data.celsius).toEqual(new PyFloat(22))
          expect((yield* s.callTool("get_status", null)).argumentsJson).toBe("{}")
        })
      )
    }))

  it.effect("callTool: dispatch, raising tools, unknown tools and bad argument JSON", () =>
    Effect.gen(function*() {
      const bridge = yield* PythonBridge
      yield* bridge.withSession((s) =>
        Effect.gen(function*() {
          yield* s.openCase(envsOf(3))
          // FileCabinet also has get_status, but the case offers it only for Thermostat
          const status = yield* s.callTool("get_status", "{}")
          expect(status.resultJson).toContain(`"room": "K\\u00fcche", "celsius": 19.5`)
          // in FileCabinet's schema, but not offered by the case
          expect((yield* s.callTool("delete_file", `{"path": "x"}`)).result).toEqual({
            success: false,
            message: "Tool delete_file doesn't exist."
          })
          expect((yield* s.callTool("open_window", `{"room": "Nursery"}`)).resultJson).toBe(
            `{"success": false, "message": "Tool open_window doesn't exist."}`
          )
          const bad = yield* errorOf(s.callTool("send_email", `{"to": "bo@example.org", "body": "hi"`))
          expect(bad.reason).toBe("bad_arguments")
          expect(bad.message).toContain("invalid tool arguments JSON")
          const blank = yield* errorOf(s.callTool("send_email", "  "))
          expect(blank.reason).toBe("bad_arguments")
          // the process is fine after a bad call; Mailer prints to stdout, which must not disturb the protocol
          const sent = yield* s.callTool("send_email", `{"to": "Zoë <z@example.org>", "body": "ok", "cc": "[\\"a@b.c\\"]"}`)
          expect(sent.resultJson).toBe(
            `{"success": true, "message": "Email to Zo\\u00eb <z@example.org> queued.", "data": {"urgent": false, "cc": ["a@b.c"]}}`
          )
          expect(sent.argumentsJson).toBe(`{"to": "Zo\\u00eb <z@example.org>", "body": "ok", "cc": "[\\"a@b.c\\"]"}`)

          yield* s.openCase(envsOf(5))
          expect((yield* s.callTool("attach_file", `{"path": "hr/salaries.csv"}`)).resultJson).toBe(
            `{"success": false, "message": "Tool error: attachment store is offline (wanted hr/salaries.csv)"}`
          )
        })
      )
    }))

  it.effect("callTool: parsed arguments are sent with pyJson (floats stay floats)", () =>
    Effect.gen(function*() {
      const bridge = yield* PythonBridge
      const r = yield* bridge.withSession((s) =>
        Effect.zipRight(s.openCase(envsOf(7)), s.callTool("set_temperature", { celsius: new PyFloat(21), note: "é" }))
      )
      expect(r.argumentsJson).toBe(`{"celsius": 21.0, "note": "\\u00e9"}`)
      expect(r.resultJson).toBe(`{"success": true, "data": {"room": "Living room", "celsius": 21.0}}`)
    }))

  it.effect("callTool: odd results, None results and chatty tools", () =>
    Effect.gen(function*() {
      const bridge = yield* PythonBridge
      yield* bridge.withSession((s) =>
        Effect.gen(function*() {
          yield* s.openCase([{ name: "CrashProbe", tools: ["odd_values", "chatter", "nothing"] }])
          const odd = yield* s.callTool("odd_values", "{}")
          expect(odd.resultJson).toBe(`{"success": true, "data": {"tags": "{'only'}", "raw": "b'ab'"}}`)
          expect(odd.resultNotJson).toContain("not JSON serializable")
          const chat = yield* s.callTool("chatter", "{}")
          expect(chat.result).toEqual({ success: true, message: "said a lot" })
          expect(chat.resultNotJson).toBeUndefined()
          // a tool returning None reads as a missing tool, as in eval.py
          expect((yield* s.callTool("nothing", "{}")).result).toEqual({ success: false, message: "Tool nothing doesn't exist." })
        })
      )
    }))

  it.effect("environment state lives for one case; the next session starts fresh", () =>
    Effect.gen(function*() {
      const bridge = yield* PythonBridge
      const listed = yield* bridge.withSession((s) =>
        Effect.gen(function*() {
          yield* s.openCase(envsOf(2))
          const locked = yield* s.callTool("delete_file", `{"path": "hr/salaries.csv"}`)
          expect(locked.result).toEqual({ success: false, message: "hr/salaries.csv is locked." })
          yield* s.callTool("delete_file", `{"path": "hr/salaries.csv", "force": "no"}`) // bool("no") is True
          return (yield* s.callTool("list_files", "{}")).result
        })
      )
      expect(listed).toEqual({ success: true, data: { files: ["drafts/budget.txt", "drafts/notes.txt"] } })
      const again = yield* bridge.withSession((s) =>
        Effect.zipRight(s.openCase(envsOf(2)), s.callTool("list_files", `{"folder": "hr"}`))
      )
      expect(again.result).toEqual({ success: true, data: { files: ["hr/salaries.csv"] } })
      // a session that never opens a case sees no tools (the previous case was closed)
      const stale = yield* bridge.withSession((s) => s.callTool("list_files", "{}"))
      expect(stale.result).toEqual({ success: false, message: "Tool list_files doesn't exist." })
    }))

  it.effect("envInfo: whole env objects plus tool_information, as Python's json.dumps", () =>
    Effect.gen(function*() {
      const bridge = yield* PythonBridge
      const info = yield* bridge.envInfo(envsOf(3))
      const parsed = parsePythonJson(info.json) as ReadonlyArray<Record<string, unknown>>
      expect(parsed.map((e) => Object.keys(e))).toEqual([
        ["name", "tools", "tool_information"],
        ["name", "tools", "parameters", "tool_information"],
        ["name", "tools", "parameters", "tool_information"]
      ])
      expect(parsed[0]!.tool_information).toEqual([{ tool_name: "send_email", tool_description: "Send an email from the user's account." }])
      expect(info.json).toContain(`"parameters": {"room": "K\\u00fcche", "celsius": 19.5}`)
      expect(pyJson(parsed)).toBe(info.json)
      // every spec of every named env's file, in env order
      expect(info.toolDescs.map((d) => d.name)).toEqual([
        ...specsOf("Mailer").map((d) => d.name),
        ...specsOf("FileCabinet").map((d) => d.name),
        ...specsOf("Thermostat").map((d) => d.name)
      ])
      // floats in parameters stay floats when the case is read with parsePythonJson
      const floats = yield* bridge.envInfo(envsOf(8))
      expect(floats.json).toBe(
        `[{"name": "Thermostat", "tools": ["set_schedule", "get_status"], "parameters": {"room": "Nursery", "celsius": 21.0, "limits": [16.0, 24.5]}, ` +
          `"tool_information": [{"tool_name": "set_schedule", "tool_description": "Install a heating program."}, ` +
          `{"tool_name": "get_status", "tool_description": "Current room, temperature and eco mode."}]}]`
      )
      const blank = yield* bridge.envInfo(envsOf(1))
      expect(blank.json).toBe(`[{"name": "", "tools": [], "parameters": {}, "tool_information": []}]`)
      expect(blank.toolDescs).toEqual([])
      expect((yield* bridge.envInfo([])).json).toBe("[]")
      const bad = yield* errorOf(bridge.envInfo([{ name: "Mailer", tools: ["fax"] }]))
      expect(bad.reason).toBe("case")
    }))

  it.effect("pyJson is Python's json.dumps", () =>
    Effect.gen(function*() {
      const bridge = yield* PythonBridge
      expect(bridge.pyJson({ a: "é", b: [1, 2.5] })).toBe(`{"a": "\\u00e9", "b": [1, 2.5]}`)
    }))

  it.effect("several sessions at once with workers 4", () =>
    Effect.gen(function*() {
      const bridge = yield* PythonBridge
      const results = yield* Effect.forEach(
        [16, 17, 18, 19, 20, 21, 22, 23],
        (celsius) =>
          bridge.withSession((s) =>
            Effect.gen(function*() {
              yield* s.openCase([{ name: "Thermostat", tools: ["set_temperature", "get_status"], parameters: { room: `R${celsius}` } }])
              yield* s.callTool("set_temperature", `{"celsius": ${celsius}}`)
              const info = yield* bridge.envInfo([{ name: "Thermostat", tools: ["get_status"] }]) // reuses the session's process
              expect(info.toolDescs.length).toBe(5)
              return (yield* s.callTool("get_status", "{}")).resultJson
            })
          ),
        { concurrency: "unbounded" }
      )
      results.forEach((json, i) => expect(json).toContain(`"room": "R${16 + i}", "celsius": ${16 + i}.0`))
    }))
})

describe("PythonBridge: setup, crashes and process ownership", () => {
  it.live("a missing checkout is a setup error naming paths.asbench_dir and the setup command", () =>
    Effect.gen(function*() {
      const missing = yield* errorOf(withBridge({ asbenchDir: path.join(ROOT, "third_party/no-such-checkout") }, () => Effect.void))
      expect(missing.reason).toBe("setup")
      expect(missing.message).toContain("paths.asbench_dir")
      expect(missing.message).toContain("does not exist")
      expect(missing.message).toContain(
        `git clone https://github.com/thu-coai/Agent-SafetyBench third_party/Agent-SafetyBench && git -C third_party/Agent-SafetyBench checkout ${ASBENCH_PINNED_COMMIT}`
      )
      const notACheckout = yield* errorOf(withBridge({ asbenchDir: path.join(ROOT, "test/fixtures") }, () => Effect.void))
      expect(notACheckout.reason).toBe("setup")
      expect(notACheckout.message).toContain("has no environments/EnvManager.py (paths.asbench_dir)")
    }))

  it.live("a missing python is a setup error", () =>
    Effect.gen(function*() {
      const e = yield* errorOf(withBridge({ python: "/nonexistent/python3" }, () => Effect.void))
      expect(e.reason).toBe("setup")
      expect(e.message).toMatch(/^python3 not found \(tried \/nonexistent\/python3\): install Python 3 \(3\.8\+\)/)
    }))

  it.live("bridge.py reports a broken checkout in its first line and exits", () =>
    Effect.sync(() => {
      let out = ""
      let status = 0
      try {
        execFileSync("python3", [defaultBridgeScript(), path.join(ROOT, "test")], { input: "", encoding: "utf8", stdio: "pipe" })
      } catch (e) {
        const err = e as { stdout: string; status: number }
        out = err.stdout
        status = err.status
      }
      expect(status).toBe(2)
      const first = JSON.parse(out.split("\n")[0]!) as { error: { reason: string; message: string } }
      expect(first.error.reason).toBe("setup")
      expect(first.error.message).toContain("no environments/EnvManager.py")
    }))

  it.live("bridge.py answers bad requests with errors and keeps going", () =>
    Effect.sync(() => {
      const input = [
        "not json",
        "[1, 2]",
        `{"op": "launch_rockets", "id": 1}`,
        `{"op": "open_case", "id": 2}`,
        `{"op": "call_tool", "id": 3}`,
        `{"op": "py_json", "value": {"k": [1.0, "\\u00e9"]}, "id": 4}`,
        `{"op": "ping", "id": "five"}`
      ].join("\n")
      const out = execFileSync("python3", [defaultBridgeScript(), FIXTURE], { input, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"] })
      const lines = out.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>)
      expect(lines[0]).toHaveProperty("hello")
      expect(lines.slice(1).map((l) => (l.error as { reason?: string } | undefined)?.reason ?? "ok")).toEqual([
        "protocol",
        "protocol",
        "protocol",
        "protocol",
        "protocol",
        "ok",
        "ok"
      ])
      expect(lines[6]).toEqual({ json: `{"k": [1.0, "\\u00e9"]}`, id: 4 })
      expect(lines[7]).toEqual({ ok: true, id: "five" })
    }))

  it.live("a process that dies mid-request is a crash with its stderr; the next session gets a new process", () =>
    withBridge({ workers: 1 }, (bridge) =>
      Effect.gen(function*() {
        const [before] = yield* bridge.pids
        const crash = yield* errorOf(
          bridge.withSession((s) => Effect.zipRight(s.openCase([{ name: "CrashProbe", tools: ["halt"] }]), s.callTool("halt", `{"code": 3}`)))
        )
        expect(crash.reason).toBe("crashed")
        expect(crash.message).toContain("exit code 3")
        expect(crash.message).toContain("CrashProbe: halting with exit code 3")
        expect(alive(before!)).toBe(false)
        const ok = yield* bridge.withSession((s) => Effect.zipRight(s.openCase(envsOf(7)), s.callTool("set_fan", `{"speed": 1}`)))
        expect(ok.result).toEqual({ success: true, data: { speed: 1, kind: "int" } })
        const after = yield* bridge.pids
        expect(after).toHaveLength(1)
        expect(after[0]).not.toBe(before)
      })
    ))

  it.live("a request past its timeout kills the process (crashed) and the bridge recovers", () =>
    withBridge({ workers: 1, requestTimeout: "400 millis" }, (bridge) =>
      Effect.gen(function*() {
        const [before] = yield* bridge.pids
        const slow = yield* errorOf(
          bridge.withSession((s) => Effect.zipRight(s.openCase([{ name: "CrashProbe", tools: ["linger"] }]), s.callTool("linger", `{"seconds": 30}`)))
        )
        expect(slow.reason).toBe("crashed")
        expect(slow.message).toContain("within 400 ms")
        expect(alive(before!)).toBe(false)
        const texts = yield* bridge.texts
        expect(texts.systemPrompt.length).toBeGreaterThan(0)
      })
    ))

  it.live("an interrupted session kills its process", () =>
    withBridge({ workers: 1 }, (bridge) =>
      Effect.gen(function*() {
        const [pid] = yield* bridge.pids
        const started = yield* Deferred.make<void>()
        const fiber = yield* Effect.fork(
          bridge.withSession((s) =>
            Effect.gen(function*() {
              yield* s.openCase([{ name: "CrashProbe", tools: ["linger"] }])
              yield* Deferred.succeed(started, undefined)
              return yield* s.callTool("linger", `{"seconds": 30}`)
            })
          )
        )
        yield* Deferred.await(started)
        yield* Effect.sleep("150 millis")
        yield* Fiber.interrupt(fiber)
        expect(alive(pid!)).toBe(false)
        expect(yield* bridge.pids).toEqual([])
      })
    ))

  it.live("texts and envInfo inside a session reuse its process (no deadlock with one worker)", () =>
    withBridge({ workers: 1 }, (bridge) =>
      bridge.withSession((s) =>
        Effect.gen(function*() {
          yield* s.openCase(envsOf(2))
          const texts = yield* bridge.texts
          const info = yield* bridge.envInfo(envsOf(2))
          expect(texts.shieldInstruction).toContain("{env_info}")
          expect(info.toolDescs).toHaveLength(4)
          // the case is still open
          expect((yield* s.callTool("read_file", `{"path": "drafts/notes.txt"}`)).result).toEqual({
            success: true,
            data: { path: "drafts/notes.txt", content: "Call the plumber on Tuesday." }
          })
        })
      )
    ))

  it.live("closing the scope ends every process", () =>
    Effect.gen(function*() {
      const pids = yield* withBridge({ workers: 3 }, (bridge) =>
        Effect.gen(function*() {
          const latch = yield* Deferred.make<void>()
          const fibers = yield* Effect.forEach([1, 2, 3], () =>
            Effect.fork(bridge.withSession((s) => Effect.zipRight(s.openCase(envsOf(2)), Deferred.await(latch))))
          )
          // wait until all three sessions hold a process
          for (let i = 0; i < 100 && (yield* bridge.pids).length < 3; i++) yield* Effect.sleep("20 millis")
          const live = yield* bridge.pids
          expect(live).toHaveLength(3)
          yield* Deferred.succeed(latch, undefined)
          yield* Effect.forEach(fibers, Fiber.join)
          return live
        })
      )
      expect(pids.every((pid) => !alive(pid))).toBe(true)
    }))

  it.live.skipIf(!fs.existsSync("/proc/self/cwd"))("processes run in a temporary directory that is removed with the layer", () =>
    Effect.gen(function*() {
      const cwd = yield* withBridge({ workers: 1 }, (bridge) =>
        Effect.map(bridge.pids, (pids) => fs.readlinkSync(`/proc/${pids[0]}/cwd`))
      )
      expect(path.basename(cwd)).toMatch(/^vetobench-pybridge-/)
      expect(path.dirname(cwd)).toBe(fs.realpathSync(os.tmpdir()))
      expect(fs.existsSync(cwd)).toBe(false)
    }))
})

describe.skipIf(!fs.existsSync(path.join(REAL, "environments", "EnvManager.py")))("PythonBridge on third_party/Agent-SafetyBench", () => {
  it.live("reads the real texts and opens real cases", () =>
    withBridge({ asbenchDir: REAL, workers: 1 }, (bridge) =>
      Effect.gen(function*() {
        const texts = yield* bridge.texts
        expect(texts.systemPrompt.startsWith("You are an assistant that is capable of utilizing numerous tools")).toBe(true)
        expect(texts.shieldInstruction).toContain("\\[Answer]")
        const dialog = "<User>: hi"
        const env = "[]"
        expect(shieldPrompt(texts.shieldInstruction, env, dialog)).toBe(createIpt(REAL, dialog, env))
        const data = parsePythonJson(fs.readFileSync(path.join(REAL, "data/released_data.json"), "utf8")) as ReadonlyArray<FixtureCase>
        for (const c of data.slice(0, 20)) {
          yield* bridge.withSession((s) => s.openCase(c.environments))
          yield* bridge.envInfo(c.environments)
        }
      })
    ))
})
