/**
 * The hold client against a hostile peer (not JSON, too large, foreign ids, refusals), the `--proxy`
 * URL rules, what the view remembers of decided holds, and audit logs followed as they grow.
 */
import { Effect, Either, Redacted } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { PendingHold } from "../../src/gate/Holds.js"
import { AuditTails, decideHold, HoldBook, listHolds, localAuditFile, proxyBase } from "../../src/view/holds.js"

const ID = "ab".repeat(32)
const hold = (id: string, extra: Record<string, unknown> = {}) => ({ id, seq: 1, created: "", expires: "", run_id: "r", request_id: "q", episode_id: "e", session_id: null, principal: null, agent_model: "m", tool_call_id: null, tool: { name: "t", arguments: {} }, verdict: null, ...extra })

let answer: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_q, res) => res.end()
const seen: Array<{ url: string; auth: string | undefined; body: string }> = []
let base = ""
const server = http.createServer((req, res) => {
  let body = ""
  req.on("data", (c: Buffer) => (body += c.toString()))
  req.on("end", () => {
    seen.push({ url: req.url ?? "", auth: req.headers.authorization, body })
    answer(req, res)
  })
})
beforeAll(() => new Promise<void>((r) => server.listen(0, "127.0.0.1", () => {
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  r()
})))
afterAll(() => new Promise<void>((r) => server.close(() => r())))

const target = () => ({ base, token: Redacted.make("s3cret") })
const run = <A, E>(e: Effect.Effect<A, E>) => Effect.runPromise(Effect.either(e))

describe("the hold client", () => {
  it("lists holds with the bearer token; holds without a valid id or tool are left out", async () => {
    answer = (_q, res) => res.end(JSON.stringify({ object: "list", data: [hold(ID), hold("../../etc"), hold("cd".repeat(32), { tool: "x" }), "junk"] }))
    const r = await run(listHolds(target()))
    expect(Either.isRight(r) && r.right.map((h) => h.id)).toEqual([ID])
    expect(seen.at(-1)).toMatchObject({ url: "/v1/holds", auth: "Bearer s3cret" })
  })

  it("not JSON, an error status, a too large answer: typed errors that never carry the token", async () => {
    const cases: Array<[(q: http.IncomingMessage, res: http.ServerResponse) => void, RegExp]> = [
      [(_q, res) => res.end("<html>proxy down</html>"), /the proxy refused: HTTP 200/],
      [(_q, res) => res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "operator credential required" } })), /operator credential required/],
      [(_q, res) => res.writeHead(200, { "content-length": String(17 * 1024 * 1024) }).end(), /larger than/],
      [(_q, res) => {
        res.writeHead(200)
        const chunk = "x".repeat(1024 * 1024)
        for (let i = 0; i < 17; i++) res.write(chunk)
        res.end()
      }, /larger than/]
    ]
    for (const [a, message] of cases) {
      answer = a
      const r = await run(listHolds(target()))
      expect(Either.isLeft(r)).toBe(true)
      if (Either.isLeft(r)) {
        expect(r.left.message).toMatch(message)
        expect(r.left.message).not.toContain("s3cret")
      }
    }
    const down = await run(listHolds({ base: "http://127.0.0.1:9", token: Redacted.make("s3cret") }))
    expect(Either.isLeft(down) && down.left.message).toMatch(/did not answer/)
  })

  it("decides with {approved, approver, note}; an id that is not a hold id is never sent", async () => {
    answer = (_q, res) => res.end(JSON.stringify({ id: ID, outcome: "rejected", approver: "bob" }))
    expect(await run(decideHold(target(), ID, false, "bob", "no"))).toEqual(Either.right("rejected"))
    expect(seen.at(-1)).toMatchObject({ url: `/v1/holds/${ID}` })
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ approved: false, approver: "bob", note: "no" })
    const before = seen.length
    const bad = await run(decideHold(target(), "../admin", true, "bob", null))
    expect(Either.isLeft(bad)).toBe(true)
    expect(seen.length).toBe(before)
  })
})

