/**
 * The HTTP server of `vetobench view`: server-rendered pages over the runs directory (read in
 * place), the served reports, and with a proxy the holds page and its decide endpoint.
 *
 * Every response carries a strict Content-Security-Policy (no other origin; the script and the
 * stylesheet are the view's own), `nosniff`, no referrer and no framing. Bound to a loopback
 * address, it answers only requests whose `Host` is that loopback name and port (a page of another
 * site cannot reach it by DNS rebinding); bound elsewhere, only a `Host` that is an IP address or
 * this machine's own name (`hostCheck`). The decide endpoint takes a form post only from this
 * server's own origin (`Origin`, else `Referer`) carrying the per-process CSRF token the form holds.
 * Errors are an HTML page, or JSON `{error: {code, message}}` when the request accepts JSON.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import { createServer } from "node:http"
import { isIP } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { HttpRouter, type HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Data, Effect, type Scope } from "effect"
import { sameToken } from "../proxy/holds-api.js"
import { BENCHES, discoverExperiments, findExperiment, type ViewExperiment, type ViewRun } from "./discover.js"
import { episodeView } from "./episode.js"
import { episodeRows, type EpisodeFilter, pageOf, runsOf } from "./episodes.js"
import { AuditTails, decideHold, HOLD_ID, HoldBook, listHolds, localAuditFile, type ProxyTarget } from "./holds.js"
import { html, type Html } from "./html.js"
import { CSP, page, REPORT_CSP, SCRIPT } from "./layout.js"
import { episodePage } from "./page-episode.js"
import { episodesPage } from "./page-episodes.js"
import { type DecidedView, holdsLive, holdsPage, type PendingView } from "./page-holds.js"
import { fileKind } from "./lines.js"
import { listPage } from "./page-list.js"
import { checkSegment, isInside, resolveInside } from "./paths.js"

export interface ViewOptions {
  /** the runs directory (made a real path by `serveView`) */
  readonly root: string
  readonly host: string
  readonly port: number
  readonly proxy: ProxyTarget | null
}

/** A request the view answers with an error status. */
export class ViewHttpError extends Data.TaggedError("ViewHttpError")<{ readonly status: number; readonly code: string; readonly message: string }> {}

const bad = (message: string, code = "invalid_request") => new ViewHttpError({ status: 400, code, message })

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"])
export const isLoopback = (host: string): boolean => LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host)

/** The name of a `Host` header without its port (an IPv6 address without brackets), lowercased, or null when it is malformed. */
const hostName = (host: string): string | null => {
  const m = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/i.exec(host) ?? /^([^:[\]]+)(?::\d{1,5})?$/.exec(host)
  return m === null ? null : m[1]!.toLowerCase()
}

/**
 * Which `Host` headers the server answers (against DNS rebinding: a page of another site that
 * points its own name at this address sends that name). Bound to loopback: exactly the loopback
 * names with this port. Bound elsewhere: any IP address, `localhost`, the bound name and this
 * machine's name (a name given by DNS other than these is refused).
 */
export const hostCheck = (bind: string, port: number): ((host: string) => boolean) => {
  if (isLoopback(bind)) {
    const allowed = new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `${bind.toLowerCase()}:${port}`])
    return (host) => allowed.has(host.toLowerCase())
  }
  const names = new Set(["localhost", bind.toLowerCase().replace(/^\[|\]$/g, ""), os.hostname().toLowerCase()])
  return (host) => {
    const name = hostName(host)
    return name !== null && (isIP(name) !== 0 || names.has(name))
  }
}

/** A decide form's body is at most this long. */
const MAX_FORM_BYTES = 64 * 1024

interface Ctx {
  readonly root: string
  readonly proxy: ProxyTarget | null
  readonly csrf: string
  readonly book: HoldBook
  readonly tails: AuditTails
  /** whether a request's `Host` header names this server (`hostCheck`) */
  hostOk: (host: string) => boolean
}

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store"
}

const htmlResponse = (body: Html | string, status = 200, csp = CSP) =>
  HttpServerResponse.text(typeof body === "string" ? body : body.value, { status, contentType: "text/html; charset=utf-8" }).pipe(
    HttpServerResponse.setHeaders({ ...SECURITY_HEADERS, "content-security-policy": csp })
  )

