/**
 * C2SP transparency-log checkpoints (https://c2sp.org/tlog-checkpoint) of audit logs, pure.
 *
 * The note text: the origin, the tree size in decimal (no leading zero), the base64 root hash of the
 * RFC 9162 tree at that size, then optional non-empty extension lines (vetobench writes none), each
 * line ending in "\n". Signed as a C2SP signed note (./signed-note.ts) with the Ed25519 key that signs
 * the anchor's checkpoints, under the key name = the origin (the spec's recommendation).
 *
 * The origin of a log: `vetobench/<run id>/<key id>` — the log's file name without `.jsonl` (the run
 * id, `adhoc` without one) and the 16-hex id of the signing key (`key.key_id` of an anchor
 * checkpoint). Run ids never hold a space or a "+" (src/domain/run-id.ts), so the origin is a key name.
 */
import { createPublicKey, verify } from "node:crypto"
import type { CheckpointKey, Signer } from "./checkpoint.js"
import { type Note, parseNote, signNote, verifyNoteSignature } from "./signed-note.js"
import { HASH_BYTES } from "./merkle.js"

/** The origin of the log `fileName` (`<run id>.jsonl`) signed by the key with `keyId`. */
export const originFor = (fileName: string, keyId: string): string => `vetobench/${fileName.replace(/\.jsonl$/, "")}/${keyId}`

/** What an origin says: the log's file name and the signing key's id; null for an origin of another form. */
export const originParts = (origin: string): { readonly file: string; readonly keyId: string } | null => {
  const m = /^vetobench\/([^/]+)\/([0-9a-f]{16})$/.exec(origin)
  return m === null ? null : { file: `${m[1]!}.jsonl`, keyId: m[2]! }
}

export interface TreeHead {
  readonly origin: string
  readonly size: number
  /** the 32-byte root hash */
  readonly root: Buffer
  readonly extensions: ReadonlyArray<string>
}

/** The note text of a checkpoint. */
export const checkpointText = (head: TreeHead): string =>
  [head.origin, String(head.size), head.root.toString("base64"), ...head.extensions].map((l) => l + "\n").join("")

/** Parse a checkpoint's note text, or say why it is not one. */
export const parseCheckpointText = (text: string): TreeHead | string => {
  if (!text.endsWith("\n")) return "the checkpoint text does not end with a newline"
  const lines = text.slice(0, -1).split("\n")
  if (lines.length < 3) return "a checkpoint has at least three lines (origin, tree size, root hash)"
  const [origin, size, root, ...extensions] = lines as [string, string, string, ...Array<string>]
  if (origin === "") return "the origin line is empty"
  if (!/^(?:0|[1-9][0-9]*)$/.test(size) || !Number.isSafeInteger(Number(size))) return `the tree size ${JSON.stringify(size)} is not a decimal number without leading zeros`
  const hash = Buffer.from(root, "base64")
  if (hash.length !== HASH_BYTES || hash.toString("base64") !== root) return `the root hash ${JSON.stringify(root)} is not the base64 of 32 bytes`
  if (extensions.some((l) => l === "")) return "an extension line is empty"
  return { origin, size: Number(size), root: hash, extensions }
}

/** A checkpoint of `head` signed by `signer` under the key name = the origin: the whole signed note. */
export const signCheckpoint = (head: TreeHead, signer: Signer): string =>
  signNote(checkpointText(head), head.origin, Buffer.from(signer.key.public_key, "base64"), signer.sign)

/** A signed checkpoint read: its note and its tree head. */
export interface SignedCheckpoint {
  /** the whole signed note, as read */
  readonly signed: string
  readonly note: Note
  readonly head: TreeHead
}

/** Parse a signed checkpoint (note and text), or say why it is not one. */
export const parseSignedCheckpoint = (noteText: string): SignedCheckpoint | string => {
  const note = parseNote(noteText)
  if (typeof note === "string") return note
  const head = parseCheckpointText(note.text)
  return typeof head === "string" ? head : { signed: noteText, note, head }
}

/**
 * Is the checkpoint signed by `key` under its origin, and does its origin name `key`? Null when both
 * hold, else the exact reason.
 */
export const checkpointSignatureProblem = (c: SignedCheckpoint, key: CheckpointKey): string | null => {
  const raw = Buffer.from(key.public_key, "base64")
  const pub = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" })
  const r = verifyNoteSignature(c.note, c.head.origin, raw, (message, signature) => {
    try {
      return verify(null, message, pub, signature)
    } catch {
      return false
    }
  })
  if (!r.ok) return r.reason
  const parts = originParts(c.head.origin)
  if (parts !== null && parts.keyId !== key.key_id) return `its origin ${c.head.origin} names key ${parts.keyId}, not the signing key ${key.key_id}`
  return null
}
