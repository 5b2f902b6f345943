/**
 * The hold API (hold_policy wait): `GET /v1/holds` lists pending held calls, `POST /v1/holds/{id}`
 * with `{approved, approver, note?}` decides one. Protected by `proxy.operator_token` (a bearer
 * token, compared in constant time; the `Bearer` scheme in any case); without a token configured
 * the API answers 503.
 */
import { timingSafeEqual } from "node:crypto"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Redacted } from "effect"
import { Settings } from "../config/service.js"
import { Holds } from "../gate/Holds.js"
import { ProxyError } from "./errors.js"
import { readJsonObject } from "./forward.js"

/** constant-time comparison of a given token with the configured one */
export const sameToken = (given: string, expected: string) => {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** `Bearer <token>`: the scheme in any case (RFC 7235), then one or more spaces */
const BEARER = /^bearer +(.*)$/i

/** The token of a bearer `Authorization` header; null for any other scheme. */
export const bearerToken = (authorization: string): string | null => {
  const m = BEARER.exec(authorization)
  return m === null ? null : (m[1] ?? "").trim()
}

/** 503 when no operator token is configured, 401 without the right `Authorization: Bearer …`. */
const operator = Effect.gen(function* () {
  const settings = yield* Settings
  const req = yield* HttpServerRequest.HttpServerRequest
  const token = settings.proxy.operator_token
  if (token === null) {
    return yield* new ProxyError({ code: "operator_token_not_configured", message: "the hold API needs proxy.operator_token set" })
  }
  const given = bearerToken(req.headers["authorization"] ?? "")
  if (given === null || !sameToken(given, Redacted.value(token).trim())) {
    return yield* new ProxyError({ code: "unauthorized", message: "operator credential required (Authorization: Bearer <proxy.operator_token>)" })
  }
})

const listHolds = Effect.gen(function* () {
  yield* operator
  const holds = yield* Holds
  return HttpServerResponse.unsafeJson({ object: "list", data: yield* holds.pending })
})

const decideHold = Effect.gen(function* () {
  yield* operator
  const holds = yield* Holds
  const settings = yield* Settings
  const { id } = yield* HttpRouter.params
  const body = yield* readJsonObject(settings.proxy.max_body_bytes)
  const approver = typeof body.approver === "string" ? body.approver.trim() : ""
  if (typeof body.approved !== "boolean" || approver === "") {
    return yield* new ProxyError({ code: "invalid_request", message: "body needs {\"approved\": true|false, \"approver\": \"<who>\"} and may carry a \"note\"" })
  }
  if (body.note !== undefined && typeof body.note !== "string") {
    return yield* new ProxyError({ code: "invalid_request", message: "note must be a string" })
  }
  const found = yield* holds.decide(id ?? "", body.approved, approver, body.note ?? null)
  if (!found) return yield* new ProxyError({ code: "not_found", message: `no pending hold ${id}` })
  return HttpServerResponse.unsafeJson({ id, outcome: body.approved ? "approved" : "rejected", approver })
})

export const holdRoutes = <E, R>(router: HttpRouter.HttpRouter<E, R>) =>
  router.pipe(HttpRouter.get("/v1/holds", listHolds), HttpRouter.post("/v1/holds/:id", decideHold))