const wantsJson = (req: HttpServerRequest.HttpServerRequest) => (req.headers["accept"] ?? "").includes("application/json")

const errorResponse = (req: HttpServerRequest.HttpServerRequest, e: ViewHttpError) =>
  wantsJson(req)
    ? HttpServerResponse.unsafeJson({ error: { code: e.code, message: e.message } }, { status: e.status }).pipe(HttpServerResponse.setHeaders(SECURITY_HEADERS))
    : htmlResponse(page(`error ${e.status}`, "", html`<h1>${e.status}</h1><p class="err">${e.message}</p><p><a href="/">all experiments</a></p>`), e.status)

const query = (req: HttpServerRequest.HttpServerRequest): URLSearchParams => new URL(req.url, "http://view.invalid").searchParams

/** One optional query parameter (the first), at most `max` characters. */
const param = (q: URLSearchParams, name: string, max = 500): Effect.Effect<string | null, ViewHttpError> => {
  const v = q.get(name)
  if (v === null || v === "") return Effect.succeed(null)
  return v.length > max ? Effect.fail(bad(`${name}: longer than ${max} characters`)) : Effect.succeed(v)
}
const required = (q: URLSearchParams, name: string, max = 500) =>
  Effect.flatMap(param(q, name, max), (v) => (v === null ? Effect.fail(bad(`${name}: missing`)) : Effect.succeed(v)))

const asHttp = <A, R>(e: Effect.Effect<A, { readonly _tag: string; readonly message: string; readonly status?: number | null }, R>) =>
  Effect.mapError(e, (err) => {
    if (err instanceof ViewHttpError) return err
    const status = typeof err.status === "number" ? err.status : err._tag === "ViewProxyError" ? 502 : 500
    return new ViewHttpError({ status, code: err._tag === "ViewPathError" ? (status === 404 ? "not_found" : "invalid_path") : status === 502 ? "proxy_error" : "read_error", message: err.message })
  })

/** The experiment `e` names: a safe relative path inside the runs directory that is an experiment. */
const experimentParam = (ctx: Ctx, q: URLSearchParams): Effect.Effect<ViewExperiment, ViewHttpError> =>
  Effect.gen(function*() {
    const id = yield* required(q, "e", 1000)
    if (id !== ".") yield* asHttp(resolveInside(ctx.root, id, "e"))
    const exp = findExperiment(ctx.root, id)
    if (exp === null) return yield* new ViewHttpError({ status: 404, code: "not_found", message: `e: no experiment '${id}' under the runs directory` })
    return exp
  })

const benchModel = (exp: ViewExperiment, q: URLSearchParams) =>
  Effect.gen(function*() {
    const bench = yield* asHttp(checkSegment(yield* required(q, "bench"), "bench"))
    if (!BENCHES.includes(bench as (typeof BENCHES)[number])) return yield* bad(`bench: one of ${BENCHES.join(", ")}, got '${bench}'`)
    const modelDir = yield* asHttp(checkSegment(yield* required(q, "model"), "model"))
    const runs = runsOf(exp, bench, modelDir)
    if (runs.length === 0) return yield* new ViewHttpError({ status: 404, code: "not_found", message: `no ${bench} runs of model '${modelDir}' in ${exp.id}` })
    return { bench, modelDir, model: runs[0]!.model, runs }
  })

const listRoute = (ctx: Ctx) =>
  Effect.gen(function*() {
    const body = yield* listPage(discoverExperiments(ctx.root))
    return htmlResponse(page("experiments", ctx.root, body))
  })

const REPORT_FILES = { html: ["report.html", "text/html; charset=utf-8"], md: ["report.md", "text/markdown; charset=utf-8"], json: ["summary.json", "application/json"] } as const

