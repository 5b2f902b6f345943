/**
 * The view server over HTTP (in process, on a copy of the fixture): pages render with every hostile
 * value escaped, path parameters cannot leave the runs directory (.., absolute, symlinks), bad
 * parameters are 400s naming the parameter, a foreign Host is refused, every page carries the
 * Content-Security-Policy, and the decide endpoint refuses cross-site posts and posts without the
 * form token.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { copyFixture, startView, type Started } from "./support.js"

let root: string
let view: Started
let withProxy: Started

beforeAll(async () => {
  root = copyFixture()
  const secret = path.join(path.dirname(root), "secret")
  fs.mkdirSync(path.join(secret, "asbench", "m", "baseline"), { recursive: true })
  fs.writeFileSync(path.join(secret, "report.html"), "SECRET")
  fs.symlinkSync(secret, path.join(root, "escape"))
  fs.rmSync(path.join(root, "fx", "report.md"))
  fs.symlinkSync(path.join(secret, "report.html"), path.join(root, "fx", "report.md")) // the report file itself points outside
  view = await startView(root)
  // a proxy that is not there: enough for the decide endpoint's checks, which come first
  withProxy = await startView(root, { base: "http://127.0.0.1:9", token: Redacted.make("t0ken-never-shown") })
}, 100_000)
afterAll(async () => {
  await view?.close()
  await withProxy?.close()
  fs.rmSync(path.dirname(root), { recursive: true, force: true })
})

const get = async (u: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${view.url}${u}`, { headers })
  return { status: res.status, text: await res.text(), headers: res.headers }
}

/** No markup from the data: the fixture's hostile values try a <script>, an <img onerror> and a `window.__pwned` assignment. */
const expectInert = (text: string) => {
  expect(text).not.toMatch(/<script>window\.__pwned/)
  expect(text).not.toMatch(/<img/i)
  expect(text).not.toMatch(/<b>bold<\/b>/)
  expect([...text.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual(['<script src="/view.js">'])
}

describe("pages", () => {
  it("the list, episodes and an episode render; hostile ids, arguments, messages and reasons are escaped", async () => {
    const list = await get("/")
    expect(list.status).toBe(200)
    expect(list.text).toContain('data-experiment="fx"')
    expect(list.headers.get("content-security-policy")).toMatch(/default-src 'none'.*script-src 'self'/)
    expect(list.headers.get("x-content-type-options")).toBe("nosniff")
    expectInert(list.text)

    const asb = await get("/episodes?e=fx&bench=asb&model=agent-x")
    expect(asb.status).toBe(200)
    expect(asb.text).toContain("asb:&quot;&gt;&lt;script&gt;window.__pwned=6&lt;/script&gt;:tool:0")
    expectInert(asb.text)

    const one = await get(`/episode?e=fx&bench=asbench&model=agent-x&variant=enforce-rules&id=${encodeURIComponent("asbench:4")}`)
    expect(one.status).toBe(200)
    expect(one.text).toContain("&quot;&gt;&lt;img src=x onerror=")
    expect(one.text).toContain("&lt;b&gt;bold&lt;/b&gt; reason")
    expectInert(one.text)

    const hostileId = await get(`/episode?e=fx&bench=asb&model=agent-x&variant=baseline&session=clean&id=${encodeURIComponent('asb:"><script>window.__pwned=6</script>:tool:0')}`)
    expect(hostileId.status).toBe(200)
    expectInert(hostileId.text)
  })

  it("an unknown episode id is 404 and the id comes back escaped", async () => {
    const r = await get(`/episode?e=fx&bench=asbench&model=agent-x&variant=baseline&id=${encodeURIComponent("<script>x</script>")}`)
    expect(r.status).toBe(404)
    expect(r.text).toContain("&lt;script&gt;x&lt;/script&gt;")
    expectInert(r.text)
  })

  it("the report is served as written, under a policy without scripts", async () => {
    const r = await get("/report?e=fx&f=html")
    expect(r.status).toBe(200)
    expect(r.text).toContain("fixture report")
    expect(r.headers.get("content-security-policy")).toContain("default-src 'none'")
    expect(r.headers.get("content-security-policy")).not.toContain("script-src")
    expect(r.headers.get("content-security-policy")).toMatch(/; sandbox$/) // an origin of its own: no reach into the view's pages
    expect((await get("/report?e=fx&f=json")).headers.get("content-type")).toContain("application/json")
  })
})

describe("path parameters stay inside the runs directory", () => {
  it("e: .., absolute paths and a symlink out are 400; a name that is not there is 404", async () => {
    for (const e of ["..", "../secret", "fx/../..", "/etc", "/", "C:/Windows", "fx/..", "escape", "escape/asbench"]) {
      const r = await get(`/report?e=${encodeURIComponent(e)}&f=html`, { accept: "application/json" })
      expect(r.status, e).toBe(400)
      expect(JSON.parse(r.text).error.message, e).toMatch(/^e: /)
      expect(r.text).not.toContain("SECRET")
    }
    expect((await get("/report?e=nope&f=html")).status).toBe(404)
    expect((await get("/episodes?e=escape&bench=asbench&model=m")).status).toBe(400)
  })

  it("a report file that is a symlink out of the runs directory is refused", async () => {
    const r = await get("/report?e=fx&f=md")
    expect(r.status).toBe(400)
    expect(r.text).not.toContain("SECRET")
  })

  it("bench, model, variant, page and the like: 400 naming the parameter", async () => {
    const cases: Array<[string, RegExp]> = [
      ["/episodes?e=fx&bench=../asbench&model=agent-x", /^bench: /],
      ["/episodes?e=fx&bench=nope&model=agent-x", /^bench: one of asbench, asb/],
      ["/episodes?e=fx&bench=asbench&model=..", /^model: /],
      ["/episodes?e=fx&bench=asbench&model=agent-x&variant=..%2Fx", /^variant: /],
      ["/episodes?e=fx&bench=asbench&model=agent-x&page=abc", /^page: /],
      ["/episodes?e=fx&bench=asbench&model=agent-x&changed=yes", /^changed: /],
      ["/episodes?bench=asbench&model=agent-x", /^e: missing/],
      ["/report?e=fx&f=../../secret", /^f: /],
      ["/episode?e=fx&bench=asbench&model=agent-x&variant=baseline", /^id: missing/]
    ]
    for (const [u, message] of cases) {
      const r = await get(u, { accept: "application/json" })
      expect(r.status, u).toBe(400)
      expect(JSON.parse(r.text).error.message, u).toMatch(message)
    }
    expect((await get("/episodes?e=fx&bench=asbench&model=nobody")).status).toBe(404)
    expect((await get("/no/such/page")).status).toBe(404)
  })
})

describe("requests from elsewhere", () => {
  it("a Host that is not this loopback address is refused (DNS rebinding)", async () => {
    const port = Number(new URL(view.url).port)
    // fetch does not let a caller set Host: node:http does
    const withHost = (host: string) =>
      new Promise<number>((resolve, reject) => {
        http.get({ host: "127.0.0.1", port, path: "/", headers: { host } }, (res) => {
          res.resume()
          resolve(res.statusCode ?? 0)
        }).on("error", reject)
      })
    expect(await withHost(`evil.example:${port}`)).toBe(403)
    expect(await withHost(`127.0.0.1.evil.example:${port}`)).toBe(403)
    expect(await withHost(`localhost:${port}`)).toBe(200)
  })

  const decide = (headers: Record<string, string>, body: string) =>
    fetch(`${withProxy.url}/holds/decide`, { method: "POST", headers: { accept: "application/json", "content-type": "application/x-www-form-urlencoded", ...headers }, body })

  it("decide: refused cross-site (another Origin, no Origin or Referer) and without the form token", async () => {
    const form = `id=${"a".repeat(64)}&decision=approve&approver=mallory`
    const foreign = await decide({ origin: "http://evil.example" }, `${form}&csrf=x`)
    expect(foreign.status).toBe(403)
    expect(((await foreign.json()) as { error: { message: string } }).error.message).toContain("cross-site")
    expect((await decide({}, `${form}&csrf=x`)).status).toBe(403)
    const noToken = await decide({ origin: withProxy.url }, form)
    expect(noToken.status).toBe(403)
    expect(((await noToken.json()) as { error: { message: string } }).error.message).toContain("form token")
    const holds = await (await fetch(`${withProxy.url}/holds`)).text()
    expect(holds).not.toContain("t0ken-never-shown") // the page names the proxy, never its token
    expect(holds).toContain("did not answer")
  })

  it("decide without --proxy is 404", async () => {
    const r = await fetch(`${view.url}/holds/decide`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", origin: view.url }, body: "x=1" })
    expect(r.status).toBe(404)
  })
})

describe("deciding a hold without JavaScript (a plain form post)", () => {
  const ID = "ef".repeat(32)
  let proxy: http.Server
  let viewOfProxy: Started
  const decisions: Array<{ auth: string | undefined; url: string; body: unknown }> = []
  let pending = true

  beforeAll(async () => {
    proxy = http.createServer((req, res) => {
      let body = ""
      req.on("data", (c: Buffer) => (body += c.toString()))
      req.on("end", () => {
        res.setHeader("content-type", "application/json")
        if (req.method === "GET") {
          const hold = { id: ID, seq: 3, created: "2026-01-01T00:00:00Z", expires: "2999-01-01T00:00:00Z", run_id: "r", request_id: "q", episode_id: "e", session_id: null, principal: null, agent_model: "m", tool_call_id: "c", tool: { name: "delete_file", arguments: { path: "/x" } }, verdict: null }
          return res.end(JSON.stringify({ object: "list", data: pending ? [hold] : [] }))
        }
        decisions.push({ auth: req.headers.authorization, url: req.url ?? "", body: JSON.parse(body) })
        pending = false
        res.end(JSON.stringify({ id: ID, outcome: "approved", approver: "x" }))
      })
    })
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()))
    viewOfProxy = await startView(root, { base: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`, token: Redacted.make("tok-A") })
  }, 100_000)
  afterAll(async () => {
    await viewOfProxy?.close()
    await new Promise<void>((r) => proxy.close(() => r()))
  })

  it("the form's token and this origin: 303 back to /holds, the proxy got the bearer token and the decision, the page lists it escaped", async () => {
    const page = await (await fetch(`${viewOfProxy.url}/holds`)).text()
    const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(page)?.[1]
    expect(csrf).toBeDefined()
    const form = new URLSearchParams({ id: ID, csrf: csrf!, approver: "<b>carol</b>", note: "fine\"><script>", decision: "approve" })
    const res = await fetch(`${viewOfProxy.url}/holds/decide`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", origin: viewOfProxy.url }, body: form })
    expect(res.status).toBe(303)
    expect(res.headers.get("location")).toBe("/holds")
    expect(decisions).toEqual([{ auth: "Bearer tok-A", url: `/v1/holds/${ID}`, body: { approved: true, approver: "<b>carol</b>", note: 'fine"><script>' } }])
    const after = await (await fetch(`${viewOfProxy.url}/holds`)).text()
    expect(after).toContain("&lt;b&gt;carol&lt;/b&gt;")
    expect(after).toContain("fine&quot;&gt;&lt;script&gt;")
    expect(after).not.toContain("<b>carol")
    expect(after).toContain('id="no-pending"')
  })

  it("bad fields are 400s naming the field, before anything is sent to the proxy", async () => {
    pending = true
    const page = await (await fetch(`${viewOfProxy.url}/holds`)).text()
    const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(page)?.[1] ?? ""
    const before = decisions.length
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ id: "../x", decision: "approve", approver: "a" }, /^id: /],
      [{ id: ID, decision: "maybe", approver: "a" }, /^decision: /],
      [{ id: ID, decision: "approve", approver: "   " }, /^approver: /],
      [{ id: ID, decision: "approve", approver: "a".repeat(201) }, /^approver: /],
      [{ id: ID, decision: "approve", approver: "a", note: "n".repeat(2001) }, /^note: /]
    ]
    for (const [fields, message] of cases) {
      const res = await fetch(`${viewOfProxy.url}/holds/decide`, {
        method: "POST",
        headers: { accept: "application/json", "content-type": "application/x-www-form-urlencoded", origin: viewOfProxy.url },
        body: new URLSearchParams({ csrf, ...fields })
      })
      expect(res.status, JSON.stringify(fields).slice(0, 80)).toBe(400)
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(message)
    }
    expect(decisions.length).toBe(before)
  })
})
