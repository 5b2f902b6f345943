import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Timeouts only catch hangs: a test's speed is never asserted. They are generous so the suite
    // passes on a 2-core machine whose cores are busy with other work (spawned CLIs and Pythons
    // then take several times longer than on an idle machine).
    testTimeout: 120_000,
    hookTimeout: 120_000,
    setupFiles: ["test/setup.ts"],
    globalSetup: ["test/global-setup.ts"],
    // Test files share their worker and the modules it has loaded, instead of a fresh process per
    // file: loading Effect, the proxy and the CLI (1–2 s of CPU) is paid once per worker, not once
    // per file, which halves the suite's CPU time (docs/performance.md, "Test suite"). So a test
    // file leaves nothing process-wide behind: no environment variables, working directory, exit
    // code or handlers; servers and child processes are stopped in its hooks. test/setup.ts undoes
    // the one thing @effect/vitest leaves behind. To rule sharing out while debugging a failure:
    // `npx vitest run --isolate FILE`.
    isolate: false,
    // One worker per core. vitest's default in a run is one less than the cores: a single worker
    // on a 2-core machine, which leaves a core idle while a file waits on its servers and children.
    maxWorkers: "100%"
  }
})
