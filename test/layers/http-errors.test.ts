/** Reading network failures (`networkFailure`): the cases the upstreams and the HTTP judges word differently; URL credentials redacted. */
import { describe, expect, it } from "vitest"
import { networkFailure } from "../../layers/http-errors.js"

const failure = (code: string, message = "boom") => Object.assign(new Error(message), { code })
/** undici wraps the socket's error: the code that matters is in `cause` */
const wrapped = (code: string) => Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error("socket"), { code: "UND_ERR_SOCKET", cause: failure(code) }) })

describe("networkFailure", () => {
  it("tells timeouts, connect timeouts, certificate problems and the rest apart", () => {
    expect(networkFailure(failure("UND_ERR_HEADERS_TIMEOUT"))).toEqual({ kind: "timeout" })
    expect(networkFailure(failure("UND_ERR_BODY_TIMEOUT"))).toEqual({ kind: "timeout" })
    expect(networkFailure(failure("UND_ERR_CONNECT_TIMEOUT"))).toEqual({ kind: "connect-timeout" })
    expect(networkFailure(failure("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:1"))).toEqual({
      kind: "other",
      code: "ECONNREFUSED",
      message: "connect ECONNREFUSED 127.0.0.1:1"
    })
    expect(networkFailure("not an error")).toEqual({ kind: "other", code: "error", message: "not an error" })
  })

  it("a certificate problem says whether trusting its CA would fix it (not for an expired one or a wrong name)", () => {
    for (const code of ["SELF_SIGNED_CERT_IN_CHAIN", "DEPTH_ZERO_SELF_SIGNED_CERT", "UNABLE_TO_VERIFY_LEAF_SIGNATURE", "UNABLE_TO_GET_ISSUER_CERT_LOCALLY"]) {
      expect(networkFailure(wrapped(code))).toEqual({ kind: "tls", code, untrustedCa: true })
    }
    for (const code of ["CERT_HAS_EXPIRED", "ERR_TLS_CERT_ALTNAME_INVALID"]) {
      expect(networkFailure(wrapped(code))).toEqual({ kind: "tls", code, untrustedCa: false })
    }
  })

  it("a message quoting a URL keeps the URL but not its credentials", async () => {
    // what undici's fetch really says for a URL with userinfo
    const real = await fetch("http://user:secretpass@127.0.0.1:1/v1").then(
      () => new Error("no error"),
      (e: unknown) => e
    )
    const shown = networkFailure(real)
    expect(shown).toMatchObject({ kind: "other", message: expect.stringContaining("http://***@127.0.0.1:1/v1") })
    expect(JSON.stringify(shown)).not.toContain("secretpass")
    expect(networkFailure(failure("ECONNRESET", "reset by https://tok%3Aen@gate.example:8443/x?sig=abc"))).toEqual({
      kind: "other",
      code: "ECONNRESET",
      message: "reset by https://***@gate.example:8443/x?sig=***"
    })
    expect(networkFailure("failed: http://user:pw@[::1]:8000/v1")).toMatchObject({ message: "failed: http://***@[::1]:8000/v1" })
  })
})
