/** A JSON object: not null, not an array. What every reader of untrusted JSON here checks first. */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)
