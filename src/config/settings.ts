/**
 * The settings file (`configs/vetobench.yaml`): types, defaults, decoder and loader.
 *
 * Loading: YAML → `${…}` expansion of string values → decoding. Every key is snake_case as in
 * the YAML; unknown keys are rejected at every fixed-shape level; relative paths are resolved
 * against the repo root (see `repoRootFor`). Judge specs are only checked for a `kind` here;
 * judge kinds validate the rest at start-up.
 */
import { Effect, Either, Redacted } from "effect"
import { defaultMcpSettings, type McpSettings, mcpSection } from "./mcp-settings.js"
import { defaultScreeningSettings, type ScreeningSettings, screeningSection } from "./screening-settings.js"
import * as path from "node:path"
import { DEFAULT_REFUSAL_TEMPLATE } from "../domain/refusal.js"
import * as D from "./decode.js"
import type { ConfigError } from "./errors.js"
import { type Env, expandEnv } from "./expand.js"
import { refusalTemplateProblem } from "./refusal-template.js"
import { readYamlFile, repoRootFor } from "./yaml-file.js"

// ---------------------------------------------------------------------------------------------
// types

export interface UpstreamSettings {
  readonly name: string
  /** OpenAI-compatible base incl. `/v1`, trailing `/` trimmed */
  readonly base_url: string
  /** sent as `Authorization: Bearer <key>`; default `EMPTY` */
  readonly api_key: Redacted.Redacted<string>
  /** served model names; empty = catch-all */
  readonly models: ReadonlyArray<string>
  /** true, false, or the absolute path of a CA bundle (then only that bundle is trusted) */
  readonly verify_tls: boolean | string
  readonly timeout_s: number
  readonly connect_timeout_s: number
  readonly max_connections: number
}

export interface ProxySettings {
  readonly host: string
  readonly port: number
  /** absolute */
  readonly audit_dir: string
  readonly fail_policy: "closed" | "open"
  /** `hold` in enforce: deny (unattended runs), allow, or wait for a person (hold API) */
  readonly hold_policy: "deny" | "allow" | "wait"
  /** with hold_policy wait: how long a held call waits before it expires (never recorded as rejected) */
  readonly hold_timeout_s: number
  readonly judge_timeout_s: number
  readonly judge_cache: boolean
  readonly judge_cache_size: number
  readonly max_concurrent_judges: number
  /** placeholders `{tool_name}`, `{category}`, `{reason}` (validated) */
  readonly refusal_template: string
  readonly partial_refusal: "content" | "drop"
  readonly max_body_bytes: number
  /** an upstream's buffered answer, or one event of its stream, larger than this is a 502 / an error event */
  readonly max_answer_bytes: number
  readonly shutdown_grace_s: number
  readonly operator_token: Redacted.Redacted<string> | null
  /** the access log's and the proxy's log lines: `text` (key=value) or `json` (one object per line) */
  readonly log_format: "text" | "json"
  /** serve `GET /metrics` (Prometheus text); false = 404 and nothing recorded */
  readonly metrics: boolean
  /** when set, `GET /metrics` needs `Authorization: Bearer <token>` */
  readonly metrics_token: Redacted.Redacted<string> | null
}

/** OpenTelemetry traces (off unless an OTLP endpoint is configured here or in `OTEL_EXPORTER_OTLP_ENDPOINT`). */
export interface TelemetrySettings {
  /** OTLP/HTTP base URL (traces go to `<url>/v1/traces`); null = `OTEL_EXPORTER_OTLP_ENDPOINT`, or off */
  readonly otlp_endpoint: string | null
  /** send a W3C `traceparent` header on upstream requests (default false: the upstream sees no tracing headers) */
  readonly propagate: boolean
}

/** all absolute */
export interface PathsSettings {
  readonly asbench_dir: string
  readonly asb_dir: string
  readonly asb_python: string
  readonly runs_dir: string
}

export interface AuditSettings {
  /** `always`: sync every record; `group`: concurrent appends share one sync (default); `never`: leave it to the OS */
  readonly fsync: "always" | "group" | "never"
  /** a signed checkpoint after this many new records (0 = only when a file is closed) */
  readonly checkpoint_every: number
  /** audit files kept open at most; past that the least recently used idle one is closed (and reopened on demand) */
  readonly max_open_files: number
  /** absolute path of the Ed25519 private key (PKCS#8 PEM) that signs checkpoints; null = unsigned */
  readonly signing_key: string | null
}

