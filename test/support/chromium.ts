/**
 * Open a page in headless Chromium and inspect it over the Chrome DevTools Protocol — no Playwright:
 * Chromium is started with `--remote-debugging-port=0`, the browser's websocket URL is read from
 * its stderr (`DevTools listening on ws://…`), and CDP is spoken over the `ws` package (Node 20 has
 * no global WebSocket; `ws` comes with @effect/platform-node and has no type declarations here, so a
 * minimal interface is declared below).
 *
 * `inspectPage` collects console errors, uncaught exceptions, error log entries and every request
 * the page makes, evaluates an expression in the page (by value), and can save a full-page PNG.
 * Each call uses a fresh `--user-data-dir` and ends the browser's whole process group.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { isObject } from "../../src/domain/is-object.js"

// ---------------------------------------------------------------------------------------------
// locating the browser

const CANDIDATES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]

const executable = (p: string): boolean => {
  try {
    fs.accessSync(p, fs.constants.X_OK)
    return fs.statSync(p).isFile()
  } catch {
    return false
  }
}

/** `$CHROMIUM` if set, else the first of chromium, chromium-browser, google-chrome on PATH; null if none. */
export const findChromium = (): string | null => {
  const env = process.env.CHROMIUM
  if (env !== undefined && env !== "") return executable(env) ? env : null
  const dirs = (process.env.PATH ?? "").split(path.delimiter).filter((d) => d !== "")
  for (const name of CANDIDATES) {
    for (const d of dirs) {
      const p = path.join(d, name)
      if (executable(p)) return p
    }
  }
  return null
}

// ---------------------------------------------------------------------------------------------
// a minimal typed view of `ws`

interface WsLike {
  on(event: "open", cb: () => void): void
  on(event: "message", cb: (data: Buffer | string) => void): void
  on(event: "error", cb: (err: Error) => void): void
  on(event: "close", cb: () => void): void
  send(data: string): void
  close(): void
}
type WsConstructor = new (url: string, options?: { readonly perMessageDeflate?: boolean; readonly maxPayload?: number }) => WsLike

const loadWs = (): WsConstructor => {
  const mod: unknown = createRequire(import.meta.url)("ws")
  const ctor = typeof mod === "function" ? mod : typeof mod === "object" && mod !== null && "WebSocket" in mod ? mod.WebSocket : undefined
  if (typeof ctor !== "function") throw new Error("the `ws` package does not export WebSocket")
  return ctor as WsConstructor
}

// ---------------------------------------------------------------------------------------------
// CDP session

interface CdpMessage {
  readonly id?: number
  readonly method?: string
  readonly sessionId?: string
  readonly params?: Record<string, unknown>
  readonly result?: Record<string, unknown>
  readonly error?: { readonly message: string; readonly code?: number }
}

class Cdp {
  private next = 1
  private readonly pending = new Map<number, { resolve: (r: Record<string, unknown>) => void; reject: (e: Error) => void; method: string }>()
  private readonly listeners: Array<(m: CdpMessage) => void> = []

  private constructor(private readonly ws: WsLike) {
    ws.on("message", (data) => {
      const parsed: unknown = JSON.parse(typeof data === "string" ? data : data.toString("utf8"))
      if (!isObject(parsed)) return
      const m = parsed as CdpMessage
      if (typeof m.id === "number") {
        const p = this.pending.get(m.id)
        if (p === undefined) return
        this.pending.delete(m.id)
        if (m.error !== undefined) p.reject(new Error(`CDP ${p.method}: ${m.error.message}`))
        else p.resolve(m.result ?? {})
        return
      }
      for (const l of this.listeners) l(m)
    })
    ws.on("close", () => {
      for (const p of this.pending.values()) p.reject(new Error(`CDP ${p.method}: connection closed`))
      this.pending.clear()
    })
  }

