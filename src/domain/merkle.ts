/**
 * The Merkle tree of an audit log (RFC 9162 §2.1, as RFC 6962 before it), pure.
 *
 * - A leaf's entry is the 32 raw bytes of a record's `hash` (the chain stays; the tree is over it).
 *   Leaf hash = SHA-256(0x00 || entry); node hash = SHA-256(0x01 || left || right); the tree of n
 *   leaves splits at k, the largest power of two smaller than n; the tree of no leaf is SHA-256("").
 * - {@link MerkleEdge}: the right edge of a growing tree (the roots of its perfect subtrees, left to
 *   right, one per 1-bit of the size): appending a leaf is O(log n), the root is their fold.
 * - Inclusion proofs (§2.1.3.1) and consistency proofs (§2.1.4.1) from the leaf hashes, and their
 *   verification by the algorithms of §2.1.3.2 and §2.1.4.2.
 *
 * Hashes are Buffers of 32 bytes (the edge keeps them as words: see below); sizes and indices are
 * safe integers.
 */
import { createHash, hash as sha256Once } from "node:crypto"

/** SHA-256 of `data` as a Buffer (one-shot `crypto.hash` where Node has it). */
const sha256: (data: Buffer) => Buffer =
  typeof sha256Once === "function" ? (data) => sha256Once("sha256", data, "buffer") : (data) => createHash("sha256").update(data).digest()

export const HASH_BYTES = 32

const leafScratch = Buffer.alloc(1 + HASH_BYTES)
const nodeScratch = Buffer.alloc(1 + 2 * HASH_BYTES)
nodeScratch[0] = 0x01

/** The hash of a leaf whose entry is `entry`: SHA-256(0x00 || entry). */
export const leafHash = (entry: Uint8Array): Buffer => {
  if (entry.length === HASH_BYTES) {
    leafScratch[0] = 0x00
    leafScratch.set(entry, 1)
    return sha256(leafScratch)
  }
  return sha256(Buffer.concat([Buffer.from([0x00]), entry]))
}

/** The hash of an inner node: SHA-256(0x01 || left || right). */
export const nodeHash = (left: Uint8Array, right: Uint8Array): Buffer => {
  if (left.length === HASH_BYTES && right.length === HASH_BYTES) {
    nodeScratch.set(left, 1)
    nodeScratch.set(right, 1 + HASH_BYTES)
    return sha256(nodeScratch)
  }
  return sha256(Buffer.concat([Buffer.from([0x01]), left, right]))
}

/** The root of the tree with no leaf: SHA-256 of nothing. */
export const EMPTY_ROOT: Buffer = sha256(Buffer.alloc(0))

/** The leaf of an audit record: the leaf hash of the 32 bytes its `hash` (64 lowercase hex) stands for. */
export const recordLeaf = (recordHashHex: string): Buffer => leafHash(Buffer.from(recordHashHex, "hex"))

/** Is `hex` a record hash: 64 lowercase hex digits (what a leaf's entry is made of)? */
export const isRecordHash = (hex: unknown): hex is string => typeof hex === "string" && /^[0-9a-f]{64}$/.test(hex)

/** The largest power of two smaller than `n` (n ≥ 2). */
const split = (n: number): number => {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

// ---------------------------------------------------------------------------------------------
// Tree hashes as words: SHA-256 of one leaf or node in JavaScript, for the writer's hot path
//
// A leaf (33 bytes hashed) or a node (65 bytes) is one or two SHA-256 blocks: computing them here
// (FIPS 180-4 §6.2, on 32-bit words) costs less than a call into the native hash, and the record's hex
// hash goes straight into words. A 32-byte hash as words: 8 big-endian 32-bit words (Int32Array).

const K = Int32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
  0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
  0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
  0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
  0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
  0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
])
const IV = Int32Array.from([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19])
const schedule = new Int32Array(64)
const state = new Int32Array(8)
/** the padded message: at most two blocks */
const message = new Int32Array(32)

