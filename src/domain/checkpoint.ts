/**
 * Signed checkpoints (architecture decision 7): every N records, and when a file is closed, the
 * sink appends `{seq, head, count, final, ts}` for the run to `<run>.anchor.jsonl`, signed with
 * Ed25519 over a domain-separated RFC 8785 form. A checkpoint pins the chain's head, so a truncated
 * tail or a rewritten file is detectable as long as the anchor (or its signer) is trusted; `final`
 * (signed too) says whether the writer closed the file with it, so cutting the file and its anchor
 * back to an earlier periodic checkpoint is detectable as well (see domain/audit-verify).
 *
 * Since the log is also a Merkle tree (./merkle.ts), a checkpoint carries the tree's `root` at `seq`
 * and, when signed, the same tree head as a C2SP checkpoint (./tlog-checkpoint.ts): a signed note with
 * the same key, which standard transparency tooling reads. Both are inside what `sig` covers.
 */
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from "node:crypto"
import { canonicalize } from "./canonical-json.js"
import { originFor, signCheckpoint } from "./tlog-checkpoint.js"

export const ANCHOR_SCHEMA = "vetobench/anchor-v1"
export const CHECKPOINT_PREFIX = "vetobench/v2 checkpoint\n"

export interface CheckpointKey {
  readonly alg: "ed25519"
  /** base64 of the 32-byte raw public key */
  readonly public_key: string
  /** first 16 hex of sha256(raw public key) */
  readonly key_id: string
}

export interface Checkpoint {
  readonly schema: typeof ANCHOR_SCHEMA
  /** the audit file's name (no directory) */
  readonly file: string
  /** seq of the last record covered */
  readonly seq: number
  /** that record's hash */
  readonly head: string
  /** number of records covered (= seq for a file that starts at seq 1) */
  readonly count: number
  /**
   * true when the writer closed the file with this checkpoint, false for one written while the file
   * stays open (every N records, `checkpoint()`); absent in checkpoints written before the field existed
   */
  readonly final?: boolean
  /**
   * lowercase hex of the RFC 9162 root of the tree over records 1…seq (leaf entry = a record's `hash`);
   * absent in checkpoints written before the log was a Merkle tree
   */
  readonly root?: string
  readonly ts: string
  /** the signer's public key, or null for an unsigned checkpoint */
  readonly key: CheckpointKey | null
  /**
   * the C2SP checkpoint (origin `vetobench/<run id>/<key id>`, tree size = seq, base64 root) as a signed
   * note by `key`; null when unsigned; absent when `root` is
   */
  readonly note?: string | null
  /** base64 Ed25519 signature over CHECKPOINT_PREFIX + JCS(checkpoint without `sig`, `final` included), or null */
  readonly sig: string | null
}

const rawPublicKey = (pub: KeyObject): Buffer => {
  const jwk = pub.export({ format: "jwk" })
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string") throw new Error("not an Ed25519 key")
  return Buffer.from(jwk.x, "base64url")
}

export const keyInfo = (pub: KeyObject): CheckpointKey => {
  const raw = rawPublicKey(pub)
  return { alg: "ed25519", public_key: raw.toString("base64"), key_id: createHash("sha256").update(raw).digest("hex").slice(0, 16) }
}

export const publicKeyFromRaw = (base64: string): KeyObject =>
  createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(base64, "base64").toString("base64url") }, format: "jwk" })

/** A signer: the private key and the public key info recorded in each checkpoint. */
export interface Signer {
  readonly key: CheckpointKey
  readonly sign: (message: Buffer) => Buffer
}

/** A signer from a PKCS#8 PEM private key (as written by `vetobench audit keygen`). */
export const signerFromPem = (pem: string): Signer => {
  const priv = createPrivateKey(pem)
  if (priv.asymmetricKeyType !== "ed25519") throw new Error(`expected an Ed25519 private key, got ${priv.asymmetricKeyType ?? "unknown"}`)
  return { key: keyInfo(createPublicKey(priv)), sign: (m) => sign(null, m, priv) }
}

/** A public key from a SPKI PEM file's text (`audit.pub`). */
export const publicKeyFromPem = (pem: string): CheckpointKey => {
  const pub = createPublicKey(pem)
  if (pub.asymmetricKeyType !== "ed25519") throw new Error(`expected an Ed25519 public key, got ${pub.asymmetricKeyType ?? "unknown"}`)
  return keyInfo(pub)
}

const signedBytes = (c: Omit<Checkpoint, "sig">): Buffer => Buffer.from(CHECKPOINT_PREFIX + canonicalize(c), "utf8")

/**
 * A checkpoint of `at`, signed by `signer` (unsigned without one). `at.final` says whether the writer
 * closes the file with it; without it the checkpoint has no `final` field (the format before the field
 * existed, which a verifier cannot tell closed from open: give it). `at.root`, the tree's root at `seq`,
 * adds `root` and the signed C2SP checkpoint `note`; without it neither (the format before the tree).
 */
export const makeCheckpoint = (
  at: { readonly file: string; readonly seq: number; readonly head: string; readonly ts: string; readonly final?: boolean; readonly root?: Buffer },
  signer: Signer | null
): Checkpoint => {
  const root = at.root
  const note =
    root === undefined || signer === null ? null : signCheckpoint({ origin: originFor(at.file, signer.key.key_id), size: at.seq, root, extensions: [] }, signer)
  const body: Omit<Checkpoint, "sig"> = {
    schema: ANCHOR_SCHEMA,
    file: at.file,
    seq: at.seq,
    head: at.head,
    count: at.seq,
    ...(at.final === undefined ? {} : { final: at.final }),
    ...(root === undefined ? {} : { root: root.toString("hex") }),
    ts: at.ts,
    key: signer?.key ?? null,
    ...(root === undefined ? {} : { note })
  }
  return { ...body, sig: signer === null ? null : signer.sign(signedBytes(body)).toString("base64") }
}

/** Does the checkpoint's signature verify under its own recorded key? (null when unsigned) */
export const signatureValid = (c: Checkpoint): boolean | null => {
  if (c.key === null || c.sig === null) return null
  try {
    const { sig, ...body } = c
    return verify(null, signedBytes(body), publicKeyFromRaw(c.key.public_key), Buffer.from(sig, "base64"))
  } catch {
    return false
  }
}
