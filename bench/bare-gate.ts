/**
 * bench/bare-gate — the reference issue 23 measures veto-proxy against: a bare `node:http` gate doing
 * the same work for the chat route and nothing else. It forwards the request with undici, parses the
 * answer (JSON, or the whole event stream), rules every tool call with an allow-all decision, writes
 * one hash-chained record per call (SHA-256 over the previous hash and the record's JSON, appended to
 * a file, fdatasync'd once per batch like a group commit), and returns the answer re-serialized. No
 * arms, no judges, no limits, no error shapes: what a gate costs at the least.
 *
 *   node --import tsx bench/bare-gate.ts --upstream http://127.0.0.1:PORT --audit /tmp/bare.jsonl
 *   → prints "bare gate http://127.0.0.1:PORT"
 */
import { createHash } from "node:crypto"
import { closeSync, fdatasync, openSync, writeSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Pool } from "undici"

const arg = (name: string): string => {
  const i = process.argv.indexOf(`--${name}`)
  const v = i > 0 ? process.argv[i + 1] : undefined
  if (v === undefined) throw new Error(`--${name} is required`)
  return v
}

const upstream = new URL(arg("upstream"))
const pool = new Pool(upstream.origin, { connections: 32 })
const fd = openSync(arg("audit"), "a")
let prev = "0".repeat(64)
let seq = 0
let dirty = false
let syncing = false

/** one hash-chained record per call */
const record = (call: unknown) => {
  const body = JSON.stringify({ seq: ++seq, prev, ts: Date.now(), call, decision: "allow" })
  prev = createHash("sha256").update(prev).update(body).digest("hex")
  writeSync(fd, `${body.slice(0, -1)},"hash":"${prev}"}\n`)
  dirty = true
  if (!syncing) {
    syncing = true
    setImmediate(() =>
      fdatasync(fd, () => {
        syncing = false
        dirty = false
      })
    )
  }
}

type Json = Record<string, unknown>

const callsOf = (answer: Json): Array<unknown> => {
  const out: Array<unknown> = []
  for (const c of (answer.choices as Array<Json> | undefined) ?? []) {
    const m = (c.message ?? c.delta) as Json | undefined
    if (Array.isArray(m?.tool_calls)) out.push(...(m.tool_calls as Array<unknown>))
  }
  return out
}

const server = http.createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    const text = Buffer.concat(chunks).toString("utf8")
    const stream = (JSON.parse(text) as Json).stream === true
    pool
      .request({ method: "POST", path: `${upstream.pathname.replace(/\/$/, "")}/chat/completions`, headers: { "content-type": "application/json" }, body: text })
      .then(async (r) => {
        const answer = await r.body.text()
        if (!stream) {
          const value = JSON.parse(answer) as Json
          for (const call of callsOf(value)) record(call)
          res.writeHead(r.statusCode, { "content-type": "application/json" })
          res.end(JSON.stringify(value))
          return
        }
        // the whole stream: every event parsed, the calls recorded, every event written back
        const out: Array<string> = []
        for (const block of answer.split("\n\n")) {
          const data = block.startsWith("data: ") ? block.slice(6) : ""
          if (data === "") continue
          if (data === "[DONE]") {
            out.push("data: [DONE]\n\n")
            continue
          }
          const value = JSON.parse(data) as Json
          // a streamed call's first delta carries its id: one record per call
          for (const call of callsOf(value)) if (typeof (call as Json).id === "string") record(call)
          out.push(`data: ${JSON.stringify(value)}\n\n`)
        }
        res.writeHead(r.statusCode, { "content-type": "text/event-stream" })
        res.end(out.join(""))
      })
      .catch((e: unknown) => {
        res.writeHead(502, { "content-type": "application/json" })
        res.end(JSON.stringify({ error: { message: String(e) } }))
      })
  })
})

server.listen(0, "127.0.0.1", () => {
  console.log(`bare gate http://127.0.0.1:${(server.address() as AddressInfo).port}`)
})

const stop = () => {
  server.close()
  if (dirty) fdatasync(fd, () => closeSync(fd))
  else closeSync(fd)
  void pool.close().finally(() => process.exit(0))
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
