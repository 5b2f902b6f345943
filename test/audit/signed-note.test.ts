/**
 * C2SP signed notes and checkpoints (src/domain/signed-note.ts, src/domain/tlog-checkpoint.ts):
 * - the published Go reference note (golang.org/x/mod, sumdb/note): the key id of its key, our signature
 *   of its text byte for byte (Ed25519 is deterministic), its verification, and refusals;
 * - the checkpoint text format (origin, size, base64 root, extension lines), parsed strictly;
 * - our checkpoints' signed notes: verified by the key, refused with the exact reason under another.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from "node:crypto"
import { describe, expect, it } from "vitest"
import { keyInfo, makeCheckpoint, signerFromPem } from "../../src/domain/checkpoint.js"
import { EMPTY_ROOT } from "../../src/domain/merkle.js"
import { EM_DASH, noteKeyId, parseNote, signNote, verifyNoteSignature } from "../../src/domain/signed-note.js"
import {
  checkpointSignatureProblem,
  checkpointText,
  originFor,
  originParts,
  parseCheckpointText,
  parseSignedCheckpoint
} from "../../src/domain/tlog-checkpoint.js"

// Vector values from golang.org/x/mod, sumdb/note (the package documentation's example and note_test.go):
// the signer and verifier keys of "PeterNeumann" (base64 of the type byte 0x01 and the 32-byte seed or
// public key), the text, and the signed note.
const GO_SIGNER_KEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
const GO_VERIFIER_KEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
const GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
const GO_NOTE = `${GO_TEXT}\n${EM_DASH} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`

/** The last `+`-separated part of a Go key: base64 of the type byte and the key. */
const keyBytes = (k: string) => Buffer.from(k.slice(k.lastIndexOf("+", k.length - 45) + 1), "base64")
const goSeed = keyBytes(GO_SIGNER_KEY).subarray(1)
const goPublic = keyBytes(GO_VERIFIER_KEY).subarray(1)
// PKCS#8 DER of an Ed25519 private key: a fixed prefix, then the 32-byte seed
const goPrivate = createPrivateKey({ key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), goSeed]), format: "der", type: "pkcs8" })
const goVerify = (m: Buffer, s: Buffer) => verify(null, m, createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: goPublic.toString("base64url") }, format: "jwk" }), s)

describe("signed notes against the Go reference (golang.org/x/mod sumdb/note)", () => {
  it("the key id of the reference key is SHA-256(name || 0x0A || 0x01 || key)[:4]", () => {
    expect(keyBytes(GO_SIGNER_KEY)[0]).toBe(0x01)
    expect(noteKeyId("PeterNeumann", goPublic).toString("hex")).toBe("c74f20a3")
  })

  it("signing the reference text with the reference key gives the reference note, byte for byte", () => {
    expect(signNote(GO_TEXT, "PeterNeumann", goPublic, (m) => sign(null, m, goPrivate))).toBe(GO_NOTE)
  })

  it("the reference note parses and verifies; an edited text, another name or another key does not", () => {
    const note = parseNote(GO_NOTE)
    if (typeof note === "string") throw new Error(note)
    expect(note.text).toBe(GO_TEXT)
    expect(verifyNoteSignature(note, "PeterNeumann", goPublic, goVerify)).toEqual({ ok: true })
    const edited = parseNote(GO_NOTE.replace("cryptography", "cryptographY"))
    if (typeof edited === "string") throw new Error(edited)
    expect(verifyNoteSignature(edited, "PeterNeumann", goPublic, goVerify)).toEqual({
      ok: false,
      reason: "the signature of PeterNeumann (key id c74f20a3) does not verify (forged or edited)"
    })
    const other = generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" })
    const otherRaw = Buffer.from(other.x!, "base64url")
    const r = verifyNoteSignature(note, "PeterNeumann", otherRaw, () => true)
    expect(r.ok).toBe(false)
    expect(!r.ok && r.reason).toBe(
      `not signed by the given key (PeterNeumann, key id ${noteKeyId("PeterNeumann", otherRaw).toString("hex")}): signed by PeterNeumann (key id c74f20a3)`
    )
  })

  it("malformed notes are refused with the reason", () => {
    expect(parseNote(GO_TEXT)).toBe("the note has no blank line before its signatures")
    expect(parseNote(GO_NOTE.slice(0, -1))).toBe("the note does not end with a newline")
    expect(parseNote(GO_NOTE.replace("\n\n", "\r\n\n"))).toBe("the note holds the control character U+000D")
    expect(parseNote(GO_NOTE.replace(`${EM_DASH} PeterNeumann`, "- PeterNeumann"))).toMatch(/^signature line 1 is not/)
    expect(parseNote(GO_NOTE.replace("PeterNeumann x08", "Peter+Neumann x08"))).toBe('signature line 1: key name "Peter+Neumann" holds a "+"')
    expect(parseNote(GO_NOTE.replace("JnAM=", "JnAM"))).toBe("signature line 1: the signature is not base64 of a key id and a signature")
  })
})

