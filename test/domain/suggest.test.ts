/** "did you mean": which names are close enough to suggest, and how the hint reads. */
import { describe, expect, it } from "vitest"
import { didYouMean, didYouMeanClause, editDistance, suggest } from "../../src/domain/suggest.js"

const COMMANDS = ["proxy", "smoke", "demo", "verify-audit", "audit", "fake-vllm", "split", "scenarios", "run", "merge", "score", "replay", "report", "policy"]

describe("editDistance", () => {
  it("counts insertions, deletions, substitutions and swaps of neighbours", () => {
    expect(editDistance("", "abc")).toBe(3)
    expect(editDistance("proxy", "proxy")).toBe(0)
    expect(editDistance("prxy", "proxy")).toBe(1)
    expect(editDistance("--prot", "--port")).toBe(1)
    expect(editDistance("kitten", "sitting")).toBe(3)
  })
})

describe("suggest", () => {
  it("typos, swapped letters, another case, prefixes", () => {
    expect(suggest("prxy", COMMANDS)).toEqual(["proxy"])
    expect(suggest("rpeort", COMMANDS)).toEqual(["report"])
    expect(suggest("Proxy", COMMANDS)).toEqual(["proxy"])
    expect(suggest("--exp", ["--experiment", "--model"])).toEqual(["--experiment"])
    expect(suggest("timout_s", ["timeout_s", "connect_timeout_s", "max_connections"])).toEqual(["timeout_s"])
    expect(suggest("fail-policy", ["fail_policy", "hold_policy"])).toEqual(["fail_policy"])
  })

  it("nothing when nothing is close; never the input itself; ties in the order given, at most three", () => {
    expect(suggest("frobnicate", COMMANDS)).toEqual([])
    expect(suggest("x", COMMANDS)).toEqual([])
    expect(suggest("small", ["small", "big"])).toEqual([])
    expect(suggest("enforce", ["baseline", "enforce-small", "enforce-granite"])).toEqual(["enforce-small", "enforce-granite"])
    expect(suggest("run", ["rum", "ran", "fun", "sun"])).toEqual(["rum", "ran", "fun"])
  })
})

describe("didYouMean", () => {
  it("a parenthesised suffix, a clause, or nothing", () => {
    expect(didYouMean("smal", ["small", "big"])).toBe(" (did you mean 'small'?)")
    expect(didYouMean("nope", ["small", "big"])).toBe("")
    expect(didYouMeanClause("enforce", ["enforce-small", "enforce-granite"])).toBe("did you mean 'enforce-small' or 'enforce-granite'?")
    expect(didYouMeanClause("run", ["rum", "ran", "fun"])).toBe("did you mean 'rum', 'ran' or 'fun'?")
    expect(didYouMeanClause("nope", ["small"])).toBe("")
  })
})