export interface ScoringSettings {
  readonly shieldagent_model: string | null
  readonly concurrency: number
}

/** A judge spec: only `kind` is checked here; the judge kind validates the other keys. */
export interface JudgeSpec {
  readonly kind: string
  readonly [key: string]: unknown
}

export interface Settings {
  /** the settings file as given, or "(built-in)" */
  readonly file: string
  /** absolute repo root; relative paths in the file are resolved against it */
  readonly root: string
  readonly upstreams: ReadonlyArray<UpstreamSettings>
  readonly aliases: Readonly<Record<string, string>>
  readonly model_defaults: Readonly<Record<string, Readonly<Record<string, unknown>>>>
  readonly judges: Readonly<Record<string, JudgeSpec>>
  readonly proxy: ProxySettings
  readonly paths: PathsSettings
  readonly scoring: ScoringSettings
  readonly audit: AuditSettings
  readonly telemetry: TelemetrySettings
  /** MCP servers the gate fronts (src/mcp/settings.ts, docs/mcp.md) */
  readonly mcp: McpSettings
  /** the result screen (src/screening/settings.ts, docs/judges.md) */
  readonly screening: ScreeningSettings
}

// ---------------------------------------------------------------------------------------------
// defaults

export const BUILT_IN_FILE = "(built-in)"

const UPSTREAM_DEFAULTS = {
  models: [] as ReadonlyArray<string>,
  verify_tls: true,
  timeout_s: 600,
  connect_timeout_s: 30,
  max_connections: 256
} as const

export const defaultProxySettings = (root: string): ProxySettings => ({
  host: "127.0.0.1",
  port: 8080,
  audit_dir: path.resolve(root, "runs/audit"),
  fail_policy: "closed",
  hold_policy: "deny",
  hold_timeout_s: 300,
  judge_timeout_s: 60,
  judge_cache: true,
  judge_cache_size: 10_000,
  max_concurrent_judges: 32,
  refusal_template: DEFAULT_REFUSAL_TEMPLATE,
  partial_refusal: "content",
  max_body_bytes: 16 * 1024 * 1024,
  max_answer_bytes: 64 * 1024 * 1024,
  shutdown_grace_s: 10,
  operator_token: null,
  log_format: "text",
  metrics: true,
  metrics_token: null
})

export const defaultPathsSettings = (root: string): PathsSettings => ({
  asbench_dir: path.resolve(root, "third_party/Agent-SafetyBench"),
  asb_dir: path.resolve(root, "third_party/ASB"),
  asb_python: path.resolve(root, "third_party/ASB/.venv/bin/python"),
  runs_dir: path.resolve(root, "runs")
})

export const defaultScoringSettings: ScoringSettings = { shieldagent_model: null, concurrency: 32 }

export const defaultAuditSettings: AuditSettings = { fsync: "group", checkpoint_every: 100, max_open_files: 64, signing_key: null }

export const defaultTelemetrySettings: TelemetrySettings = { otlp_endpoint: null, propagate: false }

/** An upstream entry with defaults filled in (for code that builds settings, e.g. the demo). */
export const makeUpstreamSettings = (
  input: Pick<UpstreamSettings, "name" | "base_url"> & Partial<Omit<UpstreamSettings, "name" | "base_url">>
): UpstreamSettings => ({
  ...UPSTREAM_DEFAULTS,
  api_key: Redacted.make("EMPTY"),
  ...input,
  base_url: trimSlashes(input.base_url)
})

export interface SettingsOverrides {
  readonly upstreams?: ReadonlyArray<UpstreamSettings>
  readonly aliases?: Readonly<Record<string, string>>
  readonly model_defaults?: Readonly<Record<string, Readonly<Record<string, unknown>>>>
  readonly judges?: Readonly<Record<string, JudgeSpec>>
  readonly proxy?: Partial<ProxySettings>
  readonly paths?: Partial<PathsSettings>
  readonly scoring?: Partial<ScoringSettings>
  readonly audit?: Partial<AuditSettings>
  readonly telemetry?: Partial<TelemetrySettings>
  readonly mcp?: Partial<McpSettings>
  readonly screening?: Partial<ScreeningSettings>
}

/**
 * Built-in settings used when no settings file is given (the demo). Unlike a file, it may have
 * no upstreams. Judges default to the static `allow-all` and `deny-all`.
 */
