/**
 * Command rules of the `rule` judge's extensions (`vetobench.commands`, docs/policy.md): a shell
 * command line passes only when it is a **plain command line** — words, quoted or not, with no
 * shell syntax — whose leading words are an allowlisted command.
 *
 * The parser reads the line the way a POSIX shell would split it, far enough to see every way one
 * line can run more than one thing or run something it does not show: `|`, `||`, `&`, `&&`, `;`,
 * line breaks, backticks, `$(…)`, `${…}`, `$VAR`, redirections `<` `>`, subshells `( )`, braces,
 * history `!`, comments `#`, backslash escapes, environment assignments before the command
 * (`LD_PRELOAD=… ls`), control characters and unterminated quotes. It does not execute or expand
 * anything; it refuses. Glob characters (`*`, `?`, `[`) are ordinary: they select files, they do
 * not run commands.
 */

/** A plain command line's words, or the first construct that makes it more than one. */
export type ParsedCommand =
  | { readonly plain: true; readonly words: ReadonlyArray<string> }
  | { readonly plain: false; readonly construct: string }

const notPlain = (construct: string): ParsedCommand => ({ plain: false, construct })

/** Nothing a shell reads specially (quotes included): the line is its words, split on blanks. */
const ORDINARY = /^[^|&;\n\r`$<>(){}\\!#~='"\x00-\x08\x0b-\x1f\x7f]*$/
const BLANKS = /[ \t]+/

/** Split `line` into words, or name the first shell construct in it. */
export const parseCommand = (line: string): ParsedCommand => {
  if (ORDINARY.test(line)) return { plain: true, words: line.split(BLANKS).filter((w) => w !== "") }
  return parseSlowly(line)
}

const parseSlowly = (line: string): ParsedCommand => {
  const words: Array<string> = []
  let word = ""
  let inWord = false
  let quote: "'" | '"' | null = null
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!
    const c = line.charCodeAt(i)
    if (quote === "'") {
      if (ch === "'") quote = null
      else if (c < 0x20 || c === 0x7f) return notPlain("a control character")
      else word += ch
      continue
    }
    if (quote === '"') {
      if (ch === '"') quote = null
      else if (ch === "$") return notPlain(line[i + 1] === "(" ? "a $(…) substitution" : line[i + 1] === "{" ? "a ${…} expansion" : "a $ expansion")
      else if (ch === "`") return notPlain("a backtick substitution")
      else if (ch === "\\") return notPlain("a backslash escape")
      else if (ch === "!") return notPlain("a ! (history expansion)")
      else if (c < 0x20 || c === 0x7f) return notPlain("a control character")
      else word += ch
      continue
    }
    switch (ch) {
      case " ":
      case "\t":
        if (inWord) words.push(word)
        word = ""
        inWord = false
        continue
      case "'":
      case '"':
        quote = ch
        inWord = true
        continue
      case "|":
        return notPlain(line[i + 1] === "|" ? "|| (a second command)" : "a pipe (|)")
      case "&":
        return notPlain(line[i + 1] === "&" ? "&& (a second command)" : "& (a background command)")
      case ";":
        return notPlain("; (a second command)")
      case "\n":
      case "\r":
        return notPlain("a line break (a second command)")
      case "`":
        return notPlain("a backtick substitution")
      case "$":
        return notPlain(line[i + 1] === "(" ? "a $(…) substitution" : line[i + 1] === "{" ? "a ${…} expansion" : "a $ expansion")
      case "<":
      case ">":
        return notPlain("a redirection (< or >)")
      case "(":
      case ")":
        return notPlain("a subshell (parentheses)")
      case "{":
      case "}":
        return notPlain("braces")
      case "\\":
        return notPlain("a backslash escape")
      case "!":
        return notPlain("a ! (history expansion or negation)")
      case "#":
        if (!inWord) return notPlain("a comment (#)")
        break
      case "~":
        if (!inWord) return notPlain("a ~ (home directory expansion)")
        break
      case "=":
        if (words.length === 0) return notPlain("an environment assignment before the command")
        break
    }
    if (c < 0x20 || c === 0x7f) return notPlain("a control character")
    word += ch
    inWord = true
  }
  if (quote !== null) return notPlain("an unterminated quote")
  if (inWord) words.push(word)
  return { plain: true, words }
}

/**
 * A shell or interpreter at a command position — the start of the line, or after `|`, `;`, `&`,
 * `(`, a backtick or `$(` — possibly behind `sudo`, `env`, `xargs`, … Fed from a pipe, a
 * substitution or a process substitution it runs code the line does not show.
 */
const INTERPRETER_AT_COMMAND =
  /(?:^|[|;&(`]|\$\()\s*(?:(?:sudo|env|exec|command|nohup|xargs|time)\s+(?:-\S+\s+)*)*(?:\S*\/)?(?:sh|bash|zsh|dash|ksh|mksh|fish|csh|tcsh|busybox|python[0-9.]*|perl|ruby|node|php|lua|eval|source|\.)(?=$|[\s;|&)`'"<])/

/**
 * The line is more than a plain command and runs a shell or interpreter in it (`curl … | sh`,
 * `bash -c "$(curl …)"`, `bash <(curl …)`, `ls; sh`): denied whatever the policy's effect. (A
 * plain `bash script.sh` is judged by the allowlist like any other command.)
 */
export const feedsInterpreter = (line: string): boolean => !parseCommand(line).plain && runsInterpreter(line)

/** A shell or interpreter at a command position (call for lines that are not plain). */
export const runsInterpreter = (line: string): boolean => INTERPRETER_AT_COMMAND.test(line)

/** An allowlist: each entry's words must lead the command's words (`git status` allows `git status --short`), or equal them for `exact`. */
export interface CommandAllow {
  readonly words: ReadonlyArray<string>
  readonly exact: boolean
}

export const allowedBy = (words: ReadonlyArray<string>, allow: ReadonlyArray<CommandAllow>): CommandAllow | null => {
  outer: for (const a of allow) {
    if (words.length < a.words.length || (a.exact && words.length !== a.words.length)) continue
    for (let i = 0; i < a.words.length; i++) if (words[i] !== a.words[i]) continue outer
    return a
  }
  return null
}