describe("C2SP checkpoints of audit logs", () => {
  const root = Buffer.from("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d", "hex")

  it("the text: origin, decimal size, base64 root, extension lines; parsed strictly", () => {
    const text = checkpointText({ origin: "vetobench/demo/0123456789abcdef", size: 8, root, extensions: [] })
    expect(text).toBe("vetobench/demo/0123456789abcdef\n8\nbjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=\n")
    expect(parseCheckpointText(text)).toEqual({ origin: "vetobench/demo/0123456789abcdef", size: 8, root, extensions: [] })
    expect(parseCheckpointText(`${text}ext one\n`)).toMatchObject({ extensions: ["ext one"] })
    expect(parseCheckpointText(text.replace("\n8\n", "\n08\n"))).toMatch(/not a decimal number without leading zeros/)
    expect(parseCheckpointText(text.replace("\n8\n", "\n-8\n"))).toMatch(/not a decimal number/)
    expect(parseCheckpointText(text.replace("oB0=", "oB0"))).toMatch(/is not the base64 of 32 bytes/)
    expect(parseCheckpointText(`${text}\n`)).toBe("an extension line is empty")
    expect(parseCheckpointText("vetobench/demo/0123456789abcdef\n8\n")).toMatch(/at least three lines/)
    expect(checkpointText({ origin: "o", size: 0, root: EMPTY_ROOT, extensions: [] })).toBe("o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n")
  })

  it("the origin names the log and the key: vetobench/<run id>/<key id>", () => {
    expect(originFor("exp.asbench.m.baseline.jsonl", "0123456789abcdef")).toBe("vetobench/exp.asbench.m.baseline/0123456789abcdef")
    expect(originParts("vetobench/exp.asbench.m.baseline/0123456789abcdef")).toEqual({ file: "exp.asbench.m.baseline.jsonl", keyId: "0123456789abcdef" })
    expect(originParts("example.com/log")).toBeNull()
  })

  it("a signed checkpoint's note is signed by the checkpoint's key under its origin; another key is refused with the exact reason", () => {
    const mk = () => signerFromPem(generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString())
    const signer = mk()
    const c = makeCheckpoint({ file: "demo.jsonl", seq: 8, head: "a".repeat(64), ts: "2026-12-02T00:00:00.000Z", final: true, root }, signer)
    expect(c.root).toBe(root.toString("hex"))
    const parsed = parseSignedCheckpoint(c.note!)
    if (typeof parsed === "string") throw new Error(parsed)
    expect(parsed.head).toEqual({ origin: `vetobench/demo/${signer.key.key_id}`, size: 8, root, extensions: [] })
    expect(parsed.note.signatures.map((s) => s.name)).toEqual([`vetobench/demo/${signer.key.key_id}`])
    expect(checkpointSignatureProblem(parsed, signer.key)).toBeNull()
    const other = mk().key
    expect(checkpointSignatureProblem(parsed, other)).toBe(
      `not signed by the given key (vetobench/demo/${signer.key.key_id}, key id ${noteKeyId(parsed.head.origin, Buffer.from(other.public_key, "base64")).toString("hex")}): ` +
        `signed by vetobench/demo/${signer.key.key_id} (key id ${noteKeyId(parsed.head.origin, Buffer.from(signer.key.public_key, "base64")).toString("hex")})`
    )
    // without a root (the format before the tree) and unsigned: no note
    expect(makeCheckpoint({ file: "demo.jsonl", seq: 8, head: "a".repeat(64), ts: "t" }, signer)).not.toHaveProperty("note")
    expect(makeCheckpoint({ file: "demo.jsonl", seq: 8, head: "a".repeat(64), ts: "t", root }, null).note).toBeNull()
    expect(keyInfo(createPublicKey(generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" }))).key_id).toMatch(/^[0-9a-f]{16}$/)
  })
})
