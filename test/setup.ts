import { addEqualityTesters, it, makeMethods } from "@effect/vitest"

// once per worker process: files that share a worker (vitest.config.ts: isolate false) share vitest's testers
const added = Symbol.for("vetobench/test/effect-equality-testers")
if (!(added in globalThis)) {
  addEqualityTesters()
  Object.defineProperty(globalThis, added, { value: true })
}
// @effect/vitest's `layer(…)` assigns its own `it.effect`, `it.scoped`, … onto vitest's shared `it`:
// in a worker that runs several files, the next file's plain `it.effect` would run in that layer,
// with the live clock instead of the TestClock. Each file starts with the plain methods.
makeMethods(it)