export const defaultSettings = (root: string, overrides: SettingsOverrides = {}): Settings => {
  const abs = path.resolve(root)
  const proxy = { ...defaultProxySettings(abs), ...overrides.proxy }
  const paths = { ...defaultPathsSettings(abs), ...overrides.paths }
  return {
    file: BUILT_IN_FILE,
    root: abs,
    upstreams: overrides.upstreams ?? [],
    aliases: overrides.aliases ?? {},
    model_defaults: overrides.model_defaults ?? {},
    judges: overrides.judges ?? { "allow-all": { kind: "static", decision: "allow" }, "deny-all": { kind: "static", decision: "deny" } },
    proxy: { ...proxy, audit_dir: path.resolve(abs, proxy.audit_dir) },
    paths: {
      asbench_dir: path.resolve(abs, paths.asbench_dir),
      asb_dir: path.resolve(abs, paths.asb_dir),
      asb_python: path.resolve(abs, paths.asb_python),
      runs_dir: path.resolve(abs, paths.runs_dir)
    },
    scoring: { ...defaultScoringSettings, ...overrides.scoring },
    audit: { ...defaultAuditSettings, ...overrides.audit },
    telemetry: { ...defaultTelemetrySettings, ...overrides.telemetry },
    mcp: { ...defaultMcpSettings, ...overrides.mcp },
    screening: { ...defaultScreeningSettings, ...overrides.screening }
  }
}

/** Resolves a path against the settings' repo root (absolute paths are kept). */
export const resolveFromRoot = (settings: Pick<Settings, "root">, p: string): string => path.resolve(settings.root, p)

// ---------------------------------------------------------------------------------------------
// decoders

const trimSlashes = (url: string): string => url.replace(/\/+$/, "")

const httpUrl: D.Decoder<string> = (n) =>
  Either.flatMap(D.nonEmptyString(n), (s) => {
    const url = URL.canParse(s) ? new URL(s) : undefined
    return url !== undefined && (url.protocol === "http:" || url.protocol === "https:")
      ? Either.right(trimSlashes(s.trim()))
      : n.fail(`expected an http(s) URL, got ${JSON.stringify(s)}`)
  })

const verifyTls: D.Decoder<boolean | string> = (n) => {
  const v = n.value
  if (typeof v === "boolean") return Either.right(v)
  if (typeof v !== "string" || v.trim() === "") return n.fail("expected boolean or path")
  if (n.expanded && (v === "true" || v === "false")) return Either.right(v === "true")
  return D.existingFile("CA bundle")(n)
}

/** An optional secret; "" means none (so `${TOKEN:-}` can switch it off). */
const optionalSecret: D.Decoder<Redacted.Redacted<string> | null> = (n) =>
  Either.map(D.string(n), (s) => (s === "" ? null : Redacted.make(s)))

/** An optional existing file (resolved against the root); blank means none. */
const optionalKeyFile: D.Decoder<string | null> = (n) =>
  typeof n.value === "string" && n.value.trim() === "" ? Either.right(null) : D.existingFile("signing key")(n)

/** An optional name; blank means none. */
const optionalName: D.Decoder<string | null> = (n) => Either.map(D.string(n), (s) => (s.trim() === "" ? null : s))

const refusalTemplate: D.Decoder<string> = (n) =>
  Either.flatMap(D.string(n), (s) => {
    const problem = refusalTemplateProblem(s)
    return problem === null ? Either.right(s) : n.fail(problem)
  })

const UPSTREAM_KEYS = ["name", "base_url", "api_key", "models", "verify_tls", "timeout_s", "connect_timeout_s", "max_connections"]

const upstream: D.Decoder<UpstreamSettings> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, UPSTREAM_KEYS)
    return {
      name: yield* f.get("name", D.nonEmptyString),
      base_url: yield* f.get("base_url", httpUrl),
      api_key: Redacted.make(yield* f.get("api_key", D.string, "EMPTY")),
      models: yield* f.get("models", D.list(D.nonEmptyString), UPSTREAM_DEFAULTS.models),
      verify_tls: yield* f.get("verify_tls", verifyTls, UPSTREAM_DEFAULTS.verify_tls),
      timeout_s: yield* f.get("timeout_s", D.number({ positive: true }), UPSTREAM_DEFAULTS.timeout_s),
      connect_timeout_s: yield* f.get("connect_timeout_s", D.number({ positive: true }), UPSTREAM_DEFAULTS.connect_timeout_s),
      max_connections: yield* f.get("max_connections", D.number({ integer: true, min: 1 }), UPSTREAM_DEFAULTS.max_connections)
    }
  })

