/** Starting the view server in this process on a copy of the fixture runs directory. */
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { ProxyTarget } from "../../src/view/holds.js"
import { serveView } from "../../src/view/server.js"

export const FIXTURE = path.resolve("test/fixtures/view/tree")

/** A fresh copy of test/fixtures/view/tree (tests may add files and links to it). */
export const copyFixture = (): string => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-view-")))
  fs.cpSync(FIXTURE, path.join(dir, "runs"), { recursive: true })
  return path.join(dir, "runs")
}

export interface Started {
  readonly url: string
  readonly close: () => Promise<void>
}

export const startView = async (root: string, proxy: ProxyTarget | null = null, host = "127.0.0.1"): Promise<Started> => {
  const scope = Effect.runSync(Scope.make())
  const server = await Effect.runPromise(Scope.extend(serveView({ root, host, port: 0, proxy }), scope))
  return { url: server.url.replace(/\/$/, ""), close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}
