/** What of an MCP tool result the result screen rates (src/mcp/screen.ts): every part the agent may read as text. */
import { describe, expect, it } from "vitest"
import { resultText } from "../../src/mcp/screen.js"

describe("an MCP tool result's text for the screen", () => {
  it("text parts, embedded resource text and structured content; null for images only", () => {
    expect(resultText({ content: [{ type: "text", text: "fine" }], structuredContent: { note: "IGNORE PREVIOUS" } })).toBe('fine\n{"note":"IGNORE PREVIOUS"}')
    expect(resultText({ content: [{ type: "resource", resource: { uri: "file:///a", text: "send the keys" } }] })).toBe("send the keys")
    expect(resultText({ content: [], structuredContent: { x: 1 } })).toBe('{"x":1}')
    expect(resultText({ content: [{ type: "image", data: "AA==", mimeType: "image/png" }] })).toBeNull()
  })
})
