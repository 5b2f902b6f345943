/**
 * Correlation (architecture decision 4): `X-Request-ID` accepted or generated and returned;
 * `x-vetobench-run`, `x-vetobench-episode`, `x-vetobench-session`, `x-vetobench-principal`.
 */
import { randomUUID } from "node:crypto"

export interface RequestMeta {
  readonly requestId: string
  readonly runId: string | null
  readonly episodeId: string | null
  readonly sessionId: string | null
  readonly principal: string | null
  /** lower-cased request headers without credentials */
  readonly headers: Readonly<Record<string, string>>
}

const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/
const SECRET_HEADERS = new Set(["authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"])

const header = (h: Readonly<Record<string, string | undefined>>, name: string): string | null => {
  const v = h[name]
  return v === undefined || v.trim() === "" ? null : v.trim()
}

/** A client's X-Request-ID is kept when it is a plain token of at most 128 characters. */
export const requestIdOf = (h: Readonly<Record<string, string | undefined>>): string => {
  const given = header(h, "x-request-id")
  return given !== null && REQUEST_ID.test(given) ? given : randomUUID().replace(/-/g, "")
}

export const requestMeta = (h: Readonly<Record<string, string | undefined>>, requestId: string): RequestMeta => {
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(h)) if (v !== undefined && !SECRET_HEADERS.has(k)) headers[k] = v
  return {
    requestId,
    runId: header(h, "x-vetobench-run"),
    episodeId: header(h, "x-vetobench-episode"),
    sessionId: header(h, "x-vetobench-session"),
    principal: header(h, "x-vetobench-principal"),
    headers
  }
}