/** One SHA-256 compression of `message[from, from + 16)` into `state`. */
const compress = (from: number): void => {
  const w = schedule
  for (let i = 0; i < 16; i++) w[i] = message[from + i]!
  for (let i = 16; i < 64; i++) {
    const x = w[i - 15]!
    const y = w[i - 2]!
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10)
    w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) | 0
  }
  let a = state[0]!
  let b = state[1]!
  let c = state[2]!
  let d = state[3]!
  let e = state[4]!
  let f = state[5]!
  let g = state[6]!
  let h = state[7]!
  for (let i = 0; i < 64; i++) {
    const t1 = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) | 0
    const t2 = ((((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) ^ (a & c) ^ (b & c))) | 0
    h = g
    g = f
    f = e
    e = (d + t1) | 0
    d = c
    c = b
    b = a
    a = (t1 + t2) | 0
  }
  state[0] = (state[0]! + a) | 0
  state[1] = (state[1]! + b) | 0
  state[2] = (state[2]! + c) | 0
  state[3] = (state[3]! + d) | 0
  state[4] = (state[4]! + e) | 0
  state[5] = (state[5]! + f) | 0
  state[6] = (state[6]! + g) | 0
  state[7] = (state[7]! + h) | 0
}

/**
 * SHA-256(prefix || left [|| right]) into `out[outAt, outAt + 8)`: a leaf (prefix 0x00, `rightAt` −1) or
 * a node (0x01); `left` and `right` are 8 words of `src` at those offsets. `out` may be `src`.
 */
const hashInto = (prefix: number, src: Int32Array, leftAt: number, rightAt: number, out: Int32Array, outAt: number): void => {
  const words = rightAt < 0 ? 8 : 16
  // the message is one prefix byte then the words: every word shifts by one byte
  let carry = prefix << 24
  for (let i = 0; i < words; i++) {
    const x = src[i < 8 ? leftAt + i : rightAt + i - 8]!
    message[i] = carry | (x >>> 8)
    carry = x << 24
  }
  // then the 0x80 marker, zeros, and the length in bits at the end of the last block
  message[words] = carry | 0x00800000
  const blocks = rightAt < 0 ? 1 : 2
  for (let i = words + 1; i < blocks * 16 - 1; i++) message[i] = 0
  message[blocks * 16 - 1] = (1 + 4 * words) * 8
  state.set(IV)
  for (let b = 0; b < blocks; b++) compress(b * 16)
  out.set(state, outAt)
}

const HEX = new Int8Array(128).fill(-1)
for (let i = 0; i < 16; i++) HEX["0123456789abcdef".charCodeAt(i)] = i

/** A record hash (64 lowercase hex digits) as 8 words into `out[at, at + 8)`; callers check the hash first. */
const hexInto = (hex: string, out: Int32Array, at: number): void => {
  for (let i = 0; i < 8; i++) {
    let v = 0
    for (let j = 0; j < 8; j++) v = (v << 4) | (HEX[hex.charCodeAt(8 * i + j) & 127]! & 15)
    out[at + i] = v
  }
}

const bufferInto = (b: Uint8Array, out: Int32Array, at: number): void => {
  for (let i = 0; i < 8; i++) out[at + i] = (b[4 * i]! << 24) | (b[4 * i + 1]! << 16) | (b[4 * i + 2]! << 8) | b[4 * i + 3]!
}

const wordsBuffer = (w: Int32Array, at: number): Buffer => {
  const b = Buffer.alloc(HASH_BYTES)
  for (let i = 0; i < 8; i++) b.writeInt32BE(w[at + i]!, 4 * i)
  return b
}

// ---------------------------------------------------------------------------------------------
// The right edge of a growing tree

/**
 * The right edge of the tree of `size` leaves: the roots of its perfect subtrees, left to right, largest
 * first (their sizes are the 1-bits of `size`), each as 8 big-endian 32-bit words, one after the other in
 * `words`. Immutable once made: {@link appendLeaf} returns a new edge; {@link MerkleEdgeBuilder} grows its
 * own copy in place.
 */
export interface MerkleEdge {
  readonly size: number
  readonly words: Int32Array
}

export const EMPTY_EDGE: MerkleEdge = { size: 0, words: new Int32Array(0) }

/** at most one node per bit of a safe integer */
const MAX_NODES = 53

/**
 * An edge grown in place (what the file sink keeps per file): a stack of node words, no allocation per
 * leaf; read as immutable snapshots.
 */
