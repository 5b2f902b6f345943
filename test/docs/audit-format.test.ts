/** The worked example in docs/audit-format.md is a fixture: it verifies, and its hashes follow the text. */
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { verifyChainText } from "../../src/domain/chain-verify.js"
import { canonicalize } from "../../src/domain/canonical-json.js"

const doc = readFileSync("docs/audit-format.md", "utf8")
const block = (lang: string, i = 0) => [...doc.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))][i]![1]!

describe("docs/audit-format.md worked example", () => {
  it("verifies with the project's verifier", () => {
    expect(verifyChainText(block("jsonl"))).toMatchObject({ ok: true, records: 2 })
  })

  it("matches the documented recipe, computed independently", () => {
    const [line1] = block("jsonl").split("\n")
    const { hash, ...rest } = JSON.parse(line1!) as Record<string, unknown>
    const canonical = block("text", 0).trim()
    expect(canonicalize(rest)).toBe(canonical)
    const digest = createHash("sha256").update(`vetobench/v2 record\n${canonical}`, "utf8").digest("hex")
    expect(digest).toBe(hash)
    expect(block("text", 1).trim()).toBe(hash)
  })

  it("its lines are canonical: the hashed text is the line without its hash member (the documented shortcut)", () => {
    for (const line of block("jsonl").trimEnd().split("\n")) {
      const record = JSON.parse(line) as Record<string, unknown>
      expect(canonicalize(record)).toBe(line)
      const { hash, ...rest } = record
      expect(line.replace(`,"hash":${JSON.stringify(hash)}`, "")).toBe(canonicalize(rest))
    }
    expect(block("jsonl").trimEnd().split("\n")[0]!.replace(/,"hash":"[0-9a-f]{64}"/, "")).toBe(block("text", 0).trim())
  })

  it("a tampered copy fails at the right index", () => {
    const lines = block("jsonl").trimEnd().split("\n")
    const rec = JSON.parse(lines[1]!) as { blocked: boolean }
    rec.blocked = false
    lines[1] = JSON.stringify(rec)
    expect(verifyChainText(lines.join("\n") + "\n")).toMatchObject({ ok: false, index: 2 })
  })
})
