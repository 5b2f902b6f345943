/** Read a Prometheus text exposition (what `GET /metrics` answers) into samples tests can query. */
import { Effect } from "effect"

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

export const parseExposition = (text: string): Array<Sample> =>
  text.split("\n").flatMap((line) => {
    if (line === "" || line.startsWith("#")) return []
    const m = LINE.exec(line)
    if (m === null) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, k, v] of (m[2] ?? "").matchAll(LABEL)) labels[k!] = v!.replace(/\\(.)/g, (_x, c: string) => (c === "n" ? "\n" : c))
    return [{ name: m[1]!, labels, value: m[3] === "+Inf" ? Infinity : Number(m[3]) }]
  })

/** the sum over the samples of `name` whose labels include `labels` (0 when there is none) */
export const valueOf = (samples: ReadonlyArray<Sample>, name: string, labels: Readonly<Record<string, string>> = {}): number =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0)

export interface Scrape {
  readonly status: number
  readonly contentType: string
  readonly text: string
  readonly samples: Array<Sample>
  /** `valueOf` over this scrape */
  readonly value: (name: string, labels?: Readonly<Record<string, string>>) => number
}

/** GET `<proxy>/metrics` (the proxy's base URL without `/v1`) */
export const scrape = (baseUrl: string, headers: Record<string, string> = {}) =>
  Effect.promise(async (): Promise<Scrape> => {
    const res = await fetch(`${baseUrl}/metrics`, { headers })
    const text = await res.text()
    const samples = res.status === 200 ? parseExposition(text) : []
    return { status: res.status, contentType: res.headers.get("content-type") ?? "", text, samples, value: (name, labels = {}) => valueOf(samples, name, labels) }
  })
