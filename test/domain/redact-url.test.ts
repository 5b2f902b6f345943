/** redactUrl / redactUrlsIn: URL credentials (userinfo, credential query parameters) never shown. */
import { describe, expect, it } from "vitest"
import { isCredentialParam, redactUrl, redactUrlsIn } from "../../src/domain/redact-url.js"

describe("redactUrl", () => {
  it("replaces user and password with *** and keeps scheme, host, port and path", () => {
    expect(redactUrl("https://user:secretpass@host/v1")).toBe("https://***@host/v1")
    expect(redactUrl("http://user:secretpass@10.0.0.5:8000/v1")).toBe("http://***@10.0.0.5:8000/v1")
  })

  it("a user alone (a token used as the user name) and a password alone are redacted too", () => {
    expect(redactUrl("https://ghp_abcdef123456@host/v1")).toBe("https://***@host/v1")
    expect(redactUrl("http://:pw@host/v1")).toBe("http://***@host/v1")
  })

  it("percent-encoded userinfo, and an unencoded @ or : in the password", () => {
    expect(redactUrl("https://us%40er:p%3Ass%2F@host/v1")).toBe("https://***@host/v1")
    expect(redactUrl("https://user:p@ss:w@rd@host/v1")).toBe("https://***@host/v1")
    // a space or a quote in the password: WHATWG accepts both (percent-encoding them)
    expect(redactUrl('http://user:pa ss"x@host/v1')).toBe("http://***@host/v1")
  })

  it("IPv6 hosts keep their brackets and port", () => {
    expect(redactUrl("https://user:pw@[::1]:8000/v1")).toBe("https://***@[::1]:8000/v1")
    expect(redactUrl("http://admin@[2001:db8::7]/v1")).toBe("http://***@[2001:db8::7]/v1")
    expect(redactUrl("http://[::1]:8000/v1")).toBe("http://[::1]:8000/v1")
  })

  it("values of credential-like query and fragment parameters, case-insensitive; other parameters stay", () => {
    expect(redactUrl("https://host/v1?api_key=abc&x=1")).toBe("https://host/v1?api_key=***&x=1")
    expect(redactUrl("https://host/v1?KEY=a&ApiKey=b&Token=c&access_token=d&password=e&secret=f&sig=g&model=m")).toBe(
      "https://host/v1?KEY=***&ApiKey=***&Token=***&access_token=***&password=***&secret=***&sig=***&model=m"
    )
    expect(redactUrl("https://u:p@host/v1?x-api-key=k#access_token=t&state=s")).toBe("https://***@host/v1?x-api-key=***#access_token=***&state=s")
    // an empty value has nothing to hide
    expect(redactUrl("https://host/v1?token=")).toBe("https://host/v1?token=")
  })

  it("a URL without credentials comes back exactly as given (not normalised)", () => {
    for (const url of ["http://host", "http://HOST:8000/v1/", "https://host/a/@scope/pkg", "http://@host", "https://host/v1?model=x&keys=2"]) {
      expect(redactUrl(url)).toBe(url)
    }
  })

  it("is idempotent", () => {
    const once = redactUrl("https://user:pw@host/v1?token=t")
    expect(redactUrl(once)).toBe(once)
    expect(redactUrlsIn(once)).toBe(once)
  })

  it("forms WHATWG parsing accepts: no slashes, backslashes, upper-case scheme", () => {
    expect(redactUrl("http:user:pass@host/v1")).toBe("http:***@host/v1")
    expect(redactUrl("http:\\\\user:pass@host/v1")).toBe("http:\\\\***@host/v1")
    expect(redactUrl("HTTPS://USER:PASS@HOST/V1")).toBe("HTTPS://***@HOST/V1")
  })

  it("invalid or scheme-less URLs (as quoted by config errors) are redacted eagerly", () => {
    // '/' in the password: not a valid URL; everything before the last @ is userinfo
    expect(redactUrl("http://user:pa/ss@host/v1")).toBe("http://***@host/v1")
    expect(redactUrl("user:pass@host:8000/v1")).toBe("***@host:8000/v1")
    expect(redactUrl("ftp://user:pass@host/")).toBe("ftp://***@host/")
  })
})