const upstreams: D.Decoder<ReadonlyArray<UpstreamSettings>> = (n) =>
  Either.gen(function*() {
    if (n.isMissing || (Array.isArray(n.value) && n.value.length === 0)) {
      return yield* n.fail("config needs at least one entry under `upstreams`")
    }
    const list = yield* D.list(upstream)(n)
    const seen = new Map<string, number>()
    for (const [i, u] of list.entries()) {
      const first = seen.get(u.name)
      if (first !== undefined) {
        return yield* n.at(i, u).child("name", u.name).fail(`duplicate upstream name ${JSON.stringify(u.name)} (also upstreams[${first}])`)
      }
      seen.set(u.name, i)
    }
    return list
  })

const judgeSpec: D.Decoder<JudgeSpec> = (n) =>
  Either.gen(function*() {
    const obj = yield* D.mapping(n)
    const kindNode = n.child("kind", Object.hasOwn(obj, "kind") ? obj["kind"] : undefined)
    if (kindNode.isMissing) return yield* kindNode.fail("is required (the judge kind, e.g. llm_json, guard, static)")
    const kind = yield* D.nonEmptyString(kindNode)
    return { ...obj, kind }
  })

const PROXY_KEYS = [
  "host", "port", "audit_dir", "fail_policy", "hold_policy", "hold_timeout_s", "judge_timeout_s", "judge_cache", "judge_cache_size",
  "max_concurrent_judges", "refusal_template", "partial_refusal", "max_body_bytes", "max_answer_bytes", "shutdown_grace_s", "operator_token",
  "log_format", "metrics", "metrics_token"
]

const proxy: D.Decoder<ProxySettings> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, PROXY_KEYS)
    const d = defaultProxySettings(n.ctx.root)
    return {
      host: yield* f.get("host", D.nonEmptyString, d.host),
      port: yield* f.get("port", D.number({ integer: true, min: 0, max: 65535 }), d.port),
      audit_dir: yield* f.get("audit_dir", D.rootPath, d.audit_dir),
      fail_policy: yield* f.get("fail_policy", D.literal("closed", "open"), d.fail_policy),
      hold_policy: yield* f.get("hold_policy", D.literal("deny", "allow", "wait"), d.hold_policy),
      hold_timeout_s: yield* f.get("hold_timeout_s", D.number({ positive: true }), d.hold_timeout_s),
      judge_timeout_s: yield* f.get("judge_timeout_s", D.number({ positive: true }), d.judge_timeout_s),
      judge_cache: yield* f.get("judge_cache", D.boolean, d.judge_cache),
      judge_cache_size: yield* f.get("judge_cache_size", D.number({ integer: true, min: 0 }), d.judge_cache_size),
      max_concurrent_judges: yield* f.get("max_concurrent_judges", D.number({ integer: true, min: 1 }), d.max_concurrent_judges),
      refusal_template: yield* f.get("refusal_template", refusalTemplate, d.refusal_template),
      partial_refusal: yield* f.get("partial_refusal", D.literal("content", "drop"), d.partial_refusal),
      max_body_bytes: yield* f.get("max_body_bytes", D.number({ integer: true, min: 1 }), d.max_body_bytes),
      max_answer_bytes: yield* f.get("max_answer_bytes", D.number({ integer: true, min: 1 }), d.max_answer_bytes),
      shutdown_grace_s: yield* f.get("shutdown_grace_s", D.number({ min: 0 }), d.shutdown_grace_s),
      operator_token: yield* f.get("operator_token", optionalSecret, d.operator_token),
      log_format: yield* f.get("log_format", D.literal("text", "json"), d.log_format),
      metrics: yield* f.get("metrics", D.boolean, d.metrics),
      metrics_token: yield* f.get("metrics_token", optionalSecret, d.metrics_token)
    }
  })

const pathsSection: D.Decoder<PathsSettings> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, ["asbench_dir", "asb_dir", "asb_python", "runs_dir"])
    const d = defaultPathsSettings(n.ctx.root)
    return {
      asbench_dir: yield* f.get("asbench_dir", D.rootPath, d.asbench_dir),
      asb_dir: yield* f.get("asb_dir", D.rootPath, d.asb_dir),
      asb_python: yield* f.get("asb_python", D.rootPath, d.asb_python),
      runs_dir: yield* f.get("runs_dir", D.rootPath, d.runs_dir)
    }
  })

