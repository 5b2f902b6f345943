import { Effect, Either, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { ConfigError } from "../../src/config/errors.js"
import { expandEnv } from "../../src/config/expand.js"
import {
  defaultAuditSettings,
  decodeSettings,
  defaultSettings,
  loadSettings,
  makeUpstreamSettings,
  resolveFromRoot,
  type Settings
} from "../../src/config/settings.js"
import { parseYaml, repoRootFor } from "../../src/config/yaml-file.js"

const REPO = path.resolve(import.meta.dirname, "../..")
const EXAMPLE = path.join(REPO, "configs/vetobench.example.yaml")
const ROOT = "/srv/bench"
const FILE = "test.yaml"

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-config-"))
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

const minimal = (extra: Record<string, unknown> = {}) => ({
  upstreams: [{ name: "agent", base_url: "http://localhost:8000/v1/" }],
  ...extra
})

const decode = (raw: unknown, env: Record<string, string | undefined> = {}, root = ROOT) =>
  decodeSettings(raw, { file: FILE, root, env })

const ok = (r: Either.Either<Settings, ConfigError>): Settings => {
  if (Either.isLeft(r)) throw new Error(`expected success, got: ${r.left.message}`)
  return r.right
}

const fail = (r: Either.Either<unknown, ConfigError>): ConfigError => {
  if (Either.isRight(r)) throw new Error("expected a ConfigError")
  return r.left
}

/** YAML text → settings, as the loader does it */
const fromYaml = (text: string, env: Record<string, string | undefined> = {}, root = ROOT) =>
  Either.flatMap(parseYaml(text, FILE), (raw) => decode(raw, env, root))

const writeFile = (rel: string, text: string): string => {
  const p = path.join(tmp, rel)
  fs.mkdirSync(path.dirname(p), { recursive: true })
  fs.writeFileSync(p, text)
  return p
}

describe("ConfigError", () => {
  it("formats file, path and reason", () => {
    expect(new ConfigError({ file: "a.yaml", path: "proxy.port", reason: "bad" }).message).toBe("a.yaml: proxy.port: bad")
    expect(new ConfigError({ file: "a.yaml", path: "", reason: "bad" }).message).toBe("a.yaml: bad")
  })
})

describe("decodeSettings: defaults", () => {
  it("fills every default and resolves paths against the root", () => {
    const s = ok(decode(minimal()))
    expect(s.file).toBe(FILE)
    expect(s.root).toBe(ROOT)
    const [u] = s.upstreams
    expect(u?.name).toBe("agent")
    expect(u?.base_url).toBe("http://localhost:8000/v1")
    expect(Redacted.value(u!.api_key)).toBe("EMPTY")
    expect(u).toMatchObject({ models: [], verify_tls: true, timeout_s: 600, connect_timeout_s: 30, max_connections: 256 })
    expect(s.aliases).toEqual({})
    expect(s.model_defaults).toEqual({})
    expect(s.judges).toEqual({})
    expect(s.proxy).toEqual({
      host: "127.0.0.1",
      port: 8080,
      audit_dir: "/srv/bench/runs/audit",
      fail_policy: "closed",
      hold_policy: "deny",
      hold_timeout_s: 300,
      judge_timeout_s: 60,
      judge_cache: true,
      judge_cache_size: 10000,
      max_concurrent_judges: 32,
      refusal_template:
        "I did not perform this action. The tool call `{tool_name}` was blocked by the tool-call safety judge ({category}): {reason}",
      partial_refusal: "content",
      max_body_bytes: 16777216,
      max_answer_bytes: 67108864,
      shutdown_grace_s: 10,
      operator_token: null,
      log_format: "text",
      metrics: true,
      metrics_token: null
    })
    expect(s.paths).toEqual({
      asbench_dir: "/srv/bench/third_party/Agent-SafetyBench",
      asb_dir: "/srv/bench/third_party/ASB",
      asb_python: "/srv/bench/third_party/ASB/.venv/bin/python",
      runs_dir: "/srv/bench/runs"
    })
    expect(s.scoring).toEqual({ shieldagent_model: null, concurrency: 32 })
    expect(s.audit).toEqual({ fsync: "group", checkpoint_every: 100, max_open_files: 64, signing_key: null })
  })

  it("treats an empty or null section as all defaults", () => {
    const s = ok(fromYaml("upstreams:\n  - {name: a, base_url: 'https://x/v1'}\nproxy:\npaths: {}\n"))
    expect(s.proxy.port).toBe(8080)
    expect(s.paths.runs_dir).toBe("/srv/bench/runs")
  })

  it("resolves a relative audit_dir and keeps an absolute one", () => {
    expect(ok(decode(minimal({ proxy: { audit_dir: "out/audit" } }))).proxy.audit_dir).toBe("/srv/bench/out/audit")
    expect(ok(decode(minimal({ proxy: { audit_dir: "/var/audit" } }))).proxy.audit_dir).toBe("/var/audit")
    expect(ok(decode(minimal({ proxy: { audit_dir: "../audit" } }))).proxy.audit_dir).toBe("/srv/audit")
  })

  it("requires at least one upstream", () => {
    const msg = "config needs at least one entry under `upstreams`"
    expect(fail(decode({})).message).toBe(`${FILE}: upstreams: ${msg}`)
    expect(fail(decode({ upstreams: [] })).reason).toBe(msg)
    expect(fail(fromYaml("")).reason).toBe(msg)
  })

  it("keeps judge specs whole and checks only their kind", () => {
    const s = ok(decode(minimal({ judges: { small: { kind: "llm_json", model: "m", whatever: [1] } } })))
    expect(s.judges["small"]).toEqual({ kind: "llm_json", model: "m", whatever: [1] })
    const e = fail(decode(minimal({ judges: { small: { model: "m" } } })))
    expect(e.path).toBe("judges.small.kind")
    expect(fail(decode(minimal({ judges: { small: { kind: "" } } }))).path).toBe("judges.small.kind")
    expect(fail(decode(minimal({ judges: { small: "llm_json" } }))).path).toBe("judges.small")
  })

  it("checks simple value types with precise paths", () => {
    expect(fail(decode(minimal({ proxy: { port: 70000 } }))).message).toBe(`${FILE}: proxy.port: must be at most 65535, got 70000`)
    expect(fail(decode(minimal({ proxy: { port: 80.5 } }))).path).toBe("proxy.port")
    expect(fail(decode(minimal({ proxy: { fail_policy: "maybe" } }))).reason).toContain("closed, open")
    expect(fail(decode(minimal({ proxy: { max_concurrent_judges: 0 } }))).path).toBe("proxy.max_concurrent_judges")
    expect(fail(decode({ upstreams: [{ name: "a", base_url: "ftp://x" }] })).path).toBe("upstreams[0].base_url")
    expect(fail(decode({ upstreams: [{ name: "a", base_url: "not a url" }] })).path).toBe("upstreams[0].base_url")
    expect(fail(decode({ upstreams: [{ base_url: "http://x" }] })).message).toBe(`${FILE}: upstreams[0].name: is required`)
    expect(fail(decode(minimal({ aliases: { a: 1 } }))).path).toBe("aliases.a")
    expect(fail(decode(minimal({ model_defaults: { "qwen3.8-27b": 1 } }))).path).toBe("model_defaults[\"qwen3.8-27b\"]")
    expect(fail(decode(minimal({ scoring: { concurrency: -1 } }))).path).toBe("scoring.concurrency")
    expect(ok(decode(minimal({ audit: { max_open_files: 1 } }))).audit.max_open_files).toBe(1)
    expect(fail(decode(minimal({ audit: { max_open_files: 0 } }))).path).toBe("audit.max_open_files")
    expect(fail(decode(minimal({ audit: { max_open_files: 2.5 } }))).path).toBe("audit.max_open_files")
    expect(fail(decode([1, 2])).reason).toMatch(/expected a mapping/)
  })

  it("rejects duplicate upstream names", () => {
    const e = fail(decode({
      upstreams: [{ name: "a", base_url: "http://x" }, { name: "b", base_url: "http://y" }, { name: "a", base_url: "http://z" }]
    }))
    expect(e.path).toBe("upstreams[2].name")
    expect(e.reason).toContain("duplicate upstream name \"a\"")
  })
})

describe("decodeSettings: unknown keys", () => {
  const cases: ReadonlyArray<[string, unknown, string]> = [
    ["top level", minimal({ upstream: [] }), "upstream"],
    ["upstreams[i]", { upstreams: [{ name: "a", base_url: "http://x" }, { name: "b", base_url: "http://y", verify: true }] }, "upstreams[1].verify"],
    ["proxy", minimal({ proxy: { prot: 1 } }), "proxy.prot"],
    ["paths", minimal({ paths: { run_dir: "x" } }), "paths.run_dir"],
    ["scoring", minimal({ scoring: { model: "x" } }), "scoring.model"]
  ]
  it.each(cases)("rejects an unknown key at %s", (_level, raw, keyPath) => {
    const e = fail(decode(raw))
    expect(e.path).toBe(keyPath)
    expect(e.reason).toMatch(/^unknown key(; did you mean '[a-z_]+'\?)? \(allowed: /)
  })

  it("suggests the closest allowed key, if one is close", () => {
    expect(fail(decode(minimal({ upstream: [] }))).reason).toMatch(/^unknown key; did you mean 'upstreams'\? \(allowed: /)
    expect(fail(decode(minimal({ proxy: { prot: 1 } }))).message).toMatch(/^test\.yaml: proxy\.prot: unknown key; did you mean 'port'\? \(allowed: host, port, /)
    expect(fail(decode(minimal({ proxy: { fail_polcy: "open" } }))).reason).toMatch(/^unknown key; did you mean 'fail_policy'\? /)
    expect(fail(decode(minimal({ audit: { zzz: 1 } }))).reason).toMatch(/^unknown key \(allowed: fsync, /)
  })

  it("lists the allowed keys", () => {
    expect(fail(decode(minimal({ proxy: { prot: 1 } }))).reason).toContain("host, port, audit_dir")
  })
})

describe("env expansion", () => {
  it("expands ${VAR} and ${VAR:-default} in values, not keys, recursively", () => {
    const raw = { "${K}": "${A}", list: ["x-${B:-dflt}-y", { deep: "${C:-}" }], n: 1, plain: "$A and $" + "{not valid}" }
    const r = expandEnv(raw, { file: FILE, env: { A: "alpha", K: "key" } })
    expect(Either.getOrThrow(r).value).toEqual({
      "${K}": "alpha",
      list: ["x-dflt-y", { deep: "" }],
      n: 1,
      plain: "$A and ${not valid}"
    })
    expect([...Either.getOrThrow(r).expanded].sort()).toEqual(["[\"${K}\"]", "list[0]", "list[1].deep"])
  })

  it("uses a set-but-empty variable rather than the default", () => {
    expect(Either.getOrThrow(expandEnv("${A:-d}", { file: FILE, env: { A: "" } })).value).toBe("")
  })

  it("fails on an unset ${VAR} naming the key path", () => {
    const e = fail(decode({ upstreams: [{ name: "a", base_url: "http://x" }, { name: "b", base_url: "${SMALL_URL}" }] }))
    expect(e.message).toBe(`${FILE}: upstreams[1].base_url: environment variable SMALL_URL is not set`)
  })

  it("expands settings values from the given env", () => {
    const s = ok(decode(
      { upstreams: [{ name: "a", base_url: "${URL:-http://fallback/v1}", api_key: "${KEY}" }] },
      { KEY: "sekret" }
    ))
    expect(s.upstreams[0]?.base_url).toBe("http://fallback/v1")
    expect(Redacted.value(s.upstreams[0]!.api_key)).toBe("sekret")
    expect(String(s.upstreams[0]!.api_key)).not.toContain("sekret")
  })

  it("coerces booleans and numbers only when they came from an expansion", () => {
    const s = ok(decode(
      minimal({ proxy: { judge_cache: "${CACHE}", port: "${PORT:-9090}", judge_timeout_s: "${T}" } }),
      { CACHE: "false", T: "2.5" }
    ))
    expect(s.proxy.judge_cache).toBe(false)
    expect(s.proxy.port).toBe(9090)
    expect(s.proxy.judge_timeout_s).toBe(2.5)

    const literal = fail(decode(minimal({ proxy: { judge_cache: "false" } })))
    expect(literal.path).toBe("proxy.judge_cache")
    expect(literal.reason).toContain("expected true or false")
    expect(fail(decode(minimal({ proxy: { port: "9090" } }))).path).toBe("proxy.port")
    expect(fail(decode(minimal({ proxy: { port: "${P}" } }), { P: "eighty" })).path).toBe("proxy.port")
    expect(fail(decode(minimal({ proxy: { judge_cache: "${C}" } }), { C: "yes" })).path).toBe("proxy.judge_cache")
  })
})

describe("verify_tls", () => {
  const withTls = (verify_tls: unknown) => ({
    upstreams: [{ name: "a", base_url: "http://x" }, { name: "b", base_url: "https://y", verify_tls }]
  })

  it("accepts booleans", () => {
    expect(ok(decode(withTls(false))).upstreams[1]?.verify_tls).toBe(false)
    expect(ok(decode(withTls(true))).upstreams[1]?.verify_tls).toBe(true)
  })

  it("rejects other types", () => {
    for (const bad of [1, ["a"], { a: 1 }, ""]) {
      expect(fail(decode(withTls(bad))).message).toBe(`${FILE}: upstreams[1].verify_tls: expected boolean or path`)
    }
  })

  it("resolves a CA bundle path against the root and requires it to exist", () => {
    writeFile("tlsroot/certs/ca.crt", "-----BEGIN CERTIFICATE-----\n")
    const root = path.join(tmp, "tlsroot")
    expect(ok(decode(withTls("certs/ca.crt"), {}, root)).upstreams[1]?.verify_tls).toBe(path.join(root, "certs/ca.crt"))
    expect(ok(decode(withTls(path.join(root, "certs/ca.crt")), {}, "/elsewhere")).upstreams[1]?.verify_tls)
      .toBe(path.join(root, "certs/ca.crt"))
    const e = fail(decode(withTls("certs/missing.crt"), {}, root))
    expect(e.message).toBe(`${FILE}: upstreams[1].verify_tls: CA bundle not found: ${path.join(root, "certs/missing.crt")}`)
  })

  it("reads an expanded \"true\"/\"false\" as a boolean and an expanded path as a path", () => {
    writeFile("tlsroot2/ca.crt", "x")
    const root = path.join(tmp, "tlsroot2")
    expect(ok(decode(withTls("${TLS}"), { TLS: "false" }, root)).upstreams[1]?.verify_tls).toBe(false)
    expect(ok(decode(withTls("${CA:-ca.crt}"), {}, root)).upstreams[1]?.verify_tls).toBe(path.join(root, "ca.crt"))
  })
})

describe("refusal_template", () => {
  it("accepts the placeholders and escaped braces", () => {
    const t = "{{literal}} {tool_name} / {category} / {reason} }}"
    expect(ok(decode(minimal({ proxy: { refusal_template: t } }))).proxy.refusal_template).toBe(t)
  })

  it("names an unknown placeholder", () => {
    const e = fail(decode(minimal({ proxy: { refusal_template: "blocked {tool} because {reason}" } })))
    expect(e.path).toBe("proxy.refusal_template")
    expect(e.reason).toContain("unknown placeholder {tool}")
  })

  it("rejects unbalanced braces", () => {
    expect(fail(decode(minimal({ proxy: { refusal_template: "oops {reason" } }))).reason).toContain("unclosed '{'")
    expect(fail(decode(minimal({ proxy: { refusal_template: "oops } {reason}" } }))).reason).toContain("single '}'")
  })
})

describe("repo root", () => {
  it("is the parent of a configs/ directory, else the file's directory", () => {
    expect(repoRootFor("/a/b/configs/vetobench.yaml")).toBe("/a/b")
    expect(repoRootFor("/a/b/settings/vetobench.yaml")).toBe("/a/b/settings")
    expect(repoRootFor("/a/b/vetobench.yaml")).toBe("/a/b")
  })

  it("is used by loadSettings to resolve relative paths", async () => {
    const body = "upstreams:\n  - {name: a, base_url: 'http://x/v1'}\nproxy: {audit_dir: audit}\n"
    const inConfigs = await Effect.runPromise(loadSettings(writeFile("repo1/configs/v.yaml", body), {}))
    expect(inConfigs.root).toBe(path.join(tmp, "repo1"))
    expect(inConfigs.proxy.audit_dir).toBe(path.join(tmp, "repo1/audit"))
    const elsewhere = await Effect.runPromise(loadSettings(writeFile("repo2/conf/v.yaml", body), {}))
    expect(elsewhere.root).toBe(path.join(tmp, "repo2/conf"))
    expect(elsewhere.paths.runs_dir).toBe(path.join(tmp, "repo2/conf/runs"))
    expect(resolveFromRoot(elsewhere, "x/y")).toBe(path.join(tmp, "repo2/conf/x/y"))
  })
})

describe("loadSettings: file errors", () => {
  const loadError = async (file: string) => {
    const r = await Effect.runPromise(Effect.either(loadSettings(file, {})))
    return fail(r)
  }

  it("reports a missing file and suggests the example", async () => {
    const file = path.join(tmp, "nope/configs/vetobench.yaml")
    const e = await loadError(file)
    expect(e.file).toBe(file)
    expect(e.reason).toMatch(/^settings file not found/)
    expect(e.reason).toContain("configs/vetobench.example.yaml")
  })

  it("reports YAML syntax errors with file and line", async () => {
    const file = writeFile("bad/v.yaml", "upstreams:\n  - name: a\n    base_url: [http://x\n")
    const e = await loadError(file)
    expect(e.file).toBe(file)
    expect(e.message).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}: YAML syntax error: .* at line \\d+, column \\d+$`))
    const dup = await loadError(writeFile("bad/dup.yaml", "proxy: {}\nproxy: {}\n"))
    expect(dup.reason).toContain("line 2")
  })

  it("reports decoding errors with the file name", async () => {
    const file = writeFile("bad2/v.yaml", "upstreams: []\n")
    const e = await loadError(file)
    expect(e.message).toBe(`${file}: upstreams: config needs at least one entry under \`upstreams\``)
  })
})

describe("configs/vetobench.example.yaml", () => {
  const load = (env: Record<string, string | undefined> = {}) => Effect.runPromise(loadSettings(EXAMPLE, env))

  it("loads with an empty environment", async () => {
    const s = await load()
    expect(s.root).toBe(REPO)
    expect(s.upstreams.map((u) => [u.name, u.base_url, Redacted.value(u.api_key), u.timeout_s])).toEqual([
      ["agent", "https://agent.apps.example.com/v1", "EMPTY", 900],
      ["small", "https://small.apps.example.com/v1", "EMPTY", 120]
    ])
    expect(s.upstreams[1]?.models).toContain("shieldagent")
    expect(Object.keys(s.judges)).toEqual(["small", "granite", "llamaguard", "ap-rules", "banking-rules", "allow-all", "deny-all"])
    expect(s.judges["small"]).toEqual({ kind: "llm_json", model: "judge-small", prompt: "call_only_v1", max_tokens: 256, guided_json: true })
    expect(s.judges["granite"]).toMatchObject({ kind: "guard", model: "granite-guardian", unsafe_pattern: "(^\\s*yes\\b|<score>\\s*yes)" })
    expect(s.judges["llamaguard"]).toMatchObject({ kind: "guard", unsafe_pattern: "^\\s*unsafe", category_pattern: "S\\d+" })
    expect(s.judges["allow-all"]).toEqual({ kind: "static", decision: "allow" })
    expect(s.judges["deny-all"]).toEqual({ kind: "static", decision: "deny" })
    expect(s.aliases).toEqual({ "gpt-4o-mini": "judge-small" })
    expect(s.model_defaults["qwen3.8-27b"]).toEqual({ chat_template_kwargs: { enable_thinking: false } })
    expect(s.model_defaults["judge-small"]).toEqual({ chat_template_kwargs: { enable_thinking: false } })
    expect(s.scoring.shieldagent_model).toBe("shieldagent")
    expect(s.paths.asb_python).toBe(path.join(REPO, "third_party/ASB/.venv/bin/python"))
  })

  it("takes URLs and the key from the environment", async () => {
    const s = await load({ VETOBENCH_AGENT_URL: "http://10.0.0.1:8000/v1/", VETOBENCH_API_KEY: "k" })
    expect(s.upstreams[0]?.base_url).toBe("http://10.0.0.1:8000/v1")
    expect(Redacted.value(s.upstreams[1]!.api_key)).toBe("k")
  })

  it("documents the proxy defaults correctly in its commented section", () => {
    const text = fs.readFileSync(EXAMPLE, "utf8")
    const uncommented = text.replace(/^# (proxy:\n(?:#  .*\n)+)/m, (_m, block: string) => block.replace(/^# ?/gm, ""))
    expect(uncommented).not.toBe(text)
    const s = ok(fromYaml(uncommented, {}, REPO))
    expect(s.proxy).toEqual(defaultSettings(REPO).proxy)
    expect(Object.keys(s.proxy).length).toBe(19)
    for (const key of Object.keys(s.proxy)) expect(uncommented).toMatch(new RegExp(`^  ${key}: `, "m"))
  })

  it("names every audit key in its commented section, with the defaults that have one", () => {
    const text = fs.readFileSync(EXAMPLE, "utf8")
    const block = /^# audit:\n((?:#   .*\n)+)/m.exec(text)?.[1] ?? ""
    const keys = [...block.matchAll(/^# {3}(\w+): (\S+)/gm)].map((m) => [m[1]!, m[2]!] as const)
    expect(keys.map(([k]) => k)).toEqual(Object.keys(defaultAuditSettings))
    expect(Object.fromEntries(keys.filter(([k]) => k !== "signing_key"))).toEqual({
      fsync: defaultAuditSettings.fsync,
      checkpoint_every: String(defaultAuditSettings.checkpoint_every),
      max_open_files: String(defaultAuditSettings.max_open_files)
    })
  })
})

describe("defaultSettings", () => {
  it("builds the built-in settings with the given upstreams", () => {
    const upstream = makeUpstreamSettings({ name: "fake", base_url: "http://127.0.0.1:9999/v1/" })
    const s = defaultSettings("/demo", { upstreams: [upstream], proxy: { port: 0, audit_dir: "audit" } })
    expect(s.file).toBe("(built-in)")
    expect(s.root).toBe("/demo")
    expect(s.upstreams[0]).toMatchObject({ name: "fake", base_url: "http://127.0.0.1:9999/v1", timeout_s: 600, verify_tls: true })
    expect(s.proxy.port).toBe(0)
    expect(s.proxy.audit_dir).toBe("/demo/audit")
    expect(s.proxy.fail_policy).toBe("closed")
    expect(Object.keys(s.judges)).toEqual(["allow-all", "deny-all"])
    expect(defaultSettings("/demo").upstreams).toEqual([])
  })
})
