/**
 * Chain verification on worker threads (layers/chain-workers.ts) gives exactly the single-thread result:
 * same verdict, same index and message, same hashes, on intact and tampered files, whatever the split
 * of the file into ranges. The workers run from source here (through tsx); the CLI test below runs the
 * bundle's `dist/chain-worker.mjs`.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { FastCheck as fc } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { PARALLEL_MIN_BYTES, readShared, verifyChainParallel, verifyInRanges } from "../../layers/chain-workers.js"
import { recordLine, sealRecord } from "../../src/domain/audit-chain.js"
import { GENESIS_HASH, type CallEntry } from "../../src/domain/audit-record.js"
import { scanLines, verifyChainBytes } from "../../src/domain/chain-verify.js"
import { decided } from "../../src/domain/verdict.js"
import { callEntry } from "../support/audit-entry.js"
import { runCli } from "../support/cli.js"

const dir = mkdtempSync(path.join(tmpdir(), "vetobench-chain-workers-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const entry = (i: number): CallEntry => {
  const verdict = decided({ judge: "j", kind: "llm_json", model: "m", version: "v" }, i % 5 === 0 ? "deny" : "allow", { reason: `r${i} é`, raw: `{"i":${i}}` })
  return callEntry(i, "r", null, {
    arm: "enforce",
    tool: { name: "write_file", description: "Write a file.", parameters: null, arguments: { path: `/tmp/${i}`, content: "x".repeat(i % 300) } },
    verdict,
    layers: [verdict],
    effective_decision: verdict.decision,
    blocked: i % 5 === 0,
    gate_ms: i / 7
  })
}

/** `n` records as lines: canonical (as the sink writes them), every `oldEvery`-th in insertion order. */
const chainLines = (n: number, oldEvery = 0): Array<string> => {
  const lines: Array<string> = []
  let prev = GENESIS_HASH
  for (let i = 1; i <= n; i++) {
    const r = sealRecord(entry(i), { seq: i, ts: "2026-11-30T12:00:00.000Z", prev_hash: prev })
    prev = r.hash
    lines.push(oldEvery > 0 && i % oldEvery === 0 ? JSON.stringify(r) : recordLine(r))
  }
  return lines
}

/** The text in shared memory, as `readShared` gives a file. */
const shared = (text: string): Buffer => {
  const plain = Buffer.from(text, "utf8")
  const bytes = Buffer.from(new SharedArrayBuffer(Math.max(1, plain.length)), 0, plain.length)
  plain.copy(bytes)
  return bytes
}

const both = async (text: string) => {
  const bytes = shared(text)
  const single: Array<string> = []
  const parallel: Array<string> = []
  const expected = verifyChainBytes(bytes, single)
  const got = await verifyChainParallel(bytes, parallel, { minBytes: 0 })
  expect(got).toEqual(expected)
  expect(parallel).toEqual(single)
  return got
}

describe("verifyChainParallel", () => {
  const lines = chainLines(400, 7)

  it("verifies an intact file like the single-thread check, blank lines and old-style lines included", async () => {
    const text = lines.map((l, i) => (i % 50 === 0 ? `\n  \n${l}\n` : `${l}\n`)).join("")
    expect(await both(text)).toMatchObject({ ok: true, records: 400 })
  }, 120_000)

  it("finds the same first failure on tampered files (edits, deletions, swaps, torn tail)", async () => {
    const edits = fc.sample(
      fc.record({ line: fc.nat(399), kind: fc.constantFrom("edit", "delete", "swap", "torn", "blank-record"), at: fc.nat(400) }),
      { numRuns: 12, seed: 5 }
    )
    for (const e of edits) {
      const ls = [...lines]
      let tail = ""
      if (e.kind === "edit") ls[e.line] = ls[e.line]!.replace(/"gate_ms":[0-9.e-]+/, '"gate_ms":-1')
      else if (e.kind === "delete") ls.splice(e.line, 1)
      else if (e.kind === "swap") [ls[e.line], ls[(e.line + 1) % ls.length]] = [ls[(e.line + 1) % ls.length]!, ls[e.line]!]
      else if (e.kind === "torn") tail = ls[e.line]!.slice(0, e.at)
      else ls[e.line] = "{}"
      const got = await both(ls.map((l) => `${l}\n`).join("") + tail)
      expect(got.ok).toBe(e.kind === "torn" && e.at === 0)
    }
  }, 120_000)

  it("any split into ranges gives the same result; a range whose worker fails is scanned here", async () => {
    const text = lines.map((l) => `${l}\n`).join("")
    const tampered = [...lines]
    tampered[333] = tampered[333]!.replace(/"gate_ms":[0-9.e-]+/, '"gate_ms":-1')
    for (const [t, index] of [
      [text, null],
      [tampered.map((l) => `${l}\n`).join("") + '{"torn', 334]
    ] as const) {
      const bytes = Buffer.from(t, "utf8")
      const expected: Array<string> = []
      const result = verifyChainBytes(bytes, expected)
      expect(result.index).toBe(index)
      for (const count of [1, 2, 3, 7, 50]) {
        // every other range "fails on its worker" and is scanned on this thread
        const got: Array<string> = []
        const failing = (i: number, from: number, to: number) =>
          i % 2 === 0 ? Promise.resolve(scanLines(bytes, from, to)) : Promise.reject(new Error("the worker died"))
        expect(await verifyInRanges(bytes, got, count, failing)).toEqual(result)
        expect(got).toEqual(expected)
      }
    }
  })

  it("readShared reads a file into shared memory; a missing file is an error", async () => {
    const file = path.join(dir, "a.jsonl")
    writeFileSync(file, lines.slice(0, 3).map((l) => `${l}\n`).join(""))
    const bytes = await readShared(file)
    expect(bytes.buffer).toBeInstanceOf(SharedArrayBuffer)
    expect(bytes.toString("utf8").split("\n")[1]).toBe(lines[1])
    await expect(readShared(path.join(dir, "missing.jsonl"))).rejects.toMatchObject({ code: "ENOENT" })
  })
})

describe("vetobench verify-audit on a large file (worker threads of the bundle)", () => {
  it("verifies it, and finds a tampered record near its end at the right index", () => {
    const big = chainLines(6_000)
    const file = path.join(dir, "big.jsonl")
    writeFileSync(file, big.map((l) => `${l}\n`).join(""))
    expect(statSync(file).size).toBeGreaterThan(PARALLEL_MIN_BYTES)
    const ok = runCli(["verify-audit", file])
    expect(ok.stdout).toMatch(/^PARTIAL .*: 6000 records – chain ok; anchor not checked/m)
    big[5_900] = big[5_900]!.replace('"blocked":false', '"blocked":true')
    writeFileSync(file, big.map((l) => `${l}\n`).join(""))
    const bad = runCli(["verify-audit", file])
    expect(bad.code).toBe(1)
    expect(bad.stdout).toMatch(/^FAIL +.*: 6000 records – chain: record 5901: hash mismatch \(record was modified\)/m)
  }, 120_000)
})
