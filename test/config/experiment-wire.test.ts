/**
 * `agent_safetybench.wire`: the format the Agent-SafetyBench agent speaks to the proxy — chat by
 * default, responses or messages when named, anything else a config error naming the key, the
 * value and the formats.
 */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { AGENT_WIRES, decodeExperiment } from "../../src/config/experiment.js"
import { defaultSettings } from "../../src/config/settings.js"

const settings = { ...defaultSettings("/srv/bench", { proxy: { host: "127.0.0.1", port: 9090 } }), file: "configs/vetobench.yaml" }

const decode = (agent_safetybench?: Record<string, unknown>, env: Record<string, string | undefined> = {}) =>
  decodeExperiment(
    { name: "exp", models: ["m1"], judges: ["allow-all"], ...(agent_safetybench !== undefined ? { agent_safetybench } : {}) },
    { file: "exp.yaml", settings, env }
  )

const wireOf = (agent_safetybench?: Record<string, unknown>, env?: Record<string, string | undefined>) => {
  const r = decode(agent_safetybench, env)
  if (Either.isLeft(r)) throw new Error(`expected success, got: ${r.left.message}`)
  return r.right.agent_safetybench.wire
}

const message = (agent_safetybench: Record<string, unknown>) => {
  const r = decode(agent_safetybench)
  if (Either.isRight(r)) throw new Error("expected a ConfigError")
  return r.left.message
}

describe("agent_safetybench.wire", () => {
  it("defaults to chat, with or without an agent_safetybench section", () => {
    expect(wireOf()).toBe("chat")
    expect(wireOf({ workers: 2 })).toBe("chat")
    expect(wireOf({ wire: null })).toBe("chat")
  })

  it("takes each format by name, also from an environment variable", () => {
    expect(AGENT_WIRES).toEqual(["chat", "responses", "messages"])
    for (const w of AGENT_WIRES) expect(wireOf({ wire: w })).toBe(w)
    expect(wireOf({ wire: "${WIRE}" }, { WIRE: "messages" })).toBe("messages")
  })

  it("an unknown format names the key, the value, a near miss and the formats", () => {
    expect(message({ wire: "response" })).toBe(
      "exp.yaml: agent_safetybench.wire: unknown wire format 'response'; did you mean 'responses'? (the formats: chat, responses, messages)"
    )
    expect(message({ wire: "mcp" })).toBe("exp.yaml: agent_safetybench.wire: unknown wire format 'mcp' (the formats: chat, responses, messages)")
    expect(message({ wire: 3 })).toBe("exp.yaml: agent_safetybench.wire: expected a string, got number 3")
  })
})
