/**
 * Test harness: a fake vLLM and a real veto-proxy on loopback ports, audit in a temp dir.
 * Every test should use its own run id (`x-vetobench-run`), since a harness is shared per block.
 */
import { mkdtempSync, readFileSync, existsSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { Context, Effect, Layer } from "effect"
import { FakeVllm, type FakeVllmOptions, type FakeVllmShape } from "../../layers/FakeVllm.js"
import { auditFileName } from "../../src/domain/run-id.js"
import { type AuditSink, type AuditWriteError } from "../../layers/AuditSink.js"
import { defaultPlugins } from "../../judges/plugins.js"
import type { JudgeKindPlugin } from "../../judges/registry.js"
import type { LlamaModels } from "../../layers/LlamaModels.js"
import type { Telemetry } from "../../layers/Telemetry.js"
import type { Upstreams } from "../../layers/Upstreams.js"
import type { Settings as SettingsTag } from "../../src/config/service.js"
import { defaultSettings, makeUpstreamSettings, type Settings, type SettingsOverrides, type UpstreamSettings } from "../../src/config/settings.js"
import { type AuditRecord, type CallRecord, isCallRecord } from "../../src/domain/audit-record.js"
import { proxyLayer } from "../../src/proxy/live.js"
import { ProxyServer } from "../../src/proxy/server.js"

export interface HarnessShape {
  /** proxy base URL including /v1 */
  readonly url: string
  readonly fake: FakeVllmShape
  readonly settings: Settings
  readonly auditFile: (run: string | null) => string
  /** the run's call records (outcome and manifest records left out) */
  readonly records: (run: string | null) => Array<CallRecord>
}

export class Harness extends Context.Tag("test/Harness")<Harness, HarnessShape>() {}

export const TEST_JUDGES = {
  slm: { kind: "llm_json", model: "judge", guided_json: true },
  guard: { kind: "guard", model: "guard", unsafe_pattern: "^\\s*unsafe", category_pattern: "S\\d+" },
  "allow-all": { kind: "static", decision: "allow" }
} as const

export interface HarnessOptions {
  readonly fake?: FakeVllmOptions
  /** judge kinds to register (default: the CLI's) */
  readonly plugins?: ReadonlyArray<JudgeKindPlugin<Upstreams | SettingsTag | LlamaModels>>
  readonly settings?: (fakeUrl: string, root: string) => SettingsOverrides
  readonly upstream?: Partial<UpstreamSettings>
  /** replace the file audit sink (then `auditFile`/`records` read files nobody writes) */
  readonly audit?: Layer.Layer<AuditSink, AuditWriteError>
  /** write an access line per request through the logger (default off, as for embedders) */
  readonly accessLog?: boolean
  /** tracing (default: as the settings and OTEL_* variables say, i.e. off) */
  readonly telemetry?: Layer.Layer<Telemetry>
}

/** Settings like the Python tests' fixture (reference §14.1), pointing at the fake. */
export const testSettings = (fakeUrl: string, root: string, opts: HarnessOptions = {}): Settings => {
  const extra = opts.settings?.(fakeUrl, root) ?? {}
  return defaultSettings(root, {
    upstreams: [
      makeUpstreamSettings({
        name: "cluster",
        base_url: fakeUrl,
        models: ["agent", "judge", "guard", "refusal-judge", "qwen3.8-27b", "judge-small", "prompt-guard"],
        ...opts.upstream
      })
    ],
    aliases: { "gpt-4o-mini": "refusal-judge" },
    model_defaults: { agent: { chat_template_kwargs: { enable_thinking: false } } },
    judges: TEST_JUDGES,
    ...extra,
    proxy: { audit_dir: path.join(root, "audit"), ...extra.proxy }
  })
}

export const harnessLayer = (opts: HarnessOptions = {}): Layer.Layer<Harness> =>
  Layer.scoped(
    Harness,
    Effect.gen(function* () {
      const fake = yield* FakeVllm
      const root = mkdtempSync(path.join(tmpdir(), "vetobench-test-"))
      const settings = testSettings(fake.url, root, opts)
      const extra = {
        ...(opts.audit !== undefined ? { audit: opts.audit } : {}),
        ...(opts.accessLog !== undefined ? { accessLog: opts.accessLog } : {}),
        ...(opts.telemetry !== undefined ? { telemetry: opts.telemetry } : {})
      }
      const ctx = yield* Layer.build(proxyLayer({ settings, plugins: opts.plugins ?? defaultPlugins, port: 0, ...extra }))
      const server = Context.get(ctx, ProxyServer)
      const auditFile = (run: string | null) => path.join(settings.proxy.audit_dir, auditFileName(run))
      return {
        url: `${server.url}/v1`,
        fake,
        settings,
        auditFile,
        records: (run) => {
          const f = auditFile(run)
          if (!existsSync(f)) return []
          return readFileSync(f, "utf8")
            .split("\n")
            .filter((l) => l.trim() !== "")
            .map((l) => JSON.parse(l) as AuditRecord)
            .filter(isCallRecord)
        }
      }
    })
  ).pipe(Layer.provide(FakeVllm.layer(opts.fake)), Layer.orDie)

export const TOOLS = [
  {
    type: "function",
    function: {
      name: "delete_file",
      description: "Delete a file",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
    }
  },
  { type: "function", function: { name: "list_dir", description: "List a directory", parameters: null } }
]

export interface PostOptions {
  readonly run?: string
  readonly episode?: string
  readonly headers?: Record<string, string>
  readonly path?: string
}

/** The parts of a chat completion (or error body) the tests read. */
export interface ChatJson {
  readonly choices: Array<{
    readonly finish_reason: string
    readonly message: {
      readonly content: string | null
      readonly tool_calls: Array<{ readonly id: string; readonly function: { readonly name: string; readonly arguments: string } }> | null
    }
  }>
  readonly error?: { readonly message: string; readonly code: string | number; readonly type: string }
  readonly data?: Array<{ readonly id: string }>
  readonly [key: string]: unknown
}

export interface PostResult {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: ChatJson
}

/** The fetch arguments for a POST to the proxy: the common request of reference §14.2 unless overridden. */
export const proxyRequest = (h: HarnessShape, body: Record<string, unknown>, o: PostOptions = {}): [string, RequestInit] => [
  `${h.url}/${o.path ?? "chat/completions"}`,
  {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(o.run !== undefined ? { "x-vetobench-run": o.run } : {}),
      ...(o.episode !== undefined ? { "x-vetobench-episode": o.episode } : {}),
      ...o.headers
    },
    body: JSON.stringify({ messages: [{ role: "user", content: "clean up" }], tools: TOOLS, ...body })
  }
]

/** POST JSON to the proxy (with the common request of reference §14.2 unless overridden). */
export const post = (h: HarnessShape, body: Record<string, unknown>, o: PostOptions = {}) =>
  Effect.promise(async (): Promise<PostResult> => {
    const res = await fetch(...proxyRequest(h, body, o))
    const text = await res.text()
    let json = { choices: [] } as unknown as ChatJson
    try {
      json = JSON.parse(text) as ChatJson
    } catch {
      // left as an empty completion; tests that expect JSON assert on `text`
    }
    return { status: res.status, headers: res.headers, text, json }
  })

export const call = (name: string, args: unknown) => ({ name, arguments: args })