const reportRoute = (ctx: Ctx, req: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const q = query(req)
    const exp = yield* experimentParam(ctx, q)
    const f = (yield* param(q, "f", 10)) ?? "html"
    if (f !== "html" && f !== "md" && f !== "json") return yield* bad(`f: one of html, md, json, got '${f}'`)
    const [name, contentType] = REPORT_FILES[f]
    const file = yield* asHttp(resolveInside(exp.dir, name, "f"))
    if (!isInside(ctx.root, file)) return yield* bad("f: resolves outside the runs directory", "invalid_path")
    // read whole and synchronously: a FIFO or a device would stop the server
    if (fileKind(file) !== "file") return yield* new ViewHttpError({ status: 404, code: "not_found", message: `f: ${name} is not a regular file` })
    const body = yield* Effect.try({ try: () => fs.readFileSync(file), catch: () => new ViewHttpError({ status: 500, code: "read_error", message: `cannot read ${name}` }) })
    return HttpServerResponse.uint8Array(body, { contentType }).pipe(
      HttpServerResponse.setHeaders({ ...SECURITY_HEADERS, "content-security-policy": f === "html" ? REPORT_CSP : "default-src 'none'; frame-ancestors 'none'" })
    )
  })

/** The query's experiment, bench and model, and the runs of that bench × model. */
const runsTarget = (ctx: Ctx, req: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const q = query(req)
    const exp = yield* experimentParam(ctx, q)
    return { q, exp, ...(yield* benchModel(exp, q)) }
  })

/** The run of `variant` among `runs`, or a 400 naming the variants there are. */
const variantRun = (runs: ReadonlyArray<ViewRun>, variant: string) => {
  const run = runs.find((r) => r.variant === variant)
  return run === undefined ? Effect.fail(bad(`variant: no variant '${variant}' (variants: ${runs.map((r) => r.variant).join(", ")})`)) : Effect.succeed(run)
}

const episodesRoute = (ctx: Ctx, req: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const { bench, exp, model, modelDir, q, runs } = yield* runsTarget(ctx, req)
    const variant = yield* param(q, "variant", 200)
    if (variant !== null) yield* variantRun(runs, variant)
    const pageText = (yield* param(q, "page", 10)) ?? "1"
    if (!/^[1-9][0-9]{0,8}$/.test(pageText)) return yield* bad(`page: a page number from 1, got '${pageText}'`)
    const changed = yield* param(q, "changed", 5)
    if (changed !== null && changed !== "1" && changed !== "0") return yield* bad(`changed: 1 or 0, got '${changed}'`)
    const filter: EpisodeFilter = { variant, category: yield* param(q, "category"), outcome: yield* param(q, "outcome", 20), changed: changed === "1" }
    const rows = yield* asHttp(episodeRows(exp, runs))
    const body = episodesPage({ exp, bench, modelDir, model, variants: runs.map((r) => r.variant) }, filter, pageOf(rows, filter, Number(pageText)))
    return htmlResponse(page(`${exp.name} ${bench} ${model}`, ctx.root, body))
  })

const episodeRoute = (ctx: Ctx, req: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const { bench, exp, model, modelDir, q, runs } = yield* runsTarget(ctx, req)
    const variant = yield* required(q, "variant", 200)
    const run = yield* variantRun(runs, variant)
    const episode = yield* required(q, "id")
    const session = yield* param(q, "session", 200)
    const pairName = (yield* param(q, "pair", 200)) ?? (variant !== exp.baseline ? exp.baseline : runs.find((r) => r.variant !== variant)?.variant ?? null)
    const pairRun = pairName === null ? undefined : runs.find((r) => r.variant === pairName && r.variant !== variant)
    if (pairName !== null && q.get("pair") !== null && pairRun === undefined) return yield* bad(`pair: no other variant '${pairName}'`)
    const mine = yield* asHttp(episodeView(exp, run, episode, session))
    if (!mine.found) return yield* new ViewHttpError({ status: 404, code: "not_found", message: `no episode '${episode}' in ${variant}` })
    const paired = pairRun === undefined ? null : yield* asHttp(episodeView(exp, pairRun, episode, session))
    const body = episodePage({ expId: exp.id, expName: exp.name, bench, modelDir, model, episode, session, variants: runs.map((r) => r.variant) }, mine, paired)
    return htmlResponse(page(episode, ctx.root, body))
  })

/** The audit folders under the runs directory where a hold's run may be logged. */
const auditDirs = (root: string): Array<string> => {
  const dirs = discoverExperiments(root).flatMap((e) => (e.auditDir === null ? [] : [e.auditDir]))
  const own = path.join(root, "audit")
  return [...new Set([...(fs.existsSync(own) ? [own] : []), ...dirs])]
}