export class MerkleEdgeBuilder {
  private readonly stack = new Int32Array((MAX_NODES + 1) * 8)
  private nodes: number
  private count: number
  constructor(from: MerkleEdge = EMPTY_EDGE) {
    this.stack.set(from.words)
    this.nodes = from.words.length / 8
    this.count = from.size
  }
  get size(): number {
    return this.count
  }
  /** merge the perfect subtrees the new leaf (on top of the stack) completes: one per trailing 1-bit of the old size */
  private settle(): void {
    for (let s = this.count; s % 2 === 1; s = Math.floor(s / 2)) {
      const right = (this.nodes - 1) * 8
      const left = right - 8
      hashInto(0x01, this.stack, left, right, this.stack, left)
      this.nodes--
    }
    this.count++
  }
  /** append one leaf (its leaf hash) */
  append(leaf: Uint8Array): void {
    bufferInto(leaf, this.stack, this.nodes * 8)
    this.nodes++
    this.settle()
  }
  /** append the leaf of an audit record, given its `hash` (64 lowercase hex digits): {@link recordLeaf}, hashed here */
  appendRecord(recordHashHex: string): void {
    const at = this.nodes * 8
    hexInto(recordHashHex, this.stack, at)
    hashInto(0x00, this.stack, at, -1, this.stack, at)
    this.nodes++
    this.settle()
  }
  /** the edge now, unaffected by later appends */
  snapshot(): MerkleEdge {
    return { size: this.count, words: this.stack.slice(0, this.nodes * 8) }
  }
}

/** The edge after appending one leaf (its leaf hash); `edge` is unchanged. O(log n). */
export const appendLeaf = (edge: MerkleEdge, leaf: Uint8Array): MerkleEdge => {
  const b = new MerkleEdgeBuilder(edge)
  b.append(leaf)
  return b.snapshot()
}

/** The root of the tree an edge is the right edge of: its nodes folded from the right. */
export const edgeRoot = (edge: MerkleEdge): Buffer => {
  const n = edge.words.length / 8
  if (n === 0) return EMPTY_ROOT
  const acc = new Int32Array(16)
  acc.set(edge.words.subarray((n - 1) * 8, n * 8), 8)
  for (let i = n - 2; i >= 0; i--) {
    acc.set(edge.words.subarray(i * 8, i * 8 + 8), 0)
    hashInto(0x01, acc, 0, 8, acc, 8)
  }
  return wordsBuffer(acc, 8)
}

// ---------------------------------------------------------------------------------------------
// A whole tree: roots and proofs

/**
 * The tree over a list of leaves, for roots and proofs at any size up to the number of leaves. Keeps the
 * root of every perfect subtree (level h holds, one after the other, the roots of leaves
 * [i·2^h, (i+1)·2^h)): about 2n hashes in one buffer per level. Every subtree the RFC's recursion meets
 * starts at a multiple of a power of two at least its size, so its root is the fold of at most log n
 * perfect subtrees: a root or a proof costs O(log² n) hashes once the levels are built (O(n)).
 */
export class MerkleTree {
  private readonly levels: Array<Buffer>
  /** the number of leaves */
  readonly size: number

  private constructor(level0: Buffer, size: number) {
    this.size = size
    this.levels = [level0]
    for (let count = Math.floor(size / 2), below = level0; count > 0; count = Math.floor(count / 2)) {
      const level = Buffer.alloc(count * HASH_BYTES)
      for (let i = 0; i < count; i++) {
        const at = 2 * i * HASH_BYTES
        nodeHash(below.subarray(at, at + HASH_BYTES), below.subarray(at + HASH_BYTES, at + 2 * HASH_BYTES)).copy(level, i * HASH_BYTES)
      }
      this.levels.push(level)
      below = level
    }
  }

  /** The tree over these leaf hashes. */
  static fromLeaves(leaves: ReadonlyArray<Uint8Array>): MerkleTree {
    const level0 = Buffer.alloc(leaves.length * HASH_BYTES)
    for (const [i, l] of leaves.entries()) level0.set(l, i * HASH_BYTES)
    return new MerkleTree(level0, leaves.length)
  }

