/**
 * Loading node-llama-cpp (pinned 3.21.1) for the `llama_cpp` judge kind: imported on first use
 * only (a process without such a judge never loads the native addon), and started so that it can
 * never download or compile anything: prebuilt binaries only (`@node-llama-cpp/<platform>`, an
 * optional dependency npm installs for the platform it runs on), CPU only, `build: "never"`,
 * `skipDownload`. A platform without a prebuilt binary is a one-line error naming the platform.
 *
 * The CLI bundle keeps node-llama-cpp external (it finds its binaries next to its own files), so
 * the bundled CLI loads it from the `node_modules` of the checkout it was built in.
 */
import type { Llama } from "node-llama-cpp"

export type NodeLlamaCpp = typeof import("node-llama-cpp")

/** The version this code was written and tested against (package.json pins it exactly). */
export const NODE_LLAMA_CPP_VERSION = "3.21.1"

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** `linux-x64 (glibc)`, `darwin-arm64`, … : the platform as the prebuilt packages are named. */
export const platformName = (): string => {
  const glibc = process.platform === "linux" ? (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined) : undefined
  const libc = process.platform === "linux" ? (glibc?.header?.glibcVersionRuntime !== undefined ? " (glibc)" : " (musl)") : ""
  return `${process.platform}-${process.arch}${libc}`
}

/** The module, or why it cannot be loaded (one line). */
export const importNodeLlamaCpp = async (): Promise<{ readonly ok: true; readonly lib: NodeLlamaCpp } | { readonly ok: false; readonly reason: string }> => {
  try {
    return { ok: true, lib: await import("node-llama-cpp") }
  } catch (e) {
    return {
      ok: false,
      reason: `cannot load the npm package node-llama-cpp@${NODE_LLAMA_CPP_VERSION} (a dependency of vetobench; npm ci installs it): ${message(e)}`
    }
  }
}

/**
 * A CPU-only Llama from the prebuilt binary for this platform; never a build, never a download.
 * Left: one line saying why not (no binary for the platform, or the binary does not load).
 */
export const startLlama = async (
  lib: Pick<NodeLlamaCpp, "getLlama" | "LlamaLogLevel" | "NoBinaryFoundError">
): Promise<{ readonly ok: true; readonly llama: Llama } | { readonly ok: false; readonly reason: string }> => {
  try {
    const llama = await lib.getLlama({
      gpu: false,
      build: "never",
      skipDownload: true,
      usePrebuiltBinaries: true,
      progressLogs: false,
      logLevel: lib.LlamaLogLevel.error,
      // each context sets its own thread count (the judge's `threads`)
      maxThreads: 0
    })
    return { ok: true, llama }
  } catch (e) {
    if (e instanceof lib.NoBinaryFoundError) {
      return {
        ok: false,
        reason:
          `no prebuilt llama.cpp binary for this platform (${platformName()}): node-llama-cpp@${NODE_LLAMA_CPP_VERSION} ships them ` +
          "as @node-llama-cpp/<platform> packages for linux x64/arm64/armv7l (glibc), macOS and Windows; vetobench never builds or downloads one"
      }
    }
    return { ok: false, reason: `the prebuilt llama.cpp binary for ${platformName()} does not load: ${message(e)}` }
  }
}
