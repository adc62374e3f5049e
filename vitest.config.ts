import { defineConfig } from "vitest/config";

// Tests run under Bun (`bun --bun vitest run`): they use bun:sqlite, Bun.spawn and real TLS sockets.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // End-to-end files start compiled binaries; two cores are shared, so keep file parallelism modest.
    maxWorkers: 2,
    reporters: ["default", "./test/summary-reporter.ts"],
  },
});
