/**
 * Tokens and cost per variant (summary `cost`), for the agent and for each judge separately.
 *
 * Where the tokens come from, and why there:
 * - the agent: the benchmark runners, which see every answer an episode used — the
 *   Agent-SafetyBench runner sums the answers' `usage` into each case's record
 *   (`vetobench.usage`), ASB's launcher writes one line per answer (`shardNN.usage.jsonl`). Both
 *   hold the final start of each episode only, as the results do (a retried request that failed
 *   has no `usage`). The proxy sees the same `usage` but keeps no per-request record.
 * - each judge: the verdicts in the proxy's audit records (`usage` of each verdict; of each layer
 *   for a layered judge), final attempts only; a cached verdict cost nothing.
 *
 * Cost: with a price table (`--prices`, the format `vetobench scenarios` takes: model →
 * `{input_per_1k, output_per_1k}` USD), tokens × price, looked up by the agent model and by each
 * judge's model (`src/scenarios/cost.ts`); null without a table or a price. Per blocked unsafe
 * call: that cost divided by the variant's blocked unsafe calls (ASB: calls of an attacker tool;
 * Agent-SafetyBench: calls in a case the baseline's ShieldAgent label calls unsafe).
 */
import { priceFor, type PriceTable } from "../scenarios/cost.js"
import type { CostLine, CostRow, JudgeTokens, Num, Tokens } from "./summary-types.js"

export interface Prices {
  /** the file the table was read from */
  readonly file: string
  readonly table: PriceTable
}

/** USD of `tokens` at the price of `model`, or null. */
export const usdOf = (prices: Prices | null, model: string | null, tokens: Tokens): Num => {
  const p = prices === null || model === null ? null : priceFor(prices.table, model)
  return p === null ? null : (tokens.prompt_tokens / 1000) * p.input_per_1k + (tokens.completion_tokens / 1000) * p.output_per_1k
}

const perBlocked = (usd: Num, blocked: number | null): Num => (usd === null || blocked === null || blocked === 0 ? null : usd / blocked)

export interface CostInput {
  readonly model: string
  readonly bench: "asbench" | "asb" | "agentdojo"
  readonly variant: string
  /** null when the runner recorded none */
  readonly agent: Tokens | null
  /** by judge (layer) name; empty for an unjudged variant */
  readonly judges: Readonly<Record<string, JudgeTokens>>
  readonly blocked_unsafe_calls: number | null
}

/** The cost row of one variant; null when it recorded no tokens at all. */
export const costRow = (input: CostInput, prices: Prices | null): CostRow | null => {
  const lines: Array<CostLine> = []
  const line = (role: CostLine["role"], name: string, model: string | null, tokens: Tokens): CostLine => {
    const usd = usdOf(prices, model, tokens)
    return { role, name, model, tokens, usd, usd_per_blocked_unsafe_call: perBlocked(usd, input.blocked_unsafe_calls) }
  }
  if (input.agent !== null) lines.push(line("agent", input.model, input.model, input.agent))
  for (const name of Object.keys(input.judges).sort()) {
    const j = input.judges[name]!
    lines.push(line("judge", name, j.model, j.tokens))
  }
  if (lines.length === 0) return null
  return { model: input.model, bench: input.bench, variant: input.variant, blocked_unsafe_calls: input.blocked_unsafe_calls, lines }
}
