/** `vetobench fake-vllm --port N` — the GPU-free stand-in for vLLM, until interrupted. */
import { Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
import { serveFakeVllm } from "../../layers/FakeVllm.js"
import { CliFailure, configOption, withShownDefault } from "./options.js"

const port = Options.integer("port").pipe(Options.withPseudoName("N"), Options.withDescription("port (0 = any free port)"), withShownDefault(18000))
const host = Options.text("host").pipe(Options.withPseudoName("HOST"), Options.withDescription("interface to bind"), withShownDefault("127.0.0.1"))

export const fakeVllmCommand = Command.make("fake-vllm", { config: configOption, port, host }, ({ host, port }) =>
  Effect.scoped(
    serveFakeVllm({ host, port, record: false }).pipe(
      Effect.mapError((e) => new CliFailure({ message: e.message })),
      Effect.tap((s) => Console.log(`fake vLLM serving ${s.url} (Ctrl-C to stop)`)),
      Effect.zipRight(Effect.never)
    )
  )
).pipe(Command.withDescription("serve a fake vLLM (agents, judges, guards, ShieldAgent) for tests and demos"))
