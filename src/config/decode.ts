/**
 * Small hand-written decoders for config trees. Each decoder gets a `Node` (value + key path +
 * file context) and returns `Either<A, ConfigError>`, so every error names file, key path and reason.
 *
 * Booleans and numbers may be given as strings only when the string came from a `${…}`
 * expansion (environment values are always strings); a literal YAML string is an error.
 */
import { Either } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { didYouMeanClause } from "../domain/suggest.js"
import { ConfigError } from "./errors.js"
import { isPlainObject } from "./expand.js"
import { childPath, indexPath } from "./key-path.js"

export interface DecodeContext {
  readonly file: string
  readonly root: string
  /** key paths whose string value came from an environment expansion */
  readonly expanded: ReadonlySet<string>
}

export class Node {
  constructor(readonly ctx: DecodeContext, readonly path: string, readonly value: unknown) {}

  /** true when the value is a string produced by `${…}` expansion */
  get expanded(): boolean {
    return typeof this.value === "string" && this.ctx.expanded.has(this.path)
  }
  /** absent or YAML null: optional keys take their default */
  get isMissing(): boolean {
    return this.value === undefined || this.value === null
  }
  child(key: string, value: unknown): Node {
    return new Node(this.ctx, childPath(this.path, key), value)
  }
  at(index: number, value: unknown): Node {
    return new Node(this.ctx, indexPath(this.path, index), value)
  }
  error(reason: string): ConfigError {
    return new ConfigError({ file: this.ctx.file, path: this.path, reason })
  }
  fail<A = never>(reason: string): Either.Either<A, ConfigError> {
    return Either.left(this.error(reason))
  }
}

export type Decoder<A> = (node: Node) => Either.Either<A, ConfigError>

const describe = (value: unknown): string =>
  value === undefined ? "nothing" : value === null ? "null" : Array.isArray(value) ? "a list" : typeof value === "object" ? "a mapping" : `${typeof value} ${JSON.stringify(value)}`

// ---------------------------------------------------------------------------------------------
// scalars

export const string: Decoder<string> = (n) =>
  typeof n.value === "string" ? Either.right(n.value) : n.fail(`expected a string, got ${describe(n.value)}`)

export const nonEmptyString: Decoder<string> = (n) =>
  Either.flatMap(string(n), (s) => (s.trim() === "" ? n.fail("must not be empty") : Either.right(s)))

export const boolean: Decoder<boolean> = (n) => {
  if (typeof n.value === "boolean") return Either.right(n.value)
  if (n.expanded && (n.value === "true" || n.value === "false")) return Either.right(n.value === "true")
  const hint = n.value === "true" || n.value === "false" ? " (write it without quotes)" : ""
  return n.fail(`expected true or false, got ${describe(n.value)}${hint}`)
}

const NUMERIC = /^\s*-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/

export interface NumberRule {
  readonly integer?: boolean
  readonly min?: number
  readonly max?: number
  /** value must be strictly greater than 0 */
  readonly positive?: boolean
}

export const number = (rule: NumberRule = {}): Decoder<number> => (n) => {
  const raw = n.value
  const value = typeof raw === "number" ? raw : n.expanded && typeof raw === "string" && NUMERIC.test(raw) ? Number(raw) : undefined
  if (value === undefined || !Number.isFinite(value)) {
    return n.fail(`expected ${rule.integer ? "an integer" : "a number"}, got ${describe(raw)}`)
  }
  if (rule.integer && !Number.isInteger(value)) return n.fail(`expected an integer, got ${value}`)
  if (rule.positive && !(value > 0)) return n.fail(`must be greater than 0, got ${value}`)
  if (rule.min !== undefined && value < rule.min) return n.fail(`must be at least ${rule.min}, got ${value}`)
  if (rule.max !== undefined && value > rule.max) return n.fail(`must be at most ${rule.max}, got ${value}`)
  return Either.right(value)
}

