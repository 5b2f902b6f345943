/**
 * RE2 patterns (Go's `regexp`, as the aex-toolgate `pattern` kind uses them) as JavaScript RegExps.
 *
 * The rule judge only asks "does the whole value match?", so the translation keeps the language,
 * not the captures: every group becomes non-capturing. It walks the RE2 syntax and re-emits it in
 * the unambiguous subset of JS `u`-mode syntax (literals as `\u{…}`, Perl and POSIX classes as
 * explicit ASCII ranges, `\s` as RE2's `[\t\n\f\r ]`, `\A`/`\z` as anchors, `\Q…\E` as literals,
 * octal and `\x{…}` escapes as code points). It rejects, with a message, what RE2 rejects and a JS
 * engine would accept (lookaround, backreferences, `\k`, atomic groups, comments) and the RE2
 * features this Node cannot express (a case-insensitive flag that does not start the pattern, the
 * ungreedy flag `U`, `\C`).
 *
 * The caller anchors the result as a whole-value match: `^(?:…)$` with flags `su` (+ `i`). `s` and
 * `m` differences do not matter there: a value that reaches a pattern never contains a line break
 * (the single-plain-value test refuses CR/LF), so `(?s)` and `(?m)` are accepted and dropped.
 *
 * What cannot be made linear: JS backtracks, RE2 does not. A pattern with nested quantifiers can
 * take exponential time on a hostile value; `lint` warns about those (`nestedQuantifier`).
 */

export type Re2Translation =
  | { readonly ok: true; readonly source: string; readonly ignoreCase: boolean }
  | { readonly ok: false; readonly error: string }

type Range = readonly [number, number]
const MAX_RUNE = 0x10ffff
const MAX_REPEAT = 1000

const hex = (c: number) => `\\u{${c.toString(16)}}`

const PERL: Readonly<Record<string, ReadonlyArray<Range>>> = {
  d: [[0x30, 0x39]],
  s: [
    [0x09, 0x0a],
    [0x0c, 0x0d],
    [0x20, 0x20]
  ],
  w: [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x5f, 0x5f],
    [0x61, 0x7a]
  ]
}

const POSIX: Readonly<Record<string, ReadonlyArray<Range>>> = {
  alnum: [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x61, 0x7a]
  ],
  alpha: [
    [0x41, 0x5a],
    [0x61, 0x7a]
  ],
  ascii: [[0x00, 0x7f]],
  blank: [
    [0x09, 0x09],
    [0x20, 0x20]
  ],
  cntrl: [
    [0x00, 0x1f],
    [0x7f, 0x7f]
  ],
  digit: [[0x30, 0x39]],
  graph: [[0x21, 0x7e]],
  lower: [[0x61, 0x7a]],
  print: [[0x20, 0x7e]],
  punct: [
    [0x21, 0x2f],
    [0x3a, 0x40],
    [0x5b, 0x60],
    [0x7b, 0x7e]
  ],
  space: [
    [0x09, 0x0d],
    [0x20, 0x20]
  ],
  upper: [[0x41, 0x5a]],
  word: [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x5f, 0x5f],
    [0x61, 0x7a]
  ],
  xdigit: [
    [0x30, 0x39],
    [0x41, 0x46],
    [0x61, 0x66]
  ]
}

/** Unicode general categories RE2 knows (JS accepts them bare); anything else is a script name. */
const CATEGORIES = new Set([
  "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N", "Nd", "Nl", "No",
  "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So", "Z", "Zl", "Zp", "Zs", "Any"
])

const complement = (ranges: ReadonlyArray<Range>): Array<Range> => {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0])
  const out: Array<Range> = []
  let next = 0
  for (const [lo, hi] of sorted) {
    if (lo > next) out.push([next, lo - 1])
    next = Math.max(next, hi + 1)
  }
  if (next <= MAX_RUNE) out.push([next, MAX_RUNE])
  return out
}

const emitRanges = (ranges: ReadonlyArray<Range>): string =>
  ranges.map(([lo, hi]) => (lo === hi ? hex(lo) : `${hex(lo)}-${hex(hi)}`)).join("")

class Re2Error {
  constructor(readonly message: string) {}
}

const fail = (message: string): never => {
  throw new Re2Error(message)
}

/** Translate an RE2 pattern; the result is not yet anchored (see the module comment). */
export const translateRe2 = (pattern: string): Re2Translation => {
  try {
    return new Translator(pattern).run()
  } catch (e) {
    if (e instanceof Re2Error) return { ok: false, error: e.message }
    throw e
  }
}

