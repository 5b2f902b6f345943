/**
 * C2SP signed notes (https://c2sp.org/signed-note), Ed25519 only, pure.
 *
 * A note is a text ending in "\n", a blank line, then one or more signature lines
 * `— <key name> <base64(key id || signature)>\n` (U+2014 em dash). The text includes its final newline,
 * not the blank line; it is separated from the signatures by the note's last blank line. No control
 * character but "\n" anywhere. A key name is non-empty, without Unicode spaces and without "+".
 * Ed25519 (signature type 0x01): key id = the first 4 bytes of SHA-256(name || 0x0A || 0x01 || the
 * 32-byte public key), big-endian; the signature is over the text's UTF-8 bytes.
 */
import { createHash } from "node:crypto"

export const EM_DASH = "\u2014"
/** signature type byte of Ed25519 signed-note signatures */
export const ED25519_TYPE = 0x01

/** Why `name` cannot be a key name, or null. */
export const keyNameProblem = (name: string): string | null => {
  if (name === "") return "a key name is empty"
  if (/[\s\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/u.test(name)) return `key name ${JSON.stringify(name)} holds a space`
  if (name.includes("+")) return `key name ${JSON.stringify(name)} holds a "+"`
  return null
}

/** The 4-byte key id of an Ed25519 key under `name` (see the module comment). */
export const noteKeyId = (name: string, rawPublicKey: Uint8Array): Buffer =>
  createHash("sha256").update(name, "utf8").update(Buffer.from([0x0a, ED25519_TYPE])).update(rawPublicKey).digest().subarray(0, 4)

/** One signature line of a note. */
export interface NoteSignature {
  readonly name: string
  /** the 4-byte key id */
  readonly keyId: Buffer
  /** the signature after the key id */
  readonly signature: Buffer
}

export interface Note {
  /** the signed text, with its final newline */
  readonly text: string
  readonly signatures: ReadonlyArray<NoteSignature>
}

/** A control character other than "\n" (which a note must not hold), or null. */
const controlCharacter = (s: string): string | null => {
  const m = /[\u0000-\u0009\u000b-\u001f]/.exec(s)
  return m === null ? null : `U+${m[0].charCodeAt(0).toString(16).padStart(4, "0").toUpperCase()}`
}

/** Standard base64 with padding, and nothing else (Buffer.from is lenient). */
const strictBase64 = (s: string): Buffer | null => {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) return null
  const b = Buffer.from(s, "base64")
  return b.toString("base64") === s ? b : null
}

/** Parse a signed note, or say why it is not one. */
export const parseNote = (note: string): Note | string => {
  if (!note.isWellFormed()) return "the note is not valid UTF-8 text"
  const control = controlCharacter(note)
  if (control !== null) return `the note holds the control character ${control}`
  if (!note.endsWith("\n")) return "the note does not end with a newline"
  const sep = note.lastIndexOf("\n\n")
  if (sep < 0) return "the note has no blank line before its signatures"
  const text = note.slice(0, sep + 1)
  const lines = note.slice(sep + 2, -1).split("\n")
  const signatures: Array<NoteSignature> = []
  for (const [i, line] of lines.entries()) {
    const m = new RegExp(`^${EM_DASH} (\\S+) (\\S+)$`).exec(line)
    if (m === null) return `signature line ${i + 1} is not "${EM_DASH} <key name> <base64 signature>"`
    const name = m[1]!
    const nameProblem = keyNameProblem(name)
    if (nameProblem !== null) return `signature line ${i + 1}: ${nameProblem}`
    const bytes = strictBase64(m[2]!)
    if (bytes === null || bytes.length < 5) return `signature line ${i + 1}: the signature is not base64 of a key id and a signature`
    signatures.push({ name, keyId: bytes.subarray(0, 4), signature: bytes.subarray(4) })
  }
  if (signatures.length === 0) return "the note has no signature"
  return { text, signatures }
}

/** A note's text signed: the text, a blank line and one signature line. */
export const signNote = (text: string, name: string, rawPublicKey: Uint8Array, sign: (message: Buffer) => Buffer): string => {
  const problem = keyNameProblem(name)
  if (problem !== null) throw new Error(problem)
  if (!text.endsWith("\n") || controlCharacter(text) !== null) throw new Error("a note's text ends with a newline and holds no other control character")
  const sig = Buffer.concat([noteKeyId(name, rawPublicKey), sign(Buffer.from(text, "utf8"))])
  return `${text}\n${EM_DASH} ${name} ${sig.toString("base64")}\n`
}

/**
 * Does the note carry a valid signature by the Ed25519 key `rawPublicKey` under `name`? Signatures by
 * other keys (another name or another key id) are ignored, as the spec says; the one of this key must
 * verify. `verify(message, signature)` checks an Ed25519 signature by that key.
 */
export const verifyNoteSignature = (
  note: Note,
  name: string,
  rawPublicKey: Uint8Array,
  verify: (message: Buffer, signature: Buffer) => boolean
): { readonly ok: true } | { readonly ok: false; readonly reason: string } => {
  const id = noteKeyId(name, rawPublicKey)
  const mine = note.signatures.filter((s) => s.name === name && s.keyId.equals(id))
  if (mine.length === 0) {
    const by = note.signatures.map((s) => `${s.name} (key id ${s.keyId.toString("hex")})`).join(", ")
    return { ok: false, reason: `not signed by the given key (${name}, key id ${id.toString("hex")}): signed by ${by}` }
  }
  const message = Buffer.from(note.text, "utf8")
  return mine.every((s) => verify(message, s.signature))
    ? { ok: true }
    : { ok: false, reason: `the signature of ${name} (key id ${id.toString("hex")}) does not verify (forged or edited)` }
}
