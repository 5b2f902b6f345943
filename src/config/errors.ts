/**
 * The one error of the config domain: which file, which key path, what is wrong. The message
 * never shows a URL's credentials (a reason quoting a `base_url` such as
 * `https://user:pass@host/v1` shows `https://***@host/v1`).
 */
import { Data } from "effect"
import { redactUrlsIn } from "../domain/redact-url.js"

export class ConfigError extends Data.TaggedError("ConfigError")<{
  /** the file as the user named it, or a label such as "(built-in)" */
  readonly file: string
  /** key path such as `upstreams[1].verify_tls` or `proxy.port`; empty for whole-file problems */
  readonly path: string
  readonly reason: string
}> {
  override get message(): string {
    const reason = redactUrlsIn(this.reason)
    return this.path === "" ? `${this.file}: ${reason}` : `${this.file}: ${this.path}: ${reason}`
  }
}
