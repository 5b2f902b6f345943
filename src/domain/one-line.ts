/** An error text on one line (line breaks and the space around them become one space), cut at `max` characters. */
export const oneLine = (s: string, max = 300): string => {
  const t = s.replace(/\s*[\r\n]+\s*/g, " ").trim()
  return t.length > max ? `${t.slice(0, max)}…` : t
}
