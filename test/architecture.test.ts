/**
 * The directions the code base holds (see README "Code map"): which modules may import which. Read from the
 * import statements of every source file, so a violation fails here before it settles in.
 */
import { describe, expect, it } from "vitest";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = join(import.meta.dirname, "..");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : [];
  });
}

/** Every relative import of a file, as a path from the repository root without extension. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g)) {
    const spec = m[1] ?? m[2];
    out.push(relative(ROOT, resolve(dirname(file), spec)).replace(/\.ts$/, ""));
  }
  return out;
}

const SOURCES = [...files(join(ROOT, "src")), ...files(join(ROOT, "pki"))].map((f) => ({ file: relative(ROOT, f), imports: importsOf(f) }));

const RULES: [string, (file: string) => boolean, (target: string) => boolean][] = [
  ["protocol/ never imports server/", (f) => f.startsWith("src/protocol/"), (t) => t.startsWith("src/server/")],
  ["client/ never imports server/ or node.ts", (f) => f.startsWith("src/client/"), (t) => t.startsWith("src/server/") || t === "src/node"],
  ["pki/ imports nothing of src/", (f) => f.startsWith("pki/"), (t) => t.startsWith("src/")],
  [
    "store/ never imports the protocol's handler or errors",
    (f) => f.startsWith("src/store/"),
    (t) => t === "src/protocol/request-handler" || t === "src/protocol/errors",
  ],
  // The store's roles are interfaces in tasks/ (TaskStore, TaskLeases, ReplicaMessages); store/ implements them.
  ["tasks/ never imports store/ (it names the store's roles; store/ implements them)", (f) => f.startsWith("src/tasks/"), (t) => t.startsWith("src/store/")],
  ["tasks/ never imports protocol/request-handler.ts", (f) => f.startsWith("src/tasks/"), (t) => t === "src/protocol/request-handler"],
  ["config and the daemon never import cli/", (f) => f === "src/config.ts" || f.startsWith("src/settings/") || f === "src/node.ts", (t) => t.startsWith("src/cli/")],
];

describe("import directions", () => {
  it("the scan sees the imports (a rule over nothing would pass for nothing)", () => {
    expect(SOURCES.length).toBeGreaterThan(50);
    expect(SOURCES.find((s) => s.file === "src/node.ts")?.imports).toContain("src/config");
  });

  it.each(RULES)("%s", (_rule, from, forbidden) => {
    const violations = SOURCES.filter((s) => from(s.file)).flatMap((s) => s.imports.filter(forbidden).map((t) => `${s.file} -> ${t}`));
    expect(violations).toEqual([]);
  });
});
