import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { ConfigError } from "../../src/config/errors.js"
import { asbenchRunDir, asbRunDir, attackTag, runIdFor, slug } from "../../src/run-layout/paths.js"
import { decodeExperiment, defaultProxyUrl, type Experiment, loadExperiment, routeFor, selectModels, selectVariants, type Variant } from "../../src/config/experiment.js"
import { defaultSettings, loadSettings, type Settings } from "../../src/config/settings.js"
import { parseYaml } from "../../src/config/yaml-file.js"

const REPO = path.resolve(import.meta.dirname, "../..")
const EXAMPLE = path.join(REPO, "configs/vetobench.example.yaml")
const ROOT = "/srv/bench"
const FILE = "exp.yaml"

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "vetobench-experiment-"))
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

const settings: Settings = {
  ...defaultSettings(ROOT, {
    judges: {
      small: { kind: "llm_json", model: "judge-small" },
      granite: { kind: "guard", model: "granite-guardian" }
    },
    proxy: { host: "127.0.0.1", port: 9090 }
  }),
  file: "configs/vetobench.yaml"
}

const minimal = (extra: Record<string, unknown> = {}) => ({ name: "exp", models: ["m1"], judges: ["small"], ...extra })

const decode = (raw: unknown, env: Record<string, string | undefined> = {}, s: Settings = settings) =>
  decodeExperiment(raw, { file: FILE, settings: s, env })

const ok = (r: Either.Either<Experiment, ConfigError>): Experiment => {
  if (Either.isLeft(r)) throw new Error(`expected success, got: ${r.left.message}`)
  return r.right
}

const fail = (r: Either.Either<unknown, ConfigError>): ConfigError => {
  if (Either.isRight(r)) throw new Error("expected a ConfigError")
  return r.left
}

const fromYaml = (text: string, env: Record<string, string | undefined> = {}) =>
  Either.flatMap(parseYaml(text, FILE), (raw) => decode(raw, env))

const v = (name: string, arm: Variant["arm"], judge: string | null): Variant => ({ name, arm, judge })

describe("decodeExperiment: defaults", () => {
  it("fills every default", () => {
    const e = ok(decode(minimal()))
    expect(e.file).toBe(FILE)
    expect(e.name).toBe("exp")
    expect(e.run_dir).toBe("/srv/bench/runs/exp")
    expect(e.proxy_url).toBe("http://127.0.0.1:9090/v1")
    expect(e.models).toEqual(["m1"])
    expect(e.judges).toEqual(["small"])
    expect(e.arms).toEqual(["baseline", "enforce"])
    expect(e.variants).toEqual([v("baseline", "baseline", null), v("enforce-small", "enforce", "small")])
    expect(e.agent_safetybench).toEqual({ enabled: true, split: null, split_part: "test", workers: 16, max_tokens: 2048, wire: "chat" })
    expect(e.asb).toEqual({
      enabled: true,
      attacks: [],
      attack_tools: "all",
      tools_per_agent: null,
      task_num: 1,
      shards: 8,
      max_new_tokens: 1024,
      agents: null,
      malformed_arguments: "asb"
    })
  })

  it("resolves run_dir and the split against the settings root; keeps absolute paths", () => {
    const e = ok(decode(minimal({ run_dir: "out/x", agent_safetybench: { split: "runs/splits/s.json", split_part: "dev" } })))
    expect(e.run_dir).toBe("/srv/bench/out/x")
    expect(e.agent_safetybench.split).toBe("/srv/bench/runs/splits/s.json")
    expect(e.agent_safetybench.split_part).toBe("dev")
    expect(ok(decode(minimal({ run_dir: "/abs/dir" }))).run_dir).toBe("/abs/dir")
  })

  it("proxy_url: explicit (trailing / trimmed), or from the settings' bind address", () => {
    expect(ok(decode(minimal({ proxy_url: "http://proxy:1234/v1/" }))).proxy_url).toBe("http://proxy:1234/v1")
    expect(defaultProxyUrl({ proxy: { ...settings.proxy, host: "0.0.0.0", port: 8080 } })).toBe("http://127.0.0.1:8080/v1")
    expect(defaultProxyUrl({ proxy: { ...settings.proxy, host: "::", port: 8080 } })).toBe("http://[::1]:8080/v1")
    expect(fail(decode(minimal({ proxy_url: "ftp://x" }))).message).toBe(`${FILE}: proxy_url: expected an http(s) URL, got "ftp://x"`)
  })

  it("expands ${VAR} like the settings file, numbers only from the environment", () => {
    const e = ok(fromYaml("name: ${EXP:-dflt}\nmodels: ['${MODEL}']\njudges: [small]\nagent_safetybench:\n  workers: ${W}\n", { MODEL: "agent-x", W: "3" }))
    expect(e.name).toBe("dflt")
    expect(e.models).toEqual(["agent-x"])
    expect(e.agent_safetybench.workers).toBe(3)
    expect(fail(fromYaml("name: x\nmodels:\n  - ${NOPE}\n")).message).toBe(`${FILE}: models[0]: environment variable NOPE is not set`)
    expect(fail(decode(minimal({ agent_safetybench: { workers: "3" } }))).message).toContain("agent_safetybench.workers: expected an integer")
  })

  it("asb attacks: attack_type defaults to naive; tags", () => {
    const e = ok(decode(minimal({
      asb: {
        attacks: [{ method: "direct_prompt_injection" }, { method: "observation_prompt_injection", attack_type: "combined_attack" }, { method: "clean" }],
        attack_tools: "non-agg",
        tools_per_agent: 2
      }
    })))
    expect(e.asb.attacks).toEqual([
      { method: "direct_prompt_injection", attack_type: "naive" },
      { method: "observation_prompt_injection", attack_type: "combined_attack" },
      { method: "clean", attack_type: "naive" }
    ])
    expect(e.asb.attacks.map(attackTag)).toEqual(["direct_prompt_injection-naive", "observation_prompt_injection-combined_attack", "clean"])
    expect(e.asb.attack_tools).toBe("non-agg")
    expect(e.asb.tools_per_agent).toBe(2)
  })
})

