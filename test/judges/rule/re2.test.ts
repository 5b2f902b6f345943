/** RE2 patterns as whole-value JS matchers, and the Go-compatible text helpers. */
import { describe, expect, it } from "vitest"
import { compileRe2, nestedQuantifier } from "../../../judges/rule/re2.js"
import { goEqualFold, goText, goTrimSpace, goUrlHostname, hostOf, normalizeField, plainText } from "../../../judges/rule/text.js"

const matches = (pattern: string, value: string): boolean => {
  const c = compileRe2(pattern)
  if (!c.ok) throw new Error(c.error)
  return c.regex.test(value)
}
const refused = (pattern: string): string => {
  const c = compileRe2(pattern)
  return c.ok ? "" : c.error
}

describe("RE2 → JS", () => {
  it.each([
    ["ACME-ACCT-\\d{3}", "ACME-ACCT-001", true],
    ["ACME-ACCT-\\d{3}", "ACME-ACCT-0012", false],
    ["a|b", "b", true],
    ["a|b", "ab", false],
    ["[[:alpha:]]+", "abcXYZ", true],
    ["[[:alpha:]]+", "abc1", false],
    ["[[:^digit:]]+", "abc", true],
    ["[[:^digit:]]+", "a1", false],
    ["\\Qa.b*\\E", "a.b*", true],
    ["\\Qa.b*\\E", "aXbbb", false],
    ["\\x41\\x{42}\\101", "ABA", true],
    ["(?i)acme", "ACME", true],
    ["acme", "ACME", false],
    ["(?s)a.b", "a-b", true],
    ["(?P<year>\\d{4})-(?<m>\\d{2})", "2026-11", true],
    ["[]a]+", "]a]", true],
    ["[^]a]", "b", true],
    ["[^]a]", "]", false],
    ["[a-]+", "a-a", true],
    ["\\-\\@\\#", "-@#", true],
    ["x{2,}", "xxx", true],
    ["x{,2}", "x{,2}", true],
    ["a{", "a{", true],
    ["a]", "a]", true],
    ["\\s", " ", true],
    ["\\s", "\u00a0", false],
    ["\\S", "\u00a0", true],
    ["[\\S]", "\u00a0", true],
    ["\\w+", "ab_9", true],
    ["\\W", "-", true],
    ["\\D", "x", true],
    ["\\pL+", "h\u00e9llo", true],
    ["\\p{Greek}+", "\u03b1\u03b2", true],
    ["\\p{^Greek}", "a", true],
    ["\\PL", "1", true],
    ["^abc$", "abc", true],
    ["\\Aabc\\z", "abc", true],
    ["a\\b", "a", true],
    ["^*a", "a", true],
    ["a.c", "a\u2028c", true],
    ["\\d+(?:\\.\\d{2})?", "12.50", true],
    ["[\\d.]+", "1.5", true],
    ["\u00e9+", "\u00e9\u00e9", true]
  ] as const)("%s on %j → %s", (pattern, value, want) => {
    expect(matches(pattern, value)).toBe(want)
  })

  it.each([
    ["(?<=a)b", "lookahead and lookbehind are not RE2 syntax"],
    ["(?=a)", "lookahead and lookbehind are not RE2 syntax"],
    ["(?!a)", "lookahead and lookbehind are not RE2 syntax"],
    ["(a)\\1", "backreferences are not RE2 syntax"],
    ["(?P<n>a)(?P=n)", "backreferences are not RE2 syntax"],
    ["\\k<n>", "backreferences are not RE2 syntax"],
    ["(?>a)", "atomic groups are not RE2 syntax"],
    ["(?#c)", "comments are not RE2 syntax"],
    ["a(?i)b", "only supported at the very start"],
    ["(?i:a)", "only supported at the very start"],
    ["(?U)a*", "ungreedy flag"],
    ["\\C", "any byte"],
    ["\\e", "invalid escape sequence"],
    ["\\8", "invalid escape sequence"],
    ["[\\b]", "not allowed in a character class"],
    ["(", "missing closing )"],
    [")", "unexpected )"],
    ["[a", "missing closing ]"],
    ["[z-a]", "invalid character class range"],
    ["[[:foo:]]", "invalid character class range"],
    ["a{1001}", "invalid repeat count"],
    ["a{3,2}", "invalid repeat count"],
    ["\\p{Klingon}", "unknown Unicode class"],
    ["(?P<a>x)(?P<a>y)", "duplicate capture group name"],
    ["*a", "cannot be expressed"],
    ["a**", "cannot be expressed"],
    ["a\\", "trailing backslash"]
  ] as const)("refuses %s", (pattern, error) => {
    expect(refused(pattern)).toContain(error)
  })

  it("nested quantifiers are detected (exponential backtracking risk)", () => {
    expect(nestedQuantifier("(a+)+")).toBe(true)
    expect(nestedQuantifier("(?:\\w*x?)*y")).toBe(true)
    expect(nestedQuantifier("(ab)+c*")).toBe(false)
    expect(nestedQuantifier("ACME-ACCT-\\d{3}")).toBe(false)
    expect(nestedQuantifier("[(a+)]+")).toBe(false)
  })
})

