/**
 * A small JSON Schema (draft 2020-12) validator for the keywords `docs/summary.schema.json` uses —
 * no validator package is installed. Local `$ref`s (`#/$defs/…`), `type`, `const`, `enum`,
 * `properties`, `required`, `additionalProperties`, `patternProperties`, `propertyNames`, `items`,
 * `minItems`/`maxItems`, `minimum`/`maximum`/`exclusiveMinimum`/`exclusiveMaximum`, `minLength`,
 * `pattern`, `anyOf`/`oneOf`/`allOf`/`not`. Any other assertion keyword throws, so a schema using
 * something this validator does not know can never pass silently.
 */

type Schema = boolean | { readonly [k: string]: unknown }

const ANNOTATIONS = new Set(["$schema", "$id", "$comment", "$defs", "definitions", "title", "description", "default", "examples", "format", "readOnly", "writeOnly", "deprecated"])
const KNOWN = new Set([
  "$ref",
  "type",
  "const",
  "enum",
  "properties",
  "required",
  "additionalProperties",
  "patternProperties",
  "propertyNames",
  "items",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "pattern",
  "anyOf",
  "oneOf",
  "allOf",
  "not"
])

const isObj = (v: unknown): v is { readonly [k: string]: unknown } => typeof v === "object" && v !== null && !Array.isArray(v)

const typeOf = (v: unknown): string =>
  v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "number" ? (Number.isInteger(v) ? "integer" : "number") : typeof v

const hasType = (v: unknown, t: string): boolean => {
  const actual = typeOf(v)
  return actual === t || (t === "number" && actual === "integer")
}

const deepEqual = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

/** All errors of `value` against `root` (empty = valid), each `<json pointer>: <message>`. */
export const validate = (root: Schema, value: unknown): Array<string> => {
  const errors: Array<string> = []
  const resolve = (ref: string): Schema => {
    if (!ref.startsWith("#/")) throw new Error(`unsupported $ref ${ref}`)
    let node: unknown = root
    for (const part of ref.slice(2).split("/").map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))) {
      node = isObj(node) ? node[part] : undefined
    }
    if (!isObj(node) && typeof node !== "boolean") throw new Error(`unresolved $ref ${ref}`)
    return node
  }
  const check = (schema: Schema, v: unknown, at: string, out: Array<string>): void => {
    if (schema === true) return
    if (schema === false) {
      out.push(`${at}: not allowed`)
      return
    }
    for (const k of Object.keys(schema)) if (!KNOWN.has(k) && !ANNOTATIONS.has(k)) throw new Error(`${at}: unsupported schema keyword ${k}`)
    const s = schema
    if (typeof s.$ref === "string") check(resolve(s.$ref), v, at, out)
    if (s.type !== undefined) {
      const types = Array.isArray(s.type) ? s.type.map(String) : [String(s.type)]
      if (!types.some((t) => hasType(v, t))) out.push(`${at}: expected ${types.join(" | ")}, got ${typeOf(v)}`)
    }
    if ("const" in s && !deepEqual(s.const, v)) out.push(`${at}: expected const ${JSON.stringify(s.const)}`)
    if (Array.isArray(s.enum) && !s.enum.some((e) => deepEqual(e, v))) out.push(`${at}: not in enum ${JSON.stringify(s.enum)}`)
    if (typeof v === "number") {
      if (typeof s.minimum === "number" && v < s.minimum) out.push(`${at}: ${v} < minimum ${s.minimum}`)
      if (typeof s.maximum === "number" && v > s.maximum) out.push(`${at}: ${v} > maximum ${s.maximum}`)
      if (typeof s.exclusiveMinimum === "number" && v <= s.exclusiveMinimum) out.push(`${at}: ${v} <= exclusiveMinimum ${s.exclusiveMinimum}`)
      if (typeof s.exclusiveMaximum === "number" && v >= s.exclusiveMaximum) out.push(`${at}: ${v} >= exclusiveMaximum ${s.exclusiveMaximum}`)
    }
    if (typeof v === "string") {
      if (typeof s.minLength === "number" && [...v].length < s.minLength) out.push(`${at}: shorter than ${s.minLength}`)
      if (typeof s.pattern === "string" && !new RegExp(s.pattern, "u").test(v)) out.push(`${at}: does not match ${s.pattern}`)
    }
    if (Array.isArray(v)) {
      if (typeof s.minItems === "number" && v.length < s.minItems) out.push(`${at}: fewer than ${s.minItems} items`)
      if (typeof s.maxItems === "number" && v.length > s.maxItems) out.push(`${at}: more than ${s.maxItems} items`)
      if (isObj(s.items) || typeof s.items === "boolean") {
        const items = s.items
        v.forEach((x, i) => check(items, x, `${at}/${i}`, out))
      }
    }
    if (isObj(v)) {
      const props = isObj(s.properties) ? s.properties : {}
      const patterns = isObj(s.patternProperties) ? Object.entries(s.patternProperties) : []
      if (Array.isArray(s.required)) for (const r of s.required) if (!(String(r) in v)) out.push(`${at}: missing required ${String(r)}`)
      for (const [k, x] of Object.entries(v)) {
        const where = `${at}/${k}`
        if (s.propertyNames !== undefined) check(s.propertyNames as Schema, k, `${where} (name)`, out)
        let matched = false
        const p = props[k]
        if (p !== undefined) {
          matched = true
          check(p as Schema, x, where, out)
        }
        for (const [re, ps] of patterns) {
          if (new RegExp(re, "u").test(k)) {
            matched = true
            check(ps as Schema, x, where, out)
          }
        }
        if (!matched && s.additionalProperties !== undefined) check(s.additionalProperties as Schema, x, where, out)
      }
    }
    const branches = (key: "anyOf" | "oneOf" | "allOf"): Array<Array<string>> =>
      Array.isArray(s[key])
        ? (s[key] as ReadonlyArray<Schema>).map((b) => {
            const e: Array<string> = []
            check(b, v, at, e)
            return e
          })
        : []
    const anyOf = branches("anyOf")
    if (anyOf.length > 0 && !anyOf.some((e) => e.length === 0)) out.push(`${at}: matches no anyOf branch (${anyOf.map((e) => e[0]).join("; ")})`)
    const one = branches("oneOf")
    if (one.length > 0 && one.filter((e) => e.length === 0).length !== 1) out.push(`${at}: matches ${one.filter((e) => e.length === 0).length} oneOf branches`)
    for (const e of branches("allOf")) out.push(...e)
    if (s.not !== undefined) {
      const e: Array<string> = []
      check(s.not as Schema, v, at, e)
      if (e.length === 0) out.push(`${at}: matches a "not" schema`)
    }
  }
  check(root, value, "", errors)
  return errors
}
