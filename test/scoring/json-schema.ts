import { isObject } from "../../src/domain/is-object.js"
/**
 * A minimal JSON Schema (draft 2020-12) validator for the keywords `docs/summary.schema.json`
 * uses: `$ref` (local `#/$defs/…`), `type` (one or a list), `const`, `enum`, `properties`,
 * `required`, `additionalProperties` (false or a schema), `items`, `anyOf`, `minimum`.
 * Annotations (`$schema`, `$id`, `title`, `description`) are ignored; any other keyword is an
 * error, so the schema cannot silently use something this validator does not check.
 */
export type JsonSchema = { readonly [key: string]: unknown }

const KNOWN = new Set([
  "$schema", "$id", "$defs", "title", "description",
  "$ref", "type", "const", "enum", "properties", "required", "additionalProperties", "items", "anyOf", "minimum"
])

const typeOk = (t: string, v: unknown): boolean => {
  switch (t) {
    case "null": return v === null
    case "boolean": return typeof v === "boolean"
    case "string": return typeof v === "string"
    case "number": return typeof v === "number" && Number.isFinite(v)
    case "integer": return typeof v === "number" && Number.isInteger(v)
    case "array": return Array.isArray(v)
    case "object": return isObject(v)
    default: throw new Error(`unknown type ${t}`)
  }
}

const equal = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

/** Every violation as `<path>: <what>`; [] when `value` is valid. */
export const validate = (root: JsonSchema, value: unknown): Array<string> => {
  const errors: Array<string> = []
  const resolve = (ref: string): JsonSchema => {
    const m = /^#\/\$defs\/(.+)$/.exec(ref)
    const defs = root.$defs
    const target = m !== null && isObject(defs) ? defs[m[1]!] : undefined
    if (!isObject(target)) throw new Error(`unresolvable $ref ${ref}`)
    return target
  }
  const check = (schema: JsonSchema, v: unknown, at: string, out: Array<string>): void => {
    for (const k of Object.keys(schema)) if (!KNOWN.has(k)) throw new Error(`${at}: unsupported keyword ${k}`)
    if (typeof schema.$ref === "string") check(resolve(schema.$ref), v, at, out)
    if (schema.type !== undefined) {
      const types = Array.isArray(schema.type) ? (schema.type as Array<string>) : [schema.type as string]
      if (!types.some((t) => typeOk(t, v))) {
        out.push(`${at}: expected ${types.join(" | ")}, got ${JSON.stringify(v)?.slice(0, 60)}`)
        return
      }
    }
    if ("const" in schema && !equal(schema.const, v)) out.push(`${at}: expected ${JSON.stringify(schema.const)}`)
    if (Array.isArray(schema.enum) && !schema.enum.some((e) => equal(e, v))) out.push(`${at}: not one of ${JSON.stringify(schema.enum)}`)
    if (typeof schema.minimum === "number" && typeof v === "number" && v < schema.minimum) out.push(`${at}: below ${schema.minimum}`)
    if (Array.isArray(schema.anyOf)) {
      const branches = (schema.anyOf as Array<JsonSchema>).map((s) => {
        const e: Array<string> = []
        check(s, v, at, e)
        return e
      })
      if (!branches.some((e) => e.length === 0)) out.push(...branches.flat())
    }
    if (isObject(v)) {
      const props = isObject(schema.properties) ? schema.properties : {}
      for (const r of Array.isArray(schema.required) ? (schema.required as Array<string>) : []) {
        if (!(r in v)) out.push(`${at}: missing ${r}`)
      }
      for (const [k, x] of Object.entries(v)) {
        const p = props[k]
        if (isObject(p)) check(p, x, `${at}.${k}`, out)
        else if (schema.additionalProperties === false) out.push(`${at}: unexpected key ${k}`)
        else if (isObject(schema.additionalProperties)) check(schema.additionalProperties, x, `${at}.${k}`, out)
      }
    }
    if (Array.isArray(v) && isObject(schema.items)) {
      for (const [i, x] of v.entries()) check(schema.items, x, `${at}[${i}]`, out)
    }
  }
  check(root, value, "$", errors)
  return errors
}