  /** The tree over the leaves of audit records, given their `hash` members (64 hex each). */
  static fromRecordHashes(hashes: ReadonlyArray<string>): MerkleTree {
    const level0 = Buffer.alloc(hashes.length * HASH_BYTES)
    for (const [i, h] of hashes.entries()) recordLeaf(h).copy(level0, i * HASH_BYTES)
    return new MerkleTree(level0, hashes.length)
  }

  /** Leaf `i`'s hash. */
  leaf(i: number): Buffer {
    return Buffer.from(this.levels[0]!.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES))
  }

  /** MTH(D[from:to]), where `from` is a multiple of a power of two at least `to − from` (all the RFC's recursion meets). */
  private subtree(from: number, to: number): Buffer {
    const parts: Array<Buffer> = []
    let at = from
    let h = 0
    while (2 ** (h + 1) <= to - from) h++
    for (; h >= 0; h--) {
      const width = 2 ** h
      if (to - at >= width) {
        const i = at / width
        parts.push(this.levels[h]!.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES))
        at += width
      }
    }
    if (parts.length === 0) return EMPTY_ROOT
    let r: Buffer = Buffer.from(parts[parts.length - 1]!)
    for (let i = parts.length - 2; i >= 0; i--) r = nodeHash(parts[i]!, r)
    return r
  }

  private check(what: string, values: ReadonlyArray<readonly [string, number]>): void {
    for (const [name, v] of values) if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${what}: ${name} ${v} is not a non-negative integer`)
    const size = values[values.length - 1]![1]
    if (size > this.size) throw new RangeError(`${what}: tree size ${size} exceeds the ${this.size} leaves`)
  }

  /**
   * The root of the tree of the first `size` leaves (all of them by default).
   * @throws RangeError unless 0 ≤ size ≤ the number of leaves.
   */
  root(size: number = this.size): Buffer {
    this.check("root", [["size", size]])
    return this.subtree(0, size)
  }

  /**
   * PATH(index, D[0:size]) (RFC 9162 §2.1.3.1): the audit path of leaf `index` in the tree of the first
   * `size` leaves, from the leaf's sibling up to a child of the root.
   * @throws RangeError unless 0 ≤ index < size ≤ the number of leaves.
   */
  inclusionProof(index: number, size: number = this.size): Array<Buffer> {
    this.check("inclusion proof", [["index", index], ["size", size]])
    if (index >= size) throw new RangeError(`inclusion proof: index ${index} is not below tree size ${size}`)
    const path: Array<Buffer> = []
    // the recursion unrolled: descend to the leaf, then the siblings from the bottom up
    let from = 0
    let to = size
    let m = index
    while (to - from > 1) {
      const k = split(to - from)
      if (m < k) {
        path.push(this.subtree(from + k, to))
        to = from + k
      } else {
        path.push(this.subtree(from, from + k))
        from += k
        m -= k
      }
    }
    return path.reverse()
  }

  /**
   * PROOF(oldSize, D[0:size]) (RFC 9162 §2.1.4.1): the consistency proof from the tree of the first
   * `oldSize` leaves to the tree of the first `size`; empty when `oldSize` is 0 or equals `size`.
   * @throws RangeError unless 0 ≤ oldSize ≤ size ≤ the number of leaves.
   */
  consistencyProof(oldSize: number, size: number = this.size): Array<Buffer> {
    this.check("consistency proof", [["old size", oldSize], ["size", size]])
    if (oldSize > size) throw new RangeError(`consistency proof: old size ${oldSize} exceeds size ${size}`)
    if (oldSize === 0 || oldSize === size) return []
    const proof: Array<Buffer> = []
    // SUBPROOF(m, D[from:to], complete), unrolled like the audit path
    let from = 0
    let to = size
    let m = oldSize
    let complete = true
    while (m !== to - from) {
      const k = split(to - from)
      if (m <= k) {
        proof.push(this.subtree(from + k, to))
        to = from + k
      } else {
        proof.push(this.subtree(from, from + k))
        from += k
        m -= k
        complete = false
      }
    }
    if (!complete) proof.push(this.subtree(from, to))
    return proof.reverse()
  }
}

// ---------------------------------------------------------------------------------------------
// Verification (no access to the leaves)

const isHash = (h: Uint8Array): boolean => h.length === HASH_BYTES

const isPowerOfTwo = (n: number): boolean => {
  let k = 1
  while (k < n) k *= 2
  return k === n
}

/**
 * The root that `proof` (an audit path) gives for leaf `index` with hash `leaf` in a tree of `size`
 * leaves (RFC 9162 §2.1.3.2, steps 1–4 and the `sn == 0` check of step 5), or why it gives none.
 */
export const rootFromInclusionProof = (index: number, size: number, leaf: Uint8Array, proof: ReadonlyArray<Uint8Array>): Buffer | string => {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0) return "the leaf index is not a non-negative integer"
  if (index >= size) return `leaf index ${index} is not below tree size ${size}`
  if (!isHash(leaf)) return "the leaf hash is not 32 bytes"
  let fn = index
  let sn = size - 1
  let r: Buffer = Buffer.from(leaf)
  for (const [i, p] of proof.entries()) {
    if (!isHash(p)) return `audit path element ${i + 1} is not 32 bytes`
    if (sn === 0) return `the audit path is too long for leaf ${index} of ${size}`
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r)
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2)
        sn = Math.floor(sn / 2)
      }
    } else {
      r = nodeHash(r, p)
    }
    fn = Math.floor(fn / 2)
    sn = Math.floor(sn / 2)
  }
  if (sn !== 0) return `the audit path is too short for leaf ${index} of ${size}`
  return r
}

/** Does `proof` show leaf `index` (hash `leaf`) in the tree of `size` leaves with root `root`? Null when it does, else why not. */
export const verifyInclusion = (index: number, size: number, leaf: Uint8Array, proof: ReadonlyArray<Uint8Array>, root: Uint8Array): string | null => {
  const r = rootFromInclusionProof(index, size, leaf, proof)
  if (typeof r === "string") return r
  return isHash(root) && r.equals(root) ? null : `the audit path leads to root ${r.toString("hex")}, not to the checkpoint's ${Buffer.from(root).toString("hex")}`
}

