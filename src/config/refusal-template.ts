/**
 * Validation of `proxy.refusal_template` (rendering lives in `src/domain/refusal.ts`):
 * placeholders `{tool_name}`, `{category}`, `{reason}` only; `{{` and `}}` are literal braces
 * (Python `str.format` rules, without format specs or conversions).
 */
export const REFUSAL_PLACEHOLDERS = ["tool_name", "category", "reason"] as const

/** The reason the template is malformed, or `null` when it is fine. */
export const refusalTemplateProblem = (template: string): string | null => {
  let i = 0
  while (i < template.length) {
    const c = template[i]
    if ((c === "{" || c === "}") && template[i + 1] === c) {
      i += 2
    } else if (c === "}") {
      return `single '}' at offset ${i} in template (write '}}' for a literal brace)`
    } else if (c === "{") {
      const end = template.indexOf("}", i)
      if (end < 0) return `unclosed '{' at offset ${i} in template (write '{{' for a literal brace)`
      const name = template.slice(i + 1, end)
      if (!(REFUSAL_PLACEHOLDERS as ReadonlyArray<string>).includes(name)) {
        const allowed = REFUSAL_PLACEHOLDERS.map((p) => `{${p}}`).join(", ")
        return `unknown placeholder {${name}} in template (allowed: ${allowed})`
      }
      i = end + 1
    } else {
      i += 1
    }
  }
  return null
}
