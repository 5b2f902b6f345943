/**
 * `scripts/setup_asb_env.sh` installs torch at the version `scripts/requirements-asb.txt` pins, from
 * the CPU-wheel index only: an unpinned fallback to the default index once pulled a 6.3 GB CUDA
 * build (issue 20 §1). The script runs for real against stand-ins on PATH — a `git` that reports
 * the pinned commit, a `python3` whose venv's Python logs every pip command — so nothing is
 * downloaded.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const ROOT = path.resolve(import.meta.dirname, "../..")
const SCRIPT = path.join(ROOT, "scripts/setup_asb_env.sh")
const REQS = fs.readFileSync(path.join(ROOT, "scripts/requirements-asb.txt"), "utf8")
const PIN = /^PIN=([0-9a-f]{40})$/m.exec(fs.readFileSync(SCRIPT, "utf8"))?.[1] ?? ""

/** A sandbox: stand-in git and python3, an ASB "checkout" at the pin; `torchFails` makes the torch install fail. */
const sandbox = (torchFails: boolean) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-setup-asb-"))
  const bin = path.join(dir, "bin")
  const asb = path.join(dir, "ASB")
  const log = path.join(dir, "pip.log")
  fs.mkdirSync(bin)
  fs.mkdirSync(path.join(asb, ".git"), { recursive: true })
  fs.writeFileSync(path.join(asb, "main_attacker.py"), "")
  const exe = (file: string, text: string) => fs.writeFileSync(file, text, { mode: 0o755 })
  exe(path.join(bin, "git"), `#!/bin/sh\ncase "$*" in *rev-parse*) echo ${PIN} ;; esac\nexit 0\n`)
  // the venv's python: no torch importable; pip commands logged (the torch install fails on request)
  const venvPython = [
    "#!/bin/sh",
    `if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$*" >> ${JSON.stringify(log)}; case "$*" in *torch==*) exit ${torchFails ? 1 : 0} ;; esac; exit 0; fi`,
    `if [ "$1" = "-c" ]; then case "$2" in *"import torch"*) exit 1 ;; *) echo 3.11.9; exit 0 ;; esac; fi`,
    `if [ "$1" = "-" ]; then cat > /dev/null; echo "imports: ok"; exit 0; fi`,
    "exit 0",
    ""
  ].join("\n")
  exe(
    path.join(bin, "python3"),
    [
      "#!/bin/sh",
      `if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then mkdir -p "$3/bin"; cat > "$3/bin/python" <<'PY'\n${venvPython}PY\nchmod +x "$3/bin/python"; exit 0; fi`,
      `echo 3.11`,
      ""
    ].join("\n")
  )
  const run = () => {
    try {
      const out = execFileSync("bash", [SCRIPT], {
        env: { PATH: `${bin}:${process.env.PATH ?? ""}`, HOME: dir, ASB_DIR: asb },
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
        timeout: 60_000
      })
      return { code: 0, out }
    } catch (e) {
      const x = e as { status: number | null; stdout: string; stderr: string }
      return { code: x.status, out: `${x.stdout}${x.stderr}` }
    }
  }
  const pips = () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : [])
  return { dir, run, pips, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) }
}

describe("scripts/setup_asb_env.sh pins torch", () => {
  it("the requirements file pins torch, and the script reads its pin from there", () => {
    expect(REQS).toMatch(/^torch==\d+\.\d+\.\d+$/m)
    expect(PIN).toMatch(/^[0-9a-f]{40}$/)
  })

  it("installs exactly the pinned torch from the CPU index, then the requirements", () => {
    const pinned = /^(torch==\S+)$/m.exec(REQS)![1]!
    const s = sandbox(false)
    try {
      const r = s.run()
      expect(r.out).toContain("ASB environment OK")
      expect(r.code).toBe(0)
      expect(s.pips()).toEqual([`-m pip install -q --index-url https://download.pytorch.org/whl/cpu ${pinned}`, "-m pip install -q -r scripts/requirements-asb.txt"])
    } finally {
      s.cleanup()
    }
  })

  it("stops when the CPU index cannot serve it: no unpinned install from the default index", () => {
    const s = sandbox(true)
    try {
      const r = s.run()
      expect(r.code).toBe(1)
      expect(r.out).toMatch(/cannot install torch==\S+ from https:\/\/download\.pytorch\.org\/whl\/cpu; set TORCH_INDEX_URL/)
      expect(s.pips()).toHaveLength(1) // the one pinned attempt, nothing after it
      expect(s.pips()[0]).toMatch(/--index-url \S+ torch==\d/)
    } finally {
      s.cleanup()
    }
  })
})
