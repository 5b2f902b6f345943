/**
 * bench/bootstrap — seconds for one `pairedBootstrap` of 2,000 keys × 10,000 resamples (issue 23
 * target: ≤ 0.3 s), the median of `--repeats` runs after one warm-up, with the load average.
 *
 *   npx tsx bench/bootstrap.ts [--keys 2000] [--iterations 10000] [--repeats 5]
 */
import { cpus, loadavg } from "node:os"
import { pairedBootstrap } from "../src/scoring/stats.js"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const KEYS = arg("keys", 2000)
const ITERATIONS = arg("iterations", 10_000)
const REPEATS = arg("repeats", 5)

const a = new Map<string, number>(), b = new Map<string, number>()
for (let i = 0; i < KEYS; i++) {
  a.set(`task-${i}`, i % 3 === 0 ? 1 : 0)
  b.set(`task-${i}`, i % 2 === 0 ? 1 : 0)
}

console.log(`bench/bootstrap: ${KEYS} keys × ${ITERATIONS} resamples; ${cpus().length} CPUs; load average ${loadavg().map((x) => x.toFixed(2)).join(" ")}`)
pairedBootstrap(a, b, { iterations: ITERATIONS, seed: 0 })
const times: Array<number> = []
for (let r = 0; r < REPEATS; r++) {
  const t0 = performance.now()
  const x = pairedBootstrap(a, b, { iterations: ITERATIONS, seed: r })
  times.push((performance.now() - t0) / 1000)
  console.log(`  run ${r + 1}: ${times[r]!.toFixed(3)} s (d ${x.d.toFixed(4)}, interval ${x.lo.toFixed(4)} … ${x.hi.toFixed(4)})`)
}
times.sort((x, y) => x - y)
console.log(`median: ${times[Math.floor(times.length / 2)]!.toFixed(3)} s`)
