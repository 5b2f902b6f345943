/** The observability keys: `proxy.log_format`, `proxy.metrics`, `proxy.metrics_token` and the `telemetry` section. */
import * as fs from "node:fs"
import * as path from "node:path"
import { Either, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import type { ConfigError } from "../../src/config/errors.js"
import { decodeSettings, defaultSettings, defaultTelemetrySettings, type Settings } from "../../src/config/settings.js"
import { parseYaml } from "../../src/config/yaml-file.js"

const REPO = path.resolve(import.meta.dirname, "../..")
const EXAMPLE = path.join(REPO, "configs/vetobench.example.yaml")

const decode = (extra: Record<string, unknown>, env: Record<string, string | undefined> = {}) =>
  decodeSettings({ upstreams: [{ name: "agent", base_url: "http://localhost:8000/v1" }], ...extra }, { file: "test.yaml", root: "/srv/bench", env })

const ok = (r: Either.Either<Settings, ConfigError>): Settings => {
  if (Either.isLeft(r)) throw new Error(`expected success, got: ${r.left.message}`)
  return r.right
}
const fail = (r: Either.Either<Settings, ConfigError>): ConfigError => {
  if (Either.isRight(r)) throw new Error("expected a ConfigError")
  return r.left
}

describe("observability settings", () => {
  it("defaults: text logs, metrics on without a token, tracing off without propagation", () => {
    const s = ok(decode({}))
    expect(s.proxy).toMatchObject({ log_format: "text", metrics: true, metrics_token: null })
    expect(s.telemetry).toEqual({ otlp_endpoint: null, propagate: false })
    expect(defaultSettings("/srv/bench").telemetry).toEqual(defaultTelemetrySettings)
  })

  it("reads the keys", () => {
    const s = ok(
      decode(
        { proxy: { log_format: "json", metrics: false, metrics_token: "${TOKEN}" }, telemetry: { otlp_endpoint: "http://collector:4318/", propagate: true } },
        { TOKEN: "scrape-me" }
      )
    )
    expect(s.proxy.log_format).toBe("json")
    expect(s.proxy.metrics).toBe(false)
    expect(Redacted.value(s.proxy.metrics_token!)).toBe("scrape-me")
    expect(String(s.proxy.metrics_token)).toBe("<redacted>")
    expect(s.telemetry).toEqual({ otlp_endpoint: "http://collector:4318", propagate: true })
  })

  it("an empty endpoint or token means none (so ${VAR:-} can leave them unset)", () => {
    const s = ok(decode({ proxy: { metrics_token: "${T:-}" }, telemetry: { otlp_endpoint: "${E:-}" } }))
    expect(s.proxy.metrics_token).toBeNull()
    expect(s.telemetry.otlp_endpoint).toBeNull()
  })

  it("rejects a bad value or an unknown key, with its path", () => {
    expect(fail(decode({ proxy: { log_format: "xml" } })).path).toBe("proxy.log_format")
    expect(fail(decode({ proxy: { metrics: "yes please" } })).path).toBe("proxy.metrics")
    expect(fail(decode({ telemetry: { otlp_endpoint: "grpc://collector:4317" } })).path).toBe("telemetry.otlp_endpoint")
    expect(fail(decode({ telemetry: { endpoint: "http://x" } })).path).toBe("telemetry.endpoint")
  })

  it("configs/vetobench.example.yaml documents the telemetry section with its defaults", () => {
    const text = fs.readFileSync(EXAMPLE, "utf8")
    const block = /^# (telemetry:\n(?:#  .*\n)+)/m.exec(text)?.[1]
    expect(block).toBeDefined()
    const raw = Either.getOrThrow(parseYaml(block!.replace(/^# ?/gm, ""), "example"))
    const s = ok(decode(raw as Record<string, unknown>))
    expect(s.telemetry).toEqual(defaultTelemetrySettings)
    for (const key of Object.keys(defaultTelemetrySettings)) expect(block).toMatch(new RegExp(`^#   ${key}: `, "m"))
  })
})
