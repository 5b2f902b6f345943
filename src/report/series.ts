/** Colours per variant, fixed across the page: the baseline grey, then the palette in variant order. */
import type { Summary } from "../scoring/summary-types.js"

/**
 * Palette index of a variant: 0 (grey) for the baseline, then the other variants in experiment
 * order, then variants only the results have (AgentDojo's `defense-<name>`) in the order given.
 */
export const variantSeries = (summary: Pick<Summary, "experiment">, variant: string, extra: ReadonlyArray<string> = []): number => {
  if (variant === summary.experiment.baseline) return 0
  const others = summary.experiment.variants.map((v) => v.name).filter((n) => n !== summary.experiment.baseline)
  const i = others.indexOf(variant)
  if (i >= 0) return i + 1
  const j = extra.filter((n) => !others.includes(n) && n !== summary.experiment.baseline).indexOf(variant)
  return j < 0 ? others.length + 1 : others.length + 1 + j
}
