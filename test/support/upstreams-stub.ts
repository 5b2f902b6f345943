/** An Upstreams double for judge tests: `chat` answers `reply` and records what it was sent. */
import { Effect, Layer } from "effect"
import { type UpstreamError, Upstreams } from "../../layers/Upstreams.js"

export interface Sent {
  readonly model: string
  readonly payload: Record<string, unknown>
  readonly opts: unknown
}

export const stubUpstreams = (reply: Effect.Effect<Record<string, unknown>, UpstreamError>) => {
  const sent: Array<Sent> = []
  const unused = (what: string) => () => {
    throw new Error(`test Upstreams: ${what} not stubbed`)
  }
  const layer = Layer.succeed(
    Upstreams,
    Upstreams.of({
      resolve: unused("resolve"),
      target: unused("target"),
      send: () => Effect.die("test Upstreams: send not stubbed"),
      chat: (model, payload, opts) => Effect.suspend(() => (sent.push({ model, payload, opts }), reply)),
      completion: () => Effect.die("test Upstreams: completion not stubbed"),
      listModels: Effect.die("test Upstreams: listModels not stubbed"),
      served: []
    })
  )
  return { sent, layer }
}
