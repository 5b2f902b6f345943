/**
 * The one error of the config domain: which file, which key path, what is wrong.
 */
import { Data } from "effect"

export class ConfigError extends Data.TaggedError("ConfigError")<{
  /** the file as the user named it, or a label such as "(built-in)" */
  readonly file: string
  /** key path such as `upstreams[1].verify_tls` or `proxy.port`; empty for whole-file problems */
  readonly path: string
  readonly reason: string
}> {
  override get message(): string {
    return this.path === "" ? `${this.file}: ${this.reason}` : `${this.file}: ${this.path}: ${this.reason}`
  }
}