describe("decodeExperiment: variants", () => {
  it("expands shadow/enforce per judge in judge order, other arms once, in arm order", () => {
    const e = ok(decode(minimal({ judges: ["granite", "small", "allow-all"], arms: ["passthrough", "shadow", "baseline", "enforce"] })))
    expect(e.variants.map((x) => x.name)).toEqual([
      "passthrough",
      "shadow-granite",
      "shadow-small",
      "shadow-allow-all",
      "baseline",
      "enforce-granite",
      "enforce-small",
      "enforce-allow-all"
    ])
    expect(e.variants[1]).toEqual(v("shadow-granite", "shadow", "granite"))
    expect(e.variants[0]).toEqual(v("passthrough", "passthrough", null))
  })

  it("judges without a judged arm give arm-only variants", () => {
    expect(ok(decode(minimal({ arms: ["baseline"] }))).variants).toEqual([v("baseline", "baseline", null)])
  })
})

describe("derived names", () => {
  const e = ok(decode(minimal({ name: "pilot", models: ["qwen3.8-27b", "org/m:7b"], judges: ["small"], arms: ["passthrough", "baseline", "shadow", "enforce"] })))
  const [pass, base, shadow, enforce] = e.variants as [Variant, Variant, Variant, Variant]

  it("slug replaces runs of unsafe characters, keeps _ . -", () => {
    expect(slug("qwen3.8-27b")).toBe("qwen3.8-27b")
    expect(slug("org/m:7b")).toBe("org_m_7b")
    expect(slug("a//b c")).toBe("a_b_c")
    expect(slug("/lead")).toBe("_lead")
    expect(slug("x_y.z-w")).toBe("x_y.z-w")
    // never a segment that names the folder itself or its parent
    expect([slug(".."), slug("."), slug(""), slug("..."), slug("../x"), slug("..a")]).toEqual(["__", "_", "_", "___", ".._x", "..a"])
  })

  it("routeFor formats the route grammar", () => {
    expect(routeFor("qwen3.8-27b", pass)).toBe("qwen3.8-27b")
    expect(routeFor("qwen3.8-27b", base)).toBe("qwen3.8-27b@baseline")
    expect(routeFor("qwen3.8-27b", shadow)).toBe("qwen3.8-27b@shadow:small")
    expect(routeFor("org/m:7b", enforce)).toBe("org/m:7b@enforce:small")
  })

  it("runIdFor is <exp>.<bench>.<slug(model)>.<variant>", () => {
    expect(runIdFor(e, "asbench", "qwen3.8-27b", enforce)).toBe("pilot.asbench.qwen3.8-27b.enforce-small")
    expect(runIdFor(e, "asb", "org/m:7b", base)).toBe("pilot.asb.org_m_7b.baseline")
  })

  it("run directories sit under run_dir/<bench>/<slug(model)>/<variant>", () => {
    expect(asbenchRunDir(e, "org/m:7b", enforce)).toBe("/srv/bench/runs/pilot/asbench/org_m_7b/enforce-small")
    expect(asbRunDir(e, "qwen3.8-27b", base)).toBe("/srv/bench/runs/pilot/asb/qwen3.8-27b/baseline")
  })
})

