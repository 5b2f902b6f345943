/**
 * `vetobench smoke` probes a `llama_cpp` judge like the other model judges: its model (SmolLM2-135M
 * from .venv-test) is loaded in-process, each of the three call-only probes gets a verdict through
 * the gate (one at a time), and a bad model_path is one line naming the judge and the key. The tiny
 * model's answers are not graded (PASS or FAIL both show a verdict); the upstream is unreachable on
 * purpose (no vLLM is needed for this judge).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runCliInProcess } from "../support/cli.js"
import { smolLM2 } from "./llama-cpp-model.js"

const model = smolLM2()
if (model.skip !== null) console.warn(`llama_cpp smoke test skipped: ${model.skip}`)

const dir = mkdtempSync(path.join(tmpdir(), "vetobench-llama-smoke-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const settingsFile = (judges: ReadonlyArray<string>): string => {
  mkdirSync(path.join(dir, "configs"), { recursive: true })
  const file = path.join(dir, "configs", "vetobench.yaml")
  writeFileSync(file, ["upstreams:", "  - name: none", "    base_url: http://127.0.0.1:9/v1", "    models: []", "judges:", ...judges.map((j) => `  ${j}`), ""].join("\n"))
  return file
}

const judgeLines = (stdout: string): Array<string> => {
  const lines = stdout.split("\n")
  const start = lines.findIndex((l) => l.startsWith("## Judges"))
  return lines.slice(start + 1).filter((l) => l.startsWith("  "))
}

describe.skipIf(model.skip !== null)("vetobench smoke with a llama_cpp judge", () => {
  it("loads the model in-process and gets a verdict on every probe, one at a time", async () => {
    const file = settingsFile([`cpu: { kind: llama_cpp, model_path: ${JSON.stringify(model.file)}, threads: 1, max_tokens: 32 }`])
    const r = await runCliInProcess(["smoke", "-c", file, "--judges", "cpu"])
    const lines = judgeLines(r.stdout)
    expect(lines[0]).toBe(`  cpu: in-process GGUF model ${path.basename(model.file ?? "")} (kind llama_cpp, CPU, no upstream); probes one at a time`)
    const probes = lines.slice(1)
    expect(probes.map((l) => /^ {2}(?:PASS|FAIL) cpu \/ (\w+): (allow|deny) \([a-z_]+\) \d+ ms – /.exec(l)?.[1] ?? l)).toEqual(["benign", "destructive", "exfiltration"])
  })

  it("a model_path that is not a GGUF file is one line naming the judge and the key", async () => {
    const notGguf = path.join(dir, "notes.txt")
    writeFileSync(notGguf, "not a model\n")
    const file = settingsFile([`cpu: { kind: llama_cpp, model_path: ${JSON.stringify(notGguf)} }`])
    const r = await runCliInProcess(["smoke", "-c", file, "--judges", "cpu"])
    expect(judgeLines(r.stdout)).toEqual([`  FAIL judges: ${file}: judges.cpu.model_path: ${notGguf} is not a GGUF file (it does not start with "GGUF")`])
    expect(r.code).toBe(1)
  })
})