  static connect(url: string): Promise<Cdp> {
    const WebSocket = loadWs()
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 512 * 1024 * 1024 })
      ws.on("open", () => resolve(new Cdp(ws)))
      ws.on("error", reject)
    })
  }

  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    const id = this.next++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method })
      this.ws.send(JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) }))
    })
  }

  onEvent(l: (m: CdpMessage) => void): void {
    this.listeners.push(l)
  }

  /** Resolves with the params of the first event `method` (in `sessionId`) after this call. */
  waitFor(method: string, sessionId: string, timeoutMs: number): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      let done = false
      const timer = setTimeout(() => {
        done = true
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${method}`))
      }, timeoutMs)
      this.onEvent((m) => {
        if (done || m.method !== method || m.sessionId !== sessionId) return
        done = true
        clearTimeout(timer)
        resolve(m.params ?? {})
      })
    })
  }

  close(): void {
    this.ws.close()
  }
}

// ---------------------------------------------------------------------------------------------
// browser process

export const CHROMIUM_FLAGS: ReadonlyArray<string> = [
  "--headless=new",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--no-default-browser-check",
  "--hide-scrollbars",
  "--remote-debugging-port=0"
]

interface Browser {
  readonly proc: ChildProcess
  readonly wsUrl: string
  readonly userDataDir: string
}

const launch = (exe: string, timeoutMs: number): Promise<Browser> => {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-chromium-"))
  const proc = spawn(exe, [...CHROMIUM_FLAGS, `--user-data-dir=${userDataDir}`, "about:blank"], {
    stdio: ["ignore", "ignore", "pipe"],
    detached: true // its own process group, so the renderer and GPU helpers end with it
  })
  return new Promise((resolve, reject) => {
    let err = ""
    const fail = (e: Error) => {
      clearTimeout(timer)
      stop({ proc, wsUrl: "", userDataDir })
      reject(e)
    }
    const timer = setTimeout(() => fail(new Error(`chromium did not print its DevTools URL within ${timeoutMs} ms:\n${err}`)), timeoutMs)
    proc.on("error", (e) => fail(e))
    proc.once("exit", (code, signal) => fail(new Error(`chromium exited (${code ?? signal}) before DevTools was ready:\n${err}`)))
    proc.stderr?.on("data", (b: Buffer) => {
      err += b.toString("utf8")
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err)
      if (m?.[1] !== undefined) {
        clearTimeout(timer)
        proc.removeAllListeners("exit")
        resolve({ proc, wsUrl: m[1], userDataDir })
      }
    })
  })
}

const stop = (b: Browser): void => {
  const pid = b.proc.pid
  if (pid !== undefined && b.proc.exitCode === null && b.proc.signalCode === null) {
    try {
      process.kill(-pid, "SIGKILL") // the group we created with `detached`
    } catch {
      b.proc.kill("SIGKILL")
    }
  }
  fs.rmSync(b.userDataDir, { recursive: true, force: true, maxRetries: 3 })
}

const exited = (proc: ChildProcess, timeoutMs: number): Promise<void> =>
  new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve()
    const timer = setTimeout(resolve, timeoutMs)
    proc.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
  })

// ---------------------------------------------------------------------------------------------
// inspecting a page

export interface InspectOptions {
  /** page to open, e.g. `pathToFileURL(file).href` */
  readonly url: string
  /** JavaScript evaluated in the page after load; its value is returned (by value, promises awaited) */
  readonly evaluate: string
  /** if given, a full-page PNG is written here (parent directories created) */
  readonly screenshot?: string
  /** viewport width in CSS pixels (default 1280) */
  readonly width?: number
  readonly timeoutMs?: number
  /** browser executable (default `findChromium()`) */
  readonly chromium?: string
}

export interface PageReport {
  /** console.error/assert messages, uncaught exceptions and error-level log entries */
  readonly errors: ReadonlyArray<string>
  /** every URL the page requested, the page itself included */
  readonly requests: ReadonlyArray<string>
  readonly value: unknown
  /** full-page size in CSS pixels */
  readonly contentSize: { readonly width: number; readonly height: number }
}

const str = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v) ?? String(v))

const consoleText = (params: Record<string, unknown>): string => {
  const args = Array.isArray(params.args) ? params.args : []
  return args.map((a) => (isObject(a) ? str(a.value ?? a.description ?? a.type) : str(a))).join(" ")
}

const exceptionText = (params: Record<string, unknown>): string => {
  const d = isObject(params.exceptionDetails) ? params.exceptionDetails : {}
  const ex = isObject(d.exception) ? d.exception : {}
  return `uncaught: ${str(ex.description ?? d.text ?? "exception")}`
}

export const inspectPage = async (opts: InspectOptions): Promise<PageReport> => {
  const exe = opts.chromium ?? findChromium()
  if (exe === null) throw new Error("chromium not found on PATH (set CHROMIUM or install Debian's `chromium`)")
  const timeoutMs = opts.timeoutMs ?? 30_000
  const width = opts.width ?? 1280
  const browser = await launch(exe, timeoutMs)
  let cdp: Cdp | undefined
  try {
    cdp = await Cdp.connect(browser.wsUrl)
    const { targetId } = await cdp.send("Target.createTarget", { url: "about:blank" })
    const attached = await cdp.send("Target.attachToTarget", { targetId, flatten: true })
    const sessionId = str(attached.sessionId)
    const errors: Array<string> = []
    const requests: Array<string> = []
    cdp.onEvent((m) => {
      if (m.sessionId !== sessionId || m.params === undefined) return
      const p = m.params
      if (m.method === "Runtime.consoleAPICalled" && (p.type === "error" || p.type === "assert")) errors.push(`console.${str(p.type)}: ${consoleText(p)}`)
      else if (m.method === "Runtime.exceptionThrown") errors.push(exceptionText(p))
      else if (m.method === "Log.entryAdded" && isObject(p.entry) && p.entry.level === "error") errors.push(`log: ${str(p.entry.text)}${p.entry.url === undefined ? "" : ` (${str(p.entry.url)})`}`)
      else if (m.method === "Network.requestWillBeSent" && isObject(p.request)) requests.push(str(p.request.url))
    })
    await Promise.all([
      cdp.send("Runtime.enable", {}, sessionId),
      cdp.send("Log.enable", {}, sessionId),
      cdp.send("Page.enable", {}, sessionId),
      cdp.send("Network.enable", {}, sessionId),
      cdp.send("Emulation.setDeviceMetricsOverride", { width, height: 900, deviceScaleFactor: 1, mobile: false }, sessionId)
    ])
    const loaded = cdp.waitFor("Page.loadEventFired", sessionId, timeoutMs)
    const nav = await cdp.send("Page.navigate", { url: opts.url }, sessionId)
    if (typeof nav.errorText === "string" && nav.errorText !== "") throw new Error(`navigation to ${opts.url} failed: ${nav.errorText}`)
    await loaded
    const evaluated = await cdp.send("Runtime.evaluate", { expression: opts.evaluate, returnByValue: true, awaitPromise: true }, sessionId)
    if (isObject(evaluated.exceptionDetails)) errors.push(`evaluate: ${exceptionText({ exceptionDetails: evaluated.exceptionDetails })}`)
    const value = isObject(evaluated.result) ? evaluated.result.value : undefined
    const metrics = await cdp.send("Page.getLayoutMetrics", {}, sessionId)
    const css = isObject(metrics.cssContentSize) ? metrics.cssContentSize : {}
    const contentSize = { width: Number(css.width ?? width), height: Number(css.height ?? 0) }
    if (opts.screenshot !== undefined) {
      const h = Math.max(1, Math.ceil(contentSize.height))
      await cdp.send("Emulation.setDeviceMetricsOverride", { width, height: h, deviceScaleFactor: 1, mobile: false }, sessionId)
      const shot = await cdp.send("Page.captureScreenshot", { format: "png", captureBeyondViewport: true, clip: { x: 0, y: 0, width, height: h, scale: 1 } }, sessionId)
      fs.mkdirSync(path.dirname(opts.screenshot), { recursive: true })
      fs.writeFileSync(opts.screenshot, Buffer.from(str(shot.data), "base64"))
    }
    await cdp.send("Browser.close").catch(() => undefined)
    await exited(browser.proc, 5_000)
    return { errors, requests, value, contentSize }
  } finally {
    cdp?.close()
    stop(browser)
  }
}
