/** `mcp:` of the settings file: stdio and HTTP servers, defaults, secrets redacted, errors naming the key. */
import { describe, expect, it } from "vitest"
import { Either, Redacted } from "effect"
import { decodeSettings } from "../../src/config/settings.js"

const UPSTREAMS = [{ name: "u", base_url: "http://127.0.0.1:9/v1" }]
const decode = (mcp: unknown, env: Record<string, string> = {}) => decodeSettings({ upstreams: UPSTREAMS, mcp }, { file: "t.yaml", root: "/repo", env })

describe("mcp settings", () => {
  it("absent: no servers, a 60 s call deadline", () => {
    const s = Either.getOrThrow(decodeSettings({ upstreams: UPSTREAMS }, { file: "t.yaml", root: "/repo", env: {} }))
    expect(s.mcp).toEqual({ servers: {}, call_timeout_s: 60, max_sessions: 64, session_idle_timeout_s: 900 })
  })

  it("a command (stdio) and a URL (Streamable HTTP), secrets from ${VAR} and redacted", () => {
    const s = Either.getOrThrow(
      decode(
        {
          call_timeout_s: 5,
          servers: {
            files: { command: "npx", args: ["-y", "server-fs"], env: { TOKEN: "${FS_TOKEN}" } },
            search: { url: "https://s.example/mcp", headers: { authorization: "Bearer ${S_TOKEN}" } }
          }
        },
        { FS_TOKEN: "fs-secret", S_TOKEN: "s-secret" }
      )
    )
    expect(s.mcp.call_timeout_s).toBe(5)
    const files = s.mcp.servers.files!
    const search = s.mcp.servers.search!
    expect(files).toMatchObject({ kind: "stdio", command: "npx", args: ["-y", "server-fs"], cwd: "/repo" })
    expect(search).toMatchObject({ kind: "http", url: "https://s.example/mcp" })
    if (files.kind !== "stdio" || search.kind !== "http") throw new Error("wrong kinds")
    expect(Redacted.value(files.env.TOKEN!)).toBe("fs-secret")
    expect(Redacted.value(search.headers.authorization!)).toBe("Bearer s-secret")
    const shown = JSON.stringify(s.mcp) + String(files.env.TOKEN) + String(search.headers.authorization)
    expect(shown).not.toContain("fs-secret")
    expect(shown).not.toContain("s-secret")
  })

  it("errors name the key and what was wrong", () => {
    const problem = (mcp: unknown) => Either.match(decode(mcp), { onLeft: (e) => e.message, onRight: () => "decoded" })
    expect(problem({ servers: { x: { command: "a", url: "http://h/mcp" } } })).toContain("mcp.servers.x: give either `command`")
    expect(problem({ servers: { x: {} } })).toContain("give either `command`")
    expect(problem({ servers: { x: { url: "ftp://h" } } })).toContain("mcp.servers.x.url: expected an http(s) URL")
    expect(problem({ servers: { "a/b": { command: "a" } } })).toContain("a server name is letters")
    expect(problem({ servers: { x: { command: "a", argz: [] } } })).toContain("did you mean 'args'")
    expect(problem({ call_timeout_s: 0 })).toContain("mcp.call_timeout_s: must be greater than 0")
    expect(problem({ max_sessions: 0 })).toContain("mcp.max_sessions")
    expect(problem({ max_sessions: 2.5 })).toContain("mcp.max_sessions")
    expect(problem({ session_idle_timeout_s: -1 })).toContain("mcp.session_idle_timeout_s")
    expect(problem({ servers: { x: { command: "a", env: { K: 1 } } } })).toContain("mcp.servers.x.env.K: expected a string")
  })
})