const liveFragment = (ctx: Ctx, proxy: ProxyTarget) =>
  Effect.gen(function*() {
    const now = new Date()
    const listed = yield* Effect.either(listHolds(proxy))
    const pending = listed._tag === "Right" ? listed.right : []
    if (listed._tag === "Right") ctx.book.observe(pending, now)
    const dirs = auditDirs(ctx.root)
    const exists = (f: string) => fs.existsSync(f)
    const views: Array<PendingView> = []
    for (const hold of pending) {
      const file = localAuditFile(dirs, hold.run_id, exists)
      const calls = file === null || hold.episode_id === null ? null : yield* Effect.orElseSucceed(ctx.tails.episodeCalls(file, hold.episode_id, hold.session_id), () => null)
      views.push({ hold, calls, auditFile: file })
    }
    const decided: Array<DecidedView> = []
    for (const d of ctx.book.list()) {
      const file = localAuditFile(dirs, d.hold.run_id, exists)
      const recorded = file === null ? null : yield* Effect.orElseSucceed(ctx.tails.approval(file, d.hold.id), () => null)
      decided.push({ decided: d, recorded })
    }
    return holdsLive(views, decided, ctx.csrf, listed._tag === "Left" ? listed.left.message : null, now)
  })

const holdsRoute = (ctx: Ctx) =>
  Effect.gen(function*() {
    const live = ctx.proxy === null ? null : yield* liveFragment(ctx, ctx.proxy)
    return htmlResponse(page("holds", ctx.root, holdsPage(ctx.proxy === null ? null : ctx.proxy.base, live)))
  })

const holdsLiveRoute = (ctx: Ctx) =>
  ctx.proxy === null
    ? Effect.fail(new ViewHttpError({ status: 404, code: "not_found", message: "no proxy: start the view with --proxy URL" }))
    : Effect.map(liveFragment(ctx, ctx.proxy), (body) => htmlResponse(body))

/** The request comes from this server's own pages: `Origin` (else `Referer`) is this origin. */
const sameOrigin = (req: HttpServerRequest.HttpServerRequest): boolean => {
  const host = req.headers["host"]
  if (host === undefined) return false
  const origin = `http://${host}`
  const o = req.headers["origin"]
  if (o !== undefined) return o === origin
  const r = req.headers["referer"]
  return r !== undefined && (r === origin || r.startsWith(`${origin}/`))
}

