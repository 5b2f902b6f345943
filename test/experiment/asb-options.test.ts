/**
 * The experiment file's ASB options of issue 20 §1, checked when the file is read: `attack_type`
 * must be one of ASB's five (an unknown one is an error naming the key, with the closest), `agents`
 * selects ASB agents (default every agent), `malformed_arguments` is `asb` (default) or `empty`.
 */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { ASB_ATTACK_TYPES, decodeExperiment } from "../../src/config/experiment.js"
import { defaultSettings } from "../../src/config/settings.js"

const settings = defaultSettings("/srv/bench", {})

const decode = (asb: Record<string, unknown>) =>
  decodeExperiment({ name: "e", models: ["m"], arms: ["baseline"], asb }, { file: "exp.yaml", settings, env: {} })

const error = (asb: Record<string, unknown>): string => {
  const r = decode(asb)
  if (Either.isRight(r)) throw new Error("decoded")
  return r.left.message
}

describe("asb options in the experiment file", () => {
  it("every attack type ASB knows is accepted; default naive", () => {
    const r = decode({ attacks: [...ASB_ATTACK_TYPES.map((t) => ({ method: "direct_prompt_injection", attack_type: t })), { method: "clean" }] })
    expect(Either.isRight(r) && r.right.asb.attacks.map((a) => a.attack_type)).toEqual([...ASB_ATTACK_TYPES, "naive"])
  })

  it("an unknown attack_type is rejected when the file is read, naming the key and the closest type", () => {
    expect(error({ attacks: [{ method: "direct_prompt_injection", attack_type: "combined" }] })).toBe(
      "exp.yaml: asb.attacks[0].attack_type: unknown attack type 'combined'; did you mean 'combined_attack'? (ASB's: naive, fake_completion, escape_characters, context_ignoring, combined_attack)"
    )
    expect(error({ attacks: [{ method: "clean" }, { method: "observation_prompt_injection", attack_type: "sneaky" }] })).toMatch(
      /^exp\.yaml: asb\.attacks\[1\]\.attack_type: unknown attack type 'sneaky' \(ASB's: /
    )
  })

  it("agents: default every agent; a distinct, non-empty list of names", () => {
    const none = decode({})
    expect(Either.isRight(none) && none.right.asb.agents).toBeNull()
    const two = decode({ agents: ["system_admin_agent", "financial_analyst_agent"] })
    expect(Either.isRight(two) && two.right.asb.agents).toEqual(["system_admin_agent", "financial_analyst_agent"])
    expect(error({ agents: [] })).toBe("exp.yaml: asb.agents: must list at least one entry")
    expect(error({ agents: ["a", "a"] })).toBe("exp.yaml: asb.agents[1]: duplicate agent 'a' (also asb.agents[0])")
  })

  it("malformed_arguments: asb (default) or empty", () => {
    const d = decode({})
    expect(Either.isRight(d) && d.right.asb.malformed_arguments).toBe("asb")
    const e = decode({ malformed_arguments: "empty" })
    expect(Either.isRight(e) && e.right.asb.malformed_arguments).toBe("empty")
    expect(error({ malformed_arguments: "drop" })).toBe('exp.yaml: asb.malformed_arguments: expected one of asb, empty, got string "drop"')
  })
})