/**
 * Does `proof` show that the tree of `oldSize` leaves with root `oldRoot` is a prefix of the tree of `size`
 * leaves with root `root` (RFC 9162 §2.1.4.2)? Null when it does, else why not. An old size of 0 is a
 * prefix of every tree (empty proof); equal sizes need equal roots (empty proof).
 */
export const verifyConsistency = (
  oldSize: number,
  size: number,
  oldRoot: Uint8Array,
  root: Uint8Array,
  proof: ReadonlyArray<Uint8Array>
): string | null => {
  if (!Number.isSafeInteger(oldSize) || !Number.isSafeInteger(size) || oldSize < 0) return "the sizes are not non-negative integers"
  if (oldSize > size) return `the old tree (${oldSize} leaves) is larger than the new one (${size}): the log shrank`
  if (!isHash(oldRoot) || !isHash(root)) return "a root is not 32 bytes"
  if (oldSize === size) {
    if (proof.length !== 0) return "a proof between trees of the same size must be empty"
    return Buffer.from(oldRoot).equals(root) ? null : `two different roots for the same tree size ${size}`
  }
  if (oldSize === 0) return proof.length === 0 ? null : "a proof from the empty tree must be empty"
  // §2.1.4.2
  if (proof.length === 0) return "the consistency proof is empty"
  for (const [i, p] of proof.entries()) if (!isHash(p)) return `consistency proof element ${i + 1} is not 32 bytes`
  const path = isPowerOfTwo(oldSize) ? [oldRoot, ...proof] : [...proof]
  let fn = oldSize - 1
  let sn = size - 1
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2)
    sn = Math.floor(sn / 2)
  }
  let fr: Buffer = Buffer.from(path[0]!)
  let sr: Buffer = Buffer.from(path[0]!)
  for (const c of path.slice(1)) {
    if (sn === 0) return "the consistency proof is too long"
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr)
      sr = nodeHash(c, sr)
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2)
        sn = Math.floor(sn / 2)
      }
    } else {
      sr = nodeHash(sr, c)
    }
    fn = Math.floor(fn / 2)
    sn = Math.floor(sn / 2)
  }
  if (sn !== 0) return "the consistency proof is too short"
  if (fr.equals(oldRoot) && sr.equals(root)) return null
  return `the consistency proof does not lead from the old root of ${oldSize} leaves to the new root of ${size} (history rewritten, or a wrong proof)`
}