/** Translate and compile as a whole-value matcher; Left = why the pattern is refused. */
export const compileRe2 = (pattern: string): { readonly ok: true; readonly regex: RegExp } | { readonly ok: false; readonly error: string } => {
  const t = translateRe2(pattern)
  if (!t.ok) return t
  try {
    return { ok: true, regex: new RegExp(`^(?:${t.source})$`, t.ignoreCase ? "isu" : "su") }
  } catch (e) {
    return { ok: false, error: `cannot be expressed as a JavaScript RegExp: ${e instanceof Error ? e.message : String(e)}` }
  }
}

class Translator {
  private i = 0
  private out = ""
  private depth = 0
  private ignoreCase = false
  /** nothing has been emitted yet at the top level (a leading `(?i)` is allowed) */
  private atStart = true
  private readonly names = new Set<string>()

  constructor(private readonly p: string) {}

  run(): Re2Translation {
    const p = this.p
    while (this.i < p.length) {
      const c = p[this.i]!
      switch (c) {
        case "(":
          this.group()
          break
        case ")":
          if (this.depth === 0) fail("unexpected ): missing opening (")
          this.depth--
          this.emit(")")
          this.i++
          break
        case "|":
          this.emit("|")
          this.i++
          break
        case "[":
          this.emit(`[${this.classBody()}]`)
          break
        case "\\":
          this.escape()
          break
        case ".":
          this.emit(".")
          this.i++
          break
        case "^":
          this.emit("(?:^)")
          this.i++
          break
        case "$":
          this.emit("(?:$)")
          this.i++
          break
        case "*":
        case "+":
        case "?":
          this.i++
          this.emit(c + this.lazy())
          break
        case "{": {
          const rep = this.repeat()
          if (rep === null) {
            this.emit("\\{")
            this.i++
          } else {
            this.emit(rep + this.lazy())
          }
          break
        }
        default: {
          const cp = p.codePointAt(this.i)!
          this.literal(cp)
          this.i += cp > 0xffff ? 2 : 1
        }
      }
    }
    if (this.depth > 0) fail("missing closing )")
    return { ok: true, source: this.out, ignoreCase: this.ignoreCase }
  }

  private emit(s: string) {
    this.out += s
    this.atStart = false
  }

