/**
 * The tree, checkpoint and receipt parts of docs/audit-format.md's worked example are fixtures: the
 * leaf hashes, root, audit path and consistency proof follow the documented recipe (computed here with
 * SHA-256 alone), the example key gives the documented ids, and the example anchor line verifies with
 * the project's verifier under that key, its note being the documented C2SP checkpoint.
 */
import { createHash, createPrivateKey, createPublicKey } from "node:crypto"
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { verifyAudit } from "../../src/domain/audit-verify.js"
import { keyInfo } from "../../src/domain/checkpoint.js"
import { MerkleTree } from "../../src/domain/merkle.js"
import { noteKeyId } from "../../src/domain/signed-note.js"
import { checkpointSignatureProblem, parseSignedCheckpoint } from "../../src/domain/tlog-checkpoint.js"

const doc = readFileSync("docs/audit-format.md", "utf8")
const block = (lang: string, i = 0) => [...doc.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))][i]![1]!
const sha = (...parts: ReadonlyArray<Uint8Array>) => {
  const h = createHash("sha256")
  for (const p of parts) h.update(p)
  return h.digest()
}

const records = block("jsonl").trimEnd().split("\n").map((l) => JSON.parse(l) as { hash: string })
const values = Object.fromEntries(block("merkle").trimEnd().split("\n").map((l, i) => [`${i}`, l.split(/\s+/).at(-1)!]))

describe("docs/audit-format.md: the worked example's tree, checkpoint and note", () => {
  it("leaf and node hashes as documented (0x00 / 0x01 prefixes over the records' hash bytes)", () => {
    const leaves = records.map((r) => sha(Buffer.from([0]), Buffer.from(r.hash, "hex")))
    const root = sha(Buffer.from([1]), leaves[0]!, leaves[1]!)
    expect([leaves[0]!.toString("hex"), leaves[1]!.toString("hex"), root.toString("hex"), root.toString("base64")]).toEqual([values["0"], values["1"], values["2"], values["3"]])
    const tree = MerkleTree.fromRecordHashes(records.map((r) => r.hash))
    expect(tree.root().equals(root)).toBe(true)
    expect(doc).toContain(`The audit path of record 2 (leaf 1 of 2) is \`["${leaves[0]!.toString("base64")}"]\``)
    expect(doc).toContain(`the consistency proof from size 1 to 2 is \`["${leaves[1]!.toString("base64")}"]\``)
    expect(tree.inclusionProof(1).map((h) => h.toString("base64"))).toEqual([leaves[0]!.toString("base64")])
    expect(tree.consistencyProof(1).map((h) => h.toString("base64"))).toEqual([leaves[1]!.toString("base64")])
  })

  it("the example key's ids, the anchor line verified under it, and its note as documented", () => {
    const seed = /whose Ed25519 seed is\n?`([0-9a-f]{64})`/.exec(doc)![1]!
    const priv = createPrivateKey({ key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), Buffer.from(seed, "hex")]), format: "der", type: "pkcs8" })
    const key = keyInfo(createPublicKey(priv))
    expect(doc).toContain(`(public key\n\`${key.public_key}\`, \`key_id\` \`${key.key_id}\``)
    const origin = `vetobench/r1/${key.key_id}`
    expect(doc).toContain(`The origin is \`${origin}\`, the note's key id \`${noteKeyId(origin, Buffer.from(key.public_key, "base64")).toString("hex")}\``)
    const anchor = block("anchor")
    const v = verifyAudit("r1.jsonl", block("jsonl"), anchor, key)
    expect(v).toMatchObject({ status: "ok", anchor: { status: "ok" }, signatures: { status: "ok" } })
    const note = (JSON.parse(anchor) as { note: string }).note
    expect(block("note")).toBe(note)
    const parsed = parseSignedCheckpoint(note)
    if (typeof parsed === "string") throw new Error(parsed)
    expect(parsed.head).toMatchObject({ origin, size: 2 })
    expect(parsed.head.root.toString("hex")).toBe(values["2"])
    expect(checkpointSignatureProblem(parsed, key)).toBeNull()
  })
})