describe("decodeExperiment: errors name the file and key path", () => {
  const msg = (raw: unknown) => fail(decode(raw)).message

  it("rejects unknown keys at every level", () => {
    expect(msg(minimal({ modles: ["x"] }))).toBe(
      `${FILE}: modles: unknown key; did you mean 'models'? (allowed: name, run_dir, proxy_url, models, judges, arms, agent_safetybench, asb, agentdojo)`
    )
    expect(msg(minimal({ agent_safetybench: { worker: 3 } }))).toMatch(/^exp\.yaml: agent_safetybench\.worker: unknown key; did you mean 'workers'\? \(allowed: enabled, split,/)
    expect(msg(minimal({ asb: { shard: 3 } }))).toMatch(/^exp\.yaml: asb\.shard: unknown key/)
    expect(msg(minimal({ asb: { attacks: [{ method: "clean" }, { method: "direct_prompt_injection", atack_type: "naive" }] } }))).toBe(
      `${FILE}: asb.attacks[1].atack_type: unknown key; did you mean 'attack_type'? (allowed: method, attack_type)`
    )
  })

  it("requires name (file-name safe) and a non-empty models list", () => {
    expect(msg({ models: ["m"] })).toBe(`${FILE}: name: is required`)
    expect(msg(minimal({ name: "a/b" }))).toContain("name: must be safe for file names")
    expect(msg(minimal({ name: "../x" }))).toContain("name: must be safe for file names")
    expect(msg(minimal({ name: ".hidden" }))).toContain("name: must be safe for file names")
    expect(msg({ name: "x" })).toBe(`${FILE}: models: is required`)
    expect(msg(minimal({ models: [] }))).toBe(`${FILE}: models: must list at least one entry`)
    expect(msg(minimal({ models: "m1" }))).toBe(`${FILE}: models: expected a list, got string "m1"`)
    expect(msg(minimal({ models: ["a", ""] }))).toBe(`${FILE}: models[1]: must not be empty`)
    expect(msg(minimal({ models: ["a", "b", "a"] }))).toBe(`${FILE}: models[2]: duplicate model 'a' (also models[0])`)
    expect(msg(minimal({ models: ["org/m", "org:m"] }))).toBe(`${FILE}: models[1]: model 'org:m' has the same file name ('org_m') as models[0]`)
  })

  it("rejects a model the route grammar would misread", () => {
    expect(msg(minimal({ models: ["m@x"], arms: ["passthrough"] }))).toContain("models[0]: model 'm@x' cannot be routed as passthrough")
    // with logged arms a model may contain @ (the route splits at the last @)
    expect(ok(decode(minimal({ models: ["m@x"], arms: ["baseline", "enforce"] }))).models).toEqual(["m@x"])
  })

  it("rejects a model whose run ids would fall outside the run-id grammar (the proxy would answer 400 mid-run)", () => {
    expect(msg(minimal({ models: ["org/model.lock"] }))).toContain("models[0]: model 'org/model.lock' with variant baseline gives a run id outside the grammar")
    expect(msg(minimal({ models: ["m".repeat(120)] }))).toContain("characters long (at most 128)")
    expect(ok(decode(minimal({ models: ["qwen3.8-27b"] }))).models).toEqual(["qwen3.8-27b"])
  })

  it("judges must be configured in the settings or built in", () => {
    expect(msg(minimal({ judges: ["small", "nope"] }))).toBe(`${FILE}: judges[1]: judge 'nope' is not configured in configs/vetobench.yaml`)
    expect(ok(decode(minimal({ judges: ["allow-all", "deny-all"] }))).judges).toEqual(["allow-all", "deny-all"])
    expect(msg(minimal({ judges: ["small", "smal"] }))).toBe(`${FILE}: judges[1]: judge 'smal' is not configured in configs/vetobench.yaml (did you mean 'small'?)`)
    expect(msg(minimal({ judges: ["small", "small"] }))).toBe(`${FILE}: judges[1]: duplicate judge 'small' (also judges[0])`)
  })

  it("validates arms", () => {
    expect(msg(minimal({ arms: ["baseline", "warp"] }))).toBe(`${FILE}: arms[1]: expected one of passthrough, baseline, shadow, enforce, got string "warp"`)
    expect(msg(minimal({ arms: [] }))).toBe(`${FILE}: arms: must list at least one entry`)
    expect(msg(minimal({ arms: ["enforce", "enforce"] }))).toBe(`${FILE}: arms[1]: duplicate arm 'enforce' (also arms[0])`)
    expect(msg(minimal({ judges: [], arms: ["baseline", "shadow"] }))).toBe(
      `${FILE}: arms[1]: arm 'shadow' needs at least one judge: list them under \`judges\``
    )
    expect(msg({ name: "x", models: ["m"] })).toBe(
      `${FILE}: arms: arm 'enforce' needs at least one judge: list them under \`judges\` (arms default to [baseline, enforce])`
    )
    expect(ok(decode({ name: "x", models: ["m"], arms: ["passthrough", "baseline"] })).variants.map((x) => x.name)).toEqual(["passthrough", "baseline"])
  })

  it("validates the benchmark sections", () => {
    expect(msg(minimal({ agent_safetybench: { split_part: "train" } }))).toBe(
      `${FILE}: agent_safetybench.split_part: expected one of test, dev, got string "train"`
    )
    expect(msg(minimal({ agent_safetybench: { workers: 0 } }))).toBe(`${FILE}: agent_safetybench.workers: must be at least 1, got 0`)
    expect(msg(minimal({ agent_safetybench: { enabled: "yes" } }))).toContain("agent_safetybench.enabled: expected true or false")
    expect(msg(minimal({ asb: { attacks: [{ method: "indirect" }] } }))).toBe(
      `${FILE}: asb.attacks[0].method: expected one of direct_prompt_injection, observation_prompt_injection, mixed_attack, clean, got string "indirect"`
    )
    expect(msg(minimal({ asb: { attacks: [{ attack_type: "naive" }] } }))).toBe(`${FILE}: asb.attacks[0].method: is required`)
    expect(msg(minimal({ asb: { attacks: [{ method: "clean" }, { method: "clean", attack_type: "combined_attack" }] } }))).toBe(
      `${FILE}: asb.attacks[1]: duplicate attack 'clean' (also asb.attacks[0])`
    )
    expect(msg(minimal({ asb: { attacks: [{ method: "mixed_attack", attack_type: "a/b" }] } }))).toContain("asb.attacks[0].attack_type: must be a plain name")
    expect(msg(minimal({ asb: { attack_tools: "some" } }))).toContain("asb.attack_tools: expected one of all, agg, non-agg")
    expect(msg(minimal({ asb: { tools_per_agent: 0 } }))).toBe(`${FILE}: asb.tools_per_agent: must be at least 1, got 0`)
    expect(msg(minimal({ asb: { shards: 1.5 } }))).toBe(`${FILE}: asb.shards: expected an integer, got 1.5`)
  })

  it("a top level that is not a mapping", () => {
    expect(msg(["x"])).toBe(`${FILE}: expected a mapping, got a list`)
  })
})

describe("selectVariants / selectModels", () => {
  const e = ok(decode(minimal({ name: "pilot", models: ["a", "b", "c"], judges: ["small", "granite"], arms: ["baseline", "enforce"] })))

  it("no names selects everything", () => {
    expect(Either.getOrThrow(selectVariants(e, []))).toEqual(e.variants)
    expect(Either.getOrThrow(selectModels(e, []))).toEqual(e.models)
  })

  it("exact-match filters keep experiment order", () => {
    expect(Either.getOrThrow(selectVariants(e, ["enforce-granite", "baseline"])).map((x) => x.name)).toEqual(["baseline", "enforce-granite"])
    expect(Either.getOrThrow(selectModels(e, ["c", "a", "a"]))).toEqual(["a", "c"])
  })

  it("an unknown name lists the valid ones", () => {
    const r = selectVariants(e, ["enforce"])
    if (Either.isRight(r)) throw new Error("expected a SelectionError")
    expect(r.left._tag).toBe("SelectionError")
    expect(r.left.message).toBe(
      "experiment pilot has no variant 'enforce'; did you mean 'enforce-small' or 'enforce-granite'? (variants: baseline, enforce-small, enforce-granite)"
    )
    const m = selectModels(e, ["A"])
    if (Either.isRight(m)) throw new Error("expected a SelectionError")
    expect(m.left.message).toBe("experiment pilot has no model 'A'; did you mean 'a'? (models: a, b, c)")
    const far = selectModels(e, ["zzz"])
    if (Either.isRight(far)) throw new Error("expected a SelectionError")
    expect(far.left.message).toBe("experiment pilot has no model 'zzz' (models: a, b, c)")
  })
})

describe("loadExperiment", () => {
  it("reads a file; a missing file names it", async () => {
    const file = path.join(tmp, "e.yaml")
    fs.writeFileSync(file, "name: e\nmodels: [m]\njudges: [allow-all]\n")
    const e = await Effect.runPromise(loadExperiment(file, settings))
    expect(e.file).toBe(file)
    expect(e.variants.map((x) => x.name)).toEqual(["baseline", "enforce-allow-all"])
    const missing = path.join(tmp, "nope.yaml")
    const err = await Effect.runPromise(Effect.flip(loadExperiment(missing, settings)))
    expect(err.message).toBe(`${missing}: experiment file not found`)
  })

  it("a YAML syntax error names the file", async () => {
    const file = path.join(tmp, "bad.yaml")
    fs.writeFileSync(file, "name: [\n")
    const err = await Effect.runPromise(Effect.flip(loadExperiment(file, settings)))
    expect(err.message).toContain(`${file}: YAML syntax error`)
  })
})

describe("shipped experiment files decode against the example settings", () => {
  const load = (name: string) =>
    Effect.runPromise(
      Effect.flatMap(loadSettings(EXAMPLE, {}), (s) => loadExperiment(path.join(REPO, "configs", name), s, {}))
    )

  it("sanity.yaml", async () => {
    const e = await load("sanity.yaml")
    expect(e.name).toBe("sanity")
    expect(e.run_dir).toBe(path.join(REPO, "runs/sanity"))
    expect(e.proxy_url).toBe("http://127.0.0.1:8080/v1")
    expect(e.models).toEqual(["qwen3.8-27b"])
    expect(e.judges).toEqual(["allow-all", "small"])
    expect(e.variants.map((x) => x.name)).toEqual(["baseline", "enforce-allow-all", "enforce-small"])
    expect(e.agent_safetybench).toEqual({
      enabled: true,
      split: path.join(REPO, "runs/splits/asbench-sanity.json"),
      split_part: "test",
      workers: 8,
      max_tokens: 2048,
      wire: "chat"
    })
    expect(e.asb).toEqual({
      enabled: true,
      attacks: [{ method: "direct_prompt_injection", attack_type: "naive" }, { method: "clean", attack_type: "naive" }],
      attack_tools: "all",
      tools_per_agent: 2,
      task_num: 1,
      shards: 2,
      max_new_tokens: 1024,
      agents: null,
      malformed_arguments: "asb"
    })
  })

  it("pilot.yaml", async () => {
    const e = await load("pilot.yaml")
    expect(e.name).toBe("pilot")
    expect(e.run_dir).toBe(path.join(REPO, "runs/pilot"))
    expect(e.models).toEqual(["qwen3.8-27b", "muse-glimmer-30b", "gemma4-31b"])
    expect(e.judges).toEqual(["small", "granite", "llamaguard"])
    expect(e.variants.map((x) => x.name)).toEqual(["baseline", "enforce-small", "enforce-granite", "enforce-llamaguard"])
    expect(e.agent_safetybench).toEqual({
      enabled: true,
      split: path.join(REPO, "runs/splits/asbench-pilot.json"),
      split_part: "test",
      workers: 16,
      max_tokens: 2048,
      wire: "chat"
    })
    expect(e.asb.attacks.map(attackTag)).toEqual([
      "direct_prompt_injection-naive",
      "direct_prompt_injection-combined_attack",
      "observation_prompt_injection-naive",
      "observation_prompt_injection-combined_attack",
      "clean"
    ])
    expect(e.asb).toMatchObject({ attack_tools: "all", tools_per_agent: null, task_num: 1, shards: 8, max_new_tokens: 1024 })
  })

  it("every configs/*.yaml experiment file decodes", async () => {
    const files = fs.readdirSync(path.join(REPO, "configs")).filter((f) => f.endsWith(".yaml") && !f.startsWith("vetobench"))
    expect(files).toEqual(expect.arrayContaining(["sanity.yaml", "pilot.yaml"]))
    for (const f of files) await load(f)
  })
})