describe("Go text helpers", () => {
  it("single plain value", () => {
    for (const ok of ["abc", "a@b.example", "corp-internal://x/y", "", "caf\u00e9", "a\u00a0b", 1250, 1.5, true]) expect(plainText(ok)).not.toBeNull()
    for (const bad of [" a", "a ", "a b", "a,b", "a;b", "a<b", "a>b", 'a"b', "a'b", "a\\b", "a\tb", "a\nb", "a\u0000b", "a\u007fb", "\u00a0a", "a\u0085", null, [1], {}]) {
      expect([bad, plainText(bad)]).toEqual([bad, null])
    }
    expect(plainText(1250.0)).toBe("1250")
    expect(plainText(false)).toBe("false")
  })

  it("goText is fmt.Sprint of a JSON value", () => {
    expect(goText(null)).toBe("<nil>")
    expect(goText(["a", 1, true])).toBe("[a 1 true]")
    expect(goText({ b: 1, a: ["x"] })).toBe("map[a:[x] b:1]")
    expect(goText(1e21)).toBe("1e+21")
  })

  it("TrimSpace, EqualFold, ToLower as in Go", () => {
    expect(goTrimSpace("\u0085 x \u00a0")).toBe("x")
    expect(goTrimSpace("\ufeffx")).toBe("\ufeffx")
    expect(goEqualFold("NEW-acct", "new-ACCT")).toBe(true)
    expect(goEqualFold("\u212a", "k")).toBe(true)
    expect(goEqualFold("stra\u00dfe", "STRASSE")).toBe(false)
    expect(normalizeField(" Bank-Account ")).toBe("bank_account")
    expect(normalizeField("\u0130D")).toBe("id")
  })

  it("hostOf and Go's url.Parse", () => {
    expect(hostOf("cfo@EU.Corp.Example.")).toBe("eu.corp.example")
    expect(hostOf("https://corp.example@evil.example/x")).toBe("evil.example")
    expect(hostOf("https://user:pw@files.corp.example:8443/a?b#c")).toBe("files.corp.example")
    expect(hostOf("//x")).toBe("//x") // no "://": the whole text
    expect(goUrlHostname("corp-internal://reports/q3")).toBe("reports")
    expect(goUrlHostname("https://[::1]:80/")).toBe("::1")
    expect(goUrlHostname("https://a%zz/")).toBeNull()
    expect(goUrlHostname("https://a/%zz")).toBeNull()
    expect(goUrlHostname("https://a/#%zz")).toBeNull()
    expect(goUrlHostname("https://a{b/")).toBeNull()
    expect(goUrlHostname("https://a%2Fb/")).toBeNull()
    expect(goUrlHostname("https://a%C3%A9/")).toBe("a\u0080\u0080")
    expect(goUrlHostname("://a")).toBeNull()
    expect(goUrlHostname("mailto:a@b://c")).toBeNull()
    expect(goUrlHostname("1http://a/")).toBeNull()
    expect(goUrlHostname("https://a\u00e9/")).toBe("a\u00e9")
  })
})
