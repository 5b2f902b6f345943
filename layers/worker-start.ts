/**
 * Starting one of our worker threads: `dist/<name>.mjs` beside the CLI bundle, or the TypeScript source
 * `layers/<name>.ts` through tsx when this module runs from source (development, tests, benches).
 */
import { Worker } from "node:worker_threads"

export type WorkerName = "chain-worker"

export const startWorker = (name: WorkerName): Worker =>
  import.meta.url.endsWith(".ts")
    ? new Worker(`import("tsx/esm/api").then(({ register }) => { register(); return import(require("node:worker_threads").workerData.url) })`, {
        eval: true,
        workerData: { url: new URL(`./${name}.ts`, import.meta.url).href }
      })
    : new Worker(new URL(`./${name}.mjs`, import.meta.url))
