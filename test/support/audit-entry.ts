/** A `call` audit entry for sink and chain tests: a static allow verdict on one `read_file` call. */
import type { CallEntry } from "../../src/domain/audit-record.js"
import { decided } from "../../src/domain/verdict.js"

export const callEntry = (i: number, runId: string | null, args: unknown = { n: i }, overrides: Partial<CallEntry> = {}): CallEntry => {
  const verdict = decided({ judge: "static", kind: "static", model: null, version: "static:allow" }, "allow")
  return {
    type: "call",
    run_id: runId,
    request_id: `req-${i}`,
    episode_id: null,
    session_id: null,
    principal: null,
    agent_model: "qwen",
    arm: "shadow",
    judge: "allow-all",
    stream: false,
    choice_index: 0,
    call_index: 0,
    tool_call_id: `call_${i}`,
    tool: { name: "read_file", description: "", parameters: null, arguments: args },
    verdict,
    layers: [verdict],
    effective_decision: "allow",
    blocked: false,
    fail_policy: "closed",
    approval: "automatic",
    outcome: null,
    gate_ms: 0.5,
    ...overrides
  }
}
