/**
 * Verdict cache (reference §2.9), keyed by judge name + judge version (prompt or policy hash) +
 * the canonical call. Bounded (least recently inserted evicted first). Only `ok` verdicts are stored.
 */
import { createHash } from "node:crypto"
import { Context, Layer, Option } from "effect"
import { canonicalize } from "../src/domain/canonical-json.js"
import type { ToolCallView } from "../src/domain/tool-call.js"
import type { Verdict } from "../src/domain/verdict.js"

export interface JudgeCacheShape {
  readonly get: (key: string) => Option.Option<Verdict>
  readonly set: (key: string, verdict: Verdict) => void
  readonly size: () => number
}

export const cacheKey = (judge: string, version: string | null, call: ToolCallView): string =>
  createHash("sha256")
    .update(canonicalize([judge, version, call.name, call.description, call.parameters, call.arguments]))
    .digest("hex")

export const makeMemoryCache = (capacity: number): JudgeCacheShape => {
  const map = new Map<string, Verdict>()
  return {
    get: (key) => Option.fromNullable(map.get(key)),
    set: (key, verdict) => {
      if (verdict.status !== "ok" || capacity <= 0) return
      map.delete(key)
      map.set(key, verdict)
      if (map.size > capacity) {
        const oldest = map.keys().next()
        if (!oldest.done) map.delete(oldest.value)
      }
    },
    size: () => map.size
  }
}

export class JudgeCache extends Context.Tag("vetobench/JudgeCache")<JudgeCache, JudgeCacheShape>() {
  static layerMemory = (capacity: number): Layer.Layer<JudgeCache> => Layer.sync(JudgeCache, () => makeMemoryCache(capacity))
  static layerNoop: Layer.Layer<JudgeCache> = Layer.succeed(JudgeCache, {
    get: () => Option.none(),
    set: () => {},
    size: () => 0
  })
}