const decideRoute = (ctx: Ctx, req: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const proxy = ctx.proxy
    if (proxy === null) return yield* new ViewHttpError({ status: 404, code: "not_found", message: "no proxy: start the view with --proxy URL" })
    if (!sameOrigin(req)) return yield* new ViewHttpError({ status: 403, code: "forbidden", message: "cross-site request refused: decisions come from this view's own page" })
    if (!(req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded")) return yield* bad("the body must be a form (application/x-www-form-urlencoded)")
    const length = Number(req.headers["content-length"] ?? "NaN")
    if (!Number.isInteger(length) || length > MAX_FORM_BYTES) return yield* new ViewHttpError({ status: 413, code: "too_large", message: `the form must have a Content-Length of at most ${MAX_FORM_BYTES} bytes` })
    const text = yield* Effect.mapError(req.text, () => bad("cannot read the form"))
    if (text.length > MAX_FORM_BYTES) return yield* new ViewHttpError({ status: 413, code: "too_large", message: `the form is longer than ${MAX_FORM_BYTES} bytes` })
    const form = new URLSearchParams(text)
    if (!sameToken(form.get("csrf") ?? "", ctx.csrf)) return yield* new ViewHttpError({ status: 403, code: "forbidden", message: "missing or stale form token: reload the holds page" })
    const id = form.get("id") ?? ""
    if (!HOLD_ID.test(id)) return yield* bad("id: not a hold id")
    const decision = form.get("decision")
    if (decision !== "approve" && decision !== "reject") return yield* bad("decision: approve or reject")
    const approver = (form.get("approver") ?? "").trim()
    if (approver === "" || approver.length > 200) return yield* bad("approver: your name, 1 to 200 characters")
    const noteText = (form.get("note") ?? "").trim()
    if (noteText.length > 2000) return yield* bad("note: at most 2000 characters")
    const note = noteText === "" ? null : noteText
    const outcome = yield* decideHold(proxy, id, decision === "approve", approver, note).pipe(
      Effect.mapError((e) =>
        new ViewHttpError({ status: e.status === 404 || e.status === 400 ? e.status : 502, code: e.status === 404 ? "not_found" : "proxy_error", message: e.message })
      )
    )
    ctx.book.record(id, outcome, approver, note, new Date())
    return wantsJson(req)
      ? HttpServerResponse.unsafeJson({ id, outcome, approver }).pipe(HttpServerResponse.setHeaders(SECURITY_HEADERS))
      : HttpServerResponse.redirect("/holds", { status: 303 }).pipe(HttpServerResponse.setHeaders(SECURITY_HEADERS))
  })

/** Host check, then the handler; every failure becomes an error page or JSON error. */
const guarded = <R>(ctx: Ctx, handler: (req: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, ViewHttpError, R>) =>
  Effect.gen(function*() {
    const req = yield* HttpServerRequest.HttpServerRequest
    const host = req.headers["host"] ?? ""
    if (!ctx.hostOk(host)) {
      return errorResponse(req, new ViewHttpError({ status: 403, code: "forbidden", message: `Host '${host.slice(0, 200)}' is not this view's address (open it by IP address, localhost or this machine's name)` }))
    }
    return yield* handler(req).pipe(Effect.catchTag("ViewHttpError", (e) => Effect.succeed(errorResponse(req, e))))
  })

const app = (ctx: Ctx) =>
  HttpRouter.empty.pipe(
    HttpRouter.get("/", guarded(ctx, () => listRoute(ctx))),
    HttpRouter.get("/view.js", guarded(ctx, () => Effect.succeed(HttpServerResponse.text(SCRIPT, { contentType: "text/javascript; charset=utf-8" }).pipe(HttpServerResponse.setHeaders(SECURITY_HEADERS))))),
    HttpRouter.get("/favicon.ico", guarded(ctx, () => Effect.succeed(HttpServerResponse.empty({ status: 204 }).pipe(HttpServerResponse.setHeaders(SECURITY_HEADERS))))),
    HttpRouter.get("/report", guarded(ctx, (req) => reportRoute(ctx, req))),
    HttpRouter.get("/episodes", guarded(ctx, (req) => episodesRoute(ctx, req))),
    HttpRouter.get("/episode", guarded(ctx, (req) => episodeRoute(ctx, req))),
    HttpRouter.get("/holds", guarded(ctx, () => holdsRoute(ctx))),
    HttpRouter.get("/holds/live", guarded(ctx, () => holdsLiveRoute(ctx))),
    HttpRouter.post("/holds/decide", guarded(ctx, (req) => decideRoute(ctx, req))),
    Effect.catchTag("RouteNotFound", (e) =>
      guarded(ctx, (req) => Effect.fail(new ViewHttpError({ status: 404, code: "not_found", message: `no page ${req.method} ${(e.request.url.split("?")[0] ?? "").slice(0, 200)}` }))))
  )

export interface ViewServer {
  readonly url: string
  readonly root: string
}

/** Serve the view for the scope's life; its URL. `root` must be a directory. */
export const serveView = (opts: ViewOptions): Effect.Effect<ViewServer, HttpServerError.ServeError, Scope.Scope> =>
  Effect.gen(function*() {
    const root = fs.realpathSync(opts.root)
    const server = yield* NodeHttpServer.make(() => createServer(), { host: opts.host, port: opts.port })
    const address = server.address
    const port = address._tag === "TcpAddress" ? address.port : 0
    const ctx: Ctx = { root, proxy: opts.proxy, csrf: randomBytes(32).toString("hex"), book: new HoldBook(), tails: new AuditTails(), hostOk: hostCheck(opts.host, port) }
    yield* server.serve(app(ctx))
    const shown = opts.host.includes(":") && !opts.host.startsWith("[") ? `[${opts.host}]` : opts.host
    return { url: `http://${shown}:${port}/`, root }
  })

