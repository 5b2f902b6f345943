/**
 * Every route's error shape shows a message through the same redaction (src/proxy/errors.ts
 * `clientMessage`): a URL with credentials in a message never reaches a client, whatever the format.
 */
import { describe, expect, it } from "vitest"
import { errorBody } from "../../src/proxy/errors.js"
import { messagesErrorBody, messagesErrorEvent } from "../../src/proxy/wire/messages.js"
import { responsesErrorEvent } from "../../src/proxy/wire/responses-sse.js"

const MESSAGE = "upstream error: connect ECONNREFUSED http://user:s3cret@10.0.0.1:8000/v1?api_key=k3y"

describe("error shapes redact URLs", () => {
  it("chat, Messages (body and event) and Responses (event)", () => {
    for (const text of [
      errorBody("upstream_unavailable", MESSAGE, "r1"),
      messagesErrorBody("upstream_unavailable", MESSAGE, "r1"),
      messagesErrorEvent("upstream_unavailable", MESSAGE, "r1"),
      responsesErrorEvent("upstream_unavailable", MESSAGE, 3)
    ]) {
      expect(text).toContain("ECONNREFUSED")
      expect(text).not.toContain("s3cret")
      expect(text).not.toContain("k3y")
    }
  })
  it("the Anthropic error type follows the code's status", () => {
    expect(JSON.parse(messagesErrorBody("upstream_timeout", "x", null))).toMatchObject({ type: "error", error: { type: "timeout_error", code: "upstream_timeout" } })
    expect(JSON.parse(messagesErrorBody("invalid_request", "x", null))).toMatchObject({ error: { type: "invalid_request_error" } })
  })
})
