/**
 * A hostile upstream for the trust-boundary tests: a loopback HTTP server that answers every chat
 * request with whatever bytes the test scripted (status, content type, body in pieces), so a test
 * can send what no well-behaved vLLM would.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface ScriptedAnswer {
  readonly status?: number
  readonly contentType?: string
  /** the body, written piece by piece (one `write` each) */
  readonly body: string | ReadonlyArray<string | Uint8Array>
  /** after the body, cut the connection instead of ending the answer (a chunked answer then fails mid-body) */
  readonly reset?: boolean
}

export interface HostileUpstream {
  /** base URL including `/v1` */
  readonly url: string
  /** the answer for the next chat requests (until changed) */
  answer: ScriptedAnswer
  /** chat requests received */
  requests: number
  readonly close: () => Promise<void>
}

export const startHostileUpstream = async (): Promise<HostileUpstream> => {
  const state = {
    answer: { body: "{}" } as ScriptedAnswer,
    requests: 0
  }
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      if (req.url?.endsWith("/models")) {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ object: "list", data: [] }))
        return
      }
      state.requests++
      const a = state.answer
      res.writeHead(a.status ?? 200, { "content-type": a.contentType ?? "application/json" })
      const pieces = typeof a.body === "string" ? [a.body] : a.body
      if (a.reset === true) {
        // everything written and flushed to the socket, then the connection cut
        for (const p of pieces.slice(0, -1)) res.write(p)
        res.write(pieces[pieces.length - 1] ?? "", () => setTimeout(() => res.socket?.destroy(), 20))
        return
      }
      for (const p of pieces) res.write(p)
      res.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1`,
    get answer() {
      return state.answer
    },
    set answer(a: ScriptedAnswer) {
      state.answer = a
    },
    get requests() {
      return state.requests
    },
    set requests(n: number) {
      state.requests = n
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
