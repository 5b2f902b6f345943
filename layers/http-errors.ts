/** Reading undici / Node network errors: the first meaningful `code` in the cause chain, TLS failures. */
import { redactUrlsIn } from "../src/domain/redact-url.js"

/** Certificate problems whose fix is trusting the CA that signed the peer's chain. */
const UNTRUSTED_CA_CODES: ReadonlySet<string> = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY"
])

/** Certificate problems: the peer's chain is not trusted, has expired, or does not name the host. */
export const TLS_CODES: ReadonlySet<string> = new Set([...UNTRUSTED_CA_CODES, "CERT_HAS_EXPIRED", "ERR_TLS_CERT_ALTNAME_INVALID"])

/** The first string `code` along `cause` (skipping undici's generic UND_ERR_SOCKET wrapper). */
export const errorCode = (e: unknown): string | undefined => {
  let cur: unknown = e
  for (let i = 0; i < 4 && typeof cur === "object" && cur !== null; i++) {
    const code = (cur as { code?: unknown }).code
    if (typeof code === "string" && code !== "UND_ERR_SOCKET") return code
    cur = (cur as { cause?: unknown }).cause
  }
  return undefined
}

/** What a failed HTTP request was, read from undici's / Node's error: the cases callers word differently. */
export type NetworkFailure =
  /** no answer (headers or body) within the request's timeout */
  | { readonly kind: "timeout" }
  | { readonly kind: "connect-timeout" }
  /** the peer's certificate failed verification (see {@link TLS_CODES}); `untrustedCa`: trusting its CA would fix it */
  | { readonly kind: "tls"; readonly code: string; readonly untrustedCa: boolean }
  /** anything else: the first code along the cause chain ("error" when none) and the error's message (URL credentials redacted) */
  | { readonly kind: "other"; readonly code: string; readonly message: string }

export const networkFailure = (e: unknown): NetworkFailure => {
  const code = errorCode(e)
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT") return { kind: "timeout" }
  if (code === "UND_ERR_CONNECT_TIMEOUT") return { kind: "connect-timeout" }
  if (code !== undefined && TLS_CODES.has(code)) return { kind: "tls", code, untrustedCa: UNTRUSTED_CA_CODES.has(code) }
  return { kind: "other", code: code ?? "error", message: redactUrlsIn(e instanceof Error ? e.message : String(e)) }
}
