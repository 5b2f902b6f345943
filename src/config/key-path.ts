/**
 * Key paths as shown in error messages: `upstreams[1].verify_tls`, `proxy.port`,
 * `model_defaults["qwen3.8-27b"]` (keys that would read ambiguously are quoted).
 */

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/

export const childPath = (parent: string, key: string): string => {
  if (!PLAIN_KEY.test(key)) return `${parent}[${JSON.stringify(key)}]`
  return parent === "" ? key : `${parent}.${key}`
}

export const indexPath = (parent: string, index: number): string => `${parent}[${index}]`