const scoring: D.Decoder<ScoringSettings> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, ["shieldagent_model", "concurrency"])
    return {
      shieldagent_model: yield* f.get("shieldagent_model", optionalName, defaultScoringSettings.shieldagent_model),
      concurrency: yield* f.get("concurrency", D.number({ integer: true, min: 1 }), defaultScoringSettings.concurrency)
    }
  })

const auditSection: D.Decoder<AuditSettings> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, ["fsync", "checkpoint_every", "max_open_files", "signing_key"])
    return {
      fsync: yield* f.get("fsync", D.literal("always", "group", "never"), defaultAuditSettings.fsync),
      checkpoint_every: yield* f.get("checkpoint_every", D.number({ integer: true, min: 0 }), defaultAuditSettings.checkpoint_every),
      max_open_files: yield* f.get("max_open_files", D.number({ integer: true, min: 1 }), defaultAuditSettings.max_open_files),
      signing_key: yield* f.get("signing_key", optionalKeyFile, defaultAuditSettings.signing_key)
    }
  })

/** An optional http(s) URL; blank means none (so `${OTEL_EXPORTER_OTLP_ENDPOINT:-}` can leave it unset). */
const optionalUrl: D.Decoder<string | null> = (n) => (typeof n.value === "string" && n.value.trim() === "" ? Either.right(null) : httpUrl(n))

const telemetrySection: D.Decoder<TelemetrySettings> = (n) =>
  Either.gen(function*() {
    const f = yield* D.fields(n, ["otlp_endpoint", "propagate"])
    return {
      otlp_endpoint: yield* f.get("otlp_endpoint", optionalUrl, defaultTelemetrySettings.otlp_endpoint),
      propagate: yield* f.get("propagate", D.boolean, defaultTelemetrySettings.propagate)
    }
  })

const TOP_KEYS = ["upstreams", "aliases", "model_defaults", "judges", "proxy", "paths", "scoring", "audit", "telemetry", "mcp", "screening"]

/**
 * Decodes a parsed settings document (the YAML value, before expansion). `file` labels errors;
 * `root` is the repo root relative paths are resolved against; `env` defaults to `process.env`.
 */
export const decodeSettings = (
  raw: unknown,
  opts: { readonly file: string; readonly root: string; readonly env?: Env }
): Either.Either<Settings, ConfigError> =>
  Either.gen(function*() {
    const root = path.resolve(opts.root)
    const { expanded, value } = yield* expandEnv(raw, { file: opts.file, ...(opts.env ? { env: opts.env } : {}) })
    const f = yield* D.fields(new D.Node({ file: opts.file, root, expanded }, "", value), TOP_KEYS)
    return {
      file: opts.file,
      root,
      upstreams: yield* upstreams(f.child("upstreams")),
      aliases: yield* f.get("aliases", D.record(D.nonEmptyString), {}),
      model_defaults: yield* f.get("model_defaults", D.record(D.mapping), {}),
      judges: yield* f.get("judges", D.record(judgeSpec), {}),
      proxy: yield* f.get("proxy", proxy, defaultProxySettings(root)),
      paths: yield* f.get("paths", pathsSection, defaultPathsSettings(root)),
      scoring: yield* f.get("scoring", scoring, defaultScoringSettings),
      audit: yield* f.get("audit", auditSection, defaultAuditSettings),
      telemetry: yield* f.get("telemetry", telemetrySection, defaultTelemetrySettings),
      mcp: yield* f.get("mcp", mcpSection, defaultMcpSettings),
      screening: yield* f.get("screening", screeningSection, defaultScreeningSettings)
    }
  })

export const SETTINGS_FILE_HINT = "copy configs/vetobench.example.yaml to configs/vetobench.yaml and edit it"

/** Reads, expands and decodes a settings file. The repo root follows `repoRootFor(file)`. */
export const loadSettings = (file: string, env?: Env): Effect.Effect<Settings, ConfigError> =>
  readYamlFile(file, { what: "settings file", hint: SETTINGS_FILE_HINT }).pipe(
    Effect.flatMap((raw) => decodeSettings(raw, { file, root: repoRootFor(file), ...(env ? { env } : {}) }))
  )
