/**
 * Every route of the proxy is named once (src/proxy/paths.ts): the access log and metrics label a
 * request by its route, never `unmatched` for a route the proxy serves.
 */
import { describe, expect, it } from "vitest"
import { routeLabel } from "../../src/proxy/observe.js"
import { PROXY_PATHS } from "../../src/proxy/paths.js"

describe("route labels", () => {
  it("every gated route and every other route is its own label", () => {
    for (const p of ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/completions", "/v1/models", "/healthz", "/metrics", "/v1/holds"]) {
      expect(PROXY_PATHS.has(p)).toBe(true)
      expect(routeLabel(p)).toBe(p)
    }
    expect(routeLabel("/v1/holds/abc")).toBe("/v1/holds/:id")
    expect(routeLabel("/v1/nothing")).toBe("unmatched")
  })
})