describe("redactUrlsIn", () => {
  it("text without a URL comes back unchanged", () => {
    for (const text of ["", "connect ECONNREFUSED 127.0.0.1:1", "mail bob@example.com at 10:30", "TypeError: fetch failed", "node:internal/x file:///a.ts:12:5"]) {
      expect(redactUrlsIn(text)).toBe(text)
    }
  })

  it("punctuation after a URL is not part of it", () => {
    for (const text of ["toolgate http://127.0.0.1:41729: unreachable", "see (http://h:80/x).", "at http://[::1]:8000, then", "http://h:8000/v1?x=1;"]) {
      expect(redactUrlsIn(text)).toBe(text)
    }
    expect(redactUrlsIn("toolgate http://u:pw@127.0.0.1:41729: unreachable")).toBe("toolgate http://***@127.0.0.1:41729: unreachable")
  })

  it("redacts every URL in a text, leaving the rest alone", () => {
    expect(redactUrlsIn("a http://u:p@h1/x and (https://k@h2) and ws://x:y@h3:9/s, done http://h4/ok")).toBe(
      "a http://***@h1/x and (https://***@h2) and ws://***@h3:9/s, done http://h4/ok"
    )
  })

  it("undici's fetch error, which quotes the URL with its credentials", async () => {
    const message = await fetch("http://user:secretpass@127.0.0.1:1/v1/models").then(
      () => "",
      (e: unknown) => (e instanceof Error ? e.message : String(e))
    )
    expect(message).toContain("secretpass") // what undici says
    const shown = redactUrlsIn(message)
    expect(shown).not.toContain("secretpass")
    expect(shown).not.toContain("user:")
    expect(shown).toContain("http://***@127.0.0.1:1/v1/models")
  })

  it("URLs quoted in JSON or glued to other text", () => {
    expect(redactUrlsIn('got "http://user:secretpass@host/v1"')).toBe('got "http://***@host/v1"')
    // a quote inside the password, escaped by JSON.stringify: the userinfo still ends at its @
    expect(redactUrlsIn(`got ${JSON.stringify('http://user:se"cret@host/v1')}`)).toBe('got "http://***@host/v1"')
    expect(redactUrlsIn("Error:http://u:secretpass@h/v1")).toBe("Error:http://***@h/v1")
    expect(redactUrlsIn("1http://u:secretpass@h/v1")).toBe("1http://***@h/v1")
    expect(redactUrlsIn('expected an http(s) URL, got "user:secretpass@host:8000/v1"')).toBe('expected an http(s) URL, got "***@host:8000/v1"')
  })

  it("credential query values inside text; punctuation closing the URL stays", () => {
    expect(redactUrlsIn("see http://host/v1?token=abc&x=2, ok")).toBe("see http://host/v1?token=***&x=2, ok")
    expect(redactUrlsIn("failed (http://host/v1?api_key=abc). Retry")).toBe("failed (http://host/v1?api_key=***). Retry")
    // redacting twice changes nothing
    expect(redactUrlsIn("(http://***@host/v1?api_key=***)")).toBe("(http://***@host/v1?api_key=***)")
  })

  it("known URLs: their secrets are scrubbed wherever they appear, raw or percent-decoded", () => {
    const known = ["http://user:s%40cret-pw@host/v1", "https://tok_123456@gate", "https://host/v1?api_key=kkkk-1234"]
    expect(redactUrlsIn("password s@cret-pw or s%40cret-pw; tok_123456; kkkk-1234; user stays", known)).toBe(
      "password *** or ***; ***; ***; user stays"
    )
    // short secrets are left to the URL rules (a 3-letter password would otherwise mangle text)
    expect(redactUrlsIn("abc", ["http://u:abc@h"])).toBe("abc")
  })
})

describe("isCredentialParam", () => {
  it("names that look like credentials, case-insensitive, also as the last part of a longer name", () => {
    for (const name of ["key", "api_key", "apikey", "api-key", "token", "access_token", "password", "secret", "sig", "X-Amz-Signature", "client_secret", "api%5Fkey"]) {
      expect(isCredentialParam(name), name).toBe(true)
    }
    for (const name of ["model", "keys", "monkey", "tokens", "x", "signed"]) {
      expect(isCredentialParam(name), name).toBe(false)
    }
  })
})