describe("--proxy", () => {
  it("takes the proxy's URL with or without /v1; refuses credentials, other schemes, queries", () => {
    expect(proxyBase("http://127.0.0.1:8080/v1")).toEqual({ base: "http://127.0.0.1:8080" })
    expect(proxyBase("https://gate.example/veto/v1/")).toEqual({ base: "https://gate.example/veto" })
    expect(proxyBase("http://127.0.0.1:8080")).toEqual({ base: "http://127.0.0.1:8080" })
    for (const bad of ["http://u:p@h:1", "file:///etc", "ftp://h", "nope", "http://h/?token=x"]) {
      const r = proxyBase(bad)
      expect("problem" in r, bad).toBe(true)
      if ("problem" in r) expect(r.problem).not.toMatch(/u:p|token=x/)
    }
  })
})

describe("decided holds", () => {
  it("a decision through the view is kept with its approver; a hold that leaves the list otherwise is 'no longer pending'", () => {
    const book = new HoldBook()
    const a = hold("a".repeat(64)) as unknown as PendingHold
    const b = hold("b".repeat(64)) as unknown as PendingHold
    book.observe([a, b], new Date(0))
    book.record(a.id, "approved", "alice", "ok", new Date(1))
    book.observe([], new Date(2))
    expect(book.list().map((d) => [d.hold.id[0], d.outcome, d.approver, d.via])).toEqual([["b", "no longer pending", null, "elsewhere"], ["a", "approved", "alice", "view"]])
  })
})

describe("audit logs followed as they grow", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-view-tails-"))
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))
  const rec = (seq: number, episode: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ type: "call", seq, hash: `h${seq}`, arm: "enforce", episode_id: episode, session_id: null, tool: { name: `t${seq}`, arguments: {} }, ...extra }) + "\n"

  it("reads only what was appended; a line still being written waits; approvals by the call's hash; a shorter file is read again", async () => {
    const file = path.join(dir, "run-1.jsonl")
    fs.writeFileSync(file, rec(1, "ep") + rec(2, "other"))
    const tails = new AuditTails()
    const names = async () => (await Effect.runPromise(tails.episodeCalls(file, "ep", null))).map((r) => r.tool.name)
    expect(await names()).toEqual(["t1"])
    const third = rec(3, "ep")
    fs.appendFileSync(file, third.slice(0, 20))
    expect(await names()).toEqual(["t1"])
    fs.appendFileSync(file, third.slice(20) + JSON.stringify({ type: "approval", ref: { hash: "h3" }, approval: "approved", approver: "alice", note: null }) + "\n")
    expect(await names()).toEqual(["t1", "t3"])
    expect(await Effect.runPromise(tails.approval(file, "h3"))).toEqual({ approval: "approved", approver: "alice", note: null })
    fs.writeFileSync(file, rec(9, "ep"))
    expect(await names()).toEqual(["t9"])
  })

  it("polls at once (two tabs, the page and its refresh): each line is taken once", async () => {
    const file = path.join(dir, "run-2.jsonl")
    fs.writeFileSync(file, rec(1, "ep") + rec(2, "ep") + rec(3, "other"))
    const tails = new AuditTails()
    const all = await Effect.runPromise(Effect.all(Array.from({ length: 8 }, () => tails.episodeCalls(file, "ep", null)), { concurrency: "unbounded" }))
    for (const calls of all) expect(calls.map((r) => r.tool.name)).toEqual(["t1", "t2"])
    fs.appendFileSync(file, rec(4, "ep"))
    await Effect.runPromise(Effect.all(Array.from({ length: 8 }, () => tails.episodeCalls(file, "ep", null)), { concurrency: "unbounded" }))
    expect((await Effect.runPromise(tails.episodeCalls(file, "ep", null))).map((r) => r.tool.name)).toEqual(["t1", "t2", "t4"])
  })

  it("a run id outside the grammar names no file", () => {
    fs.writeFileSync(path.join(dir, "ok-run.jsonl"), "")
    const exists = (f: string) => fs.existsSync(f)
    expect(localAuditFile([dir], "ok-run", exists)).toBe(path.join(dir, "ok-run.jsonl"))
    for (const id of ["../ok-run", "/etc/passwd", "ok-run.jsonl", null]) expect(localAuditFile([dir], id, exists)).toBeNull()
  })
})
