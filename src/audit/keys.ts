/** Ed25519 key files for signed checkpoints: a private key the user controls, a public key to share. */
import { generateKeyPairSync } from "node:crypto"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import { keyInfo } from "../domain/checkpoint.js"
import { AuditInputError } from "./verify-files.js"

export interface KeyFiles {
  readonly privateKey: string
  readonly publicKey: string
  readonly keyId: string
}

/** Write `<dir>/<name>.key` (PKCS#8 PEM, mode 0600) and `<dir>/<name>.pub` (SPKI PEM); never overwrite unless `force`. */
export const generateKeyFiles = (dir: string, name: string, force = false): Effect.Effect<KeyFiles, AuditInputError> =>
  Effect.try({
    try: () => {
      const privateKey = path.resolve(dir, `${name}.key`)
      const publicKey = path.resolve(dir, `${name}.pub`)
      for (const f of [privateKey, publicKey]) {
        if (!force && existsSync(f)) throw new Error(`${f} exists; refusing to overwrite a key (use --force)`)
      }
      mkdirSync(path.dirname(privateKey), { recursive: true })
      const pair = generateKeyPairSync("ed25519")
      writeFileSync(privateKey, pair.privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 })
      writeFileSync(publicKey, pair.publicKey.export({ type: "spki", format: "pem" }))
      return { privateKey, publicKey, keyId: keyInfo(pair.publicKey).key_id }
    },
    catch: (e) => new AuditInputError({ file: dir, reason: e instanceof Error ? e.message : String(e) })
  })
