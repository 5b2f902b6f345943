/**
 * The audit log's Merkle tree (src/domain/merkle.ts) is RFC 9162 §2.1 exactly:
 * - against the published reference vectors (the 8 leaves of RFC 6962's reference tests, their roots,
 *   inclusion and consistency proofs), proofs made and verified, and corrupted proofs refused;
 * - against a brute-force reference written here from the RFC's definitions (MTH, PATH, PROOF as
 *   recursions over the list of entries) on a random tree of 2,000 leaves: every size 1..2,000; for
 *   sizes up to 128 every index and every old size, above that a sample of indices and old sizes per
 *   size (the ends, both sides of each split point, random ones);
 * - the right edge (append O(log n), root by folding; its hashes computed in JavaScript) gives the same
 *   root as the whole tree at every size, from leaf hashes and from record hashes.
 */
import { createHash, randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import {
  appendLeaf,
  EMPTY_EDGE,
  EMPTY_ROOT,
  edgeRoot,
  leafHash,
  MerkleEdgeBuilder,
  MerkleTree,
  nodeHash,
  rootFromInclusionProof,
  verifyConsistency,
  verifyInclusion
} from "../../src/domain/merkle.js"

const hex = (h: string) => Buffer.from(h, "hex")

// Vector values from transparency-dev/merkle, proof/verify_test.go (the RFC 6962 reference test data,
// as in certificate-transparency-go): leaves, the roots of the trees of 1..8 of them, inclusion proofs
// (leaf given 1-based there, as here) and consistency proofs.
const LEAVES = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"].map(hex)
const ROOTS = [
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"
].map(hex)
const INCLUSION: ReadonlyArray<{ leaf: number; size: number; proof: ReadonlyArray<string> }> = [
  { leaf: 1, size: 1, proof: [] },
  {
    leaf: 1,
    size: 8,
    proof: [
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"
    ]
  },
  {
    leaf: 6,
    size: 8,
    proof: [
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"
    ]
  },
  { leaf: 3, size: 3, proof: ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"] },
  {
    leaf: 2,
    size: 5,
    proof: [
      "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"
    ]
  }
]
const CONSISTENCY: ReadonlyArray<{ size1: number; size2: number; proof: ReadonlyArray<string> }> = [
  { size1: 1, size2: 1, proof: [] },
  {
    size1: 1,
    size2: 8,
    proof: [
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"
    ]
  },
  {
    size1: 6,
    size2: 8,
    proof: [
      "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"
    ]
  },
  {
    size1: 2,
    size2: 5,
    proof: ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e", "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]
  },
  {
    size1: 6,
    size2: 7,
    proof: [
      "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"
    ]
  }
]
const EMPTY_TREE = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

const vectorTree = MerkleTree.fromLeaves(LEAVES.map(leafHash))
const asHex = (bs: ReadonlyArray<Buffer>) => bs.map((b) => b.toString("hex"))

/** Each proof with one element's bit flipped, one element dropped, one added: what a verifier must refuse. */
const corruptions = (proof: ReadonlyArray<Buffer>): Array<{ readonly what: string; readonly proof: Array<Buffer> }> => {
  const out: Array<{ what: string; proof: Array<Buffer> }> = []
  for (let i = 0; i < proof.length; i++) {
    const p = proof.map((b) => Buffer.from(b))
    p[i]![0]! ^= 8
    out.push({ what: `proof[${i}] bit 3 flipped`, proof: p })
  }
  if (proof.length > 0) out.push({ what: "last element dropped", proof: proof.slice(0, -1) })
  out.push({ what: "an element appended", proof: [...proof, EMPTY_ROOT] })
  out.push({ what: "an element prepended", proof: [EMPTY_ROOT, ...proof] })
  return out
}

describe("RFC 9162 hashing against the reference vectors", () => {
  it("the empty tree, leaf and node hashes, the roots of the trees of 1..8 leaves", () => {
    expect(EMPTY_ROOT.toString("hex")).toBe(EMPTY_TREE)
    expect(MerkleTree.fromLeaves([]).root().toString("hex")).toBe(EMPTY_TREE)
    // the tree of one leaf is its leaf hash; of two, one node over both
    expect(leafHash(LEAVES[0]!).equals(ROOTS[0]!)).toBe(true)
    expect(nodeHash(leafHash(LEAVES[0]!), leafHash(LEAVES[1]!)).equals(ROOTS[1]!)).toBe(true)
    for (let n = 1; n <= 8; n++) expect(vectorTree.root(n).toString("hex"), `root of ${n}`).toBe(ROOTS[n - 1]!.toString("hex"))
  })

  it("inclusion proofs: made as the vectors, verified, and every corruption refused", () => {
    for (const v of INCLUSION) {
      const index = v.leaf - 1
      expect(asHex(vectorTree.inclusionProof(index, v.size)), `leaf ${index} of ${v.size}`).toEqual(v.proof)
      const leaf = leafHash(LEAVES[index]!)
      const root = ROOTS[v.size - 1]!
      const proof = v.proof.map(hex)
      expect(verifyInclusion(index, v.size, leaf, proof, root)).toBeNull()
      for (const c of corruptions(proof)) expect(verifyInclusion(index, v.size, leaf, c.proof, root), c.what).not.toBeNull()
      expect(verifyInclusion(index + 1, v.size, leaf, proof, root)).not.toBeNull()
      expect(verifyInclusion(index, v.size * 2, leaf, proof, root)).not.toBeNull()
      expect(verifyInclusion(index, v.size, leafHash(Buffer.from("WrongLeaf")), proof, root)).not.toBeNull()
      expect(verifyInclusion(index, v.size, leaf, proof, EMPTY_ROOT)).not.toBeNull()
    }
    expect(rootFromInclusionProof(0, 0, EMPTY_ROOT, [])).toMatch(/not below tree size 0/)
  })

  it("consistency proofs: made as the vectors, verified, and every corruption refused", () => {
    for (const v of CONSISTENCY) {
      expect(asHex(vectorTree.consistencyProof(v.size1, v.size2)), `${v.size1} → ${v.size2}`).toEqual(v.proof)
      const [r1, r2] = [ROOTS[v.size1 - 1]!, ROOTS[v.size2 - 1]!]
      const proof = v.proof.map(hex)
      expect(verifyConsistency(v.size1, v.size2, r1, r2, proof)).toBeNull()
      if (proof.length === 0) continue
      for (const c of corruptions(proof)) expect(verifyConsistency(v.size1, v.size2, r1, r2, c.proof), c.what).not.toBeNull()
      expect(verifyConsistency(v.size1, v.size2, r2, r1, proof), "swapped roots").not.toBeNull()
      expect(verifyConsistency(v.size1 + 1, v.size2, r1, r2, proof)).not.toBeNull()
      expect(verifyConsistency(v.size1, v.size2 * 2, r1, r2, proof)).not.toBeNull()
      expect(verifyConsistency(v.size1, v.size2, r1, r2, []), "empty proof").not.toBeNull()
    }
    // the trivial cases: from the empty tree, and between equal sizes
    expect(verifyConsistency(0, 5, EMPTY_ROOT, ROOTS[4]!, [])).toBeNull()
    expect(verifyConsistency(3, 3, ROOTS[2]!, ROOTS[2]!, [])).toBeNull()
    expect(verifyConsistency(3, 3, ROOTS[2]!, ROOTS[3]!, [])).toMatch(/two different roots/)
    expect(verifyConsistency(4, 3, ROOTS[3]!, ROOTS[2]!, [])).toMatch(/the log shrank/)
  })
})

// ---------------------------------------------------------------------------------------------
// The reference: RFC 9162 §2.1's definitions, recursion by recursion, over the entries themselves

const sha = (...parts: ReadonlyArray<Uint8Array>) => {
  const h = createHash("sha256")
  for (const p of parts) h.update(p)
  return h.digest()
}
const largestPowerBelow = (n: number) => 2 ** Math.ceil(Math.log2(n) - 1)

/** MTH over entries[from, to), memoised (every size of the test reuses the same subtrees). */
const referenceTree = (entries: ReadonlyArray<Buffer>) => {
  const memo = new Map<number, Buffer>()
  const mth = (from: number, to: number): Buffer => {
    const key = from * 8192 + to
    const hit = memo.get(key)
    if (hit !== undefined) return hit
    const n = to - from
    let r: Buffer
    if (n === 0) r = sha()
    else if (n === 1) r = sha(Buffer.from([0]), entries[from]!)
    else {
      const k = largestPowerBelow(n)
      r = sha(Buffer.from([1]), mth(from, from + k), mth(from + k, to))
    }
    memo.set(key, r)
    return r
  }
  const path = (m: number, from: number, to: number): Array<Buffer> => {
    const n = to - from
    if (n <= 1) return []
    const k = largestPowerBelow(n)
    return m < k ? [...path(m, from, from + k), mth(from + k, to)] : [...path(m - k, from + k, to), mth(from, from + k)]
  }
  const subproof = (m: number, from: number, to: number, b: boolean): Array<Buffer> => {
    const n = to - from
    if (m === n) return b ? [] : [mth(from, to)]
    const k = largestPowerBelow(n)
    return m <= k ? [...subproof(m, from, from + k, b), mth(from + k, to)] : [...subproof(m - k, from + k, to, false), mth(from, from + k)]
  }
  return { mth, path: (m: number, n: number) => path(m, 0, n), proof: (m: number, n: number) => subproof(m, 0, n, true) }
}

describe("RFC 9162 against a brute-force reference on a random tree", () => {
  it("sizes 1..2000: roots, inclusion and consistency proofs equal the reference's and verify", () => {
    const N = 2000
    const entries = Array.from({ length: N }, () => randomBytes(32))
    const ref = referenceTree(entries)
    const tree = MerkleTree.fromLeaves(entries.map(leafHash))
    const edge = new MerkleEdgeBuilder()
    // the same edge from the entries as record hashes (hex): leaves hashed by the edge itself
    const records = new MerkleEdgeBuilder()
    const random = (n: number) => Math.floor(Math.random() * n)
    let inclusionChecked = 0
    let consistencyChecked = 0
    // mismatches are collected (one expect per proof would cost more than the proofs)
    const wrong: Array<string> = []
    const same = (a: ReadonlyArray<Buffer>, b: ReadonlyArray<Buffer>) => a.length === b.length && a.every((x, i) => x.equals(b[i]!))
    for (let n = 1; n <= N; n++) {
      edge.append(leafHash(entries[n - 1]!))
      records.appendRecord(entries[n - 1]!.toString("hex"))
      const root = ref.mth(0, n)
      if (!tree.root(n).equals(root)) wrong.push(`root of ${n}`)
      if (!edgeRoot(edge.snapshot()).equals(root)) wrong.push(`edge root of ${n}`)
      if (!edgeRoot(records.snapshot()).equals(root)) wrong.push(`edge root of ${n} from record hashes`)
      const k = n > 1 ? largestPowerBelow(n) : 0
      const sample = n <= 128
        ? Array.from({ length: n }, (_, i) => i)
        : [0, 1, k - 1, k, n - 2, n - 1, random(n), random(n), random(n)].filter((i) => i >= 0 && i < n)
      for (const i of sample) {
        const proof = tree.inclusionProof(i, n)
        if (!same(proof, ref.path(i, n))) wrong.push(`inclusion proof of ${i} in ${n}`)
        const why = verifyInclusion(i, n, leafHash(entries[i]!), proof, root)
        if (why !== null) wrong.push(`inclusion of ${i} in ${n}: ${why}`)
        inclusionChecked++
      }
      const olds = n <= 128 ? Array.from({ length: n }, (_, i) => i + 1) : [1, 2, k - 1, k, k + 1, n - 1, n, 1 + random(n), 1 + random(n)].filter((m) => m >= 1 && m <= n)
      for (const m of olds) {
        const proof = tree.consistencyProof(m, n)
        if (!same(proof, ref.proof(m, n))) wrong.push(`consistency proof ${m} → ${n}`)
        const why = verifyConsistency(m, n, ref.mth(0, m), root, proof)
        if (why !== null) wrong.push(`consistency ${m} → ${n}: ${why}`)
        consistencyChecked++
      }
    }
    expect(wrong).toEqual([])
    // every size was reached, and well over the exhaustive part
    expect(inclusionChecked).toBeGreaterThan(8256 + 1872 * 7)
    expect(consistencyChecked).toBeGreaterThan(8256 + 1872 * 7)
  }, 120_000)

  it("a rewritten history (one entry changed) breaks every consistency proof that spans it, and the inclusion of that entry", () => {
    const entries = Array.from({ length: 300 }, () => randomBytes(32))
    const forged = entries.map((e, i) => (i === 41 ? randomBytes(32) : e))
    const genuine = MerkleTree.fromLeaves(entries.map(leafHash))
    const rewritten = MerkleTree.fromLeaves(forged.map(leafHash))
    for (const m of [42, 64, 100, 299]) {
      // the forger's proof from the genuine old root to the forged new root does not verify
      const why = verifyConsistency(m, 300, genuine.root(m), rewritten.root(), rewritten.consistencyProof(m, 300))
      expect(why).toMatch(/history rewritten/)
    }
    // an old size before the change stays consistent
    expect(verifyConsistency(41, 300, genuine.root(41), rewritten.root(), rewritten.consistencyProof(41, 300))).toBeNull()
    expect(verifyInclusion(41, 300, leafHash(entries[41]!), rewritten.inclusionProof(41), rewritten.root())).not.toBeNull()
  })

  it("the edge's own SHA-256 (leaves from record hashes, nodes) equals the native one on every byte pattern tried", () => {
    const patterns = [Buffer.alloc(32), Buffer.alloc(32, 0xff), Buffer.alloc(32, 0x80), ...Array.from({ length: 200 }, () => randomBytes(32))]
    for (const p of patterns) {
      const b = new MerkleEdgeBuilder()
      b.appendRecord(p.toString("hex"))
      expect(edgeRoot(b.snapshot()).toString("hex")).toBe(leafHash(p).toString("hex"))
      b.appendRecord(p.toString("hex"))
      expect(edgeRoot(b.snapshot()).toString("hex")).toBe(nodeHash(leafHash(p), leafHash(p)).toString("hex"))
    }
  })

  it("appendLeaf leaves the edge it was given unchanged", () => {
    const one = appendLeaf(EMPTY_EDGE, leafHash(LEAVES[0]!))
    const two = appendLeaf(one, leafHash(LEAVES[1]!))
    expect(one.size).toBe(1)
    expect(edgeRoot(one).equals(ROOTS[0]!)).toBe(true)
    expect(edgeRoot(two).equals(ROOTS[1]!)).toBe(true)
  })
})