  private literal(cp: number) {
    const ch = String.fromCodePoint(cp)
    this.emit(/[A-Za-z0-9_ !"#%&',\-:;<=>@`~]/.test(ch) || cp > 0x7f ? ch : hex(cp))
  }

  private lazy(): string {
    if (this.p[this.i] === "?") {
      this.i++
      return "?"
    }
    return ""
  }

  /** `{n}`, `{n,}`, `{n,m}` at this.i (consumed), or null when `{` is a literal. */
  private repeat(): string | null {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(this.p.slice(this.i))
    if (m === null) return null
    const n = Number(m[1])
    const max = m[2] === undefined ? n : m[3] === "" ? -1 : Number(m[3])
    if (n > MAX_REPEAT || max > MAX_REPEAT || (max !== -1 && max < n)) fail(`invalid repeat count: \`${m[0]}\``)
    this.i += m[0].length
    return m[0]
  }

  private group() {
    const p = this.p
    const rest = p.slice(this.i)
    if (!rest.startsWith("(?")) {
      this.depth++
      this.emit("(?:")
      this.i++
      return
    }
    const named = /^\(\?P?<([^>]*)>/.exec(rest)
    if (named !== null && !rest.startsWith("(?<=") && !rest.startsWith("(?<!")) {
      const name = named[1]!
      if (!/^[A-Za-z0-9_]+$/.test(name)) fail(`invalid named capture: \`${named[0]}\``)
      if (this.names.has(name)) fail(`duplicate capture group name: \`${name}\``)
      this.names.add(name)
      this.depth++
      this.emit("(?:")
      this.i += named[0].length
      return
    }
    if (rest.startsWith("(?=") || rest.startsWith("(?!") || rest.startsWith("(?<=") || rest.startsWith("(?<!")) {
      fail("lookahead and lookbehind are not RE2 syntax")
    }
    if (rest.startsWith("(?P=") || rest.startsWith("(?P>")) fail("backreferences are not RE2 syntax")
    if (rest.startsWith("(?>")) fail("atomic groups are not RE2 syntax")
    if (rest.startsWith("(?#")) fail("comments are not RE2 syntax")
    const flags = /^\(\?([A-Za-z-]*)([):])/.exec(rest)
    if (flags === null) fail(`invalid or unsupported Perl syntax: \`${rest.slice(0, 3)}\``)
    const [whole, spec, end] = flags!
    if (spec === "" && end === ":") {
      this.depth++
      this.emit("(?:")
      this.i += whole!.length
      return
    }
    if (spec === "" || spec!.endsWith("-") || spec!.indexOf("-") !== spec!.lastIndexOf("-") || /[^imsU-]/.test(spec!)) {
      fail(`invalid or unsupported Perl syntax: \`${whole}\``)
    }
    const negated = spec!.includes("-") ? spec!.slice(spec!.indexOf("-")) : ""
    if (spec!.includes("U")) fail("the ungreedy flag (?U) is not supported; use lazy quantifiers (*?, +?)")
    let wantI = this.ignoreCase
    if (spec!.slice(0, spec!.length - negated.length).includes("i")) wantI = true
    if (negated.includes("i")) wantI = false
    if (wantI !== this.ignoreCase) {
      if (end === ")" && this.atStart && this.depth === 0) {
        this.ignoreCase = wantI
      } else {
        fail("a case-insensitive flag group is only supported at the very start of the pattern, as (?i)")
      }
    }
    this.i += whole!.length
    if (end === ":") {
      this.depth++
      this.emit("(?:")
    }
  }

  /** An escape outside a class, at this.i (the backslash). */
  private escape() {
    const p = this.p
    const c = p[this.i + 1]
    if (c === undefined) fail("trailing backslash at end of expression")
    switch (c) {
      case "A":
        this.emit("(?:^)")
        this.i += 2
        return
      case "z":
        this.emit("(?:$)")
        this.i += 2
        return
      case "b":
        this.emit("(?:\\b)")
        this.i += 2
        return
      case "B":
        this.emit("(?:\\B)")
        this.i += 2
        return
      case "Q": {
        const end = p.indexOf("\\E", this.i + 2)
        const lit = end < 0 ? p.slice(this.i + 2) : p.slice(this.i + 2, end)
        this.i = end < 0 ? p.length : end + 2
        if (lit === "") {
          this.emit("(?:)")
          return
        }
        // a following quantifier applies to the last literal only, as in RE2
        for (const ch of lit) this.literal(ch.codePointAt(0)!)
        return
      }
      case "d":
      case "s":
      case "w":
        this.emit(`[${emitRanges(PERL[c]!)}]`)
        this.i += 2
        return
      case "D":
      case "S":
      case "W":
        this.emit(`[^${emitRanges(PERL[c.toLowerCase()]!)}]`)
        this.i += 2
        return
      case "p":
      case "P":
        this.emit(this.unicodeClass())
        return
      default: {
        const cp = this.escapedChar(false)
        this.literal(cp)
      }
    }
  }

  /** `\pN`, `\p{Name}`, `\p{^Name}` (and `\P…`) at this.i; returns the JS class escape. */
  private unicodeClass(): string {
    const p = this.p
    let negate = p[this.i + 1] === "P"
    let name: string
    if (p[this.i + 2] === "{") {
      const close = p.indexOf("}", this.i + 3)
      if (close < 0) fail(`invalid character class range: \`${p.slice(this.i)}\``)
      name = p.slice(this.i + 3, close)
      this.i = close + 1
    } else {
      const ch = p[this.i + 2]
      if (ch === undefined) fail("invalid character class range: `\\p`")
      name = ch!
      this.i += 3
    }
    if (name.startsWith("^")) {
      negate = !negate
      name = name.slice(1)
    }
    if (!/^[A-Za-z_]+$/.test(name)) fail(`invalid character class range: \`\\p{${name}}\``)
    const body = CATEGORIES.has(name) ? name : `Script=${name}`
    const escape = `\\${negate ? "P" : "p"}{${body}}`
    try {
      new RegExp(escape, "u")
    } catch {
      fail(`unknown Unicode class: \`${name}\``)
    }
    return escape
  }

  /**
   * A single-character escape at this.i (backslash): octal, `\x`, `\a\f\n\r\t\v`, escaped punctuation.
   * Advances past it and returns the code point.
   */
  private escapedChar(inClass: boolean): number {
    const p = this.p
    const c = p[this.i + 1]
    if (c === undefined) return fail("trailing backslash at end of expression")
    const code = c.charCodeAt(0)
    if (c >= "1" && c <= "7") {
      const n = p[this.i + 2]
      if (n === undefined || n < "0" || n > "7") fail(`backreferences are not RE2 syntax: \`\\${c}\``)
    }
    if (c >= "0" && c <= "7") {
      const m = /^[0-7]{1,3}/.exec(p.slice(this.i + 1))!
      this.i += 1 + m[0].length
      return parseInt(m[0], 8)
    }
    switch (c) {
      case "x": {
        if (p[this.i + 2] === "{") {
          const close = p.indexOf("}", this.i + 3)
          const digits = close < 0 ? "" : p.slice(this.i + 3, close)
          if (!/^[0-9A-Fa-f]+$/.test(digits) || parseInt(digits, 16) > MAX_RUNE) fail(`invalid escape sequence: \`\\x{${digits}\``)
          this.i = close + 1
          return parseInt(digits, 16)
        }
        const digits = p.slice(this.i + 2, this.i + 4)
        if (!/^[0-9A-Fa-f]{2}$/.test(digits)) fail(`invalid escape sequence: \`\\x${digits}\``)
        this.i += 4
        return parseInt(digits, 16)
      }
      case "a":
        this.i += 2
        return 0x07
      case "f":
        this.i += 2
        return 0x0c
      case "n":
        this.i += 2
        return 0x0a
      case "r":
        this.i += 2
        return 0x0d
      case "t":
        this.i += 2
        return 0x09
      case "v":
        this.i += 2
        return 0x0b
      case "k":
        return fail("backreferences are not RE2 syntax: `\\k`")
      case "C":
        return fail("`\\C` (any byte) is not supported")
      default:
        if (code < 0x80 && !/[A-Za-z0-9]/.test(c)) {
          this.i += 2
          return code
        }
        return fail(`invalid escape sequence: \`\\${c}\`${inClass && /[AzbBQ]/.test(c) ? " (not allowed in a character class)" : ""}`)
    }
  }

  /** A bracketed class at this.i (`[`); returns the JS class body (without brackets), this.i past `]`. */
  private classBody(): string {
    const p = this.p
    const start = this.i
    this.i++
    let negate = false
    if (p[this.i] === "^") {
      negate = true
      this.i++
    }
    const ranges: Array<Range> = []
    const props: Array<string> = []
    let first = true
    while (this.i < p.length && (p[this.i] !== "]" || first)) {
      first = false
      // POSIX [:name:] / [:^name:]
      if (p.startsWith("[:", this.i)) {
        const close = p.indexOf(":]", this.i + 2)
        if (close >= 0) {
          let name = p.slice(this.i + 2, close)
          const neg = name.startsWith("^")
          if (neg) name = name.slice(1)
          const group = POSIX[name]
          if (group === undefined) fail(`invalid character class range: \`${p.slice(this.i, close + 2)}\``)
          ranges.push(...(neg ? complement(group!) : group!))
          this.i = close + 2
          continue
        }
      }
      if (p[this.i] === "\\") {
        const e = p[this.i + 1]
        if (e === "p" || e === "P") {
          props.push(this.unicodeClass())
          continue
        }
        if (e === "d" || e === "s" || e === "w") {
          ranges.push(...PERL[e]!)
          this.i += 2
          continue
        }
        if (e === "D" || e === "S" || e === "W") {
          ranges.push(...complement(PERL[e.toLowerCase()]!))
          this.i += 2
          continue
        }
      }
      const lo = this.classChar()
      let hi = lo
      if (p[this.i] === "-" && this.i + 1 < p.length && p[this.i + 1] !== "]") {
        this.i++
        hi = this.classChar()
        if (hi < lo) fail(`invalid character class range: \`${String.fromCodePoint(lo)}-${String.fromCodePoint(hi)}\``)
      }
      ranges.push([lo, hi])
    }
    if (this.i >= p.length) fail(`missing closing ]: \`${p.slice(start)}\``)
    this.i++ // ]
    return (negate ? "^" : "") + emitRanges(ranges) + props.join("")
  }

  private classChar(): number {
    const p = this.p
    if (this.i >= p.length) return fail("missing closing ]")
    if (p[this.i] === "\\") return this.escapedChar(true)
    const cp = p.codePointAt(this.i)!
    this.i += cp > 0xffff ? 2 : 1
    return cp
  }
}

/**
 * A heuristic for patterns that may backtrack exponentially in JS: a quantified group whose body
 * itself contains a quantifier (`(a+)+`, `(\w*x?)*`). RE2 runs them in linear time; JS may not.
 */
export const nestedQuantifier = (pattern: string): boolean => {
  // strip escapes and classes, then look for `( … quantifier … ) quantifier`
  const flat = pattern.replace(/\\Q[\s\S]*?(\\E|$)/g, "x").replace(/\\./g, "x").replace(/\[(\^)?\]?[^\]]*\]/g, "x")
  const stack: Array<boolean> = []
  for (let i = 0; i < flat.length; i++) {
    const c = flat[i]!
    if (c === "(") stack.push(false)
    else if (c === ")") {
      const inner = stack.pop() ?? false
      const next = flat[i + 1]
      const quantified = next === "*" || next === "+" || (next === "{" && /^\{\d+,\d*\}/.test(flat.slice(i + 1)))
      if (inner && quantified) return true
      if (inner && stack.length > 0) stack[stack.length - 1] = true
    } else if ((c === "*" || c === "+" || (c === "{" && /^\{\d+,\d*\}/.test(flat.slice(i)))) && stack.length > 0) {
      stack[stack.length - 1] = true
    }
  }
  return false
}
