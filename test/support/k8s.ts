/** Reading Kubernetes manifests in tests: typed accessors that fail with the path, and quantities. */
export type Obj = Readonly<Record<string, unknown>>

export const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v)
export const obj = (v: unknown, what: string): Obj => {
  if (!isObj(v)) throw new Error(`${what}: expected a mapping, got ${JSON.stringify(v)}`)
  return v
}
export const arr = (v: unknown, what: string): ReadonlyArray<unknown> => {
  if (!Array.isArray(v)) throw new Error(`${what}: expected a list, got ${JSON.stringify(v)}`)
  return v
}
export const str = (v: unknown, what: string): string => {
  if (typeof v !== "string") throw new Error(`${what}: expected a string, got ${JSON.stringify(v)}`)
  return v
}
export const num = (v: unknown, what: string): number => {
  if (typeof v !== "number") throw new Error(`${what}: expected a number, got ${JSON.stringify(v)}`)
  return v
}
/** `at(x, "spec.template.spec")`: walk mappings; undefined when a step is missing. */
export const at = (v: unknown, path: string): unknown =>
  path.split(".").reduce<unknown>((cur, key) => (isObj(cur) ? cur[key] : undefined), v)
export const objs = (v: unknown, what: string): ReadonlyArray<Obj> => arr(v, what).map((x, i) => obj(x, `${what}[${i}]`))

export const GI = 1024 ** 3
export const MEMORY_UNITS: Readonly<Record<string, number>> = {
  "": 1, K: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: 1024 ** 2, Gi: GI, Ti: 1024 ** 4
}
/** A Kubernetes memory quantity in bytes ("32Gi", "500M", 1024). */
export const memoryBytes = (q: unknown): number => {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|K|M|G|T|)$/.exec(String(q))
  if (m === null) throw new Error(`not a memory quantity: ${JSON.stringify(q)}`)
  return Number(m[1]) * MEMORY_UNITS[m[2] ?? ""]!
}
/** A Kubernetes CPU quantity in cores ("4", "500m", 2). */
export const cpuCores = (q: unknown): number => {
  const m = /^(\d+(?:\.\d+)?)(m?)$/.exec(String(q))
  if (m === null) throw new Error(`not a CPU quantity: ${JSON.stringify(q)}`)
  return Number(m[1]) / (m[2] === "m" ? 1000 : 1)
}

