/**
 * Strict JSON for `summary.json` (architecture decision 10/11): NaN and ±Infinity become `null`
 * (the reference wrote bare `NaN`, which `JSON.parse` rejects), bigints become decimal strings,
 * values JSON has no form for (functions, symbols, undefined) are left out of objects and become
 * `null` in arrays, as `JSON.stringify` does. Indent 1, trailing newline.
 */

const replacer = (_key: string, value: unknown): unknown => {
  if (typeof value === "number") return Number.isFinite(value) ? value : null
  if (typeof value === "bigint") return value.toString()
  return value
}

/** `value` as strict JSON text (indent 1, trailing newline). */
export const strictJson = (value: unknown): string => `${JSON.stringify(value, replacer, 1) ?? "null"}\n`
