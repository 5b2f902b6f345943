/**
 * Provenance of a summary: which code, configuration and data produced its figures.
 *
 * - `vetobench_version` (`src/version.ts`) and `git_commit`: the commit checked out in the
 *   vetobench package's own directory (the nearest folder above this module whose `package.json`
 *   is named `vetobench`, when it holds `.git`), read from `.git` without running git; null for an
 *   installed package.
 * - `settings_sha256`: sha256 of the settings as loaded (defaults applied, paths resolved), as RFC
 *   8785 canonical JSON, with every secret replaced by `<redacted>`: upstream API keys, the
 *   operator and metrics tokens, credentials in URLs, and judge-spec values under a key that names
 *   a key, token, secret or password. Changing a secret does not change the hash; anything else does.
 * - `experiment_sha256`: sha256 of the experiment file's bytes; for a built-in experiment (no file),
 *   of the decoded experiment as canonical JSON.
 * - `policies`: per configured judge with a `policy` file (`kind: rule`), the file and its sha256.
 * - `data`: the benchmark files the experiment reads — Agent-SafetyBench's `released_data.json` and
 *   the split file; ASB's tasks, attacker-tool and normal-tool files — each with its sha256 (null
 *   when it cannot be read).
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Redacted } from "effect"
import { attackToolsFile, NORMAL_TOOLS_FILE, TASKS_FILE } from "../adapters/asb/data.js"
import type { Experiment } from "../config/experiment.js"
import type { Settings } from "../config/settings.js"
import { canonicalize } from "../domain/canonical-json.js"
import { isObject } from "../domain/is-object.js"
import { redactUrl } from "../domain/redact-url.js"
import { VERSION } from "../domain/version.js"
import type { HashedFile, Provenance } from "./summary-types.js"

export const SECRET = "<redacted>"

const sha256 = (data: string | Buffer): string => createHash("sha256").update(data).digest("hex")

/** sha256 of a file's bytes, null when it cannot be read. */
export const fileSha256 = (file: string): string | null => {
  try {
    return sha256(fs.readFileSync(file))
  } catch {
    return null
  }
}

const hashed = (file: string): HashedFile => ({ file, sha256: fileSha256(file) })

const SECRET_KEY = /key|token|secret|password|passwd|credential/i

/** A copy of a settings value with every secret replaced (see the module doc). */
export const withoutSecrets = (v: unknown, key = ""): unknown => {
  if (Redacted.isRedacted(v)) return SECRET
  if (typeof v === "string") return SECRET_KEY.test(key) ? SECRET : /^[a-z][a-z0-9+.-]*:\/\//i.test(v) ? redactUrl(v) : v
  if (Array.isArray(v)) return v.map((x) => withoutSecrets(x, key))
  if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, withoutSecrets(x, k)]))
  return v
}

/** Canonical JSON of a value; a value JCS refuses (a non-finite number) falls back to JSON.stringify. */
const canonicalText = (v: unknown): string => {
  try {
    return canonicalize(v)
  } catch {
    return JSON.stringify(v) ?? "null"
  }
}

/** sha256 of the settings without secrets, as canonical JSON. */
export const settingsSha256 = (settings: Settings): string => sha256(canonicalText(withoutSecrets(settings)))

/** The commit of the git checkout at `dir` (`.git` a folder or a worktree's file), or null. */
export const gitCommitAt = (dir: string): string | null => {
  try {
    let git = path.join(dir, ".git")
    if (fs.statSync(git).isFile()) {
      const m = /^gitdir:\s*(.+)$/m.exec(fs.readFileSync(git, "utf8"))
      if (m?.[1] === undefined) return null
      git = path.resolve(dir, m[1].trim())
    }
    const head = fs.readFileSync(path.join(git, "HEAD"), "utf8").trim()
    if (/^[0-9a-f]{40}$/.test(head)) return head
    const ref = /^ref:\s*(\S+)$/.exec(head)?.[1]
    if (ref === undefined) return null
    // a worktree keeps refs in the common directory
    const common = fs.existsSync(path.join(git, "commondir")) ? path.resolve(git, fs.readFileSync(path.join(git, "commondir"), "utf8").trim()) : git
    for (const base of [git, common]) {
      const loose = path.join(base, ref)
      if (fs.existsSync(loose)) {
        const id = fs.readFileSync(loose, "utf8").trim()
        if (/^[0-9a-f]{40}$/.test(id)) return id
      }
      const packed = path.join(base, "packed-refs")
      if (fs.existsSync(packed)) {
        for (const line of fs.readFileSync(packed, "utf8").split("\n")) {
          const [id, name] = line.trim().split(" ")
          if (name === ref && id !== undefined && /^[0-9a-f]{40}$/.test(id)) return id
        }
      }
    }
    return null
  } catch {
    return null
  }
}

/** The vetobench package folder above `from` (its `package.json` is named vetobench), or null. */
export const packageRoot = (from: string): string | null => {
  for (let dir = from, i = 0; i < 8; i++, dir = path.dirname(dir)) {
    const pkg = path.join(dir, "package.json")
    if (fs.existsSync(pkg)) {
      try {
        const v: unknown = JSON.parse(fs.readFileSync(pkg, "utf8"))
        return isObject(v) && v.name === "vetobench" ? dir : null
      } catch {
        return null
      }
    }
    if (path.dirname(dir) === dir) break
  }
  return null
}

const ownCommit = (): string | null => {
  const root = packageRoot(path.dirname(fileURLToPath(import.meta.url)))
  return root === null ? null : gitCommitAt(root)
}

/** The data files an experiment reads (those of its enabled benchmarks). */
export const dataFiles = (exp: Experiment, settings: Settings): ReadonlyArray<HashedFile & { readonly bench: "asbench" | "asb" }> => {
  const out: Array<HashedFile & { readonly bench: "asbench" | "asb" }> = []
  if (exp.agent_safetybench.enabled) {
    out.push({ bench: "asbench", ...hashed(path.join(settings.paths.asbench_dir, "data", "released_data.json")) })
    if (exp.agent_safetybench.split !== null) out.push({ bench: "asbench", ...hashed(exp.agent_safetybench.split) })
  }
  if (exp.asb.enabled && exp.asb.attacks.length > 0) {
    const data = path.join(settings.paths.asb_dir, "data")
    for (const file of [path.join(data, TASKS_FILE), attackToolsFile(settings.paths.asb_dir, exp.asb.attack_tools), path.join(data, NORMAL_TOOLS_FILE)]) {
      out.push({ bench: "asb", ...hashed(file) })
    }
  }
  return out
}

/** The policy files of the configured judges (`policy:` resolved against the settings' root). */
export const policyFiles = (settings: Settings): Record<string, HashedFile> => {
  const out: Record<string, HashedFile> = {}
  for (const name of Object.keys(settings.judges).sort()) {
    const policy = settings.judges[name]?.policy
    if (typeof policy === "string" && policy !== "") out[name] = hashed(path.resolve(settings.root, policy))
  }
  return out
}

export const provenanceOf = (exp: Experiment, settings: Settings): Provenance => {
  const expHash = fileSha256(exp.file) ?? sha256(canonicalText(withoutSecrets(exp)))
  return {
    vetobench_version: VERSION,
    git_commit: ownCommit(),
    settings_sha256: settingsSha256(settings),
    experiment_sha256: expHash,
    policies: policyFiles(settings),
    data: dataFiles(exp, settings)
  }
}
