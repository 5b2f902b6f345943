/**
 * An upstream that streams one call delta (`delete_file`) and a text delta ("working on it"), then
 * nothing at all until the proxy hangs up; and a streaming client that reads until the text arrived
 * (the call is held then) and keeps the stream open. For tests of streams cut short.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

const chunk = (delta: unknown) => `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`
const CALL = chunk({ tool_calls: [{ index: 0, id: "call_0", type: "function", function: { name: "delete_file", arguments: '{"path":"/x"}' } }] })

export interface SilentUpstream {
  /** base URL including `/v1` */
  readonly url: string
  /** how many of its streams the proxy hung up on */
  readonly closed: () => number
  readonly close: () => Promise<void>
}

export const startSilentUpstream = async (): Promise<SilentUpstream> => {
  let closed = 0
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(CALL + chunk({ content: "working on it" }))
      res.on("close", () => closed++)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    closed: () => closed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** POST a streaming chat request and read until the text delta arrived: what was read, and the open reader */
export const readUntilHeld = async (url: string, headers: Record<string, string>, signal?: AbortSignal) => {
  const res = await fetch(url, {
    method: "POST",
    ...(signal !== undefined ? { signal } : {}),
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "agent@enforce:allow-all", messages: [{ role: "user", content: "x" }], stream: true })
  })
  const reader = res.body!.getReader()
  let text = ""
  while (!text.includes("working on it")) {
    const { value, done } = await reader.read()
    if (done) break
    text += new TextDecoder().decode(value)
  }
  return { reader, text }
}