export const literal = <const L extends ReadonlyArray<string>>(...allowed: L): Decoder<L[number]> => (n) =>
  typeof n.value === "string" && allowed.includes(n.value)
    ? Either.right(n.value)
    : n.fail(`expected one of ${allowed.join(", ")}, got ${describe(n.value)}`)

/** A path relative to the repo root (absolute paths are kept); the result is absolute. */
export const rootPath: Decoder<string> = (n) =>
  Either.map(nonEmptyString(n), (p) => path.resolve(n.ctx.root, p))

/** A root-relative path to an existing file. */
export const existingFile = (what: string): Decoder<string> => (n) =>
  Either.flatMap(rootPath(n), (abs) => {
    const stat = fs.statSync(abs, { throwIfNoEntry: false })
    if (stat === undefined) return n.fail(`${what} not found: ${abs}`)
    if (!stat.isFile()) return n.fail(`${what} is not a file: ${abs}`)
    return Either.right(abs)
  })

// ---------------------------------------------------------------------------------------------
// collections

export const mapping: Decoder<Readonly<Record<string, unknown>>> = (n) =>
  isPlainObject(n.value) ? Either.right(n.value) : n.fail(`expected a mapping, got ${describe(n.value)}`)

export const list = <A>(item: Decoder<A>): Decoder<ReadonlyArray<A>> => (n) => {
  if (!Array.isArray(n.value)) return n.fail(`expected a list, got ${describe(n.value)}`)
  const out: Array<A> = []
  for (const [i, v] of n.value.entries()) {
    const r = item(n.at(i, v))
    if (Either.isLeft(r)) return Either.left(r.left)
    out.push(r.right)
  }
  return Either.right(out)
}

/** A mapping from arbitrary keys to values of one kind (`aliases`, `judges`, …). */
export const record = <A>(item: Decoder<A>): Decoder<Readonly<Record<string, A>>> => (n) =>
  Either.flatMap(mapping(n), (obj) => {
    const entries: Array<[string, A]> = []
    for (const [key, v] of Object.entries(obj)) {
      const r = item(n.child(key, v))
      if (Either.isLeft(r)) return Either.left(r.left)
      entries.push([key, r.right])
    }
    return Either.right(Object.fromEntries(entries))
  })

/**
 * A mapping with a fixed set of keys. Unknown keys are rejected with the list of allowed ones (and
 * the closest one first: `unknown key; did you mean 'timeout_s'? (allowed: …)`);
 * `get(key, decoder, fallback)` reads one key, using `fallback` when absent or null.
 */
export interface Fields {
  readonly node: Node
  /** the node of one key, present or not (for decoders that handle absence themselves) */
  child(key: string): Node
  get<A>(key: string, decoder: Decoder<A>): Either.Either<A, ConfigError>
  get<A, B>(key: string, decoder: Decoder<A>, fallback: B): Either.Either<A | B, ConfigError>
}

export const fields = (n: Node, allowed: ReadonlyArray<string>): Either.Either<Fields, ConfigError> =>
  Either.flatMap(n.isMissing ? Either.right<Readonly<Record<string, unknown>>>({}) : mapping(n), (obj) => {
    const unknown = Object.keys(obj).find((k) => !allowed.includes(k))
    if (unknown !== undefined) {
      const clause = didYouMeanClause(unknown, allowed)
      const hint = clause === "" ? "" : `; ${clause}`
      return Either.left(n.child(unknown, obj[unknown]).error(`unknown key${hint} (allowed: ${allowed.join(", ")})`))
    }
    const child = (key: string) => n.child(key, Object.hasOwn(obj, key) ? obj[key] : undefined)
    const get = <A, B>(key: string, decoder: Decoder<A>, ...fallback: [] | [B]) => {
      const node = child(key)
      if (!node.isMissing) return decoder(node)
      return fallback.length === 1 ? Either.right(fallback[0]) : node.fail("is required")
    }
    const result: Fields = { node: n, child, get }
    return Either.right(result)
  })
