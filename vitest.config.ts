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
    globalSetup: ["test/global-setup.ts"]
  }
})
