import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

/**
 * Temporary folders (a node's home, a config file's folder, a database's) for one test file: each made fresh under
 * the system's temp folder, all removed when the file's tests end, whether they passed or not. Made at the top of a
 * file, in a hook or in a test alike, so no test file writes its own mkdtemp and cleanup.
 */
const made: string[] = [];
// Registered as the importing test file is collected: every test file evaluates its own copy of this module.
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A new empty folder named `<prefix>XXXXXX` under the system's temp folder, removed when the test file ends. */
export function tempDir(prefix = "a2a-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
