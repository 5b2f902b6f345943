/**
 * Proxy-generated errors: body `{"error": {"message", "type": "vetobench_error", "code"}}` with
 * the status of architecture decision 6. Bad input is always a 4xx, never a 500.
 */
import { HttpServerResponse } from "@effect/platform"
import { Cause, Data, Effect } from "effect"
import { defectMessage } from "../domain/defect-message.js"
import { redactUrlsIn } from "../domain/redact-url.js"

export type ProxyErrorCode =
  | "internal_error"
  | "invalid_json"
  | "invalid_request"
  | "invalid_route"
  | "unknown_judge"
  | "no_upstream"
  | "not_found"
  | "method_not_allowed"
  | "body_too_large"
  | "upstream_unavailable"
  | "upstream_timeout"
  | "upstream_invalid_response"
  | "audit_write_failed"
  | "unauthorized"
  | "operator_token_not_configured"

const STATUS: Record<ProxyErrorCode, number> = {
  invalid_json: 400,
  invalid_request: 400,
  invalid_route: 400,
  unknown_judge: 400,
  no_upstream: 404,
  not_found: 404,
  method_not_allowed: 405,
  body_too_large: 413,
  upstream_unavailable: 502,
  upstream_invalid_response: 502,
  audit_write_failed: 503,
  unauthorized: 401,
  operator_token_not_configured: 503,
  upstream_timeout: 504,
  internal_error: 500
}

export class ProxyError extends Data.TaggedError("ProxyError")<{
  readonly code: ProxyErrorCode
  readonly message: string
}> {
  get status(): number {
    return statusOf(this.code)
  }
}

/** The HTTP status of an error code (architecture decision 6). */
export const statusOf = (code: ProxyErrorCode): number => STATUS[code]

/**
 * An error message as a client may see it, in every route's error shape: the secrets a message can
 * quote are URLs the settings hold, all `http(s)://` (the decoders refuse others) or quoted by
 * Node/undici with their scheme: text without "://" holds none, and a client's model name is not
 * mangled by the schemeless heuristic.
 */
export const clientMessage = (message: string): string => (message.includes("://") ? redactUrlsIn(message) : message)

/** The error body; `request_id` (the response's `x-request-id`) lets an operator find the request's log line. */
export const errorBody = (code: ProxyErrorCode | string, message: string, requestId: string | null = null) =>
  JSON.stringify({ error: { message: clientMessage(message), type: "vetobench_error", code, ...(requestId !== null ? { request_id: requestId } : {}) } })

/** An error body writer: the OpenAI-style body here, a wire format's own shape on its route. */
export type ErrorBodyOf = (code: ProxyErrorCode, message: string, requestId: string | null) => string

/** the headers an error answer adds: an oversized body is not read to its end, so the connection is closed */
export const errorHeaders = (e: ProxyError, headers: Record<string, string> = {}): Record<string, string> =>
  e.code === "body_too_large" ? { ...headers, connection: "close" } : headers

export const errorResponse = (e: ProxyError, requestId: string | null = null, headers: Record<string, string> = {}, body: ErrorBodyOf = errorBody) =>
  HttpServerResponse.text(body(e.code, e.message, requestId), {
    status: e.status,
    contentType: "application/json",
    headers: errorHeaders(e, headers)
  })

/**
 * A defect is a bug of ours: one log line to find it by (with the request id), and the 500 body the
 * client gets in its route's shape.
 */
export const internalError = (method: string, path: string, requestId: string, defect: unknown, body: ErrorBodyOf = errorBody): Effect.Effect<string> =>
  Effect.logError(`internal error in ${method} ${path}: ${redactUrlsIn(defectMessage(Cause.die(defect)))}`).pipe(
    Effect.annotateLogs({ request_id: requestId }),
    Effect.as(body("internal_error", `internal error (request ${requestId}); the proxy's log has the details`, requestId))
  )
